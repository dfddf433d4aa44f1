package orchestrator

import (
	"fmt"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// Inputs of a git operation on a finished task (merge, undo, remove): it begins
// only when nothing else owns the worktree, and its end records what it did.

// cmdBeginOp claims the task for a git operation (single flight).
type cmdBeginOp struct{ op opKind }

func (in cmdBeginOp) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
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
	return nil
}

// cmdEndOp reports a git operation's end and what it did.
type cmdEndOp struct {
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

func (in cmdEndOp) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if s.op != in.op {
		return nil
	}
	s.op = opNone
	if in.op == opMerge && s.MergeIntent != nil {
		s.MergeIntent = nil
		st.changed()
	}
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
		st.emit(effAudit{action: "task.merged", actor: "user", data: in.audit}, effForecastAll{})
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
		st.emit(effAudit{action: "task.undone", actor: "user", data: in.audit}, effForecastAll{})
	case opRemove:
		s.T.Worktree = nil
	}
	st.changed()
	return nil
}

// mergeIntent is a merge of the task about to move its base: from Before to
// After, the candidate commit built for it.
type mergeIntent struct {
	Base     string    `json:"base"`
	Before   string    `json:"before"`
	After    string    `json:"after"`
	Strategy string    `json:"strategy"`
	QueueID  string    `json:"queueId,omitempty"`
	At       time.Time `json:"at"`
}

// cmdMergeIntent records, before the base moves, the merge the task's
// operation is about to make; its reply comes once it is durable.
type cmdMergeIntent struct{ intent mergeIntent }

func (in cmdMergeIntent) apply(st *stepper) error {
	s := &st.s
	if s.op != opMerge || s.T.Status != protocol.StatusMerging {
		return protocol.FailedPrecondition("the task's merge is not in progress", s.T.Status)
	}
	i := in.intent
	s.MergeIntent = &i
	st.changed()
	return nil
}

// inMergeSettled: on start, what the base held of a merge a previous
// familiar had begun (mergeIntent): done, the task is merged (undoable as
// any merge); not done, the task is as it was, ready to merge.
type inMergeSettled struct {
	done  bool
	merge *mergeRecord
	audit map[string]any
}

func (in inMergeSettled) apply(st *stepper) error {
	s := &st.s
	if s.MergeIntent == nil {
		return nil
	}
	s.MergeIntent = nil
	if in.done && s.T.Status == protocol.StatusMerging && s.op == opNone {
		if err := st.move(protocol.StatusMerged); err != nil {
			return err
		}
		s.Merge = in.merge
		st.emit(effAudit{action: "task.merged", actor: "familiar", data: in.audit}, effForecastAll{})
	}
	st.changed()
	return nil
}
