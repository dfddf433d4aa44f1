package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// Task is what the plan reads of one of its tasks.
type Task struct {
	Status    protocol.Status
	NoChanges bool
	// LastWords are the start of the agent's last message (its summary).
	LastWords string
	Blocked   *protocol.Blocked
	// Queue is the task's item in the running merge queue, when it is in
	// one that has not finished with it.
	Queue protocol.QueueItemState
	// Merge is the base's commits around its merge (merged tasks).
	Merge    *protocol.QueueMerge
	MergedAt time.Time

	StartedAt, FinishedAt time.Time
	Tokens                int64
	CostUSD               float64
}

// World is what Decide knows of everything outside the plan.
type World struct {
	Now time.Time
	// Tasks are the plan's tasks by id (every attempt's, the architect's);
	// a task not here has been removed.
	Tasks map[string]Task
	// QueueRunning: a merge queue runs (the plan's or anyone's): the
	// plan's ready steps join it when it merges as they do, else wait for
	// its end (the Planner's Integrate decides).
	QueueRunning bool
	// Resumed are the tasks the Planner already resumed after familiar
	// stopped while they worked: one that is interrupted again failed.
	Resumed map[string]bool
}

// Action is what Decide asks the Planner to do.
type Action interface{ isAction() }

// StartStep: create the step's task (its needs are all merged, so it
// starts from a base that has their work).
type StartStep struct{ Step string }

// Integrate: merge these steps' tasks through the merge queue.
type Integrate struct{ Steps, TaskIDs []string }

// ResumeStep: familiar stopped while the step's task worked; it goes on in
// its worktree and session, as the person asked when they ran the plan.
type ResumeStep struct{ Step, TaskID string }

func (StartStep) isAction()  {}
func (Integrate) isAction()  {}
func (ResumeStep) isAction() {}

// inQueue: a queue item state in which the queue still owns the task.
func inQueue(s protocol.QueueItemState) bool {
	switch s {
	case protocol.QueueItemWaiting, protocol.QueueItemUpdating, protocol.QueueItemVerifying, protocol.QueueItemMerging, protocol.QueueItemHandedBack:
		return true
	}
	return false
}

// Decide is the plan's one transition: given the plan (running or held)
// and what its tasks say, each step's state, the plan's, and what to do
// next. It is pure: the Planner does what it returns and calls it again
// when anything changes.
func Decide(p protocol.Plan, w World) (protocol.Plan, []Action) {
	if p.State != protocol.PlanRunning && p.State != protocol.PlanHeld {
		return p, nil
	}
	p.Steps = slices.Clone(p.Steps)
	at := map[string]int{}
	specs := make([]protocol.PlanStepSpec, len(p.Steps))
	for i, s := range p.Steps {
		at[s.ID] = i
		specs[i] = s.PlanStepSpec
	}
	var actions []Action
	var ready []int
	for _, id := range Order(specs) {
		i := at[id]
		s := &p.Steps[i]
		observeTask(s, w)
		if t, ok := w.Tasks[s.TaskID]; ok && s.TaskID != "" && interrupted(t) && !w.Resumed[s.TaskID] {
			s.State, s.Why = protocol.StepRunning, "resuming: familiar stopped while it worked"
			actions = append(actions, ResumeStep{Step: s.ID, TaskID: s.TaskID})
			continue
		}
		switch s.State {
		case protocol.StepSkipped, protocol.StepCancelled, protocol.StepUndone:
			continue
		}
		if s.TaskID != "" {
			if s.State == protocol.StepReady {
				ready = append(ready, i)
			}
			continue
		}
		// Not started: its needs decide.
		var waiting, blocking []string
		for _, n := range s.Needs {
			need := p.Steps[at[n]]
			switch {
			case need.State.Satisfied():
			case need.State == protocol.StepFailed:
				blocking = append(blocking, fmt.Sprintf("%q failed", n))
			case need.State == protocol.StepSkipped:
				blocking = append(blocking, fmt.Sprintf("%q was skipped: run it without %q (edit its needs) or skip it too", n, n))
			case need.State == protocol.StepCancelled || need.State == protocol.StepUndone:
				blocking = append(blocking, fmt.Sprintf("%q was %s", n, need.State))
			case need.State == protocol.StepHeld:
				blocking = append(blocking, fmt.Sprintf("%q is held", n))
			default:
				waiting = append(waiting, fmt.Sprintf("%q", n))
			}
		}
		switch {
		case len(blocking) > 0:
			s.State, s.Why = protocol.StepHeld, "it needs "+strings.Join(blocking, "; ")
		case len(waiting) > 0:
			s.State, s.Why = protocol.StepPending, "waits for "+andList(waiting)+" to merge"
		default:
			s.State, s.Why = protocol.StepPending, "starting"
			actions = append(actions, StartStep{Step: s.ID})
		}
	}
	if len(ready) > 0 {
		var in Integrate
		for _, i := range ready {
			in.Steps = append(in.Steps, p.Steps[i].ID)
			in.TaskIDs = append(in.TaskIDs, p.Steps[i].TaskID)
		}
		actions = append(actions, in)
	}
	settle(&p, w.Now, len(actions) > 0)
	p.Totals = totals(p, w)
	return p, actions
}

// interrupted: familiar stopped while the task worked.
func interrupted(t Task) bool {
	return t.Status == protocol.StatusBlocked && t.Blocked != nil && t.Blocked.Reason == protocol.BlockedInterrupted
}

// changesNothing: a step in this mode is not meant to change the code.
func changesNothing(m protocol.Mode) bool {
	return m == protocol.ModeArchitect || m == protocol.ModeAuditor
}

// observeTask sets a started step's state from its task.
func observeTask(s *protocol.PlanStep, w World) {
	var work int64
	var tokens int64
	var cost float64
	for _, id := range s.TaskIDs {
		if t, ok := w.Tasks[id]; ok {
			work += workMs(t)
			tokens += t.Tokens
			cost += t.CostUSD
		}
	}
	s.DurationMs, s.Tokens, s.CostUSD = work, tokens, cost
	switch s.State {
	case protocol.StepSkipped, protocol.StepCancelled, protocol.StepUndone:
		return
	}
	if s.TaskID == "" {
		return
	}
	t, ok := w.Tasks[s.TaskID]
	if !ok {
		s.State, s.Why = protocol.StepFailed, "its task was removed: retry it or skip it"
		return
	}
	if s.StartedAt.IsZero() && !t.StartedAt.IsZero() {
		s.StartedAt = t.StartedAt
	}
	s.Why = ""
	switch {
	case t.Status == protocol.StatusMerged:
		s.State, s.Merge, s.MergedAt = protocol.StepMerged, t.Merge, t.MergedAt
	case t.Status == protocol.StatusMerging && t.NoChanges && changesNothing(s.Mode):
		s.State, s.Why = protocol.StepDone, "finished; an "+string(s.Mode)+" changes nothing"
	case t.Status == protocol.StatusMerging && t.NoChanges:
		// A step is written to change the code: one whose agent gave up,
		// was refused, or lost its work to an interruption must not let
		// the steps that build on it start.
		s.State, s.Why = protocol.StepFailed, "its agent finished having changed nothing: retry it, edit it, or skip it if there was nothing to do"
		if t.LastWords != "" {
			s.Why += " (it said: " + oneLine(t.LastWords) + ")"
		}
	case t.Status == protocol.StatusMerging && inQueue(t.Queue):
		s.State = protocol.StepMerging
	case t.Status == protocol.StatusMerging:
		s.State = protocol.StepReady
	case t.Status == protocol.StatusBlocked:
		s.State = protocol.StepFailed
		switch {
		case t.Blocked != nil && t.Blocked.Reason == protocol.BlockedMerge:
			s.Why = "the merge queue set it aside: " + oneLine(t.Blocked.Detail)
		case t.Blocked != nil:
			s.Why = "its task is blocked (" + string(t.Blocked.Reason) + "): " + oneLine(t.Blocked.Detail)
		default:
			s.Why = "its task is blocked"
		}
		s.Why = strings.TrimSuffix(strings.TrimSpace(s.Why), ":")
	case t.Status == protocol.StatusCancelled:
		s.State, s.Why = protocol.StepFailed, "its task was cancelled"
	default: // queued, starting, running, waiting, paused
		s.State = protocol.StepRunning
		if inQueue(t.Queue) {
			s.Why = "the merge queue handed it back to its agent"
		} else if t.Status != protocol.StatusRunning {
			s.Why = t.Status.Words()
		}
	}
}

// workMs is a finished task's time at work; a task still at work counts
// once it has finished (so that a plan changes when its tasks do, not with
// every tick of the clock).
func workMs(t Task) int64 {
	if t.StartedAt.IsZero() || t.FinishedAt.IsZero() || t.FinishedAt.Before(t.StartedAt) {
		return 0
	}
	return t.FinishedAt.Sub(t.StartedAt).Milliseconds()
}

// settle sets the plan's own state from its steps'.
func settle(p *protocol.Plan, now time.Time, acting bool) {
	var failed, held []string
	finished, moving := true, acting
	for _, s := range p.Steps {
		switch s.State {
		case protocol.StepMerged, protocol.StepDone, protocol.StepSkipped:
		case protocol.StepFailed:
			finished = false
			failed = append(failed, fmt.Sprintf("%q %s", s.ID, s.Why))
		case protocol.StepHeld:
			finished = false
			held = append(held, fmt.Sprintf("%q", s.ID))
		case protocol.StepCancelled, protocol.StepUndone:
			finished = false
		default:
			finished, moving = false, true
		}
	}
	switch {
	case finished:
		p.State, p.Why = protocol.PlanDone, doneWords(*p)
		if p.EndedAt.IsZero() {
			p.EndedAt = now
		}
	case moving:
		p.State, p.Why = protocol.PlanRunning, ""
		if len(failed) > 0 {
			p.Why = "going on with the steps that do not need the failed ones; " + failedWords(failed, held)
		}
	default:
		p.State, p.Why = protocol.PlanHeld, failedWords(failed, held)
	}
}

func failedWords(failed, held []string) string {
	var parts []string
	if len(failed) > 0 {
		parts = append(parts, "failed: "+strings.Join(failed, "; ")+" (retry, edit or skip it)")
	}
	if len(held) > 0 {
		parts = append(parts, "waiting on them: "+andList(held))
	}
	if len(parts) == 0 {
		return "nothing can go on: retry, edit or skip a step"
	}
	return strings.Join(parts, "; ")
}

func doneWords(p protocol.Plan) string {
	merged, skipped, nothing := 0, 0, 0
	for _, s := range p.Steps {
		switch s.State {
		case protocol.StepMerged:
			merged++
		case protocol.StepSkipped:
			skipped++
		case protocol.StepDone:
			nothing++
		}
	}
	w := fmt.Sprintf("%s merged into %s", count(merged, "step"), p.BaseRef)
	if p.BaseRef == "" {
		w = count(merged, "step") + " merged"
	}
	if nothing > 0 {
		w += fmt.Sprintf(", %s with nothing to merge", count(nothing, "step"))
	}
	if skipped > 0 {
		w += fmt.Sprintf(", %s skipped", count(skipped, "step"))
	}
	return w
}

func totals(p protocol.Plan, w World) protocol.PlanTotals {
	var t protocol.PlanTotals
	ids := []string{}
	if p.ArchitectTaskID != "" {
		ids = append(ids, p.ArchitectTaskID)
	}
	for _, s := range p.Steps {
		ids = append(ids, s.TaskIDs...)
	}
	for _, id := range ids {
		if x, ok := w.Tasks[id]; ok {
			t.WorkMs += workMs(x)
			t.Tokens += x.Tokens
			t.CostUSD += x.CostUSD
		}
	}
	if !p.StartedAt.IsZero() && !p.EndedAt.IsZero() {
		t.WallMs = p.EndedAt.Sub(p.StartedAt).Milliseconds()
	}
	return t
}

// count says n things: "1 step", "3 steps".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// andList joins words as a person would: "a", "a and b", "a, b and c".
func andList(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:299]) + "…"
	}
	return s
}
