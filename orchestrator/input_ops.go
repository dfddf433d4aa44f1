package orchestrator

import (
	"fmt"

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
