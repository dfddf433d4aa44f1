package transcript

import "github.com/familiar-dev/familiar/protocol"

// Kind says which field of an Entry is set (protocol.TranscriptEntry's
// kind, a string there).
type Kind = string

const (
	KindPrompt   Kind = "prompt"    // the person's prompt (Text)
	KindText     Kind = "text"      // a chunk of the assistant's answer (Text): a streamed delta, or a whole block
	KindThinking Kind = "thinking"  // a chunk of its thinking, where shown (Text), the same way
	KindToolCall Kind = "tool_call" // a tool call appeared or changed (ToolCall: the whole call as now known)
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

// Entry is one thing the transcript says happened: the protocol's
// transcript entry, which clients get once the orchestrator masked and
// clipped it, and what only a reader of the transcript knows.
type Entry struct {
	protocol.TranscriptEntry
	// Delta marks a text or thinking chunk read from a streamed delta
	// (stream-json with --include-partial-messages) rather than a whole
	// block: consecutive ones may be merged before they are sent.
	Delta bool `json:"-"`
	// Final marks the last chunk of a streamed block (its whole line was
	// read); its Text may be empty. A consumer that held back the end of
	// the streamed text (to mask a secret split across chunks) sends it now.
	Final bool `json:"-"`
	// FullResult is the whole of what the tool returned when
	// ToolCall.Result is only its start (at most ResultExcerpt bytes), for a
	// caller that keeps it behind a reference (ToolCall.ResultRef; claude
	// itself shortens outputs over ~30 KB to a preview naming the file it
	// saved them in).
	FullResult string `json:"-"`
}

// The protocol's types, read from the transcript as they are sent.
type (
	// ToolCall is one tool call, as far as it is known: Kind is one of the
	// Tool* constants, Status one of the Status* constants, Files the
	// paths it reads or writes, Diffs what an edit changed.
	ToolCall = protocol.ToolCall
	// FileDiff is one file an edit changed: its text before (empty for a
	// new file) and after, around the change.
	FileDiff = protocol.FileDiff
	// PlanItem is one entry of the agent's plan (Status: pending,
	// in_progress, completed).
	PlanItem = protocol.PlanItem
	// Usage is the token count of one model response, with the session's
	// running total (Total, which counts Responses). Cost is estimated from
	// the model's list price (see Price): the CLI does not write its own
	// figure into the transcript.
	Usage = protocol.Usage
)

// add adds one response's usage to a sum (its Responses counts them).
func add(t *Usage, u Usage) {
	t.AddCounts(u)
	t.Responses++
}
