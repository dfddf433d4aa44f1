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

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/workspace"
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
	return func(x note) bool {
		if x.method != protocol.NotifyPlanUpdated {
			return false
		}
		var n protocol.PlanUpdatedNotification
		return json.Unmarshal(x.params, &n) == nil && n.Plan.ID == id && n.Plan.State == state
	}
}

// stepNote matches a plan/updated whose step is in state.
func stepNote(id, step string, state protocol.PlanStepState) func(note) bool {
	return func(x note) bool {
		if x.method != protocol.NotifyPlanUpdated {
			return false
		}
		var n protocol.PlanUpdatedNotification
		return json.Unmarshal(x.params, &n) == nil && n.Plan.ID == id && stepOf(&n.Plan, step).State == state
	}
}

func lastPlan(t testing.TB, e *env, id string) *protocol.Plan {
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

// Issue 39: a plan survives familiar's restart. Step m merged before the
// stop; step a was waiting on a question, which the stop interrupted: the
// familiar that starts again resumes a in its worktree and session (not a
// new attempt), the person answers, and b, which needs both, runs and
// merges. main ends with all three.
func TestPlanSurvivesARestart(t *testing.T) {
	claude := testenv.Claude(t)
	api := fakeapi.Start(planScript(nil))
	defer api.Close()
	repo, dataDir, wtRoot, home := gitRepo(t), t.TempDir(), t.TempDir(), t.TempDir()
	openWS := func(n *notes) *workspace.Workspace {
		ws, err := workspace.Open(context.Background(), repo, workspace.Options{
			DataDir: dataDir, WorktreesRoot: wtRoot, ClaudePath: claude, Notifier: n,
			StartHook: func(ctx context.Context, o *agent.Options) {
				o.ExtraEnv = api.Env()
				o.ExtraEnv["HOME"] = home
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	n1 := &notes{changed: make(chan struct{})}
	ws := openWS(n1)
	ctx := context.Background()
	if _, err := ws.Orch.UpdateSettings(ctx, &protocol.SettingsUpdate{AgentNice: intp(0),
		PermissionPolicy: &protocol.Policy{Default: protocol.PolicyAsk, Allow: []string{"Bash(touch:*)"}}}); err != nil {
		t.Fatal(err)
	}
	steps := []protocol.PlanStepSpec{
		{ID: "m", Title: "Merged before", Description: writes("touch m.txt", "")},
		{ID: "a", Title: "Asks", Description: writeFile("a.txt", "a\n")},
		{ID: "b", Title: "After both", Needs: []string{"m", "a"}, Description: writes("touch b.txt", "")},
	}
	verify := ""
	p, err := ws.Orch.PlanCreate(ctx, &protocol.PlanCreateParams{Steps: steps, Verify: &verify, Run: true})
	if err != nil {
		t.Fatal(err)
	}
	n1.wait(t, "m merged", stepNote(p.ID, "m", protocol.StepMerged))
	n1.wait(t, "a asks", func(x note) bool { return x.method == protocol.NotifyTaskQuestion })
	before, _ := ws.Orch.PlanGet(ctx, &protocol.PlanIDParams{ID: p.ID})
	aTask := stepOf(before, "a").TaskID
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}

	n2 := &notes{changed: make(chan struct{})}
	ws = openWS(n2)
	defer ws.Close()
	// The resumed claude may ask its question again (its transcript has
	// no end of that call), or go on: answered either way.
	answered := map[string]bool{}
	for {
		x := n2.wait(t, "a asked again, or the plan done", func(x note) bool {
			if is(protocol.NotifyTaskQuestion, aTask)(x) {
				var qn protocol.TaskQuestionNotification
				json.Unmarshal(x.params, &qn)
				return !answered[qn.Question.ID]
			}
			return planNote(p.ID, protocol.PlanDone)(x) || planNote(p.ID, protocol.PlanHeld)(x)
		})
		if x.method != protocol.NotifyTaskQuestion {
			break
		}
		var qn protocol.TaskQuestionNotification
		json.Unmarshal(x.params, &qn)
		answered[qn.Question.ID] = true
		if _, err := ws.Orch.TaskRespond(ctx, &protocol.TaskRespondParams{ID: aTask, QuestionID: qn.Question.ID, OptionID: protocol.OptionAllow}); err != nil {
			t.Logf("answer: %v", err)
		}
	}
	// The scripted model does not write again in a resumed session whose
	// call was cut: the resumed task ends having changed nothing, which
	// must not pass for done. The plan holds b, saying why; the person
	// retries a, and the plan goes on.
	done, _ := ws.Orch.PlanGet(ctx, &protocol.PlanIDParams{ID: p.ID})
	if done.State == protocol.PlanHeld {
		if s := stepOf(done, "a"); s.State != protocol.StepFailed || !strings.Contains(s.Why, "changed nothing") || s.TaskID != aTask {
			t.Fatalf("a after the restart: %+v", s)
		}
		if s := stepOf(done, "b"); s.State != protocol.StepHeld || s.TaskID != "" {
			t.Fatalf("b ran on an a that changed nothing: %+v", s)
		}
		if _, err := ws.Orch.PlanRetry(ctx, &protocol.PlanStepParams{ID: p.ID, Step: "a"}); err != nil {
			t.Fatal(err)
		}
		n2.wait(t, "the plan done", func(x note) bool {
			if is(protocol.NotifyTaskQuestion)(x) && !strings.Contains(string(x.params), aTask) {
				var qn protocol.TaskQuestionNotification
				json.Unmarshal(x.params, &qn)
				if !answered[qn.Question.ID] {
					answered[qn.Question.ID] = true
					go ws.Orch.TaskRespond(ctx, &protocol.TaskRespondParams{ID: qn.ID, QuestionID: qn.Question.ID, OptionID: protocol.OptionAllow})
				}
			}
			return planNote(p.ID, protocol.PlanDone)(x)
		})
		done, _ = ws.Orch.PlanGet(ctx, &protocol.PlanIDParams{ID: p.ID})
	} else if s := stepOf(done, "a"); s.Attempts != 1 || s.TaskID != aTask {
		t.Errorf("a was not resumed but started again: %+v", s)
	}
	if done.State != protocol.PlanDone {
		t.Fatalf("the plan is %s: %s", done.State, done.Why)
	}
	for _, f := range []string{"m.txt", "a.txt", "b.txt"} {
		if _, err := gitOut(repo, "cat-file", "-e", "main:"+f); err != nil {
			t.Errorf("main has no %s", f)
		}
	}
	entries, _, err := ws.Store.Audit(storeAuditFilter(aTask))
	if err != nil {
		t.Fatal(err)
	}
	resumed := false
	for _, en := range entries {
		resumed = resumed || en.Action == "plan.stepResumed"
	}
	if !resumed {
		t.Error("no plan.stepResumed in the audit")
	}
}

// Issue 39: plan/cancel while a step works and another waits on it: the
// working step's task is cancelled (its worktree kept), the waiting one
// never starts, main is untouched; plan/update and plan/run are refused in
// words afterwards, naming the plan's state.
func TestPlanCancelStopsItsSteps(t *testing.T) {
	e := openQueue(t, 60)
	ctx := context.Background()
	base := gitIn(t, e.repo, "rev-parse", "main")
	steps := []protocol.PlanStepSpec{
		// The scripted model takes a minute to answer: the step is at work.
		{ID: "slow", Title: "Slow", Description: "go\n@@DELAY 60s\n@@TEXT Late."},
		{ID: "after", Title: "After", Needs: []string{"slow"}, Description: writes("touch after.txt", "")},
	}
	p, err := e.o.PlanCreate(ctx, &protocol.PlanCreateParams{Steps: steps, Run: true})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "slow started", stepNote(p.ID, "slow", protocol.StepRunning))
	slowID := stepOf(lastPlan(t, e, p.ID), "slow").TaskID
	e.notes.wait(t, "slow at work", statusIs(slowID, protocol.StatusRunning))
	got, err := e.o.PlanCancel(ctx, &protocol.PlanIDParams{ID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.State != protocol.PlanCancelled || stepOf(got, "after").State != protocol.StepCancelled || stepOf(got, "after").TaskID != "" {
		t.Fatalf("after plan/cancel: %s %+v", got.State, got.Steps)
	}
	slow := e.get(t, stepOf(got, "slow").TaskID)
	if slow.Status != protocol.StatusCancelled && slow.Status != protocol.StatusBlocked {
		t.Errorf("the slow step's task is %s", slow.Status)
	}
	if now := gitIn(t, e.repo, "rev-parse", "main"); now != base {
		t.Errorf("main moved to %s", now)
	}
	if _, err := e.o.PlanRun(ctx, &protocol.PlanIDParams{ID: p.ID}); err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("plan/run of a cancelled plan: %v", err)
	}
	if _, err := e.o.PlanUpdate(ctx, &protocol.PlanUpdateParams{ID: p.ID, Steps: steps}); err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("plan/update of a cancelled plan: %v", err)
	}
	if _, err := e.o.PlanGet(ctx, &protocol.PlanIDParams{ID: "pnope"}); err == nil || !strings.Contains(err.Error(), `No plan with id "pnope"`) {
		t.Errorf("plan/get of an unknown plan: %v", err)
	}
}
