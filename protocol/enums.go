package protocol

import "slices"

// Enumerations of PROTOCOL.md as typed strings. Each has Valid, which params
// validation uses; the zero value ("") is never valid, so an optional enum
// field is checked only when it is set.

// Status is where a task is in its life; PROTOCOL.md gives the meaning of each.
type Status string

const (
	StatusQueued    Status = "queued"
	StatusStarting  Status = "starting"
	StatusRunning   Status = "running"
	StatusWaiting   Status = "waiting"
	StatusPaused    Status = "paused"
	StatusMerging   Status = "merging"
	StatusMerged    Status = "merged"
	StatusBlocked   Status = "blocked"
	StatusCancelled Status = "cancelled"
)

// Statuses lists every Status in the order of PROTOCOL.md.
var Statuses = []Status{StatusQueued, StatusStarting, StatusRunning, StatusWaiting,
	StatusPaused, StatusMerging, StatusMerged, StatusBlocked, StatusCancelled}

func (s Status) Valid() bool { return slices.Contains(Statuses, s) }

// Activity is what a running agent is doing right now.
type Activity string

const (
	ActivityThinking       Activity = "thinking"
	ActivityWriting        Activity = "writing"
	ActivityRunningCommand Activity = "running_command"
	ActivityIdle           Activity = "idle"
	ActivityUnknown        Activity = "unknown"
	// ActivityStopped (added): the agent's claude is stopped by a signal
	// (SIGSTOP) and does nothing until continued (SIGCONT).
	ActivityStopped Activity = "stopped"
)

var Activities = []Activity{ActivityThinking, ActivityWriting, ActivityRunningCommand,
	ActivityIdle, ActivityUnknown, ActivityStopped}

func (a Activity) Valid() bool { return slices.Contains(Activities, a) }

// TaskType selects the prompt template of a profile.
type TaskType string

const (
	TaskTypeImplement TaskType = "implement"
	TaskTypeFix       TaskType = "fix"
	TaskTypeRefactor  TaskType = "refactor"
	TaskTypeTest      TaskType = "test"
	TaskTypeCustom    TaskType = "custom"
)

var TaskTypes = []TaskType{TaskTypeImplement, TaskTypeFix, TaskTypeRefactor, TaskTypeTest, TaskTypeCustom}

func (t TaskType) Valid() bool { return slices.Contains(TaskTypes, t) }

// Mode is the tool set an agent works with.
type Mode string

const (
	ModeExecutor  Mode = "executor"
	ModeArchitect Mode = "architect"
	ModeAuditor   Mode = "auditor"
)

var Modes = []Mode{ModeExecutor, ModeArchitect, ModeAuditor}

func (m Mode) Valid() bool { return slices.Contains(Modes, m) }

// Driver is how familiar talks to claude: a PTY a person can watch, or the
// stream-json control protocol.
type Driver string

const (
	DriverPTY    Driver = "pty"
	DriverStream Driver = "stream"
)

var Drivers = []Driver{DriverPTY, DriverStream}

func (d Driver) Valid() bool { return slices.Contains(Drivers, d) }

// QuestionKind says how a Question is answered (see PROTOCOL.md).
type QuestionKind string

const (
	QuestionPermission QuestionKind = "permission"
	QuestionChoice     QuestionKind = "choice"
	QuestionQuestion   QuestionKind = "question"
	QuestionDialog     QuestionKind = "dialog"
)

var QuestionKinds = []QuestionKind{QuestionPermission, QuestionChoice, QuestionQuestion, QuestionDialog}

func (k QuestionKind) Valid() bool { return slices.Contains(QuestionKinds, k) }

// Option ids a permission question always offers.
const (
	OptionAllow       = "allow"
	OptionAllowAlways = "allow_always"
	OptionDeny        = "deny"
)

// BlockedReason says why a task could not finish.
type BlockedReason string

const (
	BlockedTimeout         BlockedReason = "timeout"
	BlockedAgentFailed     BlockedReason = "agent_failed"
	BlockedAgentExited     BlockedReason = "agent_exited"
	BlockedStartFailed     BlockedReason = "start_failed"
	BlockedInterrupted     BlockedReason = "interrupted"
	BlockedCancelledByUser BlockedReason = "cancelled_by_user"
	// Familiar's additions (issues 13 and 14):
	// BlockedAPIError: the Messages API kept failing until claude (and
	// familiar's retries) gave up, or refused the request; Blocked.Status
	// is the HTTP status (0 for a connection failure).
	BlockedAPIError BlockedReason = "api_error"
	// BlockedAuth: claude has no usable login; Detail says how to fix it.
	BlockedAuth BlockedReason = "auth"
	// BlockedUsageLimit: the claude.ai subscription's usage limit was
	// reached; Blocked.ResetsAt says when it resets.
	BlockedUsageLimit BlockedReason = "usage_limit"
	// BlockedBudget: the task spent its maxBudgetUsd.
	BlockedBudget BlockedReason = "budget"
	// BlockedCancelled: familiar cancelled the task, not the person (e.g.
	// familiar run stopping a file's tasks when one of them is invalid).
	BlockedCancelled BlockedReason = "cancelled"
	// BlockedSideloadDisabled: claude refused to start because managed
	// settings set disableSideloadFlags and the task has MCP servers of
	// its own; Detail has claude's words and the fix (issue 27).
	BlockedSideloadDisabled BlockedReason = "sideload_flags_disabled"
	// BlockedSessionHeld: claude refused to start because the session is
	// running in Claude Code's own background agents (claude --bg); Detail
	// says how to stop it there.
	BlockedSessionHeld BlockedReason = "session_held_by_background"
)

var BlockedReasons = []BlockedReason{BlockedTimeout, BlockedAgentFailed, BlockedAgentExited,
	BlockedStartFailed, BlockedInterrupted, BlockedCancelledByUser,
	BlockedAPIError, BlockedAuth, BlockedUsageLimit, BlockedBudget, BlockedCancelled, BlockedMerge,
	BlockedSideloadDisabled, BlockedSessionHeld, BlockedConflict}

func (r BlockedReason) Valid() bool { return slices.Contains(BlockedReasons, r) }

// DecidedBy says who answered a question.
type DecidedBy string

const (
	DecidedByUser    DecidedBy = "user"
	DecidedByPolicy  DecidedBy = "policy"
	DecidedByTimeout DecidedBy = "timeout"
	DecidedByAgent   DecidedBy = "agent"
)

var DecidedBys = []DecidedBy{DecidedByUser, DecidedByPolicy, DecidedByTimeout, DecidedByAgent}

func (d DecidedBy) Valid() bool { return slices.Contains(DecidedBys, d) }

// FileStatus is how a file changed on a task's branch.
type FileStatus string

const (
	FileAdded    FileStatus = "added"
	FileModified FileStatus = "modified"
	FileDeleted  FileStatus = "deleted"
	FileRenamed  FileStatus = "renamed"
)

var FileStatuses = []FileStatus{FileAdded, FileModified, FileDeleted, FileRenamed}

func (s FileStatus) Valid() bool { return slices.Contains(FileStatuses, s) }

// MergeStrategy is how task/merge brings a branch into its baseRef.
type MergeStrategy string

const (
	MergeMerge  MergeStrategy = "merge"
	MergeSquash MergeStrategy = "squash"
	MergeRebase MergeStrategy = "rebase"
)

var MergeStrategies = []MergeStrategy{MergeMerge, MergeSquash, MergeRebase}

func (s MergeStrategy) Valid() bool { return slices.Contains(MergeStrategies, s) }

// PolicyDefault is what a permission Policy does with a tool use no rule matches.
type PolicyDefault string

const (
	PolicyAsk   PolicyDefault = "ask"
	PolicyAllow PolicyDefault = "allow"
	PolicyDeny  PolicyDefault = "deny"
)

var PolicyDefaults = []PolicyDefault{PolicyAsk, PolicyAllow, PolicyDeny}

func (d PolicyDefault) Valid() bool { return slices.Contains(PolicyDefaults, d) }

// McpServerType is the transport of an MCP server.
type McpServerType string

const (
	McpStdio McpServerType = "stdio"
	McpHTTP  McpServerType = "http"
	McpSSE   McpServerType = "sse"
)

var McpServerTypes = []McpServerType{McpStdio, McpHTTP, McpSSE}

func (t McpServerType) Valid() bool { return slices.Contains(McpServerTypes, t) }

// MessageLevel is the severity of a server/message notification.
type MessageLevel string

const (
	LevelInfo    MessageLevel = "info"
	LevelWarning MessageLevel = "warning"
	LevelError   MessageLevel = "error"
)

var MessageLevels = []MessageLevel{LevelInfo, LevelWarning, LevelError}

func (l MessageLevel) Valid() bool { return slices.Contains(MessageLevels, l) }

// Source is where a profile or skill was found.
type Source string

const (
	SourceBuiltin   Source = "builtin"
	SourceWorkspace Source = "workspace"
	SourceGlobal    Source = "global"
)

var Sources = []Source{SourceBuiltin, SourceWorkspace, SourceGlobal}

func (s Source) Valid() bool { return slices.Contains(Sources, s) }
