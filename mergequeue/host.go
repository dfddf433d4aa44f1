// Package mergequeue is the merge queue (issues 25 and 34): the ready tasks
// of a repository merged into their base one after another, each merge
// checked first, so the base never gets a merge nobody ran the checks on.
//
// What is checked is the merge, not the branch: candidate k is the base
// with tasks 1..k merged, built as commits beside everything
// (Integration.Candidate), each verified in a scratch worktree of its own
// under procs, up to queueParallel at once; the base fast-forwards, by
// compare-and-swap, along the longest passing prefix. A failing candidate's
// task goes back to its agent and the ones built on it are built again
// without it. A task's own branch is never rewritten by the queue: only a
// conflict with the base is handed to its agent as a merge in progress in
// its worktree, whose resolution is the agent's own commit (queue/undo
// takes that back too). Leftover conflict markers are never merged.
//
// It owns the queue's state, its goroutine and its verify commands' process
// trees; it never touches a task's state itself: it drives tasks through
// the Host (the orchestrator's internal commands: a task claimed for its
// merge, handed back, merged by the one merge step task/merge uses too) and
// reaches git through Integration.
package mergequeue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// Integration is the git the merge queue and task/merge share: a candidate
// built beside everything, checked in a scratch worktree, the base moved to
// it by compare-and-swap (*worktree.Repo).
type Integration interface {
	Tip(ctx context.Context, base string) (string, error)
	Candidate(ctx context.Context, parent string, wt worktree.Worktree, strategy worktree.Strategy, message string) (string, error)
	LeftoverMarkers(ctx context.Context, from, to string) ([]worktree.Marker, error)
	Advance(ctx context.Context, base, before, after string) (worktree.MergeResult, error)
	Contains(ctx context.Context, base, commit string) (bool, error)
	Scratch(ctx context.Context, slot int, commit string) (dir string, err error)
	RemoveScratch(ctx context.Context) error
	CheckBaseClean(ctx context.Context, base string) error
	BringBase(ctx context.Context, wt worktree.Worktree, base string, strategy worktree.Strategy) error
	AbortBringBase(ctx context.Context, wt worktree.Worktree) error
	BranchTip(ctx context.Context, wt worktree.Worktree) (string, error)
	RestoreBranch(ctx context.Context, wt worktree.Worktree, commit string) error
	ConflictHunks(wt worktree.Worktree, files []string, maxLines int) string
}

var _ Integration = (*worktree.Repo)(nil)

// Task is what the queue reads of a task.
type Task struct {
	ID       string
	Title    string
	Status   protocol.Status
	Summary  string
	Worktree worktree.Worktree
	Blocked  *protocol.Blocked
	// Busy: a git operation of the task's own (merge, undo, remove) runs.
	Busy bool
	// Changed are the files the task changed.
	Changed []string
	// MergedAt is when the task was merged (zero unless Status is merged).
	MergedAt             time.Time
	MergedBefore, Merged string
}

// Op is a task claimed for its merge: it ends exactly once, by Land (the
// base moved, the task merged), SetAside (not merged; blocked with why,
// when block is set) or Release (nothing done).
type Op interface {
	Task() Task
	// Land is the one merge step task/merge uses too: the merge's intent
	// recorded durably, the base moved from before to after by
	// compare-and-swap, the task merged. On an error nothing moved and the
	// operation has ended.
	Land(ctx context.Context, base, before, after, strategy, queueID string) (worktree.MergeResult, error)
	SetAside(block *protocol.Blocked) error
	Release()
}

// Host is what the queue needs of the rest of familiar.
type Host interface {
	// Claim takes a ready task for its merge (single flight, as task/merge).
	Claim(ctx context.Context, id string) (Op, error)
	// Task reads a task; false when there is none.
	Task(id string) (Task, bool)
	// SendFollowUp hands the task back to its agent with text (task/send
	// from inside familiar).
	SendFollowUp(ctx context.Context, id, text string) error
	// RemoveWorktree removes a merged task's worktree and branch.
	RemoveWorktree(ctx context.Context, id string) error
	// UndoMerge is task/undo of a merge, without its per-task warning.
	UndoMerge(ctx context.Context, id string) error
	// RestoreBranch puts a task's branch back at commit (what the queue
	// moved), aborting a merge the queue left in progress in its worktree.
	RestoreBranch(ctx context.Context, id, commit string) error

	// Audit records an entry; it does not block, and what Publish sends
	// after it goes out after it. The queue may call it under its lock.
	Audit(taskID, action, actor string, data any)
	// Publish sends a notification (durable first) about taskID ("" for
	// none).
	Publish(taskID string, n protocol.Notification)
	// Mask masks secrets in text before it is kept, sent or prompted.
	Mask(s string) string
	// ClipText keeps long text aside, returning its start and reference.
	ClipText(id, s string) (clipped, ref string)
	Settings() protocol.Settings
}

// Store keeps the queue's last state.
type Store interface {
	PutSetting(ctx context.Context, name string, value json.RawMessage) error
	GetSetting(name string) (json.RawMessage, error)
}
