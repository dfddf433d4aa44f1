package transcript

import (
	"encoding/json"
	"time"
)

// Kind says which field of an Entry is set.
type Kind string

const (
	KindPrompt   Kind = "prompt"    // the person's prompt (Text)
	KindText     Kind = "text"      // a chunk of the assistant's answer (Text): a streamed delta, or a whole block
	KindThinking Kind = "thinking"  // a chunk of its thinking, where shown (Text), the same way
	KindToolCall Kind = "tool_call" // a tool call appeared or changed (Tool: the whole call as now known)
	KindPlan     Kind = "plan"      // the agent's plan (TodoWrite), replaced as a whole (Plan)
	KindUsage    Kind = "usage"     // tokens of one model response and the running total (Usage)
)

// Tool call statuses.
const (
	StatusPending   = "pending"   // the model asked for it; not running yet (maybe waiting on a permission)
	StatusRunning   = "running"   // allowed and running
	StatusCompleted = "completed" // finished
	StatusFailed    = "failed"    // denied, interrupted or ended with an error
)

// Tool kinds, as the Agent Client Protocol names them, so editors can pick an icon.
const (
	ToolRead    = "read"
	ToolEdit    = "edit"
	ToolDelete  = "delete"
	ToolMove    = "move"
	ToolSearch  = "search"
	ToolExecute = "execute"
	ToolThink   = "think"
	ToolFetch   = "fetch"
	ToolOther   = "other"
)

// Entry is one thing the transcript says happened.
type Entry struct {
	Kind Kind      `json:"kind"`
	At   time.Time `json:"at"`
	// MessageID is the model response the entry belongs to (text, thinking,
	// tool calls, usage).
	MessageID string     `json:"messageId,omitempty"`
	Text      string     `json:"text,omitempty"`
	Tool      *ToolCall  `json:"tool,omitempty"`
	Plan      []PlanItem `json:"plan,omitempty"`
	Usage     *Usage     `json:"usage,omitempty"`
	// Delta marks a text or thinking chunk read from a streamed delta
	// (stream-json with --include-partial-messages) rather than a whole
	// block: consecutive ones may be merged before they are sent.
	Delta bool `json:"-"`
	// Final marks the last chunk of a streamed block (its whole line was
	// read); its Text may be empty. A consumer that held back the end of
	// the streamed text (to mask a secret split across chunks) sends it now.
	Final bool `json:"-"`
}

// ToolCall is one tool call, as far as it is known.
type ToolCall struct {
	ID     string          `json:"id"`   // the model's tool_use id
	Name   string          `json:"name"` // e.g. "Bash", "Edit", "mcp__server__tool"
	Kind   string          `json:"kind"` // one of the Tool* constants
	Title  string          `json:"title"`
	Input  json.RawMessage `json:"input,omitempty"`
	Files  []string        `json:"files,omitempty"` // paths the call reads or writes
	Status string          `json:"status"`          // one of the Status* constants
	// Result is the start of what the tool returned (at most ResultExcerpt bytes).
	Result string `json:"result,omitempty"`
	// FullResult is the whole of what the tool returned when Result is only
	// its start, for a caller that keeps it behind a reference (claude
	// itself shortens outputs over ~30 KB to a preview naming the file it
	// saved them in).
	FullResult string     `json:"-"`
	DurationMs int64      `json:"durationMs,omitempty"`
	Diffs      []FileDiff `json:"diffs,omitempty"` // what an edit changed
	StartedAt  time.Time  `json:"startedAt"`
	EndedAt    *time.Time `json:"endedAt,omitempty"`
}

// FileDiff is one file an edit changed: its text before (empty for a new
// file) and after, around the change.
type FileDiff struct {
	Path    string `json:"path"`
	OldText string `json:"oldText"`
	NewText string `json:"newText"`
}

// PlanItem is one entry of the agent's plan.
type PlanItem struct {
	Content string `json:"content"`
	Status  string `json:"status"` // pending, in_progress, completed
}

// Usage is the token count of one model response and the session's running
// total. Cost is estimated from the model's list price (see Price): the CLI
// does not write its own figure into the transcript.
type Usage struct {
	Model            string  `json:"model,omitempty"`
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	CostUSD          float64 `json:"costUsd"`
	// Total is the sum over the session so far (this response included).
	Total *Totals `json:"total,omitempty"`
}

// Totals sums usage over many responses.
type Totals struct {
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	CostUSD          float64 `json:"costUsd"`
	Responses        int     `json:"responses"`
}

// Add adds one response's usage.
func (t *Totals) Add(u Usage) {
	t.InputTokens += u.InputTokens
	t.OutputTokens += u.OutputTokens
	t.CacheReadTokens += u.CacheReadTokens
	t.CacheWriteTokens += u.CacheWriteTokens
	t.CostUSD += u.CostUSD
	t.Responses++
}

// ContextTokens is how much of the context window the last response used.
func (u Usage) ContextTokens() int64 {
	return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens + u.OutputTokens
}
