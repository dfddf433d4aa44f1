package protocol

import (
	"encoding/json"
	"time"
)

// Notification method names (server → client).
const (
	NotifyTaskUpdated          = "task/updated"
	NotifyTaskOutput           = "task/output"
	NotifyTaskQuestion         = "task/question"
	NotifyTaskQuestionResolved = "task/questionResolved"
	NotifyTaskCompleted        = "task/completed"
	NotifySkillsChanged        = "skills/changed"
	NotifyServerMessage        = "server/message"
	// NotifyTaskHook carries a raw hook payload of a task with the verbose
	// directive (familiar's addition to PROTOCOL.md).
	NotifyTaskHook = "task/hook"
	// NotifyTaskTranscript carries one entry of a task's structured
	// transcript: text, thinking, a tool call, the plan or usage (familiar's
	// addition; the same under both drivers).
	NotifyTaskTranscript = "task/transcript"
)

// TaskTranscriptNotification is one transcript entry of a task.
type TaskTranscriptNotification struct {
	Seq   int64           `json:"seq"`
	ID    string          `json:"id"`
	Entry TranscriptEntry `json:"entry"`
}

func (n TaskTranscriptNotification) Method() string  { return NotifyTaskTranscript }
func (n TaskTranscriptNotification) Sequence() int64 { return n.Seq }

// Notification is the params of a server → client notification. Seq is
// global, strictly increasing and persisted, so task/events can replay what a
// disconnected client missed.
type Notification interface {
	Method() string
	Sequence() int64
}

// TaskUpdatedNotification is sent on every status, activity or queue change.
type TaskUpdatedNotification struct {
	Seq  int64 `json:"seq"`
	Task Task  `json:"task"`
}

// TaskOutputNotification carries raw terminal output, coalesced, never split
// inside a UTF-8 character.
type TaskOutputNotification struct {
	Seq  int64  `json:"seq"`
	ID   string `json:"id"`
	Data string `json:"data"`
}

type TaskQuestionNotification struct {
	Seq      int64    `json:"seq"`
	ID       string   `json:"id"`
	Question Question `json:"question"`
}

type TaskQuestionResolvedNotification struct {
	Seq        int64     `json:"seq"`
	ID         string    `json:"id"`
	QuestionID string    `json:"questionId"`
	DecidedBy  DecidedBy `json:"decidedBy"`
	OptionID   string    `json:"optionId,omitempty"`
}

// TaskCompletedNotification announces every end of a task: its success
// (status merging, or merged) and every failed end (blocked, or cancelled by
// familiar rather than by the person), so a client hears of each without
// watching task/updated.
type TaskCompletedNotification struct {
	Seq    int64      `json:"seq"`
	ID     string     `json:"id"`
	Result TaskResult `json:"result"`
	// Status is the task's status after the end; Reason is the blocked
	// reason (BlockedCancelled for familiar's cancel), "" on success;
	// Detail says what a person can do about it; ResetsAt is when a
	// usage limit resets. Familiar's additions to PROTOCOL.md.
	Status   Status        `json:"status"`
	Reason   BlockedReason `json:"reason"`
	Detail   string        `json:"detail"`
	ResetsAt time.Time     `json:"resetsAt,omitzero"`
}

type SkillsChangedNotification struct {
	Seq     int64        `json:"seq"`
	Added   []string     `json:"added"`
	Updated []string     `json:"updated"`
	Removed []string     `json:"removed"`
	Errors  []SkillError `json:"errors"`
}

func (n SkillsChangedNotification) MarshalJSON() ([]byte, error) {
	type plain SkillsChangedNotification
	p := plain(n)
	p.Added, p.Updated, p.Removed = nonNil(p.Added), nonNil(p.Updated), nonNil(p.Removed)
	p.Errors = nonNil(p.Errors)
	return json.Marshal(p)
}

// SkillError is a skill file that could not be loaded.
type SkillError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
	// Line is the line of Path the error is at, from 1; absent when the
	// error is about the whole file (familiar's addition, issue 26).
	Line int `json:"line,omitempty"`
}

type ServerMessageNotification struct {
	Seq   int64        `json:"seq"`
	Level MessageLevel `json:"level"`
	Text  string       `json:"text"`
	// Setting names the setting a message is about, for a link to it:
	// "permissionPolicy" or "directives.elevated" on the warning before
	// autonomy (familiar's addition, issue 26).
	Setting string `json:"setting,omitempty"`
}

func (TaskUpdatedNotification) Method() string          { return NotifyTaskUpdated }
func (TaskOutputNotification) Method() string           { return NotifyTaskOutput }
func (TaskQuestionNotification) Method() string         { return NotifyTaskQuestion }
func (TaskQuestionResolvedNotification) Method() string { return NotifyTaskQuestionResolved }
func (TaskCompletedNotification) Method() string        { return NotifyTaskCompleted }
func (SkillsChangedNotification) Method() string        { return NotifySkillsChanged }
func (ServerMessageNotification) Method() string        { return NotifyServerMessage }

func (n TaskUpdatedNotification) Sequence() int64          { return n.Seq }
func (n TaskOutputNotification) Sequence() int64           { return n.Seq }
func (n TaskQuestionNotification) Sequence() int64         { return n.Seq }
func (n TaskQuestionResolvedNotification) Sequence() int64 { return n.Seq }
func (n TaskCompletedNotification) Sequence() int64        { return n.Seq }
func (n SkillsChangedNotification) Sequence() int64        { return n.Seq }
func (n ServerMessageNotification) Sequence() int64        { return n.Seq }

// TaskHookNotification is one hook call of a verbose task, masked and cut
// to 30 KB.
type TaskHookNotification struct {
	Seq       int64           `json:"seq"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Payload   json.RawMessage `json:"payload"`
	Truncated bool            `json:"truncated,omitempty"`
	// PayloadRef, with Truncated, fetches the whole payload (task/text).
	PayloadRef string `json:"payloadRef,omitempty"`
}

func (TaskHookNotification) Method() string    { return NotifyTaskHook }
func (n TaskHookNotification) Sequence() int64 { return n.Seq }
