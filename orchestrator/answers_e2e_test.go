package orchestrator_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/protocol"
)

// A cancelled task is the person's choice, not a failure: server/stats
// counts it by status but leaves it out of the success rate.
func TestStatsCancelledIsNotFailure(t *testing.T) {
	e := open(t, nil, &protocol.SettingsUpdate{MaxConcurrent: intp(1)})
	a := e.create(t, "finishes", "go\n@@TEXT Done.", 0)
	b := e.create(t, "cancelled while queued", "go\n@@TEXT Never.", 0)
	if _, err := e.o.TaskCancel(context.Background(), &protocol.TaskIDParams{ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "a completed", is(protocol.NotifyTaskCompleted, a.ID))
	st, err := e.o.ServerStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Tasks.ByStatus[protocol.StatusCancelled] != 1 || st.SuccessRate != 1 {
		t.Fatalf("stats = %+v (success rate %v)", st.Tasks.ByStatus, st.SuccessRate)
	}
}

// A skill saved while a task that uses it runs is updated in that task's
// session at once (claude re-reads it within seconds: agent's
// TestInstalledSkillUpdateReachesRunningSession), and the task says so.
func TestSavedSkillReachesRunningTask(t *testing.T) {
	e := open(t, nil, nil)
	dir := filepath.Join(e.repo, ".familiar", "skills", "release-notes")
	os.MkdirAll(dir, 0o755)
	save := func(body string) {
		tmp := filepath.Join(dir, ".SKILL.md.tmp")
		os.WriteFile(tmp, []byte("---\nname: release-notes\ndescription: Write release notes\n---\n"+body+"\n"), 0o644)
		if err := os.Rename(tmp, filepath.Join(dir, "SKILL.md")); err != nil {
			t.Fatal(err)
		}
	}
	save("version one")
	e.notes.wait(t, "skill loaded", is(protocol.NotifySkillsChanged, "release-notes"))
	task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{
		Title: "notes", Description: "go\n@@DELAY 60s\n@@TEXT late", Driver: protocol.DriverStream, Skills: []string{"release-notes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "running", statusIs(task.ID, protocol.StatusRunning))
	installed := filepath.Join(e.ws.DataDir, "tasks", task.ID, "claude", "skills", "release-notes", "SKILL.md")
	if b, _ := os.ReadFile(installed); !strings.Contains(string(b), "version one") {
		t.Fatalf("installed copy = %q", b)
	}
	save("version two")
	e.notes.wait(t, "said on the task", is(protocol.NotifyServerMessage, task.ID, "release-notes updated in the running session"))
	if b, _ := os.ReadFile(installed); !strings.Contains(string(b), "version two") {
		t.Fatalf("installed copy after the save = %q", b)
	}
	if _, err := e.o.TaskCancel(context.Background(), &protocol.TaskIDParams{ID: task.ID}); err != nil {
		t.Fatal(err)
	}
}
