package orchestrator_test

import (
	"context"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// policy/revoke says whether a claude keeps what it was given (issue 37):
// an exact command granted with allow-always is handed to the claude that
// asked, which keeps it while it runs, so a revoke during its turn holds
// from its next start; once that claude has ended with its turn, nothing
// keeps it and the next call is asked again. /revoke said a running claude
// keeps it in both cases.
func TestRevokeSaysWhetherClaudeKeepsTheGrant(t *testing.T) {
	grant := func(t *testing.T, e *env, id string) string {
		t.Helper()
		e.notes.wait(t, "the question", is(protocol.NotifyTaskQuestion, id))
		q := e.get(t, id).PendingQuestion
		var rule string
		for _, o := range q.Options {
			if o.ID == protocol.OptionAllowAlways {
				rule = o.Rule
			}
		}
		if rule != "Bash(touch granted.txt)" {
			t.Fatalf("allow always grants %q", rule)
		}
		if _, err := e.o.TaskRespond(context.Background(), &protocol.TaskRespondParams{ID: id, QuestionID: q.ID, OptionID: protocol.OptionAllowAlways}); err != nil {
			t.Fatal(err)
		}
		return rule
	}
	revoke := func(t *testing.T, e *env, id, rule string) *protocol.PolicyRevokeResult {
		t.Helper()
		res, err := e.o.PolicyRevoke(context.Background(), &protocol.PolicyRevokeParams{Rule: rule, Scope: protocol.GrantTask, TaskID: id})
		if err != nil || !res.Revoked {
			t.Fatalf("revoke: %+v %v", res, err)
		}
		return res
	}
	touch := `@@TOOL Bash {"command":"touch granted.txt"}`
	for _, driver := range bothDrivers {
		t.Run(string(driver), func(t *testing.T) {
			t.Run("during the turn", func(t *testing.T) {
				// The model takes a while before its second call: the
				// revoke comes while the claude that was given the rule
				// works.
				e := open(t, nil, nil)
				task := e.createOn(t, driver, "revoked during the turn", "go\n"+touch+"\n@@DELAY 6s\n"+touch+"\n@@TEXT one.", 0)
				rule := grant(t, e, task.ID)
				revoked := time.Now()
				if res := revoke(t, e, task.ID, rule); !res.HeldByClaude {
					t.Errorf("revoked while its claude works: %+v, want heldByClaude", res)
				}
				e.notes.wait(t, "the turn's end", is(protocol.NotifyTaskCompleted, task.ID))
				for _, n := range e.notes.all() {
					if n.method == protocol.NotifyTaskQuestion && n.at.After(revoked) {
						t.Errorf("asked after the revoke, which said claude keeps the rule: %s", n.params)
					}
				}
			})
			t.Run("after the turn", func(t *testing.T) {
				e := open(t, nil, nil)
				task := e.createOn(t, driver, "revoked after the turn", "go\n"+touch+"\n@@TEXT one.", 0)
				rule := grant(t, e, task.ID)
				e.notes.wait(t, "the turn's end", is(protocol.NotifyTaskCompleted, task.ID))
				res := revoke(t, e, task.ID, rule)
				sent := time.Now()
				if _, err := e.o.TaskSend(context.Background(), &protocol.TaskSendParams{ID: task.ID, Text: "again\n" + touch + "\n@@TEXT two."}); err != nil {
					t.Fatal(err)
				}
				n := e.notes.wait(t, "asked again or done", func(n note) bool {
					return n.at.After(sent) && (is(protocol.NotifyTaskQuestion, task.ID)(n) || is(protocol.NotifyTaskCompleted, task.ID)(n))
				})
				asked := n.method == protocol.NotifyTaskQuestion
				if asked == res.HeldByClaude {
					t.Errorf("revoke said heldByClaude %v, and the next call was asked: %v", res.HeldByClaude, asked)
				}
			})
		})
	}
}
