package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// /plan (issue 39): a session may have one plan, a goal an architect
// breaks into steps that parallel agents carry out, merged through the
// merge queue. "/plan <goal>" drafts it and shows its steps; "/plan run"
// runs it as one long turn, its steps and their states going out as ACP
// plan updates and its steps' permission questions reaching the editor as
// the session's own do; "/plan" shows it, "/plan cancel" and "/plan undo"
// stop it and take its merges back.

// cancelledTurn is a command's last words when session/cancel ended it.
type cancelledTurn string

// planUsage is what /plan takes.
const planUsage = "/plan <goal> drafts a plan; /plan run runs it; /plan shows it; /plan cancel stops it; /plan undo takes its merges back."

func (s *session) planCommand(ctx context.Context, arg string) (any, error) {
	s.mu.Lock()
	planID := s.planID
	s.mu.Unlock()
	verb := strings.TrimSpace(arg)
	switch verb {
	case "", "show", "run", "cancel", "undo":
		if planID == "" {
			if verb == "" {
				return planUsage, nil
			}
			return nil, fmt.Errorf("this session has no plan yet: %s", planUsage)
		}
	}
	switch verb {
	case "", "show":
		p, err := s.f.PlanGet(ctx, &protocol.PlanGetParams{ID: planID})
		if err != nil {
			return nil, err
		}
		s.showPlan(p)
		return planWords(p), nil
	case "run":
		if _, err := s.f.PlanRun(ctx, &protocol.PlanRunParams{ID: planID}); err != nil {
			return nil, err
		}
		return s.followPlan(ctx, planID, true)
	case "cancel":
		p, err := s.f.PlanCancel(ctx, &protocol.PlanCancelParams{ID: planID})
		if err != nil {
			return nil, err
		}
		s.showPlan(p)
		return "The plan is cancelled; what merged stays merged until /plan undo.", nil
	case "undo":
		p, err := s.f.PlanUndo(ctx, &protocol.PlanUndoParams{ID: planID})
		if err != nil {
			return nil, err
		}
		s.showPlan(p)
		return "Undone: " + p.Why + ".", nil
	}
	p, err := s.f.PlanCreate(ctx, &protocol.PlanCreateParams{Goal: verb})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.planID = p.ID
	s.mu.Unlock()
	s.note("An architect is breaking the goal into steps…\n")
	return s.followPlan(ctx, p.ID, false)
}

// followPlan shows the plan's changes until it settles: a draft (running:
// false), or, running, its end or a step that holds it. Each step's
// permission questions are put to the person meanwhile.
func (s *session) followPlan(ctx context.Context, planID string, running bool) (any, error) {
	// session/cancel stops following the plan (the turn ends as
	// cancelled); the plan itself goes on.
	watch, stop := context.WithCancel(ctx)
	defer stop()
	s.mu.Lock()
	s.planWatch = stop
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.planWatch = nil
		s.mu.Unlock()
	}()
	changed := make(chan struct{}, 1)
	unfollow := s.f.follow(planID, func(method string, _ json.RawMessage) {
		if method == protocol.NotifyPlanUpdated {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	defer unfollow()
	steps := newPlanSteps(s)
	defer steps.stop()
	said := map[string]string{}
	for {
		p, err := s.f.PlanGet(ctx, &protocol.PlanGetParams{ID: planID})
		if err != nil {
			return nil, err
		}
		if running {
			steps.follow(p)
			s.showPlan(p)
			for _, st := range p.Steps {
				if w := stepWords(st); w != said[st.ID] {
					if said[st.ID] != "" || st.State != protocol.StepPending {
						s.note(w + "\n")
					}
					said[st.ID] = w
				}
			}
		}
		switch {
		case !running && p.State != protocol.PlanDrafting:
			s.showPlan(p)
			return planWords(p), nil
		case running && (p.State.Ended() || p.State == protocol.PlanHeld):
			return planWords(p), nil
		}
		select {
		case <-changed:
		case <-watch.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return cancelledTurn("You stopped following the plan; it goes on. /plan shows it, /plan cancel stops it."), nil
		case <-time.After(2 * time.Second):
			// A safety net: a plan/updated lost with a reconnect.
		}
	}
}

// showPlan sends the plan's steps as the session's ACP plan.
func (s *session) showPlan(p *protocol.Plan) {
	entries := []any{}
	for _, st := range p.Steps {
		status := "pending"
		switch st.State {
		case protocol.StepRunning, protocol.StepReady, protocol.StepMerging:
			status = "in_progress"
		case protocol.StepMerged, protocol.StepDone, protocol.StepSkipped:
			status = "completed"
		}
		content := st.Title
		if st.State != protocol.StepPending && st.State != protocol.StepMerged {
			content += " (" + stepStateWords(st.State) + ")"
		}
		entries = append(entries, map[string]any{"content": content, "priority": "medium", "status": status})
	}
	// Sent when it changed: a plan changes more often than its steps'
	// states (its totals, its why).
	b, _ := json.Marshal(entries)
	s.mu.Lock()
	same := s.planShown == string(b)
	s.planShown = string(b)
	s.mu.Unlock()
	if !same {
		s.update(map[string]any{"sessionUpdate": "plan", "entries": entries})
	}
}

func stepStateWords(s protocol.PlanStepState) string {
	switch s {
	case protocol.StepRunning:
		return "at work"
	case protocol.StepReady:
		return "ready to merge"
	case protocol.StepMerging:
		return "in the merge queue"
	case protocol.StepDone:
		return "nothing to merge"
	}
	return string(s)
}

// stepWords is a step's state as the conversation says it.
func stepWords(st protocol.PlanStep) string {
	w := fmt.Sprintf("Step %q: %s", st.Title, stepStateWords(st.State))
	if st.Why != "" && st.State != protocol.StepRunning {
		w += ": " + st.Why
	}
	return w
}

// planWords is the plan as a message: its steps, what they need, what is
// wrong with them, and what the person can do next.
func planWords(p *protocol.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan for %s (%s)", p.BaseRef, p.State)
	if p.Goal != "" {
		fmt.Fprintf(&b, ": %s", strings.SplitN(p.Goal, "\n", 2)[0])
	}
	b.WriteString("\n")
	for i, st := range p.Steps {
		fmt.Fprintf(&b, "%d. %s [%s]", i+1, st.Title, st.ID)
		if len(st.Needs) > 0 {
			fmt.Fprintf(&b, ", after %s", strings.Join(st.Needs, ", "))
		}
		if st.State != protocol.StepPending {
			fmt.Fprintf(&b, ": %s", stepStateWords(st.State))
		}
		b.WriteString("\n")
	}
	for _, pr := range p.Problems {
		fmt.Fprintf(&b, "- %s\n", pr.Message)
	}
	if p.State == protocol.PlanDraft {
		for _, w := range p.Warnings {
			fmt.Fprintf(&b, "- Note: %s\n", w.Message)
		}
	}
	if p.Why != "" {
		fmt.Fprintf(&b, "%s.\n", strings.TrimSuffix(p.Why, "."))
	}
	switch p.State {
	case protocol.PlanDraft:
		if len(p.Problems) == 0 {
			b.WriteString("Reply /plan run to run it, or /plan cancel.")
		} else {
			b.WriteString("The plan cannot run as it is: fix it in an editor that edits plans, or /plan <goal> again.")
		}
	case protocol.PlanHeld:
		b.WriteString("Retry, edit or skip the failed step in an editor that edits plans; /plan cancel, /plan undo.")
	case protocol.PlanDone:
		t := p.Totals
		fmt.Fprintf(&b, "%s from /plan run to the end; the agents worked %s in all, the architect included; $%.2f. /plan undo takes its merges back.",
			(time.Duration(t.WallMs) * time.Millisecond).Round(time.Second), (time.Duration(t.WorkMs) * time.Millisecond).Round(time.Second), t.CostUSD)
	}
	return strings.TrimSpace(b.String())
}

// planSteps puts the permission questions of a running plan's steps to the
// person, as the session's own.
type planSteps struct {
	s         *session
	mu        sync.Mutex
	followed  map[string]func() // guarded by mu; by task id
	worktrees map[string]string // guarded by mu
}

func newPlanSteps(s *session) *planSteps {
	return &planSteps{s: s, followed: map[string]func(){}, worktrees: map[string]string{}}
}

func (ps *planSteps) follow(p *protocol.Plan) {
	for _, st := range p.Steps {
		id := st.TaskID
		ps.mu.Lock()
		_, done := ps.followed[id]
		ps.mu.Unlock()
		if id == "" || done {
			continue
		}
		unfollow := ps.s.f.follow(id, func(method string, raw json.RawMessage) {
			switch method {
			case protocol.NotifyTaskUpdated:
				var n protocol.TaskUpdatedNotification
				if json.Unmarshal(raw, &n) == nil && n.Task.Worktree != nil {
					ps.mu.Lock()
					ps.worktrees[id] = n.Task.Worktree.Path
					ps.mu.Unlock()
				}
			case protocol.NotifyTaskQuestion:
				var n protocol.TaskQuestionNotification
				if json.Unmarshal(raw, &n) == nil {
					ps.mu.Lock()
					wt := ps.worktrees[id]
					ps.mu.Unlock()
					ps.s.askPermission(id, wt, n.Question)
				}
			case protocol.NotifyTaskQuestionResolved:
				var n protocol.TaskQuestionResolvedNotification
				if json.Unmarshal(raw, &n) == nil {
					ps.s.mu.Lock()
					if c := ps.s.permissions[n.QuestionID]; c != nil {
						c()
					}
					ps.s.mu.Unlock()
				}
			}
		})
		ps.mu.Lock()
		ps.followed[id] = unfollow
		ps.mu.Unlock()
	}
}

func (ps *planSteps) stop() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, f := range ps.followed {
		f()
	}
}
