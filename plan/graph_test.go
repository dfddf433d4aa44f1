package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// fivePlan is issue 39's plan: A and B independent; C needs A; D needs A
// and B; E needs C and D.
func fivePlan() protocol.Plan {
	p := protocol.Plan{ID: "p1", State: protocol.PlanRunning, BaseRef: "main", StartedAt: t0}
	for _, s := range []protocol.PlanStepSpec{spec("a"), spec("b"), spec("c", "a"), spec("d", "a", "b"), spec("e", "c", "d")} {
		p.Steps = append(p.Steps, protocol.PlanStep{PlanStepSpec: s, State: protocol.StepPending})
	}
	return p
}

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// world is a plan's tasks: step id → status (the task id is "t-"+step).
type world map[string]Task

func (w world) of() World {
	out := World{Now: t0.Add(time.Minute), Tasks: map[string]Task{}}
	for step, t := range w {
		out.Tasks["t-"+step] = t
	}
	return out
}

// started marks steps as having tasks.
func started(p protocol.Plan, steps ...string) protocol.Plan {
	for _, id := range steps {
		for i := range p.Steps {
			if p.Steps[i].ID == id {
				p.Steps[i].TaskID = "t-" + id
				p.Steps[i].TaskIDs = []string{"t-" + id}
				p.Steps[i].State = protocol.StepRunning
			}
		}
	}
	return p
}

func states(p protocol.Plan) string {
	var b []string
	for _, s := range p.Steps {
		b = append(b, s.ID+"="+string(s.State))
	}
	return strings.Join(b, " ")
}

func actionsOf(as []Action) string {
	var b []string
	for _, a := range as {
		switch a := a.(type) {
		case StartStep:
			b = append(b, "start "+a.Step)
		case Integrate:
			b = append(b, "merge "+strings.Join(a.Steps, ","))
		case ResumeStep:
			b = append(b, "resume "+a.Step)
		}
	}
	return strings.Join(b, "; ")
}

func why(p protocol.Plan, id string) string {
	for _, s := range p.Steps {
		if s.ID == id {
			return s.Why
		}
	}
	return ""
}

func TestDecideRunsTheGraph(t *testing.T) {
	running := Task{Status: protocol.StatusRunning}
	ready := Task{Status: protocol.StatusMerging}
	merged := Task{Status: protocol.StatusMerged}
	steps := []struct {
		name    string
		plan    protocol.Plan
		w       world
		queue   bool
		states  string
		actions string
		state   protocol.PlanState
	}{
		{"fresh: the independent steps start at once", fivePlan(), world{}, false,
			"a=pending b=pending c=pending d=pending e=pending", "start a; start b", protocol.PlanRunning},
		{"A and B at work", started(fivePlan(), "a", "b"), world{"a": running, "b": running}, false,
			"a=running b=running c=pending d=pending e=pending", "", protocol.PlanRunning},
		{"A ready: into the merge queue", started(fivePlan(), "a", "b"), world{"a": ready, "b": running}, false,
			"a=ready b=running c=pending d=pending e=pending", "merge a", protocol.PlanRunning},
		{"A ready while a queue runs: into it (joined, or once it ends)", started(fivePlan(), "a", "b"), world{"a": ready, "b": running}, true,
			"a=ready b=running c=pending d=pending e=pending", "merge a", protocol.PlanRunning},
		{"A merged: C starts, D still waits for B", started(fivePlan(), "a", "b"), world{"a": merged, "b": running}, false,
			"a=merged b=running c=pending d=pending e=pending", "start c", protocol.PlanRunning},
		{"A, B merged: D starts too", started(fivePlan(), "a", "b", "c"), world{"a": merged, "b": merged, "c": running}, false,
			"a=merged b=merged c=running d=pending e=pending", "start d", protocol.PlanRunning},
		{"C and D ready together: one queue", started(fivePlan(), "a", "b", "c", "d"), world{"a": merged, "b": merged, "c": ready, "d": ready}, false,
			"a=merged b=merged c=ready d=ready e=pending", "merge c,d", protocol.PlanRunning},
		{"all merged: done", started(fivePlan(), "a", "b", "c", "d", "e"), world{"a": merged, "b": merged, "c": merged, "d": merged, "e": merged}, false,
			"a=merged b=merged c=merged d=merged e=merged", "", protocol.PlanDone},
		{"an auditor's step with nothing to merge lets its dependents go", auditor(started(fivePlan(), "a", "b")), world{"a": {Status: protocol.StatusMerging, NoChanges: true}, "b": running}, false,
			"a=done b=running c=pending d=pending e=pending", "start c", protocol.PlanRunning},
		{"an executor that changed nothing (it gave up) holds its dependents", started(fivePlan(), "a", "b"), world{"a": {Status: protocol.StatusMerging, NoChanges: true, LastWords: "Nothing to do."}, "b": running}, false,
			"a=failed b=running c=held d=held e=held", "", protocol.PlanRunning},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			w := s.w.of()
			w.QueueRunning = s.queue
			got, actions := Decide(s.plan, w)
			if states(got) != s.states {
				t.Errorf("states = %s\nwant     %s", states(got), s.states)
			}
			if actionsOf(actions) != s.actions {
				t.Errorf("actions = %q, want %q", actionsOf(actions), s.actions)
			}
			if got.State != s.state {
				t.Errorf("plan is %s (%s), want %s", got.State, got.Why, s.state)
			}
		})
	}
}

func TestDecideHoldsDependentsOfAFailedStep(t *testing.T) {
	setAside := Task{Status: protocol.StatusBlocked, Blocked: &protocol.Blocked{Reason: protocol.BlockedMerge, Detail: "its verify command failed twice"}}
	p := started(fivePlan(), "a", "b")
	got, actions := Decide(p, world{"a": {Status: protocol.StatusMerged}, "b": setAside}.of())
	if states(got) != "a=merged b=failed c=pending d=held e=held" || actionsOf(actions) != "start c" {
		t.Fatalf("states = %s, actions %q", states(got), actionsOf(actions))
	}
	if w := why(got, "b"); !strings.Contains(w, "merge queue set it aside") || !strings.Contains(w, "verify command failed") {
		t.Errorf("b's why = %q", w)
	}
	if w := why(got, "d"); !strings.Contains(w, `"b" failed`) {
		t.Errorf("d's why = %q", w)
	}
	if got.State != protocol.PlanRunning || !strings.Contains(got.Why, `"b"`) {
		t.Errorf("plan = %s %q: the independent step goes on, and the plan says b failed", got.State, got.Why)
	}
	// C merged: nothing can move; the plan is held and says what to do.
	got = started(got, "c")
	got, actions = Decide(got, world{"a": {Status: protocol.StatusMerged}, "b": setAside, "c": {Status: protocol.StatusMerged}}.of())
	if states(got) != "a=merged b=failed c=merged d=held e=held" || len(actions) > 0 {
		t.Fatalf("states = %s, actions %q", states(got), actionsOf(actions))
	}
	if got.State != protocol.PlanHeld || !strings.Contains(got.Why, "retry, edit or skip") || !strings.Contains(got.Why, `"d"`) {
		t.Errorf("plan = %s %q", got.State, got.Why)
	}
	// Skipping b holds d with a question; skipping d lets e's needs... be held too.
	got.Steps[1].State = protocol.StepSkipped
	got, _ = Decide(got, world{"a": {Status: protocol.StatusMerged}, "c": {Status: protocol.StatusMerged}}.of())
	if w := why(got, "d"); !strings.Contains(w, `"b" was skipped: run it without "b" (edit its needs) or skip it too`) {
		t.Errorf("d's why after b was skipped = %q", w)
	}
}

func TestDecideSaysATaskGoneOrCancelled(t *testing.T) {
	p := started(fivePlan(), "a", "b")
	got, _ := Decide(p, world{"b": {Status: protocol.StatusCancelled}}.of())
	if states(got) != "a=failed b=failed c=held d=held e=held" || got.State != protocol.PlanHeld {
		t.Fatalf("states = %s, plan %s", states(got), got.State)
	}
	if !strings.Contains(why(got, "a"), "removed") || !strings.Contains(why(got, "b"), "cancelled") {
		t.Errorf("whys: %q, %q", why(got, "a"), why(got, "b"))
	}
}

func TestDecideCountsTimeTokensAndCost(t *testing.T) {
	p := started(fivePlan(), "a", "b")
	p.Steps[0].TaskIDs = []string{"t-old", "t-a"} // a retried once
	w := world{"a": {Status: protocol.StatusRunning, StartedAt: t0, Tokens: 100, CostUSD: 0.5},
		"b": {Status: protocol.StatusMerged, StartedAt: t0, FinishedAt: t0.Add(20 * time.Second), Tokens: 7, CostUSD: 0.25}}.of()
	w.Tasks["t-old"] = Task{Status: protocol.StatusBlocked, StartedAt: t0, FinishedAt: t0.Add(10 * time.Second), Tokens: 1, CostUSD: 0.125}
	got, _ := Decide(p, w)
	if s := got.Steps[0]; s.DurationMs != 10_000 || s.Tokens != 101 || s.CostUSD != 0.625 {
		t.Errorf("a: %d ms, %d tokens, $%v", s.DurationMs, s.Tokens, s.CostUSD)
	}
	if tt := got.Totals; tt.WallMs != 0 || tt.WorkMs != 30_000 || tt.Tokens != 108 || tt.CostUSD != 0.875 {
		t.Errorf("totals = %+v", tt)
	}
}

func TestDecideLeavesOtherPlansAlone(t *testing.T) {
	for _, s := range []protocol.PlanState{protocol.PlanDraft, protocol.PlanDone, protocol.PlanCancelled, protocol.PlanUndone} {
		p := fivePlan()
		p.State = s
		if _, actions := Decide(p, World{}); len(actions) > 0 {
			t.Errorf("%s plan: %s", s, actionsOf(actions))
		}
	}
	_ = fmt.Sprint
}

func TestHeightStartsTheCriticalPathFirst(t *testing.T) {
	p := fivePlan()
	got := fmt.Sprint(height(p, "a"), height(p, "b"), height(p, "c"), height(p, "e"))
	if got != "2 2 1 0" {
		t.Errorf("heights a b c e = %s", got)
	}
}

// A familiar that stopped while steps worked resumes them once when it
// starts again; a step interrupted again after that has failed.
func TestDecideResumesAStepFamiliarInterrupted(t *testing.T) {
	stopped := Task{Status: protocol.StatusBlocked, Blocked: &protocol.Blocked{Reason: protocol.BlockedInterrupted, Detail: "familiar stopped"}}
	p := started(fivePlan(), "a", "b")
	got, actions := Decide(p, world{"a": stopped, "b": {Status: protocol.StatusMerged}}.of())
	if actionsOf(actions) != "resume a" || states(got) != "a=running b=merged c=pending d=pending e=pending" {
		t.Fatalf("states = %s, actions %q", states(got), actionsOf(actions))
	}
	w := world{"a": stopped, "b": {Status: protocol.StatusMerged}}.of()
	w.Resumed = map[string]bool{"t-a": true}
	got, actions = Decide(p, w)
	if len(actions) > 0 || stepOf(got, "a").State != protocol.StepFailed || got.State != protocol.PlanHeld {
		t.Errorf("interrupted again: states = %s, actions %q, plan %s", states(got), actionsOf(actions), got.State)
	}
}

func stepOf(p protocol.Plan, id string) protocol.PlanStep {
	for _, s := range p.Steps {
		if s.ID == id {
			return s
		}
	}
	return protocol.PlanStep{}
}

func auditor(p protocol.Plan) protocol.Plan {
	p.Steps[0].Mode = protocol.ModeAuditor
	return p
}

func TestDecideSaysWhatAnAgentThatGaveUpSaid(t *testing.T) {
	got, _ := Decide(started(fivePlan(), "a"), world{"a": {Status: protocol.StatusMerging, NoChanges: true, LastWords: "I could not find\nthe file."}}.of())
	if w := why(got, "a"); !strings.Contains(w, "changed nothing") || !strings.Contains(w, "(it said: I could not find the file.)") {
		t.Errorf("why = %q", w)
	}
}
