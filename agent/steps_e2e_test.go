package agent_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/agent"
)

// Many permissions in a row, each answered once its dialog shows: every one
// is asked by its hook (with the command), none is settled by the previous
// dialog leaving the screen, none is read off the screen instead.
func TestManyPermissionsInARow(t *testing.T) {
	const steps = 12
	var script strings.Builder
	script.WriteString("steps\n")
	for i := 1; i <= steps; i++ {
		fmt.Fprintf(&script, "@@TOOL Bash {\"command\":\"touch step-%d.txt\"}\n", i)
	}
	script.WriteString("@@TEXT All done.")
	h := start(t, agent.DriverPTY, script.String())
	next := 0
	for i := 1; i <= steps; i++ {
		var ev agent.Event
		ev, next = h.rec.wait(t, next, fmt.Sprintf("question %d", i), isQuestion(agent.KindPermission))
		if q := ev.Question; !strings.Contains(string(q.Input), fmt.Sprintf("step-%d.txt", i)) {
			t.Fatalf("question %d = %+v (text %q)", i, q, q.Text)
		}
		// A person answers once the dialog is on screen (the race: the
		// next call's hook arrived while this dialog was still there, and
		// its leaving settled the new question "in the terminal").
		waitScreen(t, h.sess, "Do you want to proceed?")
		if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: agent.OptionAllow}); err != nil {
			for _, e := range h.rec.all() {
				switch {
				case e.Question != nil:
					t.Logf("%s question %s %q", e.At.Format("05.000"), e.Question.ID, e.Question.Text)
				case e.Resolved != nil:
					t.Logf("%s resolved %s by %s", e.At.Format("05.000"), e.Resolved.QuestionID, e.Resolved.By)
				case e.Hook != nil:
					t.Logf("%s hook %s", e.At.Format("05.000"), e.Hook.Name)
				}
			}
			t.Fatal(err)
		}
	}
	h.rec.wait(t, next, "turn end", turnEnded)
}
