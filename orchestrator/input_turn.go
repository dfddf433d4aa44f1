package orchestrator

import (
	"fmt"
	"slices"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// Inputs of a turn's work: activity, transcript entries, the turn's end and the
// git work that completes it, the conflict forecast, an interrupt.

// inActivity: what the agent is doing now.
type inActivity struct {
	activity protocol.Activity
	detail   string // masked
}

func (in inActivity) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if status != protocol.StatusRunning && status != protocol.StatusWaiting {
		return nil
	}
	if in.activity == s.T.Activity && in.detail == s.T.ActivityDetail {
		return nil
	}
	s.T.Activity, s.T.ActivityDetail = in.activity, in.detail
	s.T.UpdatedAt = st.e.now.UTC()
	st.emit(effUpdated{}) // activity is not worth a durable write
	return nil
}

// inTranscript: one entry of the agent's transcript.
type inTranscript struct{ entry protocol.TranscriptEntry }

func (in inTranscript) apply(st *stepper) error {

	st.transcript(in.entry)
	return nil
}

// inTurnEnded: the agent's turn is over.
type inTurnEnded struct{ turn agent.TurnEnded }

func (in inTurnEnded) apply(st *stepper) error {

	st.turnEnded(in.turn)
	return nil
}

// inCompleted: the finished turn's git work is done (effComplete).
type inCompleted struct {
	result  protocol.TaskResult
	blocked string
	errs    string
	// unresolved: the turn left a conflict unresolved (nothing of it was
	// committed); it says where, in words.
	unresolved string
}

func (in inCompleted) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if !s.completing {
		return nil
	}
	s.completing = false
	if status != protocol.StatusRunning {
		return nil // cancelled or blocked meanwhile
	}
	r := in.result
	r.CostUSD = s.costUSD
	if r.CostUSD == nil && s.T.Usage != nil && s.T.Usage.CostUSD > 0 {
		// The PTY driver has no cost from the CLI: the transcript's
		// estimate from list prices.
		c := s.T.Usage.CostUSD
		r.CostUSD = &c
	}
	switch {
	case in.unresolved != "":
		st.block(protocol.BlockedConflict, in.unresolved)
	case in.blocked != "":
		st.block(protocol.BlockedAgentFailed, in.blocked)
	case in.errs != "":
		st.block(protocol.BlockedAgentFailed, in.errs)
	default:
		r.Success = true
		if err := st.move(protocol.StatusMerging); err != nil {
			return err
		}
		s.T.Result = &r
		st.changed()
		// Announced by announceEnd. The finished agent would hold ~200 MB while idle: let it go,
		// unless warmAgentSec keeps it for a follow-up. Its session is kept either way, so
		// task/send continues the conversation.
		warmFor := st.e.warmFor
		if s.WarmAgentSec != nil {
			warmFor = time.Duration(*s.WarmAgentSec) * time.Second
		}
		if warmFor > 0 && s.agent == agentUp {
			s.warm = true
			st.emit(effArmWarm{after: warmFor})
		} else {
			st.stopAgent(stopIntent{kind: stopRelease}, false)
		}
	}
	return nil
}

// inForecast is the forecaster's latest conflict forecast of the task.
type inForecast struct{ conflicts, overlaps []protocol.TaskConflict }

func (in inForecast) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	// A forecast that arrives after the task left live or ready work
	// (computed from what it was) is of nothing now.
	if !forecastable(status) {
		return nil
	}
	if conflictsEqual(s.T.Conflicts, in.conflicts) && conflictsEqual(s.T.Overlaps, in.overlaps) {
		return nil
	}
	s.T.Conflicts, s.T.Overlaps = in.conflicts, in.overlaps
	st.changed()
	return nil
}

// cmdInterrupt is task/interrupt: the turn ends, the task stays.
type cmdInterrupt struct{}

func (cmdInterrupt) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if (status != protocol.StatusRunning && status != protocol.StatusWaiting) || s.agent != agentUp {
		return errTransition("interrupt", status)
	}
	// The turn then ends as the driver reports it (PTY: a question;
	// stream: a failed result).
	s.interrupting = true
	st.emit(effTell{interrupt: true})
	return nil
}

// turnEnded decides what the end of a turn means for the task.
func (st *stepper) turnEnded(turn agent.TurnEnded) {
	s := &st.s
	if u := turn.Usage; u != nil && turn.BackgroundTasks == 0 {
		s.T.Usage = ownUsage(s.T.Usage)
		tu := *u // the turn's sum, the protocol's type
		if turn.CostUSD > 0 {
			tu.CostUSD = turn.CostUSD // the CLI's own figure wins over the estimate
		}
		s.T.Usage.Turns = append(s.T.Usage.Turns, tu)
	}
	if s.interrupting && turn.BackgroundTasks == 0 {
		// The turn task/interrupt ended: over, not failed.
		s.interrupting = false
		turn.Failed, turn.Error = false, ""
	}
	if turn.CostUSD > 0 {
		c := turn.CostUSD
		if s.costUSD != nil {
			c += *s.costUSD
		}
		s.costUSD = &c
	}
	if turn.BackgroundTasks > 0 || s.agent != agentUp {
		return
	}
	s.Turns++
	f := turn.Failure
	if !turn.Failed {
		f = nil
	}
	switch {
	case f != nil && f.Kind == agent.FailureAuth:
		// No retry helps: the person has to log in.
		st.block(protocol.BlockedAuth, fmt.Sprintf("%s; %s", f.Message, agent.AuthFix))
	case f != nil && f.Kind == agent.FailureUsageLimit:
		// Blocked until the limit resets; the actor holds the queue back
		// and resumes the task then (unless the setting is off).
		if s.FollowUp == "" {
			s.FollowUp = resumePrompt
		}
		b := protocol.Blocked{Reason: protocol.BlockedUsageLimit, Detail: f.Message, Status: f.Status}
		if !f.ResetsAt.IsZero() {
			b.ResetsAt = f.ResetsAt.UTC()
		}
		st.blockWith(b)
		st.emit(effUsageLimit{resetsAt: f.ResetsAt})
	case turn.Failed && (transientAPIFailure(f) && f.Retries == 0 || f == nil && s.Turns == 1 && transientFailure(turn.Error)) &&
		s.StartFailures+1 < st.e.maxStartFailures:
		// The API was overloaded or unreachable and claude did not retry
		// (it was told not to): start again after a backoff rather than
		// failing the task. An error claude itself retried (ten times over
		// minutes, by default) is not retried again: the task is blocked
		// with it. The restart repeats the turn: the resumed session gets
		// the resume prompt (or what the person sent), a session never
		// saved its first prompt.
		s.LastError = turn.Error
		if s.FollowUp == "" {
			s.FollowUp = resumePrompt
		}
		st.stopAgent(stopIntent{kind: stopRetry}, false)
		st.emit(effPersist{})
	case f != nil && f.Kind == agent.FailureAPI:
		detail := f.Message
		switch {
		case f.Retries > 0:
			detail = fmt.Sprintf("%s (claude gave up after %d retries)", f.Message, f.Retries)
		case transientAPIFailure(f):
			detail = fmt.Sprintf("%s (claude gave up retrying, %d times over)", f.Message, s.StartFailures+1)
		}
		st.blockWith(protocol.Blocked{Reason: protocol.BlockedAPIError, Detail: detail, Status: f.Status})
	case st.overBudget() && !(s.T.Status == protocol.StatusRunning && !turn.Failed && s.T.PendingQuestion == nil && turn.Asks == ""):
		// Spent: it stops here rather than start another turn. (A turn
		// that finished the task completes: the work is paid for.)
		st.block(protocol.BlockedBudget, st.budgetDetail())
	case s.T.PendingQuestion != nil || turn.Asks != "":
		// Waiting on the person: keep what this turn did as a checkpoint.
		st.emit(effCheckpoint{message: fmt.Sprintf("familiar checkpoint: %s (turn %d)", s.T.Title, s.Turns)})
		st.emit(effPersist{})
	case turn.Failed:
		st.block(protocol.BlockedAgentFailed, turn.Error)
	case s.T.Status == protocol.StatusRunning && !s.completing:
		s.completing = true
		st.emit(effPersist{}, effComplete{turn: turn})
	}
}

// budget is the task's spending limit in USD; 0 = none.
func (st *stepper) budget() float64 {
	if b := st.s.MaxBudgetUsd; b != nil {
		return *b
	}
	return st.e.maxBudgetUSD
}

// spent is what the task has cost so far: the CLI's own figures of the
// turns that ended, or, when more, the transcript's running estimate (it
// grows with every model response, mid-turn).
func (st *stepper) spent() float64 {
	var c float64
	if st.s.costUSD != nil {
		c = *st.s.costUSD
	}
	if u := st.s.T.Usage; u != nil && u.CostUSD > c {
		c = u.CostUSD
	}
	return c
}

// overBudget reports whether the task has spent its budget.
func (st *stepper) overBudget() bool {
	b := st.budget()
	return b > 0 && st.spent() >= b
}

// budgetDetail says what was spent of what.
func (st *stepper) budgetDetail() string {
	return fmt.Sprintf("the task spent $%.2f of its $%.2f budget", st.spent(), st.budget())
}

// transcript publishes one transcript entry and keeps what task/get and
// the Task show of it: the steps and the usage.
func (st *stepper) transcript(e protocol.TranscriptEntry) {
	s := &st.s
	st.emit(effPublish{protocol.TaskTranscriptNotification{ID: s.T.ID, Entry: e}})
	if tc := e.ToolCall; tc != nil {
		if tc.Status == "completed" && editTools[tc.Name] {
			st.emit(effForecast{})
		}
		step := compactStep(*tc)
		for i := len(s.steps) - 1; i >= 0; i-- {
			if s.steps[i].ID == tc.ID {
				s.steps[i] = step
				return
			}
		}
		s.steps = append(s.steps, step)
		if len(s.steps) > maxSteps {
			s.steps = append([]protocol.ToolCall(nil), s.steps[len(s.steps)-maxSteps:]...)
		}
	}
	if u := e.Usage; u != nil {
		s.T.Usage = ownUsage(s.T.Usage)
		t := s.T.Usage
		t.AddCounts(*u)
		t.Responses++
		if u.Responses > 0 { // a stream-json turn's usage counts all its responses
			t.Responses += u.Responses - 1
		}
		if s.T.Status.Live() && s.agent == agentUp && st.overBudget() {
			// Spent mid-turn: stop here rather than pay for the rest.
			st.stopAgent(stopIntent{kind: stopBlock, reason: protocol.BlockedBudget, detail: st.budgetDetail()}, false)
		}
	}
}

// ownUsage returns a copy of u to change: views and notifications already
// sent share the old one, so the state never writes through its pointer.
func ownUsage(u *protocol.Usage) *protocol.Usage {
	if u == nil {
		return &protocol.Usage{}
	}
	c := *u
	c.Turns = append([]protocol.Usage(nil), u.Turns...)
	return &c
}

// conflictsEqual compares two forecasts' lists (each sorted by with, files
// sorted).
func conflictsEqual(a, b []protocol.TaskConflict) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].With != b[i].With || !slices.Equal(a[i].Files, b[i].Files) {
			return false
		}
	}
	return true
}

// editTools are the tools whose completion may change the worktree's files
// (the forecast is recomputed after one): the file tools, and commands,
// through which agents also write (sed, generators, git itself).
var editTools = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true, "Bash": true}
