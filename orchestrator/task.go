package orchestrator

import (
	"context"
	"encoding/json"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
)

// persisted is what the store keeps of a task: the protocol view plus what
// familiar needs to start, resume or clean up after it.
type persisted struct {
	T protocol.Task `json:"task"`

	PromptOverride       string                        `json:"promptOverride,omitempty"`
	Hints                *protocol.Hints               `json:"hints,omitempty"`
	Directives           *protocol.Directives          `json:"directives,omitempty"`
	Skills               []string                      `json:"skills,omitempty"`
	McpServers           map[string]protocol.McpServer `json:"mcpServers,omitempty"`
	NoProgressTimeoutSec *int                          `json:"noProgressTimeoutSec,omitempty"`
	Policy               *protocol.Policy              `json:"permissionPolicy,omitempty"`
	BaseRef              string                        `json:"baseRef,omitempty"`
	RepoRoot             string                        `json:"repoRoot,omitempty"`
	Process              *procs.Identity               `json:"process,omitempty"` // the agent's, while live
	LastError            string                        `json:"lastError,omitempty"`
	Starts               int                           `json:"starts,omitempty"`   // agent starts so far
	Logs                 []string                      `json:"logs,omitempty"`     // one raw output log per start
	FollowUp             string                        `json:"followUp,omitempty"` // prompt for the next start (task/send on a finished task)
	Prior                *priorAttempt                 `json:"prior,omitempty"`    // what the previous attempt left (retry)
	StartFailures        int                           `json:"startFailures,omitempty"`
	Turns                int                           `json:"turns,omitempty"` // turns ended, for checkpoint messages
	Merge                *mergeRecord                  `json:"merge,omitempty"` // the last merge, for undo
	Seq                  int64                         `json:"seq"`             // FIFO order within a priority
}

// priorAttempt is what a retry tells the agent about the attempt before.
type priorAttempt struct {
	Summary       string `json:"summary,omitempty"`
	BlockedReason string `json:"blockedReason,omitempty"`
	LastError     string `json:"lastError,omitempty"`
}

// task is one task; its fields are guarded by Orchestrator.mu.
type task struct {
	persisted

	sess       *agent.Session // while an agent runs
	stopping   bool           // a stop was requested; exit is expected
	stopReason protocol.BlockedReason
	stopDetail string
	cancelled  bool        // the stop is a user cancel
	pausing    bool        // the stop is a pause
	restarting bool        // the stop is a retry of a failed start
	switching  bool        // the stop is a mode switch: start again at once
	approval   clock.Timer // the pending question's timeout
	outputSize int64       // bytes of output seen
	askedAt    time.Time   // when the pending question was asked
	costUSD    *float64
}

// snapshot returns the protocol view of t with derived fields filled in.
func (t *task) snapshot() protocol.Task {
	c := t.T
	if c.PendingQuestion != nil {
		q := *c.PendingQuestion
		c.PendingQuestion = &q
	}
	return c
}

// save persists t. The group-committing store makes this cheap enough to do
// on every change.
func (o *Orchestrator) save(t *task) {
	data, err := json.Marshal(t.persisted)
	if err != nil {
		o.logger.Error("encode task", "id", t.T.ID, "err", err)
		return
	}
	rec := store.TaskRecord{
		ID: t.T.ID, Status: string(t.T.Status), CreatedAt: t.T.CreatedAt, UpdatedAt: t.T.UpdatedAt, Data: data,
	}
	if err := o.cfg.Store.PutTask(context.Background(), rec); err != nil {
		o.logger.Error("save task", "id", t.T.ID, "err", err)
	}
}

// touchLocked stamps t, persists it and announces task/updated. Called with
// o.mu held, so the order of notifications is the order of changes.
func (o *Orchestrator) touchLocked(t *task) {
	t.T.UpdatedAt = o.clk.Now().UTC()
	o.save(t)
	snap := t.snapshot()
	if snap.Status == protocol.StatusQueued {
		o.fillQueueLocked(&snap)
	}
	o.pub.publish(t.T.ID, protocol.TaskUpdatedNotification{Task: snap})
}

// setStatusLocked moves t to status `to` through the state machine.
func (o *Orchestrator) setStatusLocked(t *task, to protocol.Status) error {
	from := t.T.Status
	if from == to {
		return nil
	}
	if !canTransition(from, to) {
		return errTransition("move to "+string(to)+" from "+string(from), from)
	}
	t.T.Status = to
	now := o.clk.Now().UTC()
	o.audit(t.T.ID, "task.status", "familiar", map[string]string{"from": string(from), "to": string(to)})
	switch to {
	case protocol.StatusStarting:
		t.T.StartedAt = now
		t.T.Blocked = nil
	case protocol.StatusMerging, protocol.StatusBlocked, protocol.StatusCancelled, protocol.StatusMerged:
		t.T.FinishedAt = now
		if !t.T.StartedAt.IsZero() && to != protocol.StatusMerged {
			o.durations = append(o.durations, now.Sub(t.T.StartedAt))
			if len(o.durations) > 20 {
				o.durations = o.durations[1:]
			}
		}
	case protocol.StatusQueued:
		t.T.FinishedAt = time.Time{}
	}
	if to != protocol.StatusRunning && to != protocol.StatusWaiting {
		t.T.Activity = protocol.ActivityIdle
	}
	if to != protocol.StatusWaiting {
		t.T.PendingQuestion = nil
	}
	if to == protocol.StatusMerging || to == protocol.StatusBlocked || to == protocol.StatusCancelled || to == protocol.StatusPaused {
		o.poke()
	}
	return nil
}
