package agent_test

import (
	"testing"

	"github.com/familiar-dev/familiar/agent"
)

// TestPlanModeApprovedGoesOn: a session in claude's plan mode whose plan
// (ExitPlanMode) the person approves goes on and writes, on 2.1.200, 2.1.330
// and 2.1.332 under both drivers. Other hosts report a PermissionRequest
// "allow" for ExitPlanMode ignored since 2.1.199 (anthropics/claude-code#74256);
// familiar's allow carries the plan back as updatedInput, and claude takes
// it (measured: no plan dialog stays on the screen, the Write follows).
func TestPlanModeApprovedGoesOn(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		h := startWith(t, driver, "plan it\n@@TOOL ExitPlanMode {\"plan\":\"Write planned.txt\"}\n@@TOOL Write {\"file_path\":\"planned.txt\",\"content\":\"ok\\n\"}\n@@TEXT Done.",
			func(o *agent.Options) { o.PermissionMode = "plan" })
		next := 0
		var asked []string
		for {
			ev, n := h.rec.wait(t, next, "a question or the end", func(ev agent.Event) bool {
				return ev.Kind == agent.EventQuestion || turnEnded(ev)
			})
			next = n
			if ev.Kind != agent.EventQuestion {
				break
			}
			asked = append(asked, ev.Question.Tool)
			opt := agent.OptionAllow
			if ev.Question.Kind != agent.KindPermission && len(ev.Question.Options) > 0 {
				opt = ev.Question.Options[0].ID
			}
			if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: opt}); err != nil {
				t.Fatal(err)
			}
		}
		if len(asked) != 2 || asked[0] != "ExitPlanMode" || asked[1] != "Write" {
			t.Errorf("asked about %q, want the plan then the write", asked)
		}
		if !h.exists("planned.txt") {
			t.Error("the approved plan did not go on to write")
		}
	})
}
