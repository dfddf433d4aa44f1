package protocol

import "time"

// The merge queue (issue 25): familiar's additions to PROTOCOL.md. Kept in
// one file so they read together; their methods are part of Server.

const (
	MethodQueueMerge  = "queue/merge"
	MethodQueueStatus = "queue/status"
	MethodQueueCancel = "queue/cancel"
	MethodQueueUndo   = "queue/undo"

	NotifyQueueUpdated = "queue/updated"

	// BlockedMerge: the merge queue set the task aside after it failed the
	// queue twice (a conflict with the base, a failing verify command).
	BlockedMerge BlockedReason = "merge"
	// BlockedConflict: the task's turn ended with a conflict it was given
	// (by the merge queue, or a merge of its own) not resolved: unmerged
	// files or conflict markers left in its change. Nothing of it was
	// committed; Detail names the files and lines (issue 34).
	BlockedConflict BlockedReason = "conflict"
)

// QueueState is where a merge queue is.
type QueueState string

const (
	QueueRunning   QueueState = "running"
	QueueDone      QueueState = "done"
	QueueCancelled QueueState = "cancelled"
	QueueUndone    QueueState = "undone"
)

// QueueItemState is where one task is in the queue.
type QueueItemState string

const (
	QueueItemWaiting    QueueItemState = "waiting"
	QueueItemUpdating   QueueItemState = "updating"  // its candidate (the base with it merged) is being built
	QueueItemVerifying  QueueItemState = "verifying" // the verify command runs
	QueueItemMerging    QueueItemState = "merging"   // merged into the base
	QueueItemMerged     QueueItemState = "merged"
	QueueItemHandedBack QueueItemState = "handedBack" // its agent works on the conflict or the failure
	QueueItemBlocked    QueueItemState = "blocked"    // failed twice: blocked{merge}
	QueueItemCancelled  QueueItemState = "cancelled"  // the queue was cancelled before it
	QueueItemUndone     QueueItemState = "undone"     // queue/undo took its merge back
)

// Queue is the merge queue of a repository.
type Queue struct {
	ID        string        `json:"id"`
	State     QueueState    `json:"state"`
	Strategy  MergeStrategy `json:"strategy"`
	Verify    string        `json:"verify,omitempty"`
	BaseRef   string        `json:"baseRef"`
	StartedAt time.Time     `json:"startedAt"`
	EndedAt   time.Time     `json:"endedAt,omitzero"`
	Current   string        `json:"current,omitempty"`
	Items     []QueueItem   `json:"items"`
	// Parallel is how many candidates are verified at once (issue 34).
	Parallel int `json:"parallel,omitempty"`
	// Interrupted says, in words, that familiar stopped (a crash or a
	// shutdown) while the queue ran, and what it found when it started
	// again: what merged, what did not, how to continue.
	Interrupted string `json:"interrupted,omitempty"`
}

// QueueItem is one task of the queue.
type QueueItem struct {
	TaskID   string         `json:"taskId"`
	Title    string         `json:"title"`
	State    QueueItemState `json:"state"`
	Attempts int            `json:"attempts"`
	// Reason is why the task went back to its agent or was set aside:
	// "conflict", "verify" or "error".
	Reason    string      `json:"reason,omitempty"`
	Detail    string      `json:"detail,omitempty"`
	Files     []string    `json:"files,omitempty"`
	Output    string      `json:"output,omitempty"`
	OutputRef string      `json:"outputRef,omitempty"`
	Merge     *QueueMerge `json:"merge,omitempty"`
	// HandBacks are the times the queue handed the task back to its agent,
	// in order: the item's reason and files are cleared when it tries
	// again, and a client that says at the end what went back (and why)
	// reads them here.
	HandBacks []QueueHandBack `json:"handBacks,omitempty"`
}

// QueueHandBack is one time the queue handed a task back to its agent.
type QueueHandBack struct {
	// Reason is "conflict" or "verify".
	Reason string   `json:"reason"`
	Detail string   `json:"detail,omitempty"`
	Files  []string `json:"files,omitempty"`
}

// QueueMerge is the base's commits around the task's merge.
type QueueMerge struct {
	Before string `json:"before"`
	After  string `json:"after"`
}

// QueueMergeParams: {ids?, strategy?, verify?}.
type QueueMergeParams struct {
	IDs      []string      `json:"ids,omitempty"`
	Strategy MergeStrategy `json:"strategy,omitempty"`
	// Verify is nil when absent (the settings' or the repository's
	// command then); "" asks for none.
	Verify *string `json:"verify,omitempty"`
}

func (p *QueueMergeParams) Validate() error {
	var c checker
	optionalEnum(&c, "strategy", p.Strategy, MergeStrategies)
	seen := map[string]bool{}
	for _, id := range p.IDs {
		if id == "" {
			c.fail("ids", "ids must not hold an empty id.")
		} else if seen[id] {
			c.fail("ids", "ids names %s twice.", id)
		}
		seen[id] = true
	}
	if p.Verify != nil && len(*p.Verify) > 4096 {
		c.fail("verify", "verify must be at most 4096 bytes, not %d.", len(*p.Verify))
	}
	return c.result()
}

type QueueStatusParams struct{}

func (p *QueueStatusParams) Validate() error { return nil }

// QueueStatusResult: the running queue, else the last one.
type QueueStatusResult struct {
	Queue *Queue `json:"queue,omitempty"`
	// DefaultVerify is the verify command a queue/merge that names none
	// runs (the settings' mergeVerify, else the repository's
	// .familiar/config.yaml), absent when none: an editor prefills it.
	DefaultVerify string `json:"defaultVerify,omitempty"`
}

type QueueCancelParams struct{}

func (p *QueueCancelParams) Validate() error { return nil }

type QueueUndoParams struct{}

func (p *QueueUndoParams) Validate() error { return nil }

// QueueUpdatedNotification: every step of the queue.
type QueueUpdatedNotification struct {
	Seq   int64 `json:"seq"`
	Queue Queue `json:"queue"`
}

func (QueueUpdatedNotification) Method() string    { return NotifyQueueUpdated }
func (n QueueUpdatedNotification) Sequence() int64 { return n.Seq }
