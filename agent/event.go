package agent

import (
	"encoding/json"
	"time"

	"github.com/familiar-dev/familiar/agent/transcript"
	"github.com/familiar-dev/familiar/protocol"
)

// EventKind says which field of an Event is set.
type EventKind string

const (
	EventOutput           EventKind = "output"            // raw terminal (or stream) bytes
	EventActivity         EventKind = "activity"          // what the agent is doing
	EventQuestion         EventKind = "question"          // the agent waits on a person
	EventQuestionResolved EventKind = "question_resolved" // a pending question went away
	EventTurnEnded        EventKind = "turn_ended"        // the agent finished a turn
	EventExited           EventKind = "exited"            // the process is gone
	EventProblem          EventKind = "problem"           // something familiar could not do (e.g. a keystroke that did not take)
	EventHook             EventKind = "hook"              // a raw hook payload (for verbose tasks)
	EventAPIRetry         EventKind = "api_retry"         // claude is retrying a failed API call (Retry)
	EventTranscript       EventKind = "transcript"        // text, thinking, a tool call, the plan or usage (package transcript)
)

// Activity values, the protocol's.
const (
	ActivityThinking       = protocol.ActivityThinking
	ActivityWriting        = protocol.ActivityWriting
	ActivityRunningCommand = protocol.ActivityRunningCommand
	ActivityIdle           = protocol.ActivityIdle
	ActivityUnknown        = protocol.ActivityUnknown
	// ActivityStopped: claude is stopped by a signal (SIGSTOP) and does
	// nothing until continued.
	ActivityStopped = protocol.ActivityStopped
)

// Question kinds, the protocol's.
const (
	KindPermission = protocol.QuestionPermission
	KindChoice     = protocol.QuestionChoice
	KindQuestion   = protocol.QuestionQuestion
	KindDialog     = protocol.QuestionDialog
)

// Option ids every permission question has, the protocol's.
const (
	OptionAllow       = protocol.OptionAllow
	OptionAllowAlways = protocol.OptionAllowAlways
	OptionDeny        = protocol.OptionDeny
)

// Option ids a permission question may add: a second, narrower rule to
// grant, and switching the session to accept-edits (never implied by an
// allow-always).
const (
	OptionAllowAlwaysExact = "allow_always_exact"
	OptionAcceptEdits      = "mode_accept_edits"
)

// Event is one thing the agent did, as observed.
type Event struct {
	Kind EventKind `json:"kind"`
	At   time.Time `json:"at"` // when familiar observed it

	Output   []byte      `json:"-"`
	Activity *Activity   `json:"activity,omitempty"`
	Question *Question   `json:"question,omitempty"`
	Resolved *Resolution `json:"resolved,omitempty"`
	Turn     *TurnEnded  `json:"turn,omitempty"`
	Exit     *Exited     `json:"exit,omitempty"`
	Problem  string      `json:"problem,omitempty"`
	Hook     *HookEvent  `json:"hook,omitempty"`
	Retry    *APIRetry   `json:"retry,omitempty"`

	Transcript *transcript.Entry `json:"transcript,omitempty"`
}

// Activity is what the agent is doing now.
type Activity struct {
	State  protocol.Activity `json:"state"`            // one of the Activity* constants
	Detail string            `json:"detail,omitempty"` // e.g. the command being run
	Tool   string            `json:"tool,omitempty"`   // set when a tool call starts
}

// Question is something the agent waits on a person for: the protocol's
// question, so what the agent asks reaches clients as it is, once the
// orchestrator masked and clipped it (ExpiresAt, Truncated, TextRef and the
// like are the orchestrator's to set). Closing is set on a prose question
// (KindQuestion from a turn's last message): "question", "ask" or "unsure"
// as package closing read it. Skill is set on a permission for a shell
// command written in a skill or slash command (PreSkillShellCommand).
type Question = protocol.Question

// Option is one answer a Question offers; Rule is the permission rule an
// allow-always option grants, as its label names it ("Bash(npm test:*)").
type Option = protocol.Option

// Answer to a Question: an option, free text, or both (deny with a reason),
// and for permissions optionally a modified tool input.
type Answer struct {
	OptionID     string          `json:"optionId,omitempty"`
	Text         string          `json:"text,omitempty"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
}

// Resolution says a pending question went away and who settled it.
type Resolution struct {
	QuestionID string `json:"questionId"`
	// By is "user" (answered through Answer), "terminal" (a person answered
	// in the terminal directly) or "agent" (the agent moved on, e.g. it was
	// interrupted).
	By       string `json:"by"`
	OptionID string `json:"optionId,omitempty"`
}

// TurnEnded reports the end of a turn.
type TurnEnded struct {
	LastMessage     string `json:"lastMessage"`
	BackgroundTasks int    `json:"backgroundTasks"`
	Failed          bool   `json:"failed,omitempty"` // StopFailure / error result
	// Interrupted: the turn ended because it was interrupted (Esc); no
	// Stop hook fires then, the screen said so.
	Interrupted  bool    `json:"interrupted,omitempty"`
	Error        string  `json:"error,omitempty"`
	CostUSD      float64 `json:"costUsd,omitempty"` // this turn's, as the CLI counts it (stream driver)
	InputTokens  int     `json:"inputTokens,omitempty"`
	OutputTokens int     `json:"outputTokens,omitempty"`
	// Asks is the id of the prose question the turn ended with, if any.
	Asks string `json:"asks,omitempty"`
	// Failure says why a Failed turn failed, when claude said (the API gave
	// up, no credentials, a usage limit).
	Failure *Failure `json:"failure,omitempty"`
	// Usage is what the turn's model responses used, from the transcript
	// (nil when it shows none). CostUSD above, when set, is the CLI's own
	// figure and wins over Usage.CostUSD, an estimate from list prices.
	Usage *protocol.Usage `json:"usage,omitempty"`
}

// Exited reports the end of the process.
type Exited struct {
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"` // "SIGKILL", "SIGTERM", … when a signal ended it
	// Refusal is set when claude refused to start (StartupRefusal).
	Refusal *StartupRefusal `json:"refusal,omitempty"`
}

// HookEvent is a raw hook payload as the CLI sent it.
type HookEvent struct {
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload"`
}
