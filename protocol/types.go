package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"time"
)

// Task is one unit of work given to an agent, as clients see it.
type Task struct {
	ID                 string   `json:"id"`
	Title              string   `json:"title"`
	Description        string   `json:"description"`
	AcceptanceCriteria []string `json:"acceptanceCriteria"`
	Type               TaskType `json:"type"`
	Profile            string   `json:"profile"`
	Mode               Mode     `json:"mode"`
	Priority           int      `json:"priority"`
	Driver             Driver   `json:"driver"`
	// Model is task/create's model ("" = claude's own choice).
	Model string `json:"model,omitempty"`
	// Directives are task/create's (familiar's addition, issue 26: a
	// client shows them, and familiar acp's think and elevated options).
	Directives *Directives `json:"directives,omitempty"`
	Status     Status      `json:"status"`
	// Activity is meaningful while Status is running.
	Activity Activity `json:"activity"`
	// ActivityDetail says in words what the agent is doing: the command it
	// runs, the file it writes, "model error 500, retrying (3 of 10): …",
	// that claude is stopped by a signal
	// (familiar's addition to PROTOCOL.md).
	ActivityDetail string `json:"activityDetail,omitempty"`

	// QueuePosition and EstimatedStartSec are set while queued; pointers
	// because position 0 and "starts now" are real values.
	QueuePosition     *int `json:"queuePosition,omitempty"`
	EstimatedStartSec *int `json:"estimatedStartSec,omitempty"`
	// EstimatedStartAt is EstimatedStartSec as a time, so a client counts
	// down between updates (familiar's addition, issue 26).
	EstimatedStartAt time.Time `json:"estimatedStartAt,omitzero"`
	// EstimatedRemainingSec and EstimatedEndAt are set while live
	// (starting, running, waiting): when the task is expected to end, from
	// the median of its profile's and type's successful runs (familiar's
	// addition, issue 26).
	EstimatedRemainingSec *int      `json:"estimatedRemainingSec,omitempty"`
	EstimatedEndAt        time.Time `json:"estimatedEndAt,omitzero"`

	Worktree        *Worktree   `json:"worktree,omitempty"`
	Agent           *AgentInfo  `json:"agent,omitempty"`
	PendingQuestion *Question   `json:"pendingQuestion,omitempty"`
	Result          *TaskResult `json:"result,omitempty"`
	Blocked         *Blocked    `json:"blocked,omitempty"`

	// Conflicts and Overlaps are the conflict forecast while the task is
	// live or ready: the files that would not merge (or merge but were
	// changed on both sides) with its base or another task (familiar's
	// addition, issue 25).
	Conflicts []TaskConflict `json:"conflicts,omitempty"`
	Overlaps  []TaskConflict `json:"overlaps,omitempty"`

	Attempt           int    `json:"attempt"`
	PreviousAttemptID string `json:"previousAttemptId,omitempty"`

	// Steps are the task's tool calls, oldest first; only task/get fills
	// them in (familiar's addition).
	Steps []ToolCall `json:"steps,omitempty"`
	// Usage is what the task's model responses used, over all its turns
	// (familiar's addition).
	Usage *Usage `json:"usage,omitempty"`
	// Grants are the allow-always rules granted for this task; they hold
	// across restarts of its session (familiar's addition).
	Grants []Grant `json:"grants,omitempty"`
	// UndoableUntil is when task/undo stops being accepted, while it is
	// (familiar's addition).
	UndoableUntil time.Time `json:"undoableUntil,omitzero"`
	// ArchivedAt is when the task was archived: task/list leaves it out
	// unless asked (familiar's addition, issue 26).
	ArchivedAt time.Time `json:"archivedAt,omitzero"`

	CreatedAt  time.Time `json:"createdAt"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// MarshalJSON writes acceptanceCriteria as [] when empty and times in UTC.
func (t Task) MarshalJSON() ([]byte, error) {
	type plain Task // no methods, so no recursion
	p := plain(t)
	p.AcceptanceCriteria = nonNil(p.AcceptanceCriteria)
	p.CreatedAt, p.StartedAt = utc(p.CreatedAt), utc(p.StartedAt)
	p.FinishedAt, p.UpdatedAt = utc(p.FinishedAt), utc(p.UpdatedAt)
	p.UndoableUntil, p.ArchivedAt = utc(p.UndoableUntil), utc(p.ArchivedAt)
	p.EstimatedStartAt, p.EstimatedEndAt = utc(p.EstimatedStartAt), utc(p.EstimatedEndAt)
	return json.Marshal(p)
}

// TaskConflict names files a task shares with its base ("base") or with
// another task (its id).
type TaskConflict struct {
	With  string   `json:"with"`
	Files []string `json:"files"`
}

// Worktree is the git worktree a task works in.
type Worktree struct {
	Path       string `json:"path"`
	Branch     string `json:"branch"`
	BaseRef    string `json:"baseRef"`
	BaseCommit string `json:"baseCommit"`
}

// AgentInfo identifies the claude process working on a task.
type AgentInfo struct {
	PID           int    `json:"pid"`
	SessionID     string `json:"sessionId"`
	ClaudeVersion string `json:"claudeVersion"`
	// Unconfined says why the agent's Bash commands run without the
	// sandbox ("" when they run in it): familiar's addition, issue 37.
	Unconfined string `json:"unconfined,omitempty"`
	// Sandbox notes how the sandbox runs when it is weaker than usual
	// (claude's nested mode in a container).
	Sandbox string `json:"sandbox,omitempty"`
}

// TaskResult is what a finished task produced.
type TaskResult struct {
	Success      bool          `json:"success"`
	Summary      string        `json:"summary"`
	ChangedFiles []ChangedFile `json:"changedFiles"`
	Commits      []Commit      `json:"commits"`
	// CostUSD is absent when the driver could not tell.
	CostUSD *float64 `json:"costUsd,omitempty"`
	// Truncated is set when Summary was cut to 30 KB; OriginalSize is its
	// size before (familiar's addition to PROTOCOL.md).
	Truncated    bool `json:"truncated,omitempty"`
	OriginalSize int  `json:"originalSize,omitempty"`
	// SummaryRef, with Truncated, fetches the whole summary (task/text).
	SummaryRef string `json:"summaryRef,omitempty"`
	// NoChanges: the task finished having changed nothing (no commit
	// beyond its base, a clean worktree); there is nothing to merge.
	NoChanges bool `json:"noChanges,omitempty"`
}

func (r TaskResult) MarshalJSON() ([]byte, error) {
	type plain TaskResult
	p := plain(r)
	p.ChangedFiles, p.Commits = nonNil(p.ChangedFiles), nonNil(p.Commits)
	return json.Marshal(p)
}

// ChangedFile is one file a task changed; OldPath is set for renames.
type ChangedFile struct {
	Path    string     `json:"path"`
	Status  FileStatus `json:"status"`
	OldPath string     `json:"oldPath,omitempty"`
	// Submodule is the path of the submodule the file is inside (familiar's
	// addition): such a change is shown but not merged, and task/merge
	// refuses while the task has one.
	Submodule string `json:"submodule,omitempty"`
}

// Commit is one commit on a task's branch.
type Commit struct {
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
}

// Blocked says why a task could not finish.
type Blocked struct {
	Reason BlockedReason `json:"reason"`
	Detail string        `json:"detail"`
	// Status is the API's HTTP status of an api_error (0: the connection
	// failed); ResetsAt is when a usage_limit resets, when claude said.
	// Familiar's additions to PROTOCOL.md.
	Status   int       `json:"status,omitempty"`
	ResetsAt time.Time `json:"resetsAt,omitzero"`
}

// Question is something an agent waits on a person (or a policy) for.
// SkillCommand names the skill or slash command a shell command is written
// in. InvokedBy is "user" (typed, or sent by familiar), "claude" (the Skill
// tool) or "other".
type SkillCommand struct {
	Name      string `json:"name"`
	Source    string `json:"source,omitempty"`
	InvokedBy string `json:"invokedBy"`
}

type Question struct {
	ID   string       `json:"id"`
	Kind QuestionKind `json:"kind"`
	Text string       `json:"text"`
	// Tool and Input are set for permission questions.
	Tool  string          `json:"tool,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID is the id of the tool call a permission is about: the
	// toolCall.id of the same call in task/transcript (familiar's addition).
	ToolUseID string    `json:"toolUseId,omitempty"`
	Options   []Option  `json:"options"`
	AllowText bool      `json:"allowText"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// MultiSelect (familiar's addition): a choice that takes several
	// options (AskUserQuestion's multiSelect); answer with their ids joined
	// with "," in optionId.
	MultiSelect bool `json:"multiSelect,omitempty"`
	// Truncated is set when Text or Input were cut to 30 KB; OriginalSize
	// is their size before, and the whole is in the raw output log from
	// OutputOffset on (task/output). Familiar's additions to PROTOCOL.md.
	Truncated    bool  `json:"truncated,omitempty"`
	OriginalSize int   `json:"originalSize,omitempty"`
	OutputOffset int64 `json:"outputOffset,omitempty"`
	// TextRef and InputRef fetch the whole Text or Input when they were
	// clipped (task/text). Familiar's addition.
	TextRef  string `json:"textRef,omitempty"`
	InputRef string `json:"inputRef,omitempty"`
	// Closing is set on a question read from a turn's last message:
	// "question", "ask" or "unsure" (it may only report; the person replies
	// or marks the task done). Familiar's addition.
	Closing string `json:"closing,omitempty"`
	// Skill is set on a permission for a shell command written in a skill
	// or slash command (claude 2.1.332's PreSkillShellCommand): its name,
	// where claude found it and who started it. Familiar's addition.
	Skill *SkillCommand `json:"skill,omitempty"`
}

func (q Question) MarshalJSON() ([]byte, error) {
	type plain Question
	p := plain(q)
	p.Options = nonNil(p.Options)
	p.ExpiresAt = utc(p.ExpiresAt)
	return json.Marshal(p)
}

// Option is one answer a Question offers.
type Option struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	// Rule is the permission rule an allow-always option grants
	// ("Bash(npm test:*)"); its label names it too. Familiar's addition.
	Rule string `json:"rule,omitempty"`
}

// Defaults of Settings, from PROTOCOL.md.
const (
	DefaultMaxConcurrent        = 3
	DefaultApprovalTimeoutSec   = 300
	DefaultNoProgressTimeoutSec = 900
	DefaultTermGraceSec         = 10
	DefaultOutputRetentionDays  = 7
	DefaultUndoWindowSec        = 300
	DefaultDriver               = DriverPTY
	DefaultIdleExitSec          = 300
	DefaultCommandTimeoutSec    = 3600
	// DefaultAgentNice is what `nice` uses by default: under contention an
	// agent's session gets about a tenth of a core's share against the
	// editor's, and all it wants when the machine is otherwise idle.
	DefaultAgentNice = 10
	// DefaultWarmAgentMax and DefaultWarmAgentMemoryMiB size the warm
	// agents for a laptop: four idle claudes (~200–300 MiB each), and no
	// more than 1 GiB among them.
	DefaultWarmAgentMax       = 4
	DefaultWarmAgentMemoryMiB = 1024
	// MaxWarmAgentMemoryMiB bounds warmAgentMemoryMiB (1 TiB).
	MaxWarmAgentMemoryMiB = 1 << 20
	// The sandbox settings (issue 37).
	SandboxOn       = "on"
	SandboxOff      = "off"
	SandboxRequired = "required"
	MaxAgentNice    = 19
)

// Ranges Validate accepts for Settings. They are wide on purpose: they catch
// typos (a timeout in milliseconds, a negative count), not preferences.
const (
	MaxConcurrentLimit      = 64
	MaxTimeoutSec           = 7 * 24 * 3600
	MaxTermGraceSec         = 3600
	MaxOutputRetentionDays  = 3650
	MaxUndoWindowSec        = 7 * 24 * 3600
	MinApprovalTimeoutSec   = 1
	MinNoProgressTimeoutSec = 1
)

// Settings is the whole configuration of a familiar session, as settings/update
// returns it. A Settings value is always complete; partial changes travel as
// SettingsUpdate.
type Settings struct {
	MaxConcurrent        int    `json:"maxConcurrent"`
	DefaultProfile       string `json:"defaultProfile"`
	DefaultDriver        Driver `json:"defaultDriver"`
	ApprovalTimeoutSec   int    `json:"approvalTimeoutSec"`
	NoProgressTimeoutSec int    `json:"noProgressTimeoutSec"`
	// TermGraceSec is the wait between SIGTERM and SIGKILL; 0 kills at once.
	TermGraceSec        int                  `json:"termGraceSec"`
	McpServers          map[string]McpServer `json:"mcpServers"`
	OutputRetentionDays int                  `json:"outputRetentionDays"`
	// UndoWindowSec is how long task/undo is allowed; 0 disables undo.
	UndoWindowSec    int    `json:"undoWindowSec"`
	PermissionPolicy Policy `json:"permissionPolicy"`
	// RemoveWorktreeAfterMerge removes a task's worktree and branch once it
	// is merged (familiar's addition to PROTOCOL.md).
	RemoveWorktreeAfterMerge bool `json:"removeWorktreeAfterMerge"`
	// IdleExitSec is how long the background familiar stays up with no
	// client connected and nothing queued, running or waiting; 0 exits at
	// once (familiar's addition to PROTOCOL.md).
	IdleExitSec int `json:"idleExitSec"`
	// Familiar's additions (issue 14):
	// CommandTimeoutSec bounds a command of the agent that runs without
	// writing anything or starting anything; while a command runs, the
	// no-progress timeout is paused (a command that prints is progress).
	CommandTimeoutSec int `json:"commandTimeoutSec"`
	// MaxBudgetUsd stops a task that has spent this much (blocked{budget});
	// 0 means no limit. A task's own maxBudgetUsd wins.
	MaxBudgetUsd float64 `json:"maxBudgetUsd"`
	// ResumeAfterUsageLimit continues tasks blocked{usage_limit} by
	// themselves once the limit resets (default true).
	ResumeAfterUsageLimit bool `json:"resumeAfterUsageLimit"`
	// AgentNice is the niceness (0–19) the agents run at, and everything they
	// start: their builds and tests yield the CPU to the person's editor and
	// run at full speed when nothing else wants it. 0 keeps familiar's own.
	AgentNice int `json:"agentNice"`
	// MergeVerify is the merge queue's verify command when queue/merge
	// names none ("" = the repository's .familiar/config.yaml, else none).
	MergeVerify string `json:"mergeVerify"`
	// TestCommands are the test and lint commands an auditor may run
	// ("go test", or a whole rule "Bash(make check:*)"); nil = the
	// repository's .familiar/config.yaml testCommands, else familiar's
	// defaults (familiar's addition, issue 26).
	TestCommands []string `json:"testCommands"`
	// WarmAgentSec keeps a task's claude for this long after a turn that
	// finished the task, so a follow-up (task/send) goes to it at once
	// instead of resuming the session in a new claude (0 = let it go at
	// once). A warm agent counts against maxConcurrent and is let go first
	// when a queued task needs the slot, or git needs the worktree.
	WarmAgentSec int `json:"warmAgentSec"`
	// WarmAgentMax and WarmAgentMemoryMiB bound the claudes kept idle for
	// a prompt to come (warm ones, and those task/prepare started): past
	// either, the least recently used goes, and familiar's log says so
	// (issue 40). 0 = the default (familiar's addition).
	WarmAgentMax       int `json:"warmAgentMax"`
	WarmAgentMemoryMiB int `json:"warmAgentMemoryMiB"`
	// QueueParallel is how many merge-queue candidates are verified at
	// once (speculatively: candidate k is the base with tasks 1..k); 0 =
	// maxConcurrent (issue 34).
	QueueParallel int `json:"queueParallel"`
	// Sandbox is whether agents' Bash commands run in claude's sandbox
	// (issue 37): "on" (where the machine has one, and a task that runs
	// without says so), "off" (the default: claude 2.1.330's bubblewrap
	// sandbox breaks when agents of one repository run commands at once;
	// DESIGN.md), or "required" (a task that cannot be sandboxed does not
	// start, saying why).
	Sandbox string `json:"sandbox"`
}

// DefaultSettings returns the settings of PROTOCOL.md's defaults; the
// permission policy asks about everything.
func DefaultSettings() Settings {
	return Settings{
		MaxConcurrent:         DefaultMaxConcurrent,
		DefaultDriver:         DefaultDriver,
		ApprovalTimeoutSec:    DefaultApprovalTimeoutSec,
		NoProgressTimeoutSec:  DefaultNoProgressTimeoutSec,
		TermGraceSec:          DefaultTermGraceSec,
		McpServers:            map[string]McpServer{},
		OutputRetentionDays:   DefaultOutputRetentionDays,
		UndoWindowSec:         DefaultUndoWindowSec,
		PermissionPolicy:      Policy{Default: PolicyAsk},
		IdleExitSec:           DefaultIdleExitSec,
		CommandTimeoutSec:     DefaultCommandTimeoutSec,
		ResumeAfterUsageLimit: true,
		AgentNice:             DefaultAgentNice,
		Sandbox:               SandboxOff,
		WarmAgentMax:          DefaultWarmAgentMax,
		WarmAgentMemoryMiB:    DefaultWarmAgentMemoryMiB,
	}
}

func (s Settings) MarshalJSON() ([]byte, error) {
	type plain Settings
	p := plain(s)
	if p.McpServers == nil {
		p.McpServers = map[string]McpServer{}
	}
	return json.Marshal(p)
}

// Apply returns s with the fields u sets replaced. mcpServers and
// permissionPolicy are replaced whole, not merged, so a client can remove an
// MCP server or a rule by sending the set it wants. s is not modified.
func (s Settings) Apply(u *SettingsUpdate) Settings {
	s.McpServers = maps.Clone(s.McpServers)
	if u == nil {
		return s
	}
	set(&s.MaxConcurrent, u.MaxConcurrent)
	set(&s.DefaultProfile, u.DefaultProfile)
	set(&s.DefaultDriver, u.DefaultDriver)
	set(&s.ApprovalTimeoutSec, u.ApprovalTimeoutSec)
	set(&s.NoProgressTimeoutSec, u.NoProgressTimeoutSec)
	set(&s.TermGraceSec, u.TermGraceSec)
	set(&s.OutputRetentionDays, u.OutputRetentionDays)
	set(&s.UndoWindowSec, u.UndoWindowSec)
	if u.McpServers != nil {
		s.McpServers = maps.Clone(u.McpServers)
	}
	if u.PermissionPolicy != nil {
		s.PermissionPolicy = *u.PermissionPolicy
	}
	set(&s.RemoveWorktreeAfterMerge, u.RemoveWorktreeAfterMerge)
	set(&s.IdleExitSec, u.IdleExitSec)
	set(&s.CommandTimeoutSec, u.CommandTimeoutSec)
	set(&s.MaxBudgetUsd, u.MaxBudgetUsd)
	set(&s.ResumeAfterUsageLimit, u.ResumeAfterUsageLimit)
	set(&s.AgentNice, u.AgentNice)
	set(&s.MergeVerify, u.MergeVerify)
	set(&s.TestCommands, u.TestCommands)
	set(&s.WarmAgentSec, u.WarmAgentSec)
	set(&s.WarmAgentMax, u.WarmAgentMax)
	set(&s.WarmAgentMemoryMiB, u.WarmAgentMemoryMiB)
	set(&s.QueueParallel, u.QueueParallel)
	set(&s.Sandbox, u.Sandbox)
	return s
}

func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// SettingsUpdate is Settings as a client sends it (initialize, settings/update):
// every field is optional, and nil means "keep the current value". It exists
// because 0 is a meaningful value for some settings (termGraceSec,
// undoWindowSec), so "absent" cannot be told from a zero int.
type SettingsUpdate struct {
	MaxConcurrent            *int                 `json:"maxConcurrent,omitempty"`
	DefaultProfile           *string              `json:"defaultProfile,omitempty"`
	DefaultDriver            *Driver              `json:"defaultDriver,omitempty"`
	ApprovalTimeoutSec       *int                 `json:"approvalTimeoutSec,omitempty"`
	NoProgressTimeoutSec     *int                 `json:"noProgressTimeoutSec,omitempty"`
	TermGraceSec             *int                 `json:"termGraceSec,omitempty"`
	McpServers               map[string]McpServer `json:"mcpServers,omitempty"`
	OutputRetentionDays      *int                 `json:"outputRetentionDays,omitempty"`
	UndoWindowSec            *int                 `json:"undoWindowSec,omitempty"`
	PermissionPolicy         *Policy              `json:"permissionPolicy,omitempty"`
	RemoveWorktreeAfterMerge *bool                `json:"removeWorktreeAfterMerge,omitempty"`
	IdleExitSec              *int                 `json:"idleExitSec,omitempty"`
	CommandTimeoutSec        *int                 `json:"commandTimeoutSec,omitempty"`
	MaxBudgetUsd             *float64             `json:"maxBudgetUsd,omitempty"`
	ResumeAfterUsageLimit    *bool                `json:"resumeAfterUsageLimit,omitempty"`
	AgentNice                *int                 `json:"agentNice,omitempty"`
	MergeVerify              *string              `json:"mergeVerify,omitempty"`
	TestCommands             *[]string            `json:"testCommands,omitempty"`
	WarmAgentSec             *int                 `json:"warmAgentSec,omitempty"`
	WarmAgentMax             *int                 `json:"warmAgentMax,omitempty"`
	WarmAgentMemoryMiB       *int                 `json:"warmAgentMemoryMiB,omitempty"`
	QueueParallel            *int                 `json:"queueParallel,omitempty"`
	Sandbox                  *string              `json:"sandbox,omitempty"`
}

// Policy decides permission requests without asking a person. A rule is a
// Claude permission rule such as "Bash(go test:*)", "Read" or "Edit"; deny
// rules win over allow rules.
type Policy struct {
	// What happens to a tool use no rule matches: ask the person, allow it
	// or deny it.
	Default PolicyDefault `json:"default"`
	// Rules of the tool uses allowed without asking, e.g. "Bash(go
	// test:*)", "Read", "Edit(./docs/**)".
	Allow []string `json:"allow,omitempty"`
	// Rules of the tool uses always denied; a deny rule wins over an allow
	// rule.
	Deny []string `json:"deny,omitempty"`
}

// McpServer is how to reach one MCP server: Command (and Args, Env) for
// type stdio; URL (and Headers) for http and sse.
type McpServer struct {
	// How familiar reaches it: stdio (a command it starts), http or sse.
	Type McpServerType `json:"type"`
	// The command of a stdio server; ${FAMILIAR_WORKTREE} stands for the
	// task's worktree.
	Command string `json:"command,omitempty"`
	// The arguments of a stdio server's command.
	Args []string `json:"args,omitempty"`
	// Environment variables of a stdio server.
	Env map[string]string `json:"env,omitempty"`
	// The address of an http or sse server.
	URL string `json:"url,omitempty"`
	// HTTP headers sent to an http or sse server.
	Headers map[string]string `json:"headers,omitempty"`
}

// Event is one notification as task/events replays it: Method is the
// notification's method (e.g. "task/updated") and Params exactly the params it
// carried, seq included, so a reconnecting client handles both the same way.
type Event struct {
	Seq    int64           `json:"seq"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	// At is when familiar sent the notification (familiar's addition).
	At time.Time `json:"at,omitzero"`
}

// NewEvent records n as an Event.
func NewEvent(n Notification) (Event, error) {
	params, err := json.Marshal(n)
	if err != nil {
		return Event{}, fmt.Errorf("encoding %s event: %w", n.Method(), err)
	}
	return Event{Seq: n.Sequence(), Method: n.Method(), Params: params}, nil
}

// Time is an RFC 3339 instant in request params (since, until). It exists
// instead of time.Time so that a malformed value is reported as an
// ill-typed field (-32602 with data.field) rather than an anonymous error.
type Time struct{ time.Time }

func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if v, err := time.Parse(time.RFC3339Nano, s); err == nil {
			t.Time = v
			return nil
		}
	}
	// encoding/json fills in Field (the JSON path) for this error type only.
	return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[Time]()}
}

func (t Time) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.Time.UTC().Format(time.RFC3339Nano))
}

// jsonKind names the kind of a JSON value the way encoding/json's errors do,
// without echoing the value (it may be long or private).
func jsonKind(b []byte) string {
	switch b = bytes.TrimSpace(b); {
	case len(b) == 0:
		return "nothing"
	case b[0] == '"':
		return "string"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	case b[0] == 'n':
		return "null"
	default:
		return "number"
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// TranscriptEntry is one entry of a task's structured transcript
// (task/transcript). Kind says which field is set:
//   - "prompt", "text", "thinking": Text (text and thinking arrive in chunks);
//   - "tool_call": ToolCall, the whole call as now known, sent again on each
//     status change (same id);
//   - "plan": Plan, the agent's whole plan (it replaces the previous one);
//   - "usage": Usage, one model response's tokens with the running total.
type TranscriptEntry struct {
	Kind      string     `json:"kind"`
	At        time.Time  `json:"at"`
	MessageID string     `json:"messageId,omitempty"`
	Text      string     `json:"text,omitempty"`
	ToolCall  *ToolCall  `json:"toolCall,omitempty"`
	Plan      []PlanItem `json:"plan,omitempty"`
	Usage     *Usage     `json:"usage,omitempty"`
}

// ToolCall is one tool call of the agent (a step).
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Kind: read, edit, delete, move, search, execute, think, fetch,
	// switch_mode or other (the Agent Client Protocol's tool kinds).
	Kind  string          `json:"kind"`
	Title string          `json:"title"`
	Input json.RawMessage `json:"input,omitempty"`
	Files []string        `json:"files,omitempty"`
	// Status: pending, running, completed or failed.
	Status string `json:"status"`
	Result string `json:"result,omitempty"` // the start of the tool's result (2000 bytes at most)
	// ResultRef fetches the whole result with task/text when Result is only
	// its start: a tool output claude saved ("tool-results/<file>") or one
	// familiar kept ("clip/<hash>"). Familiar's addition.
	ResultRef  string     `json:"resultRef,omitempty"`
	DurationMs int64      `json:"durationMs,omitempty"`
	Diffs      []FileDiff `json:"diffs,omitempty"` // what an edit changes
	StartedAt  time.Time  `json:"startedAt"`
	EndedAt    *time.Time `json:"endedAt,omitempty"`
}

// FileDiff is one file an edit changes, as text before and after.
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

// Usage counts tokens and cost. On a transcript entry it is one model
// response (Total: the session so far); on a Task it is the task's total
// (Turns: per turn).
type Usage struct {
	Model            string  `json:"model,omitempty"`
	InputTokens      int64   `json:"inputTokens"`
	OutputTokens     int64   `json:"outputTokens"`
	CacheReadTokens  int64   `json:"cacheReadTokens"`
	CacheWriteTokens int64   `json:"cacheWriteTokens"`
	CostUSD          float64 `json:"costUsd"`
	Responses        int     `json:"responses,omitempty"`
	Total            *Usage  `json:"total,omitempty"`
	Turns            []Usage `json:"turns,omitempty"`
}

// AddCounts adds u's tokens and cost to t: the one sum the transcript's
// totals and a task's keep. Responses is the caller's, since what u
// counts as differs (one response, a turn of n, a turn that says none).
func (t *Usage) AddCounts(u Usage) {
	t.InputTokens += u.InputTokens
	t.OutputTokens += u.OutputTokens
	t.CacheReadTokens += u.CacheReadTokens
	t.CacheWriteTokens += u.CacheWriteTokens
	t.CostUSD += u.CostUSD
}
