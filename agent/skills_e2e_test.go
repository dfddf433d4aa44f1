package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/profiles"
)

// Claude 2.1.330 re-reads the skills in its config dir while it runs: an
// installed copy updated mid-session (as familiar does when a skill is saved)
// reaches the running session, its listing and the body the Skill tool
// loads, within seconds. Measured with fixed waits: not seen after 3 s,
// always after 4 s. The test polls with turns, not sleeps.
func TestInstalledSkillUpdateReachesRunningSession(t *testing.T) {
	ws := t.TempDir()
	save := func(desc, body string) {
		d := filepath.Join(ws, "skills", "relnotes")
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "SKILL.md"), []byte("---\nname: relnotes\ndescription: "+desc+"\n---\n"+body+"\n"), 0o644)
	}
	save("ORIGINAL-DESC", "ORIGINAL-BODY")
	var cfg string
	h := startWith(t, agent.DriverStream, "one\n@@TEXT first.", func(o *agent.Options) {
		cfg = o.ConfigDir
		sk, err := profiles.LoadSkills(profiles.Dirs{Workspace: ws}).Resolve([]string{"relnotes"})
		if err != nil {
			t.Fatal(err)
		}
		if err := profiles.InstallSkills(cfg, sk); err != nil {
			t.Fatal(err)
		}
	})
	_, next := h.rec.wait(t, 0, "turn end", turnEnded)
	save("CHANGED-DESC", "CHANGED-BODY")
	changed, err := profiles.UpdateInstalled(cfg, profiles.LoadSkills(profiles.Dirs{Workspace: ws}), profiles.SkillsChange{Updated: []string{"relnotes"}})
	if err != nil || len(changed) != 1 {
		t.Fatalf("update installed: %q %v", changed, err)
	}
	updatedAt := time.Now()
	deadline := updatedAt.Add(30 * time.Second)
	turns := 0
	for {
		if err := h.sess.SendPrompt("poll\n@@TEXT polled."); err != nil {
			t.Fatal(err)
		}
		_, next = h.rec.wait(t, next, "poll turn end", turnEnded)
		turns++
		reqs := h.api.MainRequests()
		if strings.Contains(string(reqs[len(reqs)-1].Raw), "CHANGED-DESC") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d turns in 30 s the session still lists the old skill", turns)
		}
	}
	t.Logf("the running session listed the updated skill %v after the update (%d turns)", time.Since(updatedAt).Round(100*time.Millisecond), turns)
	if err := h.sess.SendPrompt("use it\n@@TOOL Skill {\"skill\":\"relnotes\"}\n@@TEXT used."); err != nil {
		t.Fatal(err)
	}
	h.rec.wait(t, next, "skill turn end", turnEnded)
	reqs := h.api.MainRequests()
	raw := string(reqs[len(reqs)-1].Raw)
	if !strings.Contains(raw, "CHANGED-BODY") || strings.Contains(raw, "ORIGINAL-BODY") {
		t.Error("the Skill tool did not load the updated body")
	}
}
