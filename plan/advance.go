package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/familiar-dev/familiar/protocol"
)

// advanceAll takes every plan that is drafting, running or held one step
// on: what its tasks say read, Decide's actions done.
func (pl *Planner) advanceAll() {
	pl.act.Lock()
	defer pl.act.Unlock()
	pl.mu.Lock()
	recs := make([]*record, 0, len(pl.records))
	for _, r := range pl.records {
		switch r.Plan.State {
		case protocol.PlanDrafting, protocol.PlanRunning, protocol.PlanHeld:
			recs = append(recs, r)
		}
	}
	pl.mu.Unlock()
	for _, r := range recs {
		if pl.ctx.Err() != nil {
			return
		}
		pl.mu.Lock()
		plan := clonePlan(r.Plan)
		pl.mu.Unlock()
		if plan.State == protocol.PlanDrafting {
			pl.drafted(r, plan)
			continue
		}
		pl.advance(r, plan)
	}
}

// drafted reads the architect's plan once its task has finished.
func (pl *Planner) drafted(r *record, plan protocol.Plan) {
	t, ok := pl.host.Task(plan.ArchitectTaskID)
	now := pl.clk.Now().UTC()
	switch {
	case !ok:
		plan.State, plan.Why = protocol.PlanFailed, "its architect task was removed before it wrote the plan"
	case t.Status == protocol.StatusMerging || t.Status == protocol.StatusMerged:
		text, err := pl.host.FinalText(pl.ctx, plan.ArchitectTaskID)
		if err != nil {
			pl.logger.Warn("plan: read the architect's plan", "plan", plan.ID, "err", err)
			return
		}
		steps, probs := Parse(text)
		plan.Steps = stepsOf(steps, nil)
		plan.Problems = probs
		if len(probs) == 0 {
			plan.Warnings = Overlaps(steps)
		}
		plan.State = protocol.PlanDraft
		if len(probs) > 0 {
			plan.Why = fmt.Sprintf("the architect's plan has %s to fix before it can run (plan/update): %s",
				count(len(probs), "problem"), probs[0].Message)
		} else {
			plan.Why = ""
		}
		pl.host.Audit(plan.ArchitectTaskID, "plan.drafted", "agent", map[string]any{"planId": plan.ID, "steps": len(steps), "problems": len(probs)})
		if len(probs) == 0 && r.Run {
			plan.State, plan.Why, plan.StartedAt = protocol.PlanRunning, "", now
			pl.commit(r, plan)
			pl.Poke()
			return
		}
	case interrupted(t) && !pl.resumed[plan.ArchitectTaskID]:
		// familiar stopped while the architect worked: it goes on.
		pl.resumed[plan.ArchitectTaskID] = true
		if err := pl.host.ResumeTask(context.WithoutCancel(pl.ctx), plan.ArchitectTaskID); err != nil {
			pl.logger.Warn("plan: resume the architect", "plan", plan.ID, "err", err)
		}
		return
	case t.Status == protocol.StatusBlocked:
		why := "its architect task is blocked"
		if t.Blocked != nil {
			why += " (" + string(t.Blocked.Reason) + "): " + oneLine(t.Blocked.Detail)
		}
		plan.State, plan.Why = protocol.PlanFailed, why+"; plan/create again once it is fixed"
	case t.Status == protocol.StatusCancelled:
		plan.State, plan.Why = protocol.PlanFailed, "its architect task was cancelled"
	default:
		return
	}
	if plan.State == protocol.PlanFailed {
		plan.EndedAt = now
	}
	pl.commit(r, plan)
}

// advance runs Decide on a running or held plan and does what it says.
func (pl *Planner) advance(r *record, plan protocol.Plan) {
	w := World{Now: pl.clk.Now().UTC(), Tasks: map[string]Task{}, QueueRunning: pl.host.QueueRunning()}
	ids := []string{}
	if plan.ArchitectTaskID != "" {
		ids = append(ids, plan.ArchitectTaskID)
	}
	for _, s := range plan.Steps {
		ids = append(ids, s.TaskIDs...)
	}
	for _, id := range ids {
		if t, ok := pl.host.Task(id); ok {
			w.Tasks[id] = t
		}
	}
	moved := pl.host.MovedBranches()
	for _, id := range ids {
		if c, ok := moved[id]; ok {
			if r.Moved == nil {
				r.Moved = map[string]string{}
			}
			if _, seen := r.Moved[id]; !seen {
				r.Moved[id] = c
			}
		}
	}
	w.Resumed = pl.resumed
	next, actions := Decide(plan, w)
	for _, a := range actions {
		switch a := a.(type) {
		case StartStep:
			pl.start(r, &next, a.Step)
		case ResumeStep:
			pl.resumed[a.TaskID] = true
			if err := pl.host.ResumeTask(context.WithoutCancel(pl.ctx), a.TaskID); err != nil {
				pl.logger.Warn("plan: resume a step", "plan", plan.ID, "task", a.TaskID, "err", err)
			} else {
				pl.host.Audit(a.TaskID, "plan.stepResumed", "familiar", map[string]any{"planId": plan.ID, "step": a.Step})
			}
		case Integrate:
			verify := r.verifyLive
			if verify == nil {
				verify = r.Verify
			}
			if err := pl.host.Integrate(pl.ctx, a.TaskIDs, verify); err != nil {
				// Tried again when the queue ends or on the next tick.
				pl.logger.Info("plan: merge queue not started", "plan", plan.ID, "err", err)
				if next.Why == "" {
					next.Why = "its ready steps wait for the merge queue: " + errWords(err)
				}
				continue
			}
			for _, id := range a.Steps {
				for i := range next.Steps {
					if next.Steps[i].ID == id {
						next.Steps[i].State, next.Steps[i].Why = protocol.StepMerging, ""
					}
				}
			}
		}
	}
	if next.State != plan.State && next.State.Ended() {
		pl.host.Audit("", "plan.ended", "familiar", map[string]any{"planId": plan.ID, "state": next.State, "why": next.Why})
	}
	pl.commit(r, next)
}

// start creates a step's task.
func (pl *Planner) start(r *record, plan *protocol.Plan, id string) {
	var s *protocol.PlanStep
	for i := range plan.Steps {
		if plan.Steps[i].ID == id {
			s = &plan.Steps[i]
		}
	}
	if s == nil {
		return
	}
	profile := s.Profile
	if profile == "" {
		profile = plan.Profile
	}
	p := &protocol.TaskCreateParams{
		Title: s.Title, Description: StepPrompt(*plan, *s), AcceptanceCriteria: s.AcceptanceCriteria,
		Mode: s.Mode, Profile: profile, BaseRef: plan.BaseRef, Driver: r.Driver,
		Priority: height(*plan, s.ID),
	}
	taskID, err := pl.host.CreateTask(context.WithoutCancel(pl.ctx), p)
	if err != nil {
		if pl.ctx.Err() != nil {
			// familiar is stopping: the step starts when it runs again.
			s.State, s.Why = protocol.StepPending, "starting"
			return
		}
		s.State, s.Why = protocol.StepFailed, "its task could not be created: "+errWords(err)
		return
	}
	s.TaskID, s.TaskIDs, s.Attempts = taskID, append(s.TaskIDs, taskID), s.Attempts+1
	s.State, s.Why = protocol.StepRunning, "queued"
	pl.host.Audit(taskID, "plan.stepStarted", "familiar", map[string]any{"planId": plan.ID, "step": s.ID, "attempt": s.Attempts})
}

// height is how many steps wait, one after another, on step id: the
// steps of the longest chain of dependents start first when slots are few.
func height(p protocol.Plan, id string) int {
	memo := map[string]int{}
	var h func(string, int) int
	h = func(id string, depth int) int {
		if v, ok := memo[id]; ok {
			return v
		}
		best := 0
		if depth <= len(p.Steps) {
			for _, s := range p.Steps {
				for _, n := range s.Needs {
					if n == id {
						best = max(best, 1+h(s.ID, depth+1))
					}
				}
			}
		}
		memo[id] = best
		return best
	}
	return h(id, 0)
}

// ArchitectPrompt is the task that turns a goal into a plan: the goal, then
// the format the plan is written in (PROTOCOL.md, Plans).
func ArchitectPrompt(goal string) string {
	return strings.TrimSpace(goal) + `

---
Plan this goal for familiar: it will be carried out as steps, each by its own agent in its own worktree, several at once, each merged into the base branch (after the repository's checks pass) as soon as it is done. Read the code you need to; change nothing.

Break the goal into steps small enough for one agent each. Give each step the steps whose code it builds on in needs: a step starts only once those are merged, from a base that has them; steps that do not need each other run at the same time, so do not chain steps that are independent. Two steps that would edit the same lines should not run at once: make one need the other.

End your final message with the plan in one fenced block like this one (YAML):

` + "```" + Fence + `
steps:
  - id: api            # letters, digits, - _ . ; unique
    title: Add the login endpoint
    description: |
      What to do, for an agent that has not read this conversation.
    acceptanceCriteria: [POST /login answers 200 for a known user]
    files: [server/login.go]
    needs: []          # ids of the steps this one builds on
  - id: ui
    title: Add the login form
    description: ...
    needs: [api]
` + "```"
}

// StepPrompt is a step's task description: the step as written, then where
// it stands in its plan.
func StepPrompt(p protocol.Plan, s protocol.PlanStep) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(s.Description))
	b.WriteString("\n\n---\n")
	if p.Goal != "" {
		fmt.Fprintf(&b, "This is step %q of a plan for: %s\n", s.Title, firstLine(p.Goal, 200))
	} else {
		fmt.Fprintf(&b, "This is step %q of a plan of %s.\n", s.Title, count(len(p.Steps), "step"))
	}
	if len(s.Files) > 0 {
		fmt.Fprintf(&b, "The files it is expected to touch: %s.\n", strings.Join(s.Files, ", "))
	}
	if len(s.Needs) > 0 {
		var names []string
		for _, n := range s.Needs {
			for _, o := range p.Steps {
				if o.ID == n {
					names = append(names, fmt.Sprintf("%q", o.Title))
				}
			}
		}
		fmt.Fprintf(&b, "It builds on %s, already merged into the code you start from.\n", andList(names))
	}
	b.WriteString("Other agents carry out the other steps at the same time: do this step only.")
	return b.String()
}

// errWords is what a person reads of an error: a protocol error's message,
// else the error.
func errWords(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return strings.TrimSuffix(pe.Message, ".")
	}
	return err.Error()
}
