package plan

import (
	"context"
	"encoding/json"

	"github.com/familiar-dev/familiar/protocol"
)

// Host is what the Planner needs of the rest of familiar: the
// orchestrator's internal commands, never its protocol methods' locks
// twice over.
type Host interface {
	// CreateTask queues a task (task/create from inside familiar).
	CreateTask(ctx context.Context, p *protocol.TaskCreateParams) (string, error)
	// CancelTask stops a live task (task/cancel from inside familiar).
	CancelTask(ctx context.Context, id string) error
	// ResumeTask continues a task familiar stopped while it worked, in its
	// worktree and session (task/resume from inside familiar).
	ResumeTask(ctx context.Context, id string) error
	// Task reads a task for the plan; false when there is none.
	Task(id string) (Task, bool)
	// FinalText is the whole of a finished task's last message (its
	// summary, unclipped).
	FinalText(ctx context.Context, id string) (string, error)
	// QueueRunning: a merge queue runs.
	QueueRunning() bool
	// Integrate merges these tasks through the merge queue, in this
	// order, with verify (nil: the settings' or repository's command):
	// joined to the running queue when it merges as they would, else a
	// queue of their own; an error when neither can be (one runs that
	// merges otherwise: tried again later).
	Integrate(ctx context.Context, ids []string, verify *string) error
	// CancelQueue stops the running merge queue after its current step.
	CancelQueue() error
	// MovedBranches are the task branches the last merge queue moved (a
	// conflict handed to the agent, resolved by its own commit), with
	// where each was before.
	MovedBranches() map[string]string
	// UndoMerge takes a task's merge back (task/undo).
	UndoMerge(ctx context.Context, id string) error
	// RestoreBranch puts a task's branch back at commit.
	RestoreBranch(ctx context.Context, id, commit string) error
	// DefaultBase is the branch a plan that names none starts from.
	DefaultBase(ctx context.Context) (string, error)

	Audit(taskID, action, actor string, data any)
	Publish(n protocol.Notification)
	Mask(s string) string
}

// Store keeps the plans.
type Store interface {
	PutSetting(ctx context.Context, name string, value json.RawMessage) error
	GetSetting(name string) (json.RawMessage, error)
}
