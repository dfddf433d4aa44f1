package orchestrator

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/protocol"
)

// This file is a task's state machine as one pure function: step takes the
// task's state and one input (a command from a client, or something its
// agent or a finished effect reported) and returns the next state and the
// effects to run. It does no I/O and reads no clock but env.now; the actor
// (actor.go) runs the effects. Every legal change of status is in
// transitions below, so an illegal one is refused in one place.

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
	askedID    string // the question askedAt is of, until a person's answer is recorded
	costUSD    *float64
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

// Inputs. Commands come from clients; the rest are what the agent or a
// finished effect reported.
type input interface{ inputName() string }

type (
	inStart       struct{} // the scheduler gave the task a slot
	inStarted     struct{ agent protocol.AgentInfo }
	inStartFailed struct {
		detail    string
		transient bool
		auth      bool // no login at all: blocked{auth}
	}
	inBackoffDone struct{}
	inActivity    struct {
		activity protocol.Activity
		detail   string // masked
	}
	inQuestion struct {
		q       protocol.Question
		kind    string
		decided *decision
	}
	inResolved struct {
		questionID string
		by         protocol.DecidedBy
		optionID   string
	}
	inAnswered struct {
		questionID string
		optionID   string
		audit      map[string]any
		grant      *protocol.Grant // an allow-always answer's rule
	}
	inApprovalTimer struct{ questionID string }
	inTurnEnded     struct{ turn agent.TurnEnded }
	inTranscript    struct{ entry protocol.TranscriptEntry }
	inCompleted     struct {
		result  protocol.TaskResult
		blocked string
		errs    string
	}
	inNoProgress     struct{ detail string } // "" = no progress; else why (claude is stopped)
	inAPIRetry       struct{ retry agent.APIRetry }
	inCommandTimeout struct{ detail string }
	inAgentProblem   struct {
		detail string
		fatal  bool
	}
	inExited struct {
		code   int
		signal string
		// refusal: claude refused to start (agent.StartupRefusal).
		refusal *agent.StartupRefusal
	}

	// cmdCancel: by the person, or with a detail by familiar itself
	// (announced as an end, as a block is).
	cmdCancel    struct{ detail string }
	cmdPause     struct{}
	cmdInterrupt struct{}
	// cmdResume: auto is the usage limit's reset, which nobody waits on:
	// during a git operation it is kept for the operation's end.
	cmdResume struct {
		text string
		auto bool
	}
	cmdSend    struct{ text string }
	cmdSetMode struct {
		mode   protocol.Mode
		notice string
	}
	cmdShutdown struct{}
	cmdKill     struct{}
	cmdMarkDone struct{ questionID string } // a prose question was a report after all
	cmdRevoke   struct{ rule string }       // a task grant goes
	cmdBeginOp  struct{ op opKind }
	cmdEndOp    struct {
		op      opKind
		ok      bool
		merge   *mergeRecord // opMerge done
		undone  bool         // opUndo of a merge done
		result  *protocol.TaskResult
		removed bool
		audit   map[string]any
		// block: the merge queue sets the task aside (blocked{merge}) as
		// its operation ends without a merge.
		block *protocol.Blocked
	}
	cmdRequeue struct {
		priority int
		seq      int64
	}
	// cmdArchive archives a finished task at at, or shows it again (zero).
	cmdArchive   struct{ at time.Time }
	inQueueMoved struct{} // the task's place in the queue may have changed
	inWorktree   struct{ worktree protocol.Worktree }
	inProcess    struct{ identity procs.Identity } // the agent's process, for reaping after a crash
	inLoaded     struct{}                          // read back from the store at start
	// inForecast is the forecaster's latest conflict forecast of the task.
	inForecast struct{ conflicts, overlaps []protocol.TaskConflict }
	// inWarmOver: warmAgentSec passed with no follow-up.
	inWarmOver struct{}
	// cmdCool lets a warm agent go: the queue needs its slot, or git the
	// worktree.
	cmdCool struct{}
)

func (inWarmOver) inputName() string { return "warm time over" }
func (cmdCool) inputName() string    { return "let the warm agent go" }

func (inStart) inputName() string         { return "start" }
func (inStarted) inputName() string       { return "started" }
func (inStartFailed) inputName() string   { return "start failed" }
func (inBackoffDone) inputName() string   { return "backoff done" }
func (inActivity) inputName() string      { return "activity" }
func (inQuestion) inputName() string      { return "question" }
func (inResolved) inputName() string      { return "question resolved" }
func (inAnswered) inputName() string      { return "answered" }
func (inApprovalTimer) inputName() string { return "approval timeout" }
func (inTurnEnded) inputName() string     { return "turn ended" }
func (inTranscript) inputName() string    { return "transcript" }
func (cmdInterrupt) inputName() string    { return "interrupt" }
func (inCompleted) inputName() string     { return "completed" }
func (inNoProgress) inputName() string    { return "no progress" }
func (inAPIRetry) inputName() string      { return "api retry" }
func (inCommandTimeout) inputName() string {
	return "command timeout"
}
func (inAgentProblem) inputName() string { return "agent problem" }
func (inExited) inputName() string       { return "exited" }
func (cmdCancel) inputName() string      { return "cancel" }
func (cmdPause) inputName() string       { return "pause" }
func (cmdResume) inputName() string      { return "resume" }
func (cmdSend) inputName() string        { return "send" }
func (cmdSetMode) inputName() string     { return "set mode" }
func (cmdShutdown) inputName() string    { return "shutdown" }
func (cmdKill) inputName() string        { return "kill" }
func (cmdBeginOp) inputName() string     { return "begin op" }
func (cmdEndOp) inputName() string       { return "end op" }
func (cmdRequeue) inputName() string     { return "requeue" }
func (cmdArchive) inputName() string     { return "archive" }
func (inQueueMoved) inputName() string   { return "queue moved" }
func (inLoaded) inputName() string       { return "loaded" }
func (inWorktree) inputName() string     { return "worktree" }
func (inProcess) inputName() string      { return "process" }
func (cmdMarkDone) inputName() string    { return "mark done" }
func (cmdRevoke) inputName() string      { return "revoke" }
func (inForecast) inputName() string     { return "forecast" }

// Effects: what the actor does after a step, in order.
type effect interface{ effectName() string }

type (
	effPersist struct{}                          // save the task
	effUpdated struct{}                          // announce task/updated
	effPublish struct{ n protocol.Notification } // announce n
	effAudit   struct {
		action, actor string
		data          any
	}
	effStartAgent struct { // worktree, options, spawn → inStarted / inStartFailed
		task    persisted // what to start from (with the follow-up prompt)
		logPath string    // this start's raw output log
	}
	effStopAgent  struct{ now bool }    // SIGTERM → grace → SIGKILL (now: SIGKILL at once)
	effSendPrompt struct{ text string } // to the live agent
	effAnswer     struct {
		questionID string
		answer     agent.Answer
	}
	effArmApproval struct {
		questionID string
		after      time.Duration
	}
	effDisarmApproval struct{}
	effArmWarm        struct{ after time.Duration } // → inWarmOver
	effDisarmWarm     struct{}
	// effWarmGone: a warm agent exited; its slot is free for the queue.
	effWarmGone   struct{}
	effBackoff    struct{ after time.Duration } // → inBackoffDone
	effCheckpoint struct{ message string }
	effComplete   struct{ turn agent.TurnEnded } // git: leftovers, files, commits → inCompleted
	// effSlotFreed: a live task left the live states after ranFor;
	// succeeded when it finished its work (→ merging), the runs the
	// queue's estimates learn from.
	effSlotFreed struct {
		ranFor    time.Duration
		succeeded bool
		profile   string
		typ       protocol.TaskType
	}
	effQueueChanged struct{}                      // the queue gained or lost a task
	effResponded    struct{ after time.Duration } // a person answered, after this long
	// effUsageLimit: the account's usage limit is reached until resetsAt
	// (zero: unknown). The queue holds back and blocked tasks resume then.
	effUsageLimit struct{ resetsAt time.Time }
	effSaveGrant  struct{ grant protocol.Grant } // a repository or user grant to its file
	// effForecast: the task's files may have changed (an edit, the end of
	// a turn); the forecaster recomputes its conflicts, coalesced.
	effForecast struct{}
)

func (effPersist) effectName() string        { return "persist" }
func (effUpdated) effectName() string        { return "updated" }
func (effPublish) effectName() string        { return "publish" }
func (effAudit) effectName() string          { return "audit" }
func (effStartAgent) effectName() string     { return "start agent" }
func (effStopAgent) effectName() string      { return "stop agent" }
func (effSendPrompt) effectName() string     { return "send prompt" }
func (effAnswer) effectName() string         { return "answer" }
func (effArmApproval) effectName() string    { return "arm approval" }
func (effDisarmApproval) effectName() string { return "disarm approval" }
func (effBackoff) effectName() string        { return "backoff" }
func (effCheckpoint) effectName() string     { return "checkpoint" }
func (effComplete) effectName() string       { return "complete" }
func (effSlotFreed) effectName() string      { return "slot freed" }
func (effQueueChanged) effectName() string   { return "queue changed" }
func (effResponded) effectName() string      { return "responded" }
func (effUsageLimit) effectName() string     { return "usage limit" }
func (effSaveGrant) effectName() string      { return "save grant" }
func (effForecast) effectName() string       { return "forecast" }
func (effArmWarm) effectName() string        { return "arm warm" }
func (effDisarmWarm) effectName() string     { return "disarm warm" }
func (effWarmGone) effectName() string       { return "warm agent gone" }

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
	if to.Live() || to == protocol.StatusQueued {
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
	case protocol.StatusMerging, protocol.StatusBlocked, protocol.StatusCancelled:
		s.T.FinishedAt = now
	case protocol.StatusQueued:
		s.T.FinishedAt = time.Time{}
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
		if !s.T.StartedAt.IsZero() && to != protocol.StatusPaused && to != protocol.StatusQueued {
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

// forecastable reports whether the conflict forecast covers a task in
// status s: live or ready to merge.
func forecastable(s protocol.Status) bool {
	return s.Live() || s == protocol.StatusMerging
}

// editTools are the tools whose completion may change the worktree's files
// (the forecast is recomputed after one): the file tools, and commands,
// through which agents also write (sed, generators, git itself).
var editTools = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true, "Bash": true}

// changed stamps the task and asks for it to be saved and announced.
func (st *stepper) changed() {
	st.s.T.UpdatedAt = st.e.now.UTC()
	st.emit(effPersist{}, effUpdated{})
}

// beginStart starts the agent: each start gets its own output log (procs
// never overwrites one) and takes the follow-up prompt with it.
func (st *stepper) beginStart() {
	s := &st.s
	s.agent = agentStarting
	s.Starts++
	logPath := filepath.Join(st.e.dataDir, "tasks", s.T.ID, fmt.Sprintf("output-%d.log", s.Starts))
	s.Logs = append(append([]string(nil), s.Logs...), logPath)
	from := s.persisted
	from.T.AcceptanceCriteria = append([]string(nil), s.T.AcceptanceCriteria...)
	s.FollowUp = ""
	st.changed()
	st.emit(effStartAgent{task: from, logPath: logPath})
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

// step is the transition function. An error means the input was refused
// and state and effects are unchanged.
func step(s state, in input, e env) (state, []effect, error) {
	st := &stepper{s: s, e: e}
	if err := st.apply(in); err != nil {
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

func (st *stepper) apply(in input) error {
	s := &st.s
	status := s.T.Status
	switch in := in.(type) {
	case inStart:
		if err := st.opBusy(); err != nil {
			return err
		}
		if status != protocol.StatusQueued {
			return errTransition("start", status)
		}
		if err := st.move(protocol.StatusStarting); err != nil {
			return err
		}
		s.stop = stopIntent{}
		st.beginStart()

	case inStarted:
		if s.agent != agentStarting {
			return errTransition("start the agent of", status)
		}
		s.agent = agentUp
		a := in.agent
		s.T.Agent = &a
		if s.stop.kind != stopNone {
			// Stopped while it was starting (cancel, pause, shutdown).
			s.agent = agentStopping
			st.emit(effStopAgent{})
			st.changed()
			return nil
		}
		if status == protocol.StatusStarting {
			if err := st.move(protocol.StatusRunning); err != nil {
				return err
			}
			s.T.Activity = protocol.ActivityThinking
		}
		st.changed()

	case inStartFailed:
		if s.agent != agentStarting {
			return errTransition("fail the start of", status)
		}
		s.agent = agentNone
		s.LastError = in.detail
		switch s.stop.kind {
		case stopCancel:
			st.settleStopped(s.stop)
			return nil
		case stopPause, stopShutdown:
			st.settleStopped(s.stop)
			return nil
		}
		s.stop = stopIntent{}
		if in.auth {
			st.block(protocol.BlockedAuth, in.detail)
			return nil
		}
		s.StartFailures++
		if !in.transient || s.StartFailures >= st.e.maxStartFailures {
			detail := in.detail
			if in.transient {
				detail = fmt.Sprintf("%s (after %d attempts)", in.detail, s.StartFailures)
			}
			st.block(protocol.BlockedStartFailed, detail)
			return nil
		}
		st.emit(effPersist{}, effBackoff{after: st.e.startBackoff << (s.StartFailures - 1)})

	case inBackoffDone:
		if status != protocol.StatusStarting || s.agent != agentNone {
			return nil // cancelled or paused meanwhile
		}
		// Back to the queue; it keeps its place (FIFO by Seq).
		if err := st.move(protocol.StatusQueued); err != nil {
			return err
		}
		s.requeued = true
		st.changed()

	case inActivity:
		if status != protocol.StatusRunning && status != protocol.StatusWaiting {
			return nil
		}
		if in.activity == s.T.Activity && in.detail == s.T.ActivityDetail {
			return nil
		}
		s.T.Activity, s.T.ActivityDetail = in.activity, in.detail
		s.T.UpdatedAt = st.e.now.UTC()
		st.emit(effUpdated{}) // activity is not worth a durable write

	case inQuestion:
		if in.kind == agent.KindQuestion {
			s.interrupting = false // the PTY driver's interrupted turn ends asking
		}
		if s.agent != agentUp {
			return nil // the agent is going away; nobody should answer it
		}
		if !status.Live() {
			// A warm agent asks nothing while idle; one that does is not
			// what a follow-up should meet: it goes.
			if s.warm {
				st.emit(effDisarmWarm{})
				st.stopAgent(stopIntent{kind: stopRelease}, false)
			}
			return nil
		}
		if d := in.decided; d != nil {
			st.policyAnswered(in.q, d)
			return nil
		}
		q := in.q
		if status == protocol.StatusRunning {
			if err := st.move(protocol.StatusWaiting); err != nil {
				return err
			}
		}
		if in.kind == agent.KindPermission || st.e.headless {
			q.ExpiresAt = st.e.now.Add(st.e.approvalTimeout).UTC()
			st.emit(effArmApproval{questionID: q.ID, after: st.e.approvalTimeout})
		}
		s.T.PendingQuestion = &q
		s.askedAt = st.e.now
		s.askedID = q.ID
		st.changed()
		st.emit(effPublish{protocol.TaskQuestionNotification{ID: s.T.ID, Question: q}})

	case inResolved:
		st.settle(in.questionID, in.by, in.optionID)

	case inAnswered:
		// The agent took the answer; its own "resolved" event may have
		// settled the question first (it races this input), so the last
		// question asked counts too: the person's decision and grant are
		// never lost.
		pending := s.T.PendingQuestion != nil && s.T.PendingQuestion.ID == in.questionID
		if !pending && s.askedID != in.questionID {
			return protocol.NotFound("question", in.questionID)
		}
		s.askedID = ""
		data := in.audit
		if data == nil {
			data = map[string]any{}
		}
		data["responseSec"] = st.e.now.Sub(s.askedAt).Seconds()
		st.emit(effResponded{after: st.e.now.Sub(s.askedAt)})
		st.emit(effAudit{action: "permission.decided", actor: string(protocol.DecidedByUser), data: data})
		if g := in.grant; g != nil {
			// Kept beyond this session: familiar's policy allows the rule
			// when a later session of the task asks again.
			if g.Scope == protocol.GrantTask {
				if !grantsHave(s.T.Grants, g.Rule) {
					s.T.Grants = append(append([]protocol.Grant(nil), s.T.Grants...), *g)
				}
			} else {
				st.emit(effSaveGrant{grant: *g})
			}
			st.emit(effAudit{action: "policy.granted", actor: "user", data: map[string]any{
				"rule": g.Rule, "scope": g.Scope, "tool": g.Tool, "questionId": in.questionID}})
		}
		st.settle(in.questionID, protocol.DecidedByUser, in.optionID)

	case inApprovalTimer:
		q := s.T.PendingQuestion
		if q == nil || q.ID != in.questionID || s.agent != agentUp {
			return nil
		}
		var a agent.Answer
		switch q.Kind {
		case protocol.QuestionPermission:
			a = agent.Answer{OptionID: agent.OptionDeny, Text: timeoutText}
		case protocol.QuestionDialog:
			st.block(protocol.BlockedAgentFailed, "the CLI showed a dialog nobody answered: "+q.Text)
			return nil
		default:
			a = agent.Answer{Text: noAnswerText}
		}
		st.emit(effAnswer{questionID: q.ID, answer: a})
		data := map[string]any{"questionId": q.ID, "tool": q.Tool, "input": q.Input, "option": a.OptionID, "kind": q.Kind}
		if q.Skill != nil {
			data["skill"] = q.Skill
		}
		st.emit(effAudit{action: "permission.decided", actor: string(protocol.DecidedByTimeout), data: data})
		st.settle(q.ID, protocol.DecidedByTimeout, a.OptionID)

	case inTurnEnded:
		st.turnEnded(in.turn)

	case inTranscript:
		st.transcript(in.entry)

	case inForecast:
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

	case cmdInterrupt:
		if (status != protocol.StatusRunning && status != protocol.StatusWaiting) || s.agent != agentUp {
			return errTransition("interrupt", status)
		}
		// The caller interrupts the live agent; the turn then ends as the
		// driver reports it (PTY: a question; stream: a failed result).
		s.interrupting = true

	case inCompleted:
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

	case inNoProgress:
		if status.Live() && s.agent == agentUp {
			detail := in.detail
			if detail == "" {
				detail = "no progress for the no-progress timeout"
			}
			st.stopAgent(stopIntent{kind: stopBlock, reason: protocol.BlockedTimeout, detail: detail}, false)
		}

	case inAPIRetry:
		// claude retries a refused login like an overloaded API (ten times
		// over about three minutes): the same credentials will not do, so
		// the task is blocked at the second refusal. The first may be a
		// login claude refreshes before it retries.
		if r := in.retry; r.Auth() && r.Attempt >= authRetries && status.Live() && s.agent == agentUp {
			st.block(protocol.BlockedAuth, fmt.Sprintf("the model API refused the credentials (%s); %s", r.Summary(), agent.AuthFix))
		}

	case inCommandTimeout:
		// A command ran without writing or starting anything for the
		// command timeout: reported as such, not as "no progress".
		if status.Live() && s.agent == agentUp {
			st.stopAgent(stopIntent{kind: stopBlock, reason: protocol.BlockedTimeout, detail: in.detail}, false)
		}

	case inAgentProblem:
		if in.fatal && status.Live() && s.agent == agentUp {
			// Without its log a task's record would be silently incomplete:
			// stop it clearly rather than run on.
			st.stopAgent(stopIntent{kind: stopBlock, reason: protocol.BlockedAgentFailed, detail: in.detail}, false)
		}
		st.emit(effPublish{protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: fmt.Sprintf("task %s: %s", s.T.ID, in.detail)}})

	case inExited:
		if s.agent == agentNone {
			return nil
		}
		s.agent = agentNone
		s.Process = nil
		if s.warm {
			s.warm = false
			st.emit(effDisarmWarm{}, effWarmGone{})
		}
		if s.T.PendingQuestion != nil {
			st.emit(effDisarmApproval{})
		}
		intent := s.stop
		if intent.kind == stopNone && status.Live() {
			detail := fmt.Sprintf("claude exited with code %d", in.code)
			if in.signal != "" {
				detail = "claude was killed by signal " + in.signal
			}
			intent = stopIntent{kind: stopBlock, reason: protocol.BlockedAgentExited, detail: detail}
			if r := in.refusal; r != nil {
				// A refusal a retry does not fix: its own reason, and what
				// to do about it.
				intent = stopIntent{kind: stopBlock, reason: refusalReasons[r.Reason],
					detail: "claude refused to start: " + r.Message + " — " + r.Fix()}
				if r.Reason == agent.RefusalSideload && !s.NoSideload && len(s.McpServers) == 0 {
					// Only servers the task did not ask for were refused
					// (the settings' and the user's own): it starts again
					// without them, and the person is told what it lost.
					s.NoSideload = true
					intent = stopIntent{kind: stopSwitch}
					st.emit(effPublish{protocol.ServerMessageNotification{Level: protocol.LevelWarning,
						Text: fmt.Sprintf("task %s: %s", s.T.ID, sideloadLost(st.e.sessionMCP))}})
					st.emit(effPersist{})
				}
			}
		}
		st.settleStopped(intent)

	case cmdCancel:
		intent := stopIntent{kind: stopCancel, detail: in.detail}
		switch {
		case status == protocol.StatusQueued || status == protocol.StatusPaused || status == protocol.StatusBlocked:
			if err := st.move(protocol.StatusCancelled); err != nil {
				return err
			}
			s.T.Blocked = cancelled(intent)
			st.changed()
			if s.agent != agentNone {
				st.stopAgent(stopIntent{kind: stopRelease}, false)
			}
		case status.Live():
			if status == protocol.StatusStarting && s.agent == agentNone {
				// Between a failed start and its retry.
				st.settleStopped(intent)
				return nil
			}
			st.stopAgent(intent, false)
		default:
			return errTransition("cancel", status)
		}

	case cmdKill:
		if s.agent == agentNone {
			return nil
		}
		intent := stopIntent{kind: stopCancel}
		if !status.Live() {
			intent = stopIntent{kind: stopRelease}
		}
		if s.agent == agentStopping && s.stop.kind != stopNone {
			intent = s.stop
		}
		st.stopAgent(intent, true)

	case cmdPause:
		switch {
		case status == protocol.StatusQueued:
			// Held back in the queue until resumed.
			if err := st.move(protocol.StatusPaused); err != nil {
				return err
			}
			st.changed()
		case status.Live():
			if status == protocol.StatusStarting && s.agent == agentNone {
				st.settleStopped(stopIntent{kind: stopPause})
				return nil
			}
			st.stopAgent(stopIntent{kind: stopPause}, false)
		default:
			return errTransition("pause", status)
		}

	case cmdResume:
		if err := st.opBusy(); err != nil {
			if in.auto {
				s.resumeAfterOp = true
				return nil
			}
			return err
		}
		resumable := status.Resumable() &&
			(status != protocol.StatusBlocked || s.T.Blocked == nil || s.T.Blocked.Reason != protocol.BlockedCancelledByUser)
		if !resumable {
			return errTransition("resume", status)
		}
		if s.agent != agentNone {
			return protocol.FailedPrecondition("the task's agent is still stopping; try again in a moment", status)
		}
		if err := st.move(protocol.StatusQueued); err != nil {
			return err
		}
		s.T.Blocked = nil
		s.StartFailures = 0
		switch {
		case in.text != "":
			s.FollowUp = in.text
		case s.FollowUp == "":
			s.FollowUp = resumePrompt
		}
		st.changed()

	case cmdSend:
		if err := st.opBusy(); err != nil {
			return err
		}
		switch {
		case (status == protocol.StatusRunning || status == protocol.StatusWaiting) && s.agent == agentUp:
			st.emit(effSendPrompt{text: in.text})
		case status == protocol.StatusMerging && s.warm && s.agent == agentUp:
			// A follow-up while the finished turn's claude is still warm:
			// it takes the message at once, in the slot it holds.
			if err := st.move(protocol.StatusRunning); err != nil {
				return err
			}
			s.warm = false
			s.T.Result = nil
			s.T.FinishedAt = time.Time{}
			s.T.StartedAt = st.e.now.UTC() // a follow-up's run, as a resumed one starts its own
			st.emit(effDisarmWarm{}, effSendPrompt{text: in.text})
			st.changed()
		case status == protocol.StatusMerging:
			// A follow-up on finished work: the agent resumes its session
			// with it when a slot is free (once the finished one is gone).
			if s.agent != agentNone {
				return protocol.FailedPrecondition("the task's agent is still stopping; try again in a moment", status)
			}
			if err := st.move(protocol.StatusQueued); err != nil {
				return err
			}
			s.FollowUp = in.text
			s.T.Result = nil
			st.changed()
		case status == protocol.StatusBlocked || status == protocol.StatusPaused:
			// Continue a blocked task: same session, same worktree, with the
			// person's message.
			return st.apply(cmdResume{text: in.text})
		default:
			return errTransition("send a message to", status)
		}

	case cmdSetMode:
		switch status {
		case protocol.StatusMerged, protocol.StatusCancelled:
			return errTransition("change the mode of", status)
		}
		if in.mode == s.T.Mode {
			return nil
		}
		st.emit(effAudit{action: "task.mode", actor: "user", data: map[string]string{"from": string(s.T.Mode), "to": string(in.mode)}})
		s.T.Mode = in.mode
		if s.T.Agent != nil && s.T.Agent.SessionID != "" || s.agent != agentNone {
			s.FollowUp = in.notice
		}
		if status.Live() && s.agent == agentUp {
			st.stopAgent(stopIntent{kind: stopSwitch}, false)
		}
		if s.warm && s.agent == agentUp {
			// The mode is claude's flags: the follow-up needs a new claude.
			st.emit(effDisarmWarm{})
			st.stopAgent(stopIntent{kind: stopRelease}, false)
		}
		st.changed()

	case cmdMarkDone:
		q := s.T.PendingQuestion
		if status != protocol.StatusWaiting || q == nil || q.Kind != protocol.QuestionQuestion {
			return protocol.FailedPrecondition("only a task waiting on a question from the agent's last message can be marked done", status)
		}
		if in.questionID != "" && in.questionID != q.ID {
			return protocol.NotFound("question", in.questionID)
		}
		if s.completing {
			return nil
		}
		text := q.Text
		st.emit(effAudit{action: "task.markedDone", actor: "user", data: map[string]any{"questionId": q.ID, "closing": q.Closing}})
		st.settle(q.ID, protocol.DecidedByUser, "")
		// As if the turn had ended with a report: the usual git work, then
		// merging.
		s.completing = true
		st.emit(effPersist{}, effComplete{turn: agent.TurnEnded{LastMessage: text}})

	case cmdRevoke:
		var kept []protocol.Grant
		for _, g := range s.T.Grants {
			if g.Rule != in.rule {
				kept = append(kept, g)
			}
		}
		if len(kept) == len(s.T.Grants) {
			return nil
		}
		s.T.Grants = kept
		st.emit(effAudit{action: "policy.revoked", actor: "user", data: map[string]any{
			"rule": in.rule, "scope": protocol.GrantTask, "note": "a running session keeps the rule until it restarts"}})
		st.changed()

	case inWarmOver, cmdCool:
		if s.warm && s.agent == agentUp {
			st.emit(effDisarmWarm{})
			st.stopAgent(stopIntent{kind: stopRelease}, false)
		}

	case cmdShutdown:
		if s.agent != agentNone {
			st.stopAgent(stopIntent{kind: stopShutdown, reason: protocol.BlockedInterrupted, detail: "familiar shut down"}, false)
		} else if status == protocol.StatusStarting {
			st.settleStopped(stopIntent{kind: stopShutdown})
		}

	case cmdBeginOp:
		if s.op != opNone {
			return protocol.FailedPrecondition(fmt.Sprintf("a %s of this task is in progress", s.op), status)
		}
		switch in.op {
		case opMerge:
			if status != protocol.StatusMerging {
				return errTransition("merge", status)
			}
		case opUndo:
			if !status.Undoable() {
				return errTransition("undo", status)
			}
		case opRemove:
			// A queued task would start in the worktree being removed:
			// the person cancels it first (a remove is no cancel).
			if status == protocol.StatusQueued {
				return protocol.FailedPrecondition("cannot remove a task that is queued; cancel it first", status)
			}
			if status.Live() {
				return errTransition("remove", status)
			}
		}
		if s.agent != agentNone || s.completing {
			return protocol.FailedPrecondition("the task's agent is still stopping; try again in a moment", status)
		}
		s.op = in.op

	case cmdEndOp:
		if s.op != in.op {
			return nil
		}
		s.op = opNone
		if s.resumeAfterOp {
			// The usage limit reset during the operation: continue now,
			// unless the worktree went with it.
			s.resumeAfterOp = false
			if !(in.op == opRemove && in.ok) {
				defer func() { _ = st.apply(cmdResume{auto: true}) }()
			}
		}
		if !in.ok {
			if in.block != nil && in.op == opMerge && status == protocol.StatusMerging {
				st.blockWith(*in.block)
			}
			return nil
		}
		switch in.op {
		case opMerge:
			if err := st.move(protocol.StatusMerged); err != nil {
				return err
			}
			s.Merge = in.merge
			if r := s.T.Result; r != nil && r.NoChanges {
				// Commits made by hand since the task finished were merged.
				c := *r
				c.NoChanges = false
				s.T.Result = &c
			}
			st.emit(effAudit{action: "task.merged", actor: "user", data: in.audit})
		case opUndo:
			if in.undone {
				if err := st.move(protocol.StatusMerging); err != nil {
					return err
				}
				s.Merge = nil
			}
			if in.result != nil && s.T.Result != nil {
				r := *s.T.Result
				r.ChangedFiles, r.Commits = in.result.ChangedFiles, in.result.Commits
				r.NoChanges = len(r.ChangedFiles) == 0 && len(r.Commits) == 0
				s.T.Result = &r
			}
			st.emit(effAudit{action: "task.undone", actor: "user", data: in.audit})
		case opRemove:
			s.T.Worktree = nil
		}
		st.changed()

	case inQueueMoved:
		if status == protocol.StatusQueued {
			// Its place changed: a change of the task as clients see it
			// (not worth a durable write; places are recomputed at start).
			s.T.UpdatedAt = st.e.now.UTC()
			st.emit(effUpdated{})
		}

	case inWorktree:
		w := in.worktree
		s.T.Worktree = &w
		s.RepoRoot = st.e.repoRoot
		st.changed()

	case inProcess:
		if s.agent != agentStarting {
			return nil
		}
		id := in.identity
		s.Process = &id
		st.emit(effPersist{})

	case inLoaded:
		// Nothing runs yet: a task that was live when familiar stopped lost
		// its agent.
		s.agent, s.stop, s.op, s.completing, s.resumeAfterOp, s.warm = agentNone, stopIntent{}, opNone, false, false, false
		if status.Live() {
			// A task that waited on a person stays for that person; one
			// that worked on its own continues by itself (recoverLeftovers).
			s.resumeOnLoad = status != protocol.StatusWaiting && s.T.Agent != nil && s.T.Agent.SessionID != ""
			detail := "familiar stopped while the agent was running"
			if status == protocol.StatusWaiting {
				detail = "familiar stopped while the agent waited for an answer"
			}
			if err := st.move(protocol.StatusBlocked); err != nil {
				return err
			}
			s.T.Blocked = &protocol.Blocked{Reason: protocol.BlockedInterrupted, Detail: detail}
			st.changed()
		}

	case cmdArchive:
		if !in.at.IsZero() && (status.Live() || status == protocol.StatusQueued) {
			return protocol.FailedPrecondition("task "+s.T.ID+" is "+string(status)+": only a task that is not queued or running can be archived; cancel it first", status)
		}
		if s.T.ArchivedAt.IsZero() == in.at.IsZero() {
			return nil
		}
		s.T.ArchivedAt = in.at
		action := "task.archived"
		if in.at.IsZero() {
			action = "task.unarchived"
		}
		st.emit(effAudit{action: action, actor: "user"})
		st.changed()

	case cmdRequeue:
		if status != protocol.StatusQueued {
			return nil
		}
		s.T.Priority, s.Seq = in.priority, in.seq
		st.changed()

	default:
		return fmt.Errorf("unknown input %T", in)
	}
	return nil
}

// settleStopped moves a task whose agent has gone (or never came up) to
// where its stop intent says.
func (st *stepper) settleStopped(intent stopIntent) {
	s := &st.s
	s.stop = stopIntent{}
	status := s.T.Status
	switch intent.kind {
	case stopSwitch:
		if status.Live() {
			// A mode switch keeps the slot: start again straight away.
			if status != protocol.StatusStarting {
				_ = st.move(protocol.StatusStarting)
			}
			st.beginStart()
			return
		}
	case stopRetry:
		if status.Live() {
			if status != protocol.StatusStarting {
				_ = st.move(protocol.StatusStarting)
			}
			s.StartFailures++
			st.emit(effBackoff{after: st.e.startBackoff << max(s.StartFailures-1, 0)})
			st.changed()
			return
		}
	case stopCancel:
		if status != protocol.StatusCancelled && st.move(protocol.StatusCancelled) == nil {
			s.T.Blocked = cancelled(intent)
		}
	case stopPause:
		if status.Live() {
			_ = st.move(protocol.StatusPaused)
			if s.FollowUp == "" {
				s.FollowUp = resumePrompt
			}
		}
	case stopBlock, stopShutdown:
		if status.Live() {
			reason, detail := intent.reason, intent.detail
			if intent.kind == stopShutdown {
				reason, detail = protocol.BlockedInterrupted, "familiar shut down"
			}
			if st.move(protocol.StatusBlocked) == nil {
				s.T.Blocked = &protocol.Blocked{Reason: reason, Detail: detail}
				s.LastError = detail
			}
		}
	case stopRelease, stopNone:
	}
	st.changed()
}

// settle clears a pending question once, whoever settled it first, and
// announces task/questionResolved.
func (st *stepper) settle(questionID string, by protocol.DecidedBy, optionID string) {
	s := &st.s
	if s.T.PendingQuestion == nil || s.T.PendingQuestion.ID != questionID {
		return
	}
	s.T.PendingQuestion = nil
	st.emit(effDisarmApproval{})
	if s.T.Status == protocol.StatusWaiting {
		_ = st.move(protocol.StatusRunning)
	}
	st.changed()
	st.emit(effPublish{protocol.TaskQuestionResolvedNotification{ID: s.T.ID, QuestionID: questionID, DecidedBy: by, OptionID: optionID}})
}

// policyAnswered shows a question the policy decided, settles it at once
// and answers the agent.
func (st *stepper) policyAnswered(q protocol.Question, d *decision) {
	id := st.s.T.ID
	st.emit(effPublish{protocol.TaskQuestionNotification{ID: id, Question: protocol.Question{
		ID: q.ID, Kind: protocol.QuestionPermission, Text: agentText(*d), Tool: d.tool, Input: d.input, Skill: q.Skill,
		Options: []protocol.Option{{ID: agent.OptionAllow, Label: "Allow"}, {ID: agent.OptionAllowAlways, Label: "Allow always"}, {ID: agent.OptionDeny, Label: "Deny"}},
	}}})
	st.emit(effPublish{protocol.TaskQuestionResolvedNotification{ID: id, QuestionID: q.ID, DecidedBy: protocol.DecidedByPolicy, OptionID: d.option}})
	actor := string(protocol.DecidedByPolicy)
	if d.elevated {
		actor = "elevated"
	}
	data := map[string]any{
		"questionId": q.ID, "tool": d.tool, "input": d.input, "option": d.option, "rule": d.rule, "reason": d.reason,
		"decidedBy": protocol.DecidedByPolicy,
	}
	if q.Skill != nil {
		data["skill"] = q.Skill
	}
	st.emit(effAudit{action: "permission.decided", actor: actor, data: data})
	st.emit(effAnswer{questionID: q.ID, answer: agent.Answer{OptionID: d.option, Text: d.reason}})
}

// turnEnded decides what the end of a turn means for the task.
func (st *stepper) turnEnded(turn agent.TurnEnded) {
	s := &st.s
	if u := turn.Usage; u != nil && turn.BackgroundTasks == 0 {
		s.T.Usage = ownUsage(s.T.Usage)
		tu := protocol.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
			CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD, Responses: u.Responses}
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
		t.InputTokens += u.InputTokens
		t.OutputTokens += u.OutputTokens
		t.CacheReadTokens += u.CacheReadTokens
		t.CacheWriteTokens += u.CacheWriteTokens
		t.CostUSD += u.CostUSD
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

func grantsHave(list []protocol.Grant, rule string) bool {
	for _, g := range list {
		if g.Rule == rule {
			return true
		}
	}
	return false
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

// sideloadLost says what a task started without its sideloaded parts has
// lost: the settings' MCP servers (named) and the user's own.
func sideloadLost(settings []string) string {
	lost := "the MCP servers of your own claude configuration"
	if len(settings) > 0 {
		lost = "the MCP servers of familiar's settings (" + strings.Join(settings, ", ") + ") and " + lost
	}
	return "claude refused to start with MCP servers passed on its command line (your organization's managed settings set " +
		"disableSideloadFlags); the task needs none of its own, so it starts again without " + lost
}
