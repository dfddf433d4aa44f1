package orchestrator

import (
	"fmt"
	"path/filepath"

	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/protocol"
)

// Inputs of a task's start: the scheduler's slot, the agent coming up (or not), the
// backoff after a failed start, and what a start or a load records.

type inStart struct{} // the scheduler gave the task a slot

func (inStart) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
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
	return nil
}

// inStarted: the agent is up.
type inStarted struct{ agent protocol.AgentInfo }

func (in inStarted) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
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
	return nil
}

// inStartFailed: the worktree, the options or the spawn failed.
type inStartFailed struct {
	detail    string
	transient bool
	auth      bool // no login at all: blocked{auth}
}

func (in inStartFailed) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if s.agent != agentStarting {
		return errTransition("fail the start of", status)
	}
	s.agent = agentNone
	st.emit(effAgentGone{})
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
	return nil
}

// inBackoffDone: the wait after a transient start failure is over.
type inBackoffDone struct{}

func (inBackoffDone) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if status != protocol.StatusStarting || s.agent != agentNone {
		return nil // cancelled or paused meanwhile
	}
	// Back to the queue; it keeps its place (FIFO by Seq).
	if err := st.move(protocol.StatusQueued); err != nil {
		return err
	}
	s.requeued = true
	st.changed()
	return nil
}

// inWorktree: the task's worktree was made.
type inWorktree struct{ worktree protocol.Worktree }

func (in inWorktree) apply(st *stepper) error {
	s := &st.s
	w := in.worktree
	s.T.Worktree = &w
	s.RepoRoot = st.e.repoRoot
	st.changed()
	return nil
}

type inProcess struct{ identity procs.Identity } // the agent's process, for reaping after a crash

func (in inProcess) apply(st *stepper) error {
	s := &st.s
	if s.agent != agentStarting {
		return nil
	}
	id := in.identity
	s.Process = &id
	st.emit(effPersist{})
	return nil
}

type inLoaded struct{} // read back from the store at start

func (inLoaded) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
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
	return nil
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
