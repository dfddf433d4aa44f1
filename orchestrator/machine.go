package orchestrator

import (
	"fmt"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// This file is a task's state machine as one pure function: step takes the
// task's state and one input (a command from a client, or something its
// agent or a finished effect reported) and returns the next state and the
// effects to run. It does no I/O and reads no clock but env.now; the actor
// (actor.go) runs the effects. Every legal change of status is in
// transitions below, so an illegal one is refused in one place. What each
// input does is its apply method, in the file of its concern (input_*.go);
// this file holds what they share.

// transitions is the status graph: from each status, where a task may go.
var transitions = map[protocol.Status][]protocol.Status{
	protocol.StatusQueued:    {protocol.StatusStarting, protocol.StatusCancelled, protocol.StatusPaused},
	protocol.StatusStarting:  {protocol.StatusRunning, protocol.StatusBlocked, protocol.StatusCancelled, protocol.StatusQueued, protocol.StatusPaused},
	protocol.StatusRunning:   {protocol.StatusStarting, protocol.StatusWaiting, protocol.StatusMerging, protocol.StatusBlocked, protocol.StatusCancelled, protocol.StatusPaused},
	protocol.StatusWaiting:   {protocol.StatusStarting, protocol.StatusRunning, protocol.StatusBlocked, protocol.StatusCancelled, protocol.StatusPaused},
	protocol.StatusPaused:    {protocol.StatusQueued, protocol.StatusCancelled},
	protocol.StatusMerging:   {protocol.StatusMerged, protocol.StatusQueued, protocol.StatusBlocked, protocol.StatusRunning},
	protocol.StatusMerged:    {protocol.StatusMerging},
	protocol.StatusBlocked:   {protocol.StatusQueued, protocol.StatusCancelled},
	protocol.StatusCancelled: nil,
}

// canTransition reports whether from → to is allowed.
func canTransition(from, to protocol.Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// errTransition is the FailedPrecondition for an action the state forbids.
func errTransition(action string, from protocol.Status) error {
	return protocol.FailedPrecondition(fmt.Sprintf("cannot %s a task that is %s", action, from), from)
}

// agentPhase is where the task's claude process is.
type agentPhase int

const (
	agentNone     agentPhase = iota // no process
	agentStarting                   // worktree, options and spawn in progress
	agentUp                         // running
	agentStopping                   // a stop was asked; its exit is expected
)

// stopKind is why a task's agent is stopped: one value, decided when the
// stop is asked, read when the process has exited.
type stopKind int

const (
	stopNone     stopKind = iota
	stopCancel            // → cancelled
	stopPause             // → paused
	stopSwitch            // mode switch: → starting again at once, same slot
	stopRetry             // transient API failure: → back to the queue after a backoff
	stopBlock             // → blocked{reason, detail}
	stopRelease           // status already settled (finished, blocked): just let the process go
	stopShutdown          // familiar stops: → blocked{interrupted}, resumable
)

// stopIntent is a stopKind with what blocked needs. A stopCancel with a
// detail is familiar's own cancel, not the person's.
type stopIntent struct {
	kind   stopKind
	reason protocol.BlockedReason
	detail string
}

// opKind is a git operation on a finished task that runs outside the actor;
// at most one runs per task at a time (single flight).
type opKind string

const (
	opNone   opKind = ""
	opMerge  opKind = "merge"
	opUndo   opKind = "undo"
	opRemove opKind = "remove"
)

// state is everything the transitions read and write: the persisted task
// plus what only lives while familiar runs.
type state struct {
	persisted
	agent agentPhase
	stop  stopIntent
	op    opKind
	// completing is set while the finished turn's git work runs.
	completing bool
	askedAt    time.Time
	// answer is a person's answer on its way to the agent.
	answer  personAnswer
	costUSD *float64
	// resumeOnLoad: read back from the store as live but not waiting on
	// anybody (a crash interrupted it), so it continues by itself.
	resumeOnLoad bool
	// interrupting is set by task/interrupt until the turn it ended is
	// over: the stream driver reports that turn as failed, which is not
	// the task failing.
	interrupting bool
	// steps are the task's tool calls as the transcript reported them
	// (task/get); memory only, the store has them as task/transcript events.
	steps []protocol.ToolCall
	// requeued: back in the queue after familiar's own failed start or
	// retry, so the next start continues the task's time (startedAt)
	// rather than starting it again.
	requeued bool
	// resumeAfterOp: the usage limit reset while a git operation owned
	// the task; it continues once the operation is over.
	resumeAfterOp bool
	// warm: the agent was kept after the turn that finished the task
	// (warmAgentSec), for a follow-up; set until that agent exits or a
	// follow-up takes it back to running. It holds a slot meanwhile.
	warm bool
}

// authRetries is the retry of a refused login at which the task is blocked.
const authRetries = 2

// maxSteps bounds the steps a task keeps in memory; the oldest go first.
const maxSteps = 1000

// env is what step may know of the world besides the state.
type env struct {
	now              time.Time
	approvalTimeout  time.Duration
	headless         bool
	startBackoff     time.Duration
	maxStartFailures int
	repoRoot         string
	dataDir          string
	maxBudgetUSD     float64 // the setting; a task's own wins; 0 = none
	// resumeAfterUsageLimit: the setting; a usage-limited task continues
	// by itself at the reset (what its end's detail says).
	resumeAfterUsageLimit bool
	// warmFor: the setting warmAgentSec; a finished turn's claude stays
	// this long for a follow-up (0 = let it go at once).
	warmFor time.Duration
	// sessionMCP names the settings' MCP servers, which a start without
	// sideloaded parts loses.
	sessionMCP []string
}

// input is one thing that happened to a task: a command from a client, or
// what its agent or a finished effect reported. Each kind is a type with the
// transition it causes, in the file of its concern (input_*.go), so a new
// input is one type and its apply method; an input without one does not
// compile.
type input interface{ apply(st *stepper) error }

// stepper accumulates the next state and its effects.
type stepper struct {
	s   state
	e   env
	out []effect
}

func (st *stepper) emit(effs ...effect) { st.out = append(st.out, effs...) }

// move changes status through the graph, with what every such change
// implies (timestamps, audit, slot and queue accounting).
func (st *stepper) move(to protocol.Status) error {
	s := &st.s
	from := s.T.Status
	if from == to {
		return nil
	}
	if !canTransition(from, to) {
		return errTransition("move to "+string(to)+" from "+string(from), from)
	}
	s.T.Status = to
	now := st.e.now.UTC()
	if to.HoldsWorktree() {
		// A task that works again is no longer in the archive.
		s.T.ArchivedAt = time.Time{}
	}
	st.emit(effAudit{action: "task.status", actor: "familiar", data: map[string]string{"from": string(from), "to": string(to)}})
	switch to {
	case protocol.StatusStarting:
		// A start familiar retried by itself continues the task's time;
		// a first start, or one a person asked for, begins it.
		if !from.Live() && !s.requeued {
			s.T.StartedAt = now
		}
		s.T.Blocked = nil
	case protocol.StatusQueued:
		s.T.FinishedAt = time.Time{}
	}
	// A finished task's FinishedAt is set (Status.Finished); merged
	// keeps its merging's, when the work was done.
	if to.Finished() && to != protocol.StatusMerged {
		s.T.FinishedAt = now
	}
	if to != protocol.StatusRunning && to != protocol.StatusWaiting {
		s.T.Activity = protocol.ActivityIdle
		s.T.ActivityDetail = ""
	}
	if to != protocol.StatusWaiting && s.T.PendingQuestion != nil {
		s.T.PendingQuestion = nil
		st.emit(effDisarmApproval{})
	}
	if from.Live() && !to.Live() {
		var ran time.Duration
		if !s.T.StartedAt.IsZero() && to.Finished() {
			ran = now.Sub(s.T.StartedAt)
		}
		st.emit(effSlotFreed{ranFor: ran, succeeded: to == protocol.StatusMerging, profile: s.T.Profile, typ: s.T.Type})
	}
	if from == protocol.StatusQueued || to == protocol.StatusQueued {
		st.emit(effQueueChanged{})
	}
	if s.warm && to != protocol.StatusRunning {
		// A finished task that goes on otherwise (merged, blocked) keeps
		// no claude for a follow-up: its slot is free.
		s.warm = false
		st.emit(effDisarmWarm{}, effWarmGone{})
		st.stopAgent(stopIntent{kind: stopRelease}, false)
	}
	if from == protocol.StatusQueued {
		s.requeued = false
	}
	if !forecastable(to) {
		// The forecast is of live or ready work only: a merged, blocked or
		// cancelled task conflicts with nothing any more.
		s.T.Conflicts, s.T.Overlaps = nil, nil
	} else if to == protocol.StatusMerging {
		st.emit(effForecast{})
	}
	return nil
}

// changed stamps the task and asks for it to be saved and announced.
func (st *stepper) changed() {
	st.s.T.UpdatedAt = st.e.now.UTC()
	st.emit(effPersist{}, effUpdated{})
}

// block settles the task as blocked now and lets a live agent go: a
// blocked task holds no claude process.
func (st *stepper) block(reason protocol.BlockedReason, detail string) {
	st.blockWith(protocol.Blocked{Reason: reason, Detail: detail})
}

// blockWith is block with the whole Blocked (an API status, a reset time).
func (st *stepper) blockWith(b protocol.Blocked) {
	if err := st.move(protocol.StatusBlocked); err != nil {
		return
	}
	st.s.T.Blocked = &b
	st.s.LastError = b.Detail
	st.changed()
	st.stopAgent(stopIntent{kind: stopRelease}, false)
}

// stopAgent asks a live agent to stop with an intent. A start still in
// progress sees the intent when it reports inStarted.
func (st *stepper) stopAgent(in stopIntent, now bool) {
	s := &st.s
	switch s.agent {
	case agentUp:
		s.stop = in
		s.agent = agentStopping
		st.emit(effStopAgent{now: now})
	case agentStarting:
		s.stop = in
	case agentStopping:
		if in.kind != stopRelease && s.stop.kind != stopCancel {
			// A stronger reason than the one in flight (a cancel during a
			// pause) replaces it.
			s.stop = in
		}
		if now {
			st.emit(effStopAgent{now: true})
		}
	}
}

// apply applies one input; an input may apply another (a send to a paused
// task resumes it).
func (st *stepper) apply(in input) error { return in.apply(st) }

// step is the transition function. An error means the input was refused
// and state and effects are unchanged.
func step(s state, in input, e env) (state, []effect, error) {
	st := &stepper{s: s, e: e}
	if err := in.apply(st); err != nil {
		return s, nil, err
	}
	st.announceEnd(s.T.Status)
	return st.s, st.out, nil
}

// opBusy refuses what would start claude in a worktree a git operation
// (merge, undo, remove) is working on, naming the operation.
func (st *stepper) opBusy() error {
	if op := st.s.op; op != opNone {
		return protocol.FailedPrecondition(fmt.Sprintf("a %s of this task is in progress; try again when it is done", op), st.s.T.Status)
	}
	return nil
}

// forecastable reports whether the conflict forecast covers a task in
// status s: live or ready to merge.
func forecastable(s protocol.Status) bool {
	return s.Live() || s == protocol.StatusMerging
}
