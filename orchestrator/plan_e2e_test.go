package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/protocol"
)

// planScript answers the architect of a plan from the ANSWER: line of its
// goal (answers[name]), a step from its @@ directives, and the merge
// queue's hand-backs as queueScript does.
func planScript(answers map[string]string) fakeapi.Script {
	steps := queueScript()
	return func(req fakeapi.Request) fakeapi.Reply {
		if req.IsSideRequest() || !strings.Contains(req.LastUserText(), "Plan this goal for familiar") {
			return steps(req)
		}
		for _, line := range strings.Split(req.LastUserText(), "\n") {
			if name, ok := strings.CutPrefix(line, "ANSWER: "); ok {
				return fakeapi.Reply{Text: answers[strings.TrimSpace(name)]}
			}
		}
		return fakeapi.Reply{Text: "I am not sure what to do."}
	}
}

// writeFile is a step's script: its agent writes path with content.
func writeFile(path, content string) string {
	b, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
	return "go\n@@TOOL Write " + string(b) + "\n@@TEXT Wrote " + path + "."
}

func planNote(id string, state protocol.PlanState) func(note) bool {
	return is(protocol.NotifyPlanUpdated, `"id":"`+id+`"`, `"state":"`+string(state)+`"`)
}

func lastPlan(t *testing.T, e *env, id string) *protocol.Plan {
	t.Helper()
	p, err := e.o.PlanGet(context.Background(), &protocol.PlanIDParams{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func stepOf(p *protocol.Plan, id string) protocol.PlanStep {
	for _, s := range p.Steps {
		if s.ID == id {
			return s
		}
	}
	return protocol.PlanStep{}
}

// goRepo is a repository whose checks really depend on the steps' order:
// the verify command compiles and tests a Go module.
func goRepo(t *testing.T, e *env) {
	t.Helper()
	os.WriteFile(filepath.Join(e.repo, "go.mod"), []byte("module plandemo\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(e.repo, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	gitIn(t, e.repo, "add", "-A")
	gitIn(t, e.repo, "commit", "-qm", "a Go module")
}

// Issue 39: a plan of five steps with two levels of needs, on a repository
// whose steps depend on each other (C calls the function A adds, D A's and
// B's, E tests them all; the verify command builds and tests the module):
// A and B run at once; C starts only after A merged, from a base that has
// A's code; D after A and B; E last; main ends with all five, verified;
// plan/undo puts main back, and every task's change is its own.
func TestPlanRunsAGraphAndUndoes(t *testing.T) {
	three := 3
	e := openQueueWith(t, &protocol.SettingsUpdate{MaxConcurrent: &three})
	goRepo(t, e)
	ctx := context.Background()
	base := gitIn(t, e.repo, "rev-parse", "main")
	verify := "go vet ./... && go test ./..."
	steps := []protocol.PlanStepSpec{
		{ID: "a", Title: "Add Greet", Description: writeFile("a.go", "package main\n\nfunc Greet() string { return \"hi\" }\n"), Files: []string{"a.go"}},
		{ID: "b", Title: "Add Name", Description: writeFile("b.go", "package main\n\nfunc Name() string { return \"familiar\" }\n")},
		{ID: "c", Title: "Add Hello", Needs: []string{"a"}, Description: writeFile("c.go", "package main\n\nfunc Hello() string { return Greet() + \"!\" }\n")},
		{ID: "d", Title: "Add Both", Needs: []string{"a", "b"}, Description: writeFile("d.go", "package main\n\nfunc Both() string { return Greet() + \" \" + Name() }\n")},
		{ID: "e", Title: "Test them", Needs: []string{"c", "d"}, Description: writeFile("e_test.go",
			"package main\n\nimport \"testing\"\n\nfunc TestAll(t *testing.T) {\n\tif got := Hello() + Both(); got != \"hi!hi familiar\" {\n\t\tt.Fatal(got)\n\t}\n}\n")},
	}
	p, err := e.o.PlanCreate(ctx, &protocol.PlanCreateParams{Steps: steps, Verify: &verify})
	if err != nil {
		t.Fatal(err)
	}
	if p.State != protocol.PlanDraft || p.BaseRef != "main" {
		t.Fatalf("created plan: %s on %q", p.State, p.BaseRef)
	}
	if _, err := e.o.PlanRun(ctx, &protocol.PlanIDParams{ID: p.ID}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "the plan done", func(n note) bool {
		return planNote(p.ID, protocol.PlanDone)(n) || planNote(p.ID, protocol.PlanHeld)(n)
	})
	done := lastPlan(t, e, p.ID)
	if done.State != protocol.PlanDone {
		t.Fatalf("plan %s: %s\n%+v", done.State, done.Why, done.Steps)
	}
	tasks := map[string]*protocol.Task{}
	for _, s := range done.Steps {
		if s.State != protocol.StepMerged || s.Merge == nil {
			t.Errorf("step %s: %s %s", s.ID, s.State, s.Why)
			continue
		}
		tasks[s.ID] = e.get(t, s.TaskID)
	}
	if t.Failed() {
		t.FailNow()
	}
	mergedAt := func(id string) time.Time { return stepOf(done, id).MergedAt }
	// A and B ran at once: each started before the other merged.
	if !tasks["a"].StartedAt.Before(mergedAt("b")) || !tasks["b"].StartedAt.Before(mergedAt("a")) {
		t.Errorf("A and B did not run at once: A %v–%v, B %v–%v", tasks["a"].StartedAt, mergedAt("a"), tasks["b"].StartedAt, mergedAt("b"))
	}
	// Each dependent was created after its needs merged, from a base with
	// their code.
	for step, needs := range map[string][]string{"c": {"a"}, "d": {"a", "b"}, "e": {"c", "d"}} {
		task := tasks[step]
		for _, n := range needs {
			if task.CreatedAt.Before(mergedAt(n)) {
				t.Errorf("%s was created at %v, before %s merged at %v", step, task.CreatedAt, n, mergedAt(n))
			}
			file := n + ".go"
			if _, err := gitOut(e.repo, "cat-file", "-e", task.Worktree.BaseCommit+":"+file); err != nil {
				t.Errorf("%s's base %s has no %s", step, task.Worktree.BaseCommit, file)
			}
		}
	}
	for _, f := range []string{"a.go", "b.go", "c.go", "d.go", "e_test.go"} {
		if _, err := gitOut(e.repo, "cat-file", "-e", "main:"+f); err != nil {
			t.Errorf("main has no %s", f)
		}
	}
	if tt := done.Totals; tt.WallMs <= 0 || tt.WorkMs <= 0 || tt.WorkMs < stepOf(done, "a").DurationMs {
		t.Errorf("totals = %+v", tt)
	}
	if !strings.Contains(done.Why, "5 steps merged into main") {
		t.Errorf("done plan says %q", done.Why)
	}

	undone, err := e.o.PlanUndo(ctx, &protocol.PlanIDParams{ID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	if undone.State != protocol.PlanUndone {
		t.Errorf("after plan/undo: %s %s", undone.State, undone.Why)
	}
	if now := gitIn(t, e.repo, "rev-parse", "main"); now != base {
		t.Errorf("main after plan/undo = %s, want %s", now, base)
	}
	for _, s := range undone.Steps {
		task := e.get(t, s.TaskID)
		files := gitIn(t, e.repo, "diff", "--name-only", task.Worktree.BaseCommit, task.Worktree.Branch)
		if want := map[string]string{"e": "e_test.go"}[s.ID]; want == "" && files != s.ID+".go" || want != "" && files != want {
			t.Errorf("step %s's change after plan/undo: %q", s.ID, files)
		}
		if s.State != protocol.StepUndone {
			t.Errorf("step %s after plan/undo: %s", s.ID, s.State)
		}
	}
}

func gitOut(dir string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Issue 39: a step set aside by the merge queue (its verify fails, its
// agent finds nothing to fix): the step that needs it waits and says why,
// an independent step still merges; the person edits the step and retries
// it, and the rest goes on to the end.
func TestPlanStepSetAsideHoldsItsDependents(t *testing.T) {
	e := openQueue(t, 60)
	ctx := context.Background()
	verify := "test ! -e bad.txt"
	steps := []protocol.PlanStepSpec{
		{ID: "good", Title: "Independent", Description: writes(`printf 'g\n' > good.txt`, "")},
		{ID: "bad", Title: "Fails its checks", Description: writes(`printf 'b\n' > bad.txt`, "")},
		{ID: "after", Title: "Needs the bad one", Needs: []string{"bad"}, Description: writes(`printf 'a\n' > after.txt`, "")},
	}
	p, err := e.o.PlanCreate(ctx, &protocol.PlanCreateParams{Steps: steps, Verify: &verify, Run: true})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "the plan held", planNote(p.ID, protocol.PlanHeld))
	held := lastPlan(t, e, p.ID)
	if s := stepOf(held, "good"); s.State != protocol.StepMerged {
		t.Errorf("the independent step: %s %s", s.State, s.Why)
	}
	if s := stepOf(held, "bad"); s.State != protocol.StepFailed || !strings.Contains(s.Why, "merge queue set it aside") {
		t.Errorf("the failing step: %s %q", s.State, s.Why)
	}
	if s := stepOf(held, "after"); s.State != protocol.StepHeld || !strings.Contains(s.Why, `"bad" failed`) || s.TaskID != "" {
		t.Errorf("its dependent: %s %q (task %q)", s.State, s.Why, s.TaskID)
	}
	if !strings.Contains(held.Why, "retry, edit or skip") {
		t.Errorf("the held plan says %q", held.Why)
	}
	// Retrying a step that has not failed is refused in words.
	if _, err := e.o.PlanRetry(ctx, &protocol.PlanStepParams{ID: p.ID, Step: "good"}); err == nil || !strings.Contains(err.Error(), "only a failed") {
		t.Errorf("retry of a merged step: %v", err)
	}
	// The person edits the failed step and retries it.
	fixed := slices.Clone(steps)
	fixed[1].Description = writes(`printf 'b\n' > fine.txt`, "")
	if _, err := e.o.PlanUpdate(ctx, &protocol.PlanUpdateParams{ID: p.ID, Steps: fixed}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.o.PlanRetry(ctx, &protocol.PlanStepParams{ID: p.ID, Step: "bad"}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "the plan done", planNote(p.ID, protocol.PlanDone))
	done := lastPlan(t, e, p.ID)
	if s := stepOf(done, "bad"); s.Attempts != 2 || len(s.TaskIDs) != 2 || s.State != protocol.StepMerged {
		t.Errorf("the retried step: %+v", s)
	}
	for _, f := range []string{"good.txt", "fine.txt", "after.txt"} {
		if _, err := os.Stat(filepath.Join(e.repo, f)); err != nil {
			t.Errorf("main's checkout has no %s", f)
		}
	}
	if _, err := os.Stat(filepath.Join(e.repo, "bad.txt")); err == nil {
		t.Error("main has bad.txt")
	}
}

// Issue 39: an architect whose plan is malformed (a cycle, a need that
// names no step) or who writes no plan at all: the plan is a draft that
// says what is wrong, naming the step and field, and cannot run; the person
// fixes it with plan/update and runs it.
func TestPlanFromAnArchitectThatGetsItWrong(t *testing.T) {
	indent := func(s string) string { return "      " + strings.ReplaceAll(s, "\n", "\n      ") }
	bad := "Here is the plan.\n```familiar-plan\nsteps:\n" +
		"  - id: one\n    title: One\n    needs: [two]\n    description: |\n" + indent(writes(`printf '1\n' > one.txt`, "")) + "\n" +
		"  - id: two\n    title: Two\n    needs: [one, three]\n    description: |\n" + indent(writes(`printf '2\n' > two.txt`, "")) + "\n" +
		"```"
	e := openWith(t, nil, &protocol.SettingsUpdate{PermissionPolicy: &protocol.Policy{Default: protocol.PolicyAllow}},
		planScript(map[string]string{"bad": bad, "none": "I would rather not plan this; it is too vague."}))
	ctx := context.Background()

	// No plan at all: said, and nothing runs.
	vague, err := e.o.PlanCreate(ctx, &protocol.PlanCreateParams{Goal: "make it better\nANSWER: none"})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "the vague plan drafted", planNote(vague.ID, protocol.PlanDraft))
	if got := lastPlan(t, e, vague.ID); len(got.Problems) != 1 || !strings.Contains(got.Problems[0].Message, "no ```familiar-plan block") {
		t.Errorf("a plan without a block: %+v", got.Problems)
	}
	if _, err := e.o.PlanRun(ctx, &protocol.PlanIDParams{ID: vague.ID}); err == nil {
		t.Error("a plan with no steps ran")
	}

	p, err := e.o.PlanCreate(ctx, &protocol.PlanCreateParams{Goal: "two files\nANSWER: bad"})
	if err != nil {
		t.Fatal(err)
	}
	if p.State != protocol.PlanDrafting || p.ArchitectTaskID == "" {
		t.Fatalf("plan/create with a goal: %+v", p)
	}
	if arch := e.get(t, p.ArchitectTaskID); arch.Mode != protocol.ModeArchitect {
		t.Errorf("the architect's task is in mode %s", arch.Mode)
	}
	e.notes.wait(t, "the plan drafted", planNote(p.ID, protocol.PlanDraft))
	draft := lastPlan(t, e, p.ID)
	var said []string
	for _, pr := range draft.Problems {
		said = append(said, pr.Step+"."+pr.Field+": "+pr.Message)
	}
	all := strings.Join(said, "\n")
	if !strings.Contains(all, `two.needs: step "two" needs "three", which is not a step of this plan`) ||
		!strings.Contains(all, "one.needs: the steps need each other in a circle, so none of them could start: one → two → one") {
		t.Errorf("problems:\n%s", all)
	}
	_, err = e.o.PlanRun(ctx, &protocol.PlanIDParams{ID: p.ID})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams || !fieldIs(pe, "steps[1].needs") {
		t.Errorf("plan/run of the malformed plan: %v", err)
	}
	// The same mistakes through plan/update are refused in the same words.
	steps := make([]protocol.PlanStepSpec, len(draft.Steps))
	for i, s := range draft.Steps {
		steps[i] = s.PlanStepSpec
	}
	if _, err := e.o.PlanUpdate(ctx, &protocol.PlanUpdateParams{ID: p.ID, Steps: steps}); err == nil || !strings.Contains(err.Error(), "circle") {
		t.Errorf("plan/update with the cycle: %v", err)
	}
	steps[0].Needs = nil
	steps[1].Needs = []string{"one"}
	if _, err := e.o.PlanUpdate(ctx, &protocol.PlanUpdateParams{ID: p.ID, Steps: steps}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.o.PlanRun(ctx, &protocol.PlanIDParams{ID: p.ID}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "the fixed plan done", planNote(p.ID, protocol.PlanDone))
	if got := gitIn(t, e.repo, "show", "main:two.txt"); got != "2" {
		t.Errorf("main:two.txt = %q", got)
	}
}

func fieldIs(e *protocol.Error, field string) bool {
	d, ok := e.Data.(*protocol.ErrorData)
	return ok && d.Field == field
}
