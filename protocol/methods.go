package protocol

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// ProtocolVersion is the version of PROTOCOL.md this package implements.
const ProtocolVersion = 1

// ServerName is serverInfo.name in the initialize result.
const ServerName = "familiar"

// Method names of requests (client → server).
const (
	MethodInitialize     = "initialize"
	MethodShutdown       = "shutdown"
	MethodSettingsUpdate = "settings/update"
	MethodTaskCreate     = "task/create"
	MethodTaskGet        = "task/get"
	MethodTaskList       = "task/list"
	MethodTaskCancel     = "task/cancel"
	MethodTaskRespond    = "task/respond"
	MethodTaskSend       = "task/send"
	MethodTaskInput      = "task/input"
	MethodTaskResize     = "task/resize"
	MethodTaskScreen     = "task/screen"
	MethodTaskOutput     = "task/output"
	MethodTaskPause      = "task/pause"
	MethodTaskResume     = "task/resume"
	MethodTaskReorder    = "task/reorder"
	MethodTaskRetry      = "task/retry"
	MethodTaskSetMode    = "task/setMode"
	MethodTaskDiff       = "task/diff"
	MethodTaskMerge      = "task/merge"
	MethodTaskUndo       = "task/undo"
	MethodTaskRemove     = "task/remove"
	MethodTaskEvents     = "task/events"
	MethodProfilesList   = "profiles/list"
	MethodSkillsList     = "skills/list"
	MethodSkillsGet      = "skills/get"
	MethodMcpPresets     = "mcp/presets"
	MethodMcpCheck       = "mcp/check"
	MethodAuditList      = "audit/list"
	MethodServerStats    = "server/stats"
	// MethodServerStop stops the background familiar on purpose (familiar's
	// addition to PROTOCOL.md); it is accepted before initialize.
	MethodServerStop = "server/stop"
	// MethodTaskInterrupt ends the agent's current turn (Esc in the TUI, an
	// interrupt control request in stream mode) and keeps the task: the next
	// task/send goes on from there (familiar's addition; ACP's session/cancel).
	MethodTaskInterrupt = "task/interrupt"
	// MethodTaskArchive hides finished tasks from task/list (or shows them
	// again); the store keeps them for the audit (familiar's addition,
	// issue 26).
	MethodTaskArchive = "task/archive"
	// MethodTaskPrepare starts an agent before its task exists, in the
	// worktree the task will have, so the first prompt finds claude up
	// (familiar's addition, issue 40: ACP's session/new); MethodTaskRelease
	// lets an unused one go.
	MethodTaskPrepare = "task/prepare"
	MethodTaskRelease = "task/release"
)

// Client → server notifications. The transport handles both itself.
const (
	MethodExit          = "exit"
	MethodCancelRequest = "$/cancelRequest"
)

// Server is the behaviour behind every request of PROTOCOL.md, one Go method
// per JSON-RPC method, whose wire name is the constant Method<GoName>.
// workspace.Service implements it (its bodies are the orchestrator's
// methods of the same name), daemon.Service wraps that, rpcclient.Client
// calls a running familiar through it; package jsonrpc decodes and
// validates params (Validate has passed before a method is called) and
// maps the returned error to a JSON-RPC error code. The method table, the
// workspace's forwarders, the client's calls and the test fake are
// generated from this interface (protocol/gogen): a new method is its
// declaration here, its params' Validate and its body in the orchestrator.
//
// ctx is cancelled when the client sends $/cancelRequest for the request or
// disconnects; a method that returns ctx.Err() (or an error wrapping
// context.Canceled) is answered with -32800. Errors should be *Error (via
// the constructors in errors.go), possibly wrapped with %w; any other error
// reaches the client as -32603 with a generic message and is logged.
//
// Methods whose result is {} in PROTOCOL.md return only an error.
//
// Every method of PROTOCOL.md is here, familiar's additions too: there is no
// optional interface and no stub to embed, so an implementation that lacks a
// method does not compile, and a wrapper that embeds a Server (the daemon's)
// forwards every method it does not override.
type Server interface {
	// Initialize is called once per connection before any other method.
	Initialize(ctx context.Context, p *InitializeParams) (*InitializeResult, error)
	// Shutdown terminates running agents gracefully and saves state; the
	// response is null. The client then sends exit.
	Shutdown(ctx context.Context) error
	SettingsUpdate(ctx context.Context, p *SettingsUpdateParams) (*Settings, error)

	TaskCreate(ctx context.Context, p *TaskCreateParams) (*Task, error)
	TaskGet(ctx context.Context, p *TaskGetParams) (*Task, error)
	TaskList(ctx context.Context, p *TaskListParams) (*TaskListResult, error)
	TaskCancel(ctx context.Context, p *TaskCancelParams) (*Task, error)
	TaskRespond(ctx context.Context, p *TaskRespondParams) (*Task, error)
	TaskSend(ctx context.Context, p *TaskSendParams) (*Task, error)
	TaskInput(ctx context.Context, p *TaskInputParams) error
	TaskResize(ctx context.Context, p *TaskResizeParams) error
	TaskScreen(ctx context.Context, p *TaskScreenParams) (*TaskScreenResult, error)
	TaskOutput(ctx context.Context, p *TaskOutputParams) (*TaskOutputResult, error)
	TaskPause(ctx context.Context, p *TaskPauseParams) (*Task, error)
	TaskResume(ctx context.Context, p *TaskResumeParams) (*Task, error)
	TaskInterrupt(ctx context.Context, p *TaskInterruptParams) (*Task, error)
	TaskReorder(ctx context.Context, p *TaskReorderParams) (*Task, error)
	TaskRetry(ctx context.Context, p *TaskRetryParams) (*Task, error)
	TaskSetMode(ctx context.Context, p *TaskSetModeParams) (*Task, error)
	TaskDiff(ctx context.Context, p *TaskDiffParams) (*TaskDiffResult, error)
	TaskMerge(ctx context.Context, p *TaskMergeParams) (*Task, error)
	TaskUndo(ctx context.Context, p *TaskUndoParams) (*Task, error)
	TaskRemove(ctx context.Context, p *TaskRemoveParams) error
	TaskArchive(ctx context.Context, p *TaskArchiveParams) (*TaskArchiveResult, error)
	TaskEvents(ctx context.Context, p *TaskEventsParams) (*TaskEventsResult, error)
	TaskPrepare(ctx context.Context, p *TaskPrepareParams) (*TaskPrepareResult, error)
	TaskRelease(ctx context.Context, p *TaskReleaseParams) error

	ProfilesList(ctx context.Context, p *ProfilesListParams) ([]Profile, error)
	SkillsList(ctx context.Context, p *SkillsListParams) ([]Skill, error)
	SkillsGet(ctx context.Context, p *SkillsGetParams) (*SkillDetail, error)
	McpPresets(ctx context.Context, p *McpPresetsParams) ([]McpPreset, error)
	McpCheck(ctx context.Context, p *McpCheckParams) (*McpCheckResult, error)
	AuditList(ctx context.Context, p *AuditListParams) (*AuditListResult, error)
	ServerStats(ctx context.Context, p *ServerStatsParams) (*ServerStats, error)
	// ServerStop stops the agents gracefully (resumable) and ends the
	// familiar serving the workspace; with IfIdle only when no other client
	// is connected and nothing is queued, running or waiting.
	ServerStop(ctx context.Context, p *ServerStopParams) (*ServerStopResult, error)

	// TaskMarkDone settles a task waiting on a prose question (kind
	// "question") as finished: the person read the agent's last message and
	// judged it a report. The task goes to merging like any finished turn.
	TaskMarkDone(ctx context.Context, p *TaskMarkDoneParams) (*Task, error)
	// TaskText pages through the whole of a text familiar showed clipped
	// (Question.textRef, Question.inputRef, TaskResult.summaryRef) or a tool
	// output claude persisted ("tool-results/<file>").
	TaskText(ctx context.Context, p *TaskTextParams) (*TaskTextResult, error)
	PolicyList(ctx context.Context, p *PolicyListParams) (*PolicyListResult, error)
	PolicyRevoke(ctx context.Context, p *PolicyRevokeParams) (*PolicyRevokeResult, error)

	// The merge queue (queue.go).
	QueueMerge(ctx context.Context, p *QueueMergeParams) (*Queue, error)
	QueueStatus(ctx context.Context, p *QueueStatusParams) (*QueueStatusResult, error)
	QueueCancel(ctx context.Context, p *QueueCancelParams) (*Queue, error)
	QueueUndo(ctx context.Context, p *QueueUndoParams) (*Queue, error)

	// Plans (plan.go): one goal as steps with needs, run as a graph of
	// tasks and merged through the merge queue.
	PlanCreate(ctx context.Context, p *PlanCreateParams) (*Plan, error)
	PlanGet(ctx context.Context, p *PlanGetParams) (*Plan, error)
	PlanList(ctx context.Context, p *PlanListParams) (*PlanListResult, error)
	PlanUpdate(ctx context.Context, p *PlanUpdateParams) (*Plan, error)
	PlanRun(ctx context.Context, p *PlanRunParams) (*Plan, error)
	PlanCancel(ctx context.Context, p *PlanCancelParams) (*Plan, error)
	PlanUndo(ctx context.Context, p *PlanUndoParams) (*Plan, error)
	PlanRetry(ctx context.Context, p *PlanRetryParams) (*Plan, error)
	PlanSkip(ctx context.Context, p *PlanSkipParams) (*Plan, error)
}

// ---- lifecycle ----

type InitializeParams struct {
	// WorkspaceRoot is the git repository familiar works on.
	WorkspaceRoot string          `json:"workspaceRoot"`
	ClientInfo    *ClientInfo     `json:"clientInfo,omitempty"`
	Settings      *SettingsUpdate `json:"settings,omitempty"`
	// ProtocolVersion, when set, is the version of PROTOCOL.md the client
	// speaks; a familiar speaking another refuses it, naming both.
	ProtocolVersion int `json:"protocolVersion,omitempty"`
	// OutputData false (familiar's addition): this client gets task/output
	// notifications without their data (data ""), at most one queued per
	// task: a wake-up to page the log with task/output. For clients that
	// read the log by offset (terminals), so a flooding task can neither
	// overrun them nor get them dropped for falling behind.
	OutputData *bool `json:"outputData,omitempty"`
}

type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type InitializeResult struct {
	ServerInfo      ServerInfo    `json:"serverInfo"`
	ProtocolVersion int           `json:"protocolVersion"`
	Capabilities    Capabilities  `json:"capabilities"`
	Workspace       WorkspaceInfo `json:"workspace"`
	Claude          ClaudeStatus  `json:"claude"`
	Git             GitStatus     `json:"git"`
}

type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type Capabilities struct {
	Drivers []Driver `json:"drivers"`
}

func (c Capabilities) MarshalJSON() ([]byte, error) {
	type plain Capabilities
	p := plain(c)
	p.Drivers = nonNil(p.Drivers)
	return json.Marshal(p)
}

type WorkspaceInfo struct {
	Root         string `json:"root"`
	DataDir      string `json:"dataDir"`
	WorktreesDir string `json:"worktreesDir"`
}

// ClaudeStatus reports the claude CLI; a missing CLI is not an initialize
// error: Available is false and Problem says what to do.
type ClaudeStatus struct {
	Available bool   `json:"available"`
	Path      string `json:"path"`
	Version   string `json:"version"`
	Problem   string `json:"problem,omitempty"`
	// Support places Version in familiar's window of CLI versions:
	// "supported", "newer-untested" (runs, with Warning) or "too-old"
	// (refused; Problem names the oldest supported). familiar's addition.
	Support string `json:"support,omitempty"`
	Warning string `json:"warning,omitempty"`
	// Auth says how claude will authenticate in tasks, never the secret
	// (familiar's addition).
	Auth *AuthStatus `json:"auth,omitempty"`
}

// AuthStatus is the login claude uses: method is one of bedrock, vertex,
// foundry, auth_token, api_key, api_key_helper, oauth_token, claude_login,
// none; source where it comes from (a variable name or a file path);
// problem, when set, why tasks will be blocked{auth}, with the fix.
type AuthStatus struct {
	Method  string `json:"method"`
	Source  string `json:"source,omitempty"`
	Problem string `json:"problem,omitempty"`
}

type GitStatus struct {
	Available bool   `json:"available"`
	Version   string `json:"version"`
}

type SettingsUpdateParams struct {
	Settings *SettingsUpdate `json:"settings"`
}

// ---- tasks ----

type TaskCreateParams struct {
	// A short title, shown in lists.
	Title string `json:"title"`
	// What the agent should do: the task's prompt, with the profile's
	// template around it.
	Description string `json:"description"`
	// What must hold for the task to be done, one item each.
	AcceptanceCriteria []string `json:"acceptanceCriteria,omitempty"`
	// The kind of work; it chooses the profile when none is named.
	Type TaskType `json:"type,omitempty"`
	// The profile (prompt template, tool rules, default mode) by name.
	Profile string `json:"profile,omitempty"`
	// PromptOverride replaces the profile's prompt template entirely.
	PromptOverride string `json:"promptOverride,omitempty"`
	// The mode the task starts in: executor changes code, architect only
	// plans, auditor reviews and runs tests.
	Mode Mode `json:"mode,omitempty"`
	// Higher starts first among queued tasks.
	Priority int `json:"priority,omitempty"`
	// The commit, branch or tag the task's worktree starts from. Default:
	// HEAD.
	BaseRef string `json:"baseRef,omitempty"`
	// How claude runs: pty (under a terminal) or stream (stream-json).
	Driver Driver `json:"driver,omitempty"`
	// MCP servers the task's agent gets, by name.
	McpServers map[string]McpServer `json:"mcpServers,omitempty"`
	// Skills the task's agent gets, by name. Default: the profile's.
	Skills []string `json:"skills,omitempty"`
	// Files and facts the person already knows about.
	Hints *Hints `json:"hints,omitempty"`
	// Agent behaviours switched on for this task.
	Directives *Directives `json:"directives,omitempty"`
	// NoProgressTimeoutSec overrides the setting for this task.
	NoProgressTimeoutSec *int `json:"noProgressTimeoutSec,omitempty"`
	// The task's own permission policy, over the settings'.
	PermissionPolicy *Policy `json:"permissionPolicy,omitempty"`
	// CommandTimeoutSec and MaxBudgetUsd override the settings for this
	// task (familiar's additions).
	CommandTimeoutSec *int `json:"commandTimeoutSec,omitempty"`
	// A task that has spent this many US dollars is blocked (overrides the
	// setting).
	MaxBudgetUsd *float64 `json:"maxBudgetUsd,omitempty"`
	// Model is passed to claude as --model (an alias such as "opus" or a
	// model's full name); "" leaves claude's own choice (familiar's
	// addition, for ACP's model config option).
	Model string `json:"model,omitempty"`
	// WarmAgentSec overrides the setting for this task: how long its claude
	// stays after a turn that finished it, for a follow-up (familiar's
	// addition; ACP sessions, whose editor shows the conversation, ask for
	// it).
	WarmAgentSec *int `json:"warmAgentSec,omitempty"`
	// Prepared is the id task/prepare answered: the task takes that
	// agent, already started in its worktree, when everything that shapes
	// claude's command line is as prepared (else it starts one as usual,
	// in that worktree). An id familiar no longer holds is ignored
	// (familiar's addition, issue 40).
	Prepared string `json:"prepared,omitempty"`
}

// TaskPrepareParams is task/prepare's: what task/create will be asked,
// before its title and description are known (they are not required and
// not used).
type TaskPrepareParams struct {
	TaskCreateParams
}

// TaskPrepareResult says which agent was prepared: its id is the id of the
// task that task/create with prepared makes. ID is "" when none was
// (every slot of maxConcurrent is taken, or the pool is full of agents
// more recently asked for); Reason then says why.
type TaskPrepareResult struct {
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// TaskReleaseParams is task/release's: the prepared agent to let go (its
// claude stopped, its worktree removed). An id familiar no longer holds,
// or one a task took, is not an error.
type TaskReleaseParams = TaskIDParams

// Hints point the agent at files and facts the person already knows about.
type Hints struct {
	// Files to look at first, relative to the repository.
	Files []string `json:"files,omitempty"`
	// Facts the agent should know.
	Notes string `json:"notes,omitempty"`
}

// Directives switch on agent behaviours for one task.
type Directives struct {
	// Think harder: claude's extended thinking.
	Think bool `json:"think,omitempty"`
	// Report every Claude Code hook call of the task (task/hook).
	Verbose bool `json:"verbose,omitempty"`
	// Allow every call no deny rule matches, without asking; a deny rule
	// still wins.
	Elevated bool `json:"elevated,omitempty"`
}

// TaskIDParams is the params of every method that takes only a task id.
type TaskIDParams struct {
	ID string `json:"id"`
}

// Per-method names for {id} params; aliases, so a method that later gains a
// field can get its own struct without touching the others.
type (
	TaskGetParams       = TaskIDParams
	TaskCancelParams    = TaskIDParams
	TaskScreenParams    = TaskIDParams
	TaskPauseParams     = TaskIDParams
	TaskResumeParams    = TaskIDParams
	TaskInterruptParams = TaskIDParams
	TaskUndoParams      = TaskIDParams
)

// TaskRetryParams is task/retry's: a new attempt from the base commit, or
// with fromBranch from the previous attempt's branch (its work carried over).
type TaskRetryParams struct {
	ID         string `json:"id"`
	FromBranch bool   `json:"fromBranch,omitempty"`
}

// Limits of task/list.
const (
	DefaultTaskListLimit = 20
	MaxTaskListLimit     = 200
)

type TaskListParams struct {
	Status []Status `json:"status,omitempty"`
	// Query matches title, description, summary and error text.
	Query string `json:"query,omitempty"`
	Since Time   `json:"since,omitzero"`
	Until Time   `json:"until,omitzero"`
	// Limit 0 means DefaultTaskListLimit.
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	// Archived is "exclude" (the default: archived tasks are left out),
	// "include" or "only" (familiar's addition, issue 26).
	Archived ArchivedFilter `json:"archived,omitempty"`
}

// EffectiveLimit is Limit with the default applied.
func (p *TaskListParams) EffectiveLimit() int { return orDefault(p.Limit, DefaultTaskListLimit) }

// TaskListResult lists tasks newest first.
type TaskListResult struct {
	Tasks      []Task `json:"tasks"`
	Total      int    `json:"total"`
	NextCursor string `json:"nextCursor,omitempty"`
}

func (r TaskListResult) MarshalJSON() ([]byte, error) {
	type plain TaskListResult
	p := plain(r)
	p.Tasks = nonNil(p.Tasks)
	return json.Marshal(p)
}

// TaskRespondParams answers a task's pendingQuestion: OptionID, Text, or
// both when the question allows text (e.g. deny with instructions).
type TaskRespondParams struct {
	ID         string `json:"id"`
	QuestionID string `json:"questionId"`
	OptionID   string `json:"optionId,omitempty"`
	Text       string `json:"text,omitempty"`
	// UpdatedInput replaces a permission request's tool input (stream driver).
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	// GrantScope says where an allow-always answer's rule holds: "task"
	// (default), "repository" or "user". Familiar's addition.
	GrantScope GrantScope `json:"grantScope,omitempty"`
}

type TaskSendParams struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// TaskInputParams carries raw keystrokes for the task's PTY.
type TaskInputParams struct {
	ID   string `json:"id"`
	Data string `json:"data"`
}

// Terminal size limits of task/resize.
const MaxTerminalSize = 10000

type TaskResizeParams struct {
	ID   string `json:"id"`
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
}

// TaskScreenResult is the current screen of a task's terminal as text.
type TaskScreenResult struct {
	Cols   int      `json:"cols"`
	Rows   int      `json:"rows"`
	Lines  []string `json:"lines"`
	Cursor Cursor   `json:"cursor"`
}

func (r TaskScreenResult) MarshalJSON() ([]byte, error) {
	type plain TaskScreenResult
	p := plain(r)
	p.Lines = nonNil(p.Lines)
	return json.Marshal(p)
}

type Cursor struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

// Limits of task/output. The maximum keeps a response well under the 16 MiB
// frame limit clients commonly share with us, even after JSON escaping.
const (
	DefaultOutputLimit = 65536
	MaxOutputLimit     = 1 << 20
)

type TaskOutputParams struct {
	ID     string `json:"id"`
	Offset int64  `json:"offset,omitempty"`
	// Limit 0 means DefaultOutputLimit.
	Limit int `json:"limit,omitempty"`
}

func (p *TaskOutputParams) EffectiveLimit() int { return orDefault(p.Limit, DefaultOutputLimit) }

// TaskOutputResult is one page of a task's raw output log.
type TaskOutputResult struct {
	Data       string `json:"data"`
	Offset     int64  `json:"offset"`
	NextOffset int64  `json:"nextOffset"`
	Size       int64  `json:"size"`
	Truncated  bool   `json:"truncated"`
	// Ended (familiar's addition): no agent writes this log any more (it
	// exited, or none started), so size is final; a later start of the task
	// writes a new log. A client that must have every byte (a terminal, a
	// test) reads until nextOffset == size with ended set: the status alone
	// does not tell, since a finished task's agent draws its exit screen
	// after the task is already merging.
	Ended bool `json:"ended"`
}

// TaskReorderParams moves a queued task: to a new priority, before another
// queued task, or both.
type TaskReorderParams struct {
	ID       string `json:"id"`
	Priority *int   `json:"priority,omitempty"`
	Before   string `json:"before,omitempty"`
}

type TaskSetModeParams struct {
	ID   string `json:"id"`
	Mode Mode   `json:"mode"`
}

type TaskDiffParams struct {
	ID string `json:"id"`
	// Path limits the diff to one file.
	Path string `json:"path,omitempty"`
	// Texts asks for each file's whole text before and after (familiar's
	// addition, for editors that show diffs themselves, e.g. ACP's diff
	// content).
	Texts bool `json:"texts,omitempty"`
}

// TaskDiffResult is a task's changes against its baseCommit.
type TaskDiffResult struct {
	Files []DiffFile `json:"files"`
	Patch string     `json:"patch"`
}

func (r TaskDiffResult) MarshalJSON() ([]byte, error) {
	type plain TaskDiffResult
	p := plain(r)
	p.Files = nonNil(p.Files)
	return json.Marshal(p)
}

type DiffFile struct {
	Path      string     `json:"path"`
	Status    FileStatus `json:"status"`
	Additions int        `json:"additions"`
	Deletions int        `json:"deletions"`
	// OldText and NewText are the file's text in baseCommit ("" if added)
	// and now ("" if deleted), with texts:true; absent for a binary file,
	// one over 256 KB or one that is not a regular file (familiar's
	// addition).
	OldText *string `json:"oldText,omitempty"`
	NewText *string `json:"newText,omitempty"`
}

type TaskMergeParams struct {
	ID       string        `json:"id"`
	Strategy MergeStrategy `json:"strategy,omitempty"`
	Message  string        `json:"message,omitempty"`
	// Paths keeps only these of the task's changed files (its
	// result.changedFiles paths) and discards the rest from this merge:
	// one commit on the base holding those files as the task has them;
	// the task's branch keeps every file, untouched (familiar's addition,
	// issue 36). Absent: every file.
	Paths []string `json:"paths,omitempty"`
}

type TaskRemoveParams struct {
	ID           string `json:"id"`
	DeleteBranch bool   `json:"deleteBranch,omitempty"`
	// Force removes a worktree even if it holds uncommitted work.
	Force bool `json:"force,omitempty"`
	// Archive also archives the task, so task/list no longer shows it
	// (familiar's addition, issue 26).
	Archive bool `json:"archive,omitempty"`
}

// TaskArchiveParams: the tasks named, or every merged or cancelled task
// that finished before FinishedBefore (one of the two is required);
// Unarchive shows them in task/list again.
type TaskArchiveParams struct {
	IDs            []string `json:"ids,omitempty"`
	FinishedBefore Time     `json:"finishedBefore,omitzero"`
	Unarchive      bool     `json:"unarchive,omitempty"`
}

// TaskArchiveResult names the tasks that changed.
type TaskArchiveResult struct {
	IDs []string `json:"ids"`
}

// ArchivedFilter is which tasks task/list shows by their archive.
type ArchivedFilter string

// Values of TaskListParams.Archived.
const (
	ArchivedExclude ArchivedFilter = "exclude"
	ArchivedInclude ArchivedFilter = "include"
	ArchivedOnly    ArchivedFilter = "only"
)

// ArchivedFilters are the values of TaskListParams.Archived.
var ArchivedFilters = []ArchivedFilter{ArchivedExclude, ArchivedInclude, ArchivedOnly}

func (f ArchivedFilter) Valid() bool { return slices.Contains(ArchivedFilters, f) }

// Limits of task/events.
const (
	DefaultEventsLimit = 1000
	MaxEventsLimit     = 10000
)

// TaskEventsParams asks for the events after SinceSeq (of one task when ID is
// set). SinceSeq is required by PROTOCOL.md; an absent one reads as 0, which
// replays from the start and is therefore harmless.
type TaskEventsParams struct {
	ID       string `json:"id,omitempty"`
	SinceSeq int64  `json:"sinceSeq"`
	Limit    int    `json:"limit,omitempty"`
}

func (p *TaskEventsParams) EffectiveLimit() int { return orDefault(p.Limit, DefaultEventsLimit) }

type TaskEventsResult struct {
	Events  []Event `json:"events"`
	LastSeq int64   `json:"lastSeq"`
}

func (r TaskEventsResult) MarshalJSON() ([]byte, error) {
	type plain TaskEventsResult
	p := plain(r)
	p.Events = nonNil(p.Events)
	return json.Marshal(p)
}

// ---- a question marked done, whole texts (familiar's additions) ----

const (
	MethodTaskMarkDone = "task/markDone"
	MethodTaskText     = "task/text"
)

// TaskMarkDoneParams: {id, questionId?}. questionId, when given, must be the
// pending question's.
type TaskMarkDoneParams struct {
	ID         string `json:"id"`
	QuestionID string `json:"questionId,omitempty"`
}

func (p *TaskMarkDoneParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	return c.result()
}

// TaskTextParams: {id, ref, offset?, limit? (default 65536)}.
type TaskTextParams struct {
	ID     string `json:"id"`
	Ref    string `json:"ref"`
	Offset int64  `json:"offset,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

func (p *TaskTextParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	c.required("ref", p.Ref)
	if p.Offset < 0 {
		c.fail("offset", "offset must not be negative, not %d.", p.Offset)
	}
	c.intRange("limit", p.Limit, 0, MaxOutputLimit)
	return c.result()
}

func (p *TaskTextParams) EffectiveLimit() int { return orDefault(p.Limit, DefaultOutputLimit) }

// TaskTextResult is one page of a text: offsets are in bytes of the whole
// text, and a page never ends inside a UTF-8 character.
type TaskTextResult struct {
	Data       string `json:"data"`
	Offset     int64  `json:"offset"`
	NextOffset int64  `json:"nextOffset"`
	Size       int64  `json:"size"`
	// Truncated is set when the text goes on after nextOffset.
	Truncated bool `json:"truncated"`
}

// ---- profiles, skills, MCP, audit, stats ----

type ProfilesListParams struct{}

type Profile struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	TaskTypes   []TaskType `json:"taskTypes"`
	Source      Source     `json:"source"`
	// Skills are the profile's default skills: a task of the profile
	// created without skills gets them (familiar's addition, issue 26).
	Skills []string `json:"skills,omitempty"`
}

func (p Profile) MarshalJSON() ([]byte, error) {
	type plain Profile
	q := plain(p)
	q.TaskTypes = nonNil(q.TaskTypes)
	return json.Marshal(q)
}

type SkillsListParams struct{}

type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Mode        Mode   `json:"mode,omitempty"`
	Source      Source `json:"source"`
	Path        string `json:"path"`
	// DefaultFor names the profiles whose default skills include this one,
	// for a client to pre-select (familiar's addition, issue 26).
	DefaultFor []string `json:"defaultFor,omitempty"`
}

type SkillsGetParams struct {
	Name string `json:"name"`
}

// SkillDetail is a Skill with its content (skills/get).
type SkillDetail struct {
	Skill
	Content string `json:"content"`
}

type McpPresetsParams struct{}

type McpPreset struct {
	Name   string    `json:"name"`
	Server McpServer `json:"server"`
	// Requires lists what must be installed or set for the preset to work.
	Requires []string `json:"requires"`
}

func (p McpPreset) MarshalJSON() ([]byte, error) {
	type plain McpPreset
	q := plain(p)
	q.Requires = nonNil(q.Requires)
	return json.Marshal(q)
}

// McpCheckParams checks Servers, or the session's settings when absent.
type McpCheckParams struct {
	Servers map[string]McpServer `json:"servers,omitempty"`
}

type McpCheckResult struct {
	Servers []McpServerCheck `json:"servers"`
}

func (r McpCheckResult) MarshalJSON() ([]byte, error) {
	type plain McpCheckResult
	p := plain(r)
	p.Servers = nonNil(p.Servers)
	return json.Marshal(p)
}

type McpServerCheck struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Problem   string `json:"problem,omitempty"`
}

// Limits of audit/list.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

type AuditListParams struct {
	TaskID string `json:"taskId,omitempty"`
	Action string `json:"action,omitempty"`
	Since  Time   `json:"since,omitzero"`
	Until  Time   `json:"until,omitzero"`
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

func (p *AuditListParams) EffectiveLimit() int { return orDefault(p.Limit, DefaultAuditLimit) }

type AuditListResult struct {
	Entries    []AuditEntry `json:"entries"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

func (r AuditListResult) MarshalJSON() ([]byte, error) {
	type plain AuditListResult
	p := plain(r)
	p.Entries = nonNil(p.Entries)
	return json.Marshal(p)
}

// AuditEntry is one audited action; secrets in Data are already masked.
type AuditEntry struct {
	Seq    int64           `json:"seq"`
	At     time.Time       `json:"at"`
	TaskID string          `json:"taskId,omitempty"`
	Action string          `json:"action"`
	Actor  string          `json:"actor"`
	Data   json.RawMessage `json:"data"`
}

func (e AuditEntry) MarshalJSON() ([]byte, error) {
	type plain AuditEntry
	p := plain(e)
	p.At = utc(p.At)
	return json.Marshal(p)
}

type ServerStatsParams struct{}

type ServerStopParams struct {
	// IfIdle stops only an idle familiar (how a newer binary replaces an
	// older one without disturbing anybody's work).
	IfIdle bool `json:"ifIdle,omitempty"`
}

type ServerStopResult struct {
	// Stopping is false when IfIdle was set and familiar is busy; Busy then
	// says with what.
	Stopping        bool   `json:"stopping"`
	Busy            string `json:"busy,omitempty"`
	Version         string `json:"version"`
	ProtocolVersion int    `json:"protocolVersion"`
}

type ServerStats struct {
	Tasks          TaskCounts    `json:"tasks"`
	SuccessRate    float64       `json:"successRate"`
	AvgDurationSec float64       `json:"avgDurationSec"`
	QueueDepth     int           `json:"queueDepth"`
	Running        int           `json:"running"`
	Approvals      ApprovalStats `json:"approvals"`
	// ToolUses counts tool calls by tool name since familiar started
	// (familiar's addition to PROTOCOL.md).
	ToolUses map[string]int `json:"toolUses"`
}

type TaskCounts struct {
	ByStatus map[Status]int `json:"byStatus"`
}

type ApprovalStats struct {
	Count          int     `json:"count"`
	AvgResponseSec float64 `json:"avgResponseSec"`
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (c TaskCounts) MarshalJSON() ([]byte, error) {
	type plain TaskCounts
	p := plain(c)
	if p.ByStatus == nil {
		p.ByStatus = map[Status]int{}
	}
	return json.Marshal(p)
}
