package batch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/protocol"
)

// planFile's second task only makes b.txt when a.txt is in the code it
// starts from, and the third needs a task whose work the verify command
// refuses when %s says so.
const planFile = `settings:
  termGraceSec: 1
  verify: %s
  permissionPolicy:
    default: deny
    allow: ["Bash(touch:*)", "Bash(test:*)"]
tasks:
  - id: a
    title: Add a
    description: |
      add it
      @@TOOL Bash {"command":"touch a.txt"}
      @@TEXT Added a.txt.
  - id: b
    title: Add b on a
    needs: [a]
    description: |
      add it
      @@TOOL Bash {"command":"test -f a.txt && touch b.txt"}
      @@TEXT Added b.txt.
  - id: c
    title: Add c
    description: |
      add it
      @@TOOL Bash {"command":"touch c.txt"}
      @@TEXT Added c.txt.
  - id: d
    title: Add d on c
    needs: [c]
    description: |
      add it
      @@TOOL Bash {"command":"touch d.txt"}
      @@TEXT Added d.txt.
`

// Issue 39: familiar run with needs: runs the file as a plan: exit 0 with
// every task merged in the order its needs ask, checked by the verify
// command; exit 1 with the report of what was not merged and why.
func TestRunPlan(t *testing.T) {
	t.Run("merged", func(t *testing.T) {
		e := newRunEnv(t)
		var out bytes.Buffer
		rep, code := Run(context.Background(), e.options(t, fmt.Sprintf(planFile, `"test -f README.md"`), &out))
		if code != ExitOK || !rep.OK || rep.Plan == nil || rep.Plan.State != protocol.PlanDone {
			t.Fatalf("Run = exit %d, %+v\n%s", code, rep.Plan, out.String())
		}
		for _, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
			if _, err := os.Stat(filepath.Join(e.repo, f)); err != nil {
				t.Errorf("the base lacks %s: b did not start from a's work?\n%s", f, out.String())
			}
		}
		for _, want := range []string{"plan: 4 steps into main", "4 tasks from tasks.yaml", "merged    Add b on a (b), needs a", "the plan is done: every step merged and checked"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
	})
	t.Run("a step set aside", func(t *testing.T) {
		e := newRunEnv(t)
		var out bytes.Buffer
		rep, code := Run(context.Background(), e.options(t, fmt.Sprintf(planFile, `"test ! -e c.txt"`), &out))
		if code != ExitFailed || rep.OK || rep.Plan == nil || rep.Plan.State != protocol.PlanHeld {
			t.Fatalf("Run = exit %d, %+v\n%s", code, rep.Plan, out.String())
		}
		for _, f := range []string{"a.txt", "b.txt"} {
			if _, err := os.Stat(filepath.Join(e.repo, f)); err != nil {
				t.Errorf("the base lacks %s: the independent steps should merge", f)
			}
		}
		for _, f := range []string{"c.txt", "d.txt"} {
			if _, err := os.Stat(filepath.Join(e.repo, f)); err == nil {
				t.Errorf("the base has %s", f)
			}
		}
		for _, want := range []string{"failed    Add c (c): the merge queue set it aside", `held      Add d on c (d), needs c: it needs "c" failed`,
			"nobody can retry, edit or skip a step in a headless run", "the plan did not finish"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
	})
}
