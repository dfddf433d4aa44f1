package orchestrator

import (
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// Inputs that continue a task or change how it runs: resume, a follow-up message,
// the mode, its place in the queue, the archive.

// cmdResume is task/resume (text: task/send's message to a paused or
// blocked task); auto is the usage limit's reset, which nobody waits on:
// during a git operation it is kept for the operation's end.
type cmdResume struct {
	text string
	auto bool
}

func (in cmdResume) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
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
	return nil
}

// cmdSend is task/send: a follow-up message for the agent.
type cmdSend struct{ text string }

func (in cmdSend) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
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
	case status.Resumable():
		// Continue a blocked task: same session, same worktree, with the
		// person's message.
		return st.apply(cmdResume{text: in.text})
	default:
		return errTransition("send a message to", status)
	}
	return nil
}

// cmdSetMode is task/setMode; notice is the follow-up that tells the agent.
type cmdSetMode struct {
	mode   protocol.Mode
	notice string
}

func (in cmdSetMode) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
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
	return nil
}

// cmdRequeue is task/reorder: a queued task's new priority and place.
type cmdRequeue struct {
	priority int
	seq      int64
}

func (in cmdRequeue) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if status != protocol.StatusQueued {
		return nil
	}
	s.T.Priority, s.Seq = in.priority, in.seq
	st.changed()
	return nil
}

type inQueueMoved struct{} // the task's place in the queue may have changed

func (inQueueMoved) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if status == protocol.StatusQueued {
		// Its place changed: a change of the task as clients see it
		// (not worth a durable write; places are recomputed at start).
		s.T.UpdatedAt = st.e.now.UTC()
		st.emit(effUpdated{})
	}
	return nil
}

// cmdArchive archives a finished task at at, or shows it again (zero).
type cmdArchive struct{ at time.Time }

func (in cmdArchive) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if !in.at.IsZero() && status.HoldsWorktree() {
		return protocol.FailedPrecondition("task "+s.T.ID+" is "+string(status)+": only a task that is not queued or running can be archived; cancel it first", status)
	}
	if s.T.ArchivedAt.IsZero() == in.at.IsZero() {
		return nil
	}
	s.T.ArchivedAt = in.at
	if !in.at.IsZero() {
		// Put away, so not followed up: a warm claude goes.
		_ = st.letWarmGo()
	}
	action := "task.archived"
	if in.at.IsZero() {
		action = "task.unarchived"
	}
	st.emit(effAudit{action: action, actor: "user"})
	st.changed()
	return nil
}
