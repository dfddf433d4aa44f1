package orchestrator

import (
	"context"
	"encoding/json"

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
	CommandTimeoutSec    *int                          `json:"commandTimeoutSec,omitempty"`
	MaxBudgetUsd         *float64                      `json:"maxBudgetUsd,omitempty"`
	WarmAgentSec         *int                          `json:"warmAgentSec,omitempty"` // the task's own, over the setting
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
	// NoSideload: claude refused familiar's --mcp-config (managed settings'
	// disableSideloadFlags) and the task can work without it: later starts
	// pass no MCP servers (the settings' nor the user's own).
	NoSideload bool         `json:"noSideload,omitempty"`
	Turns      int          `json:"turns,omitempty"` // turns ended, for checkpoint messages
	Merge      *mergeRecord `json:"merge,omitempty"` // the last merge, for undo
	// MergeIntent is a merge about to move the base, written (durably)
	// before the ref moves and cleared when the merge's end is recorded: a
	// familiar that stopped between the two finds it on start and settles
	// the task by what the base holds (reconcileMerges).
	MergeIntent *mergeIntent `json:"mergeIntent,omitempty"`
	Seq         int64        `json:"seq"` // FIFO order within a priority
}

// priorAttempt is what a retry tells the agent about the attempt before.
type priorAttempt struct {
	Summary       string `json:"summary,omitempty"`
	BlockedReason string `json:"blockedReason,omitempty"`
	LastError     string `json:"lastError,omitempty"`
}

// save persists a task. It runs on the task's actor, never under the
// orchestrator's lock: concurrent actors' writes share one commit.
// A failed write is logged here and returned; the store tells the clients
// once that it cannot write (OnStoreHealth), not once per task.
func (o *Orchestrator) save(p *persisted) error {
	data, err := json.Marshal(p)
	if err != nil {
		o.logger.Error("encode task", "id", p.T.ID, "err", err)
		return err
	}
	rec := store.TaskRecord{
		ID: p.T.ID, Status: string(p.T.Status), CreatedAt: p.T.CreatedAt, UpdatedAt: p.T.UpdatedAt, Data: data,
	}
	if err := o.cfg.Store.PutTask(context.Background(), rec); err != nil {
		o.logger.Debug("save task", "id", p.T.ID, "err", err)
		return err
	}
	return nil
}

// saveSoon puts the task's save on the store's save queue (committed with
// the writes queued beside it) and returns a wait for it.
func (o *Orchestrator) saveSoon(p *persisted) func(context.Context) error {
	data, err := json.Marshal(p)
	if err != nil {
		o.logger.Error("encode task", "id", p.T.ID, "err", err)
		return func(context.Context) error { return err }
	}
	return o.cfg.Store.QueueTask(store.TaskRecord{
		ID: p.T.ID, Status: string(p.T.Status), CreatedAt: p.T.CreatedAt, UpdatedAt: p.T.UpdatedAt, Data: data,
	})
}
