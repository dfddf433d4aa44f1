package orchestrator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/familiar-dev/familiar/protocol"
)

// TestForecastWhileTasksRun: three tasks under the real claude, A and B
// change the same lines of one file, C another file. While they run (each
// waits on a permission after its edit), A and B report a conflict with
// each other and none with the base; C reports nothing.
func TestForecastWhileTasksRun(t *testing.T) {
	e := open(t, nil, nil)
	os.WriteFile(filepath.Join(e.repo, "shared.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	os.WriteFile(filepath.Join(e.repo, "other.txt"), []byte("other\n"), 0o644)
	gitIn(t, e.repo, "add", "-A")
	gitIn(t, e.repo, "commit", "-qm", "files")
	script := func(cmd string) string {
		b, _ := json.Marshal(map[string]string{"command": cmd})
		return "go\n@@TOOL Bash " + string(b) + "\n@@TOOL Bash {\"command\":\"touch asked\"}\n@@TEXT Done."
	}
	a := e.create(t, "A", script(`printf 'one\nA\nthree\n' > shared.txt`), 0)
	b := e.create(t, "B", script(`printf 'one\nB\nthree\n' > shared.txt`), 0)
	c := e.create(t, "C", script(`printf 'C\n' > other.txt`), 0)
	// Each edit is allowed; each task then waits on its second command.
	for _, id := range []string{a.ID, b.ID, c.ID} {
		e.notes.wait(t, "the edit's question", is(protocol.NotifyTaskQuestion, `"id":"`+id+`"`, "printf"))
		q := e.get(t, id).PendingQuestion
		if _, err := e.o.TaskRespond(context.Background(), &protocol.TaskRespondParams{ID: id, QuestionID: q.ID, OptionID: "allow"}); err != nil {
			t.Fatal(err)
		}
		e.notes.wait(t, "the second question", is(protocol.NotifyTaskQuestion, `"id":"`+id+`"`, "touch asked"))
	}
	e.notes.wait(t, "A's conflict with B", is(protocol.NotifyTaskUpdated, `"id":"`+a.ID+`"`, `"conflicts":[{"with":"`+b.ID+`","files":["shared.txt"]}]`))
	e.notes.wait(t, "B's conflict with A", is(protocol.NotifyTaskUpdated, `"id":"`+b.ID+`"`, `"conflicts":[{"with":"`+a.ID+`","files":["shared.txt"]}]`))
	for _, id := range []string{a.ID, b.ID, c.ID} {
		got := e.get(t, id)
		if got.Status != protocol.StatusWaiting {
			t.Errorf("%s is %s, not waiting", got.Title, got.Status)
		}
		for _, cf := range got.Conflicts {
			if cf.With == "base" {
				t.Errorf("%s conflicts with the base: %+v", got.Title, got.Conflicts)
			}
		}
		if id == c.ID && (len(got.Conflicts) > 0 || len(got.Overlaps) > 0) {
			t.Errorf("C reports %+v, %+v", got.Conflicts, got.Overlaps)
		}
		if id != c.ID && (len(got.Conflicts) != 1 || !slices.Equal(got.Conflicts[0].Files, []string{"shared.txt"})) {
			t.Errorf("%s reports %+v", got.Title, got.Conflicts)
		}
	}
	// Cancelled, a task conflicts with nothing, and the other sees that.
	if _, err := e.o.TaskCancel(context.Background(), &protocol.TaskIDParams{ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	var cancelled protocol.TaskUpdatedNotification
	json.Unmarshal(e.notes.wait(t, "B cancelled", statusIs(b.ID, protocol.StatusCancelled)).params, &cancelled)
	if got := e.get(t, b.ID); len(got.Conflicts) > 0 {
		t.Errorf("the cancelled task still reports %+v", got.Conflicts)
	}
	e.notes.wait(t, "A's conflict gone", func(x note) bool {
		if x.method != protocol.NotifyTaskUpdated {
			return false
		}
		var p protocol.TaskUpdatedNotification
		return json.Unmarshal(x.params, &p) == nil && p.Seq > cancelled.Seq && p.Task.ID == a.ID && len(p.Task.Conflicts) == 0
	})
}
