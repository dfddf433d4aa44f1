package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// installSkill writes a skill whose body runs a shell command when it loads
// (the `!` backtick syntax) into the session's config dir. Its allowed-tools
// let the command through claude's own permission check, which comes first
// (a command it would ask about fails the skill's load, hook or not); what
// familiar gates is what the skill allows itself.
func installSkill(t testing.TB, cfg, name, command string) {
	t.Helper()
	d := filepath.Join(cfg, "skills", name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "---\nname: " + name + "\ndescription: makes a marker file\nallowed-tools: Bash(touch:*), Bash(echo:*)\n---\nThe marker: !`" + command + "`\n"
	if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSkillShellCommandAsked: on a claude with PreSkillShellCommand (2.1.332)
// a shell command written in a skill is put to the person as a Bash command,
// with the skill's name and who started it; denied, it does not run;
// allowed, it does. On an older claude the person is told once that such
// commands run under the skill's own allowed-tools (issue 27).
func TestSkillShellCommandAsked(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		h := startWith(t, driver, "use the skill\n@@TOOL Skill {\"skill\":\"marker\"}\n@@TEXT Used it.", func(o *agent.Options) {
			installSkill(t, o.ConfigDir, "marker", "touch skill-ran.txt && echo made")
		})
		if !agent.HasSkillShellHook(claudeVersion(t, testenv.Claude(t))) {
			h.allowSkill(t, 0)
			ev, next := h.rec.wait(t, 0, "the notice", func(ev agent.Event) bool {
				return ev.Kind == agent.EventProblem && strings.Contains(ev.Problem, "allowed-tools")
			})
			if !strings.Contains(ev.Problem, "skill /marker") {
				t.Errorf("notice = %q", ev.Problem)
			}
			h.rec.wait(t, next, "turn end", turnEnded)
			if !h.exists("skill-ran.txt") {
				t.Error("the skill's command did not run (it runs under the skill's allowed-tools on this claude)")
			}
			return
		}
		next := h.allowSkill(t, 0)
		ev, next := h.rec.wait(t, next, "the skill command's question", isQuestion(agent.KindPermission))
		q := ev.Question
		if q.Tool != "Bash" || !strings.Contains(string(q.Input), "touch skill-ran.txt") || q.Skill == nil ||
			q.Skill.Name != "marker" || q.Skill.InvokedBy != "claude" {
			t.Fatalf("question = %+v skill %+v", q, q.Skill)
		}
		if !strings.Contains(q.Text, "/marker") || !strings.Contains(q.Text, "started by claude") {
			t.Errorf("text = %q", q.Text)
		}
		if err := h.sess.Answer(q.ID, agent.Answer{OptionID: agent.OptionDeny}); err != nil {
			t.Fatal(err)
		}
		_, next = h.rec.wait(t, next, "turn end", turnEnded)
		if h.exists("skill-ran.txt") {
			t.Fatal("the denied command ran")
		}
		if err := h.sess.SendPrompt("again\n@@TOOL Skill {\"skill\":\"marker\"}\n@@TEXT Used it again."); err != nil {
			t.Fatal(err)
		}
		next = h.allowSkill(t, next)
		ev, next = h.rec.wait(t, next, "the second question", isQuestion(agent.KindPermission))
		if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: agent.OptionAllow}); err != nil {
			t.Fatal(err)
		}
		h.rec.wait(t, next, "second turn end", turnEnded)
		if !h.exists("skill-ran.txt") {
			t.Error("the allowed command did not run")
		}
	})
}

// allowSkill answers claude's own question about loading a skill that
// names allowed-tools (the Skill tool asks for those).
func (h *harness) allowSkill(t *testing.T, from int) int {
	t.Helper()
	ev, next := h.rec.wait(t, from, "the Skill tool's question", func(ev agent.Event) bool {
		return ev.Kind == agent.EventQuestion && ev.Question.Tool == "Skill"
	})
	if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: agent.OptionAllow}); err != nil {
		t.Fatal(err)
	}
	return next
}
