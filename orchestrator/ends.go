package orchestrator

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// Every end of a task is announced with task/completed: a success (→
// merging) and every failed end — blocked, or cancelled by familiar rather
// than by the person, who knows of their own cancel. A client then hears of
// a task that stopped without watching every task/updated, and learns what
// it can do about it (detail). Part of step, so pure like it.

// announceEnd publishes task/completed when this step ended the task.
func (st *stepper) announceEnd(from protocol.Status) {
	s := &st.s
	to := s.T.Status
	if to == from {
		return
	}
	n := protocol.TaskCompletedNotification{ID: s.T.ID, Status: to}
	switch {
	case to == protocol.StatusMerging && from.Live() && s.T.Result != nil:
		n.Result = *s.T.Result
	case to == protocol.StatusBlocked && s.T.Blocked != nil:
		if s.resumeOnLoad {
			// Read back after a crash and continued by familiar at once:
			// nothing for a person to do.
			return
		}
		n.Result = st.failedResult()
		n.Reason, n.Detail, n.ResetsAt = s.T.Blocked.Reason, endDetail(*s.T.Blocked, st.e), s.T.Blocked.ResetsAt
	case to == protocol.StatusCancelled && s.T.Blocked != nil && s.T.Blocked.Reason != protocol.BlockedCancelledByUser:
		n.Result = st.failedResult()
		n.Reason, n.Detail = s.T.Blocked.Reason, s.T.Blocked.Detail
	default:
		return
	}
	st.emit(effPublish{n})
}

// failedResult is the result of a failed end: what is known of the work.
func (st *stepper) failedResult() protocol.TaskResult {
	var r protocol.TaskResult
	if st.s.T.Result != nil {
		r = *st.s.T.Result
	}
	r.Success, r.NoChanges = false, false
	if r.CostUSD == nil {
		if c := st.spent(); c > 0 {
			r.CostUSD = &c
		}
	}
	return r
}

// cancelled is the Blocked of a cancelled task: the person's cancel, or
// familiar's with its reason.
func cancelled(in stopIntent) *protocol.Blocked {
	if in.detail != "" {
		return &protocol.Blocked{Reason: protocol.BlockedCancelled, Detail: in.detail}
	}
	return &protocol.Blocked{Reason: protocol.BlockedCancelledByUser, Detail: "cancelled by the user"}
}

// endDetail says in a sentence or two why a task is blocked and what a
// person can do about it.
func endDetail(b protocol.Blocked, e env) string {
	d := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(b.Detail), "."))
	if r, size := utf8.DecodeRuneInString(d); size > 0 {
		d = string(unicode.ToUpper(r)) + d[size:]
	}
	switch b.Reason {
	case protocol.BlockedAuth:
		if !strings.Contains(d, agent.AuthFix) {
			d += "; " + agent.AuthFix
		}
		return sentence(d) + " Then continue the task."
	case protocol.BlockedAPIError:
		if b.Status != 0 {
			return fmt.Sprintf("The API answered HTTP %d: %s. Continue the task when the API works again.", b.Status, d)
		}
		return fmt.Sprintf("The API could not be reached: %s. Continue the task when it can.", d)
	case protocol.BlockedUsageLimit:
		then := "Continue the task once it has reset."
		if e.resumeAfterUsageLimit {
			then = "familiar continues the task by itself then."
		}
		if b.ResetsAt.IsZero() {
			return sentence(d+" (claude did not say when the usage limit resets)") + " Continue the task once it has reset."
		}
		return fmt.Sprintf("%s: the usage limit resets at %s (%s). %s", d, b.ResetsAt.UTC().Format("15:04 MST on Jan 2"), inWords(b.ResetsAt.Sub(e.now)), then)
	case protocol.BlockedBudget:
		return sentence(d) + " Raise its budget (maxBudgetUsd) to continue it."
	case protocol.BlockedTimeout:
		return sentence(d) + " Continue the task to try again, or retry it."
	case protocol.BlockedStartFailed:
		return sentence(d) + " `familiar doctor` checks the setup."
	case protocol.BlockedInterrupted:
		return sentence(d) + " Continue the task to resume its session."
	case protocol.BlockedMerge:
		return sentence(d) + " Continue the task with what to do (or fix its worktree yourself), then merge it or queue it again."
	case protocol.BlockedConflict:
		return sentence(d) + " Continue the task to have its agent resolve it, or resolve it in its worktree yourself; then merge it or queue it again."
	}
	return sentence(d)
}

// sentence ends s with a full stop.
func sentence(s string) string {
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// inWords says a wait roughly: "in 2 h 5 min", "in 40 s", "now".
func inWords(d time.Duration) string {
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("in %d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("in %d min", int(d.Minutes()))
	}
	h, m := int(d.Hours()), int(d.Minutes())%60
	if m == 0 {
		return fmt.Sprintf("in %d h", h)
	}
	return fmt.Sprintf("in %d h %d min", h, m)
}
