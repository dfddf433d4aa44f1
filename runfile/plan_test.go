package runfile

import (
	"strings"
	"testing"
)

// Issue 39: a tasks file whose tasks say what they need runs as a plan.
func TestNeedsMakeAPlan(t *testing.T) {
	src := `settings:
  verify: go test ./...
tasks:
  - id: api
    title: Add the endpoint
    description: add it
    hints: {files: [api.go]}
  - title: Document it
    description: write the docs
  - id: ui
    title: The form
    description: add the form
    needs: [api, task2]
`
	f, err := Parse("plan.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Plan) != 3 || f.Plan[0].ID != "api" || f.Plan[1].ID != "task2" || strings.Join(f.Plan[2].Needs, ",") != "api,task2" ||
		f.Plan[0].Files[0] != "api.go" {
		t.Fatalf("plan = %+v", f.Plan)
	}
	if f.Settings.Merge != MergeQueue || f.Settings.Verify == nil || *f.Settings.Verify != "go test ./..." {
		t.Errorf("settings = %+v: a plan merges through the queue, with the file's verify", f.Settings)
	}
	if len(f.Tasks) != 3 || f.Lines[2] != 10 {
		t.Errorf("tasks %d, lines %v", len(f.Tasks), f.Lines)
	}
	// Without needs, no plan.
	f, err = Parse("tasks.yaml", []byte("tasks:\n  - {id: a, title: A, description: a}\n"))
	if err != nil || f.Plan != nil {
		t.Errorf("a file without needs: %v, plan %+v", err, f.Plan)
	}
}

func TestNeedsErrors(t *testing.T) {
	for name, c := range map[string]struct{ src, want string }{
		"unknown need": {"tasks:\n  - {id: a, title: A, description: a}\n  - {id: b, title: B, description: b, needs: [c]}\n",
			`plan.yaml:3:39: tasks[1].needs: step "b" needs "c", which is not a step of this plan`},
		"circle": {"tasks:\n  - {id: a, title: A, description: a, needs: [b]}\n  - {id: b, title: B, description: b, needs: [a]}\n",
			"plan.yaml:2:39: tasks[0].needs: the steps need each other in a circle, so none of them could start: a → b → a"},
		"same id": {"tasks:\n  - {id: a, title: A, description: a}\n  - {id: a, title: B, description: b, needs: [a]}\n",
			`tasks[1].id: steps 1 and 2 are both called "a"`},
		"a field a step cannot carry": {"tasks:\n  - {id: a, title: A, description: a}\n  - {id: b, title: B, description: b, needs: [a], model: opus}\n",
			"plan.yaml:3:51: tasks[1].model: a tasks file whose tasks have needs runs as a plan"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("plan.yaml", []byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v\nwant %s", err, c.want)
			}
		})
	}
}
