package protocol

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// keys returns the top-level JSON keys v marshals to.
func keys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(m))
}

func sorted(s string) []string { return slices.Sorted(slices.Values(strings.Fields(s))) }

// The JSON names are the contract; these lists are copied from PROTOCOL.md.
func TestJSONNames(t *testing.T) {
	one, cost := 1, 0.5
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	task := Task{
		QueuePosition: &one, EstimatedStartSec: &one,
		Worktree: &Worktree{}, Agent: &AgentInfo{}, PendingQuestion: &Question{ExpiresAt: now},
		Result: &TaskResult{CostUSD: &cost}, Blocked: &Blocked{},
		PreviousAttemptID: "p", CreatedAt: now, StartedAt: now, FinishedAt: now, UpdatedAt: now,
	}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"Task", task, `id title description acceptanceCriteria type profile mode priority driver status activity
			queuePosition estimatedStartSec worktree agent pendingQuestion result blocked attempt previousAttemptId
			createdAt startedAt finishedAt updatedAt`},
		{"Worktree", Worktree{}, "path branch baseRef baseCommit"},
		{"Agent", AgentInfo{}, "pid sessionId claudeVersion"},
		{"Result", *task.Result, "success summary changedFiles commits costUsd"},
		{"Blocked", Blocked{}, "reason detail"},
		{"Question", Question{Tool: "Bash", Input: json.RawMessage(`{}`), ExpiresAt: now},
			"id kind text tool input options allowText expiresAt"},
		{"Settings", DefaultSettings(), `maxConcurrent defaultProfile defaultDriver approvalTimeoutSec
			noProgressTimeoutSec termGraceSec mcpServers outputRetentionDays undoWindowSec permissionPolicy
			removeWorktreeAfterMerge idleExitSec commandTimeoutSec maxBudgetUsd resumeAfterUsageLimit agentNice mergeVerify testCommands warmAgentSec warmAgentMax warmAgentMemoryMiB queueParallel sandbox`}, // familiar's additions
		{"Event", Event{Params: json.RawMessage(`{}`)}, "seq method params"},
		{"TaskListResult", TaskListResult{}, "tasks total"},
		{"TaskOutputResult", TaskOutputResult{}, "data offset nextOffset size truncated ended"}, // ended: familiar's addition
		{"TaskScreenResult", TaskScreenResult{}, "cols rows lines cursor"},
		{"InitializeResult", InitializeResult{}, "serverInfo protocolVersion capabilities workspace claude git"},
		{"QuestionResolved", TaskQuestionResolvedNotification{OptionID: "allow"}, "seq id questionId decidedBy optionId"},
		{"SkillsChanged", SkillsChangedNotification{}, "seq added updated removed errors"},
		// status, reason, detail, resetsAt: familiar's additions (issue 22), a shape the VS Code extension is built against.
		{"Completed", TaskCompletedNotification{ResetsAt: now}, "seq id result status reason detail resetsAt"},
		{"Completed on success", TaskCompletedNotification{Status: StatusMerging}, "seq id result status reason detail"},
		{"Result with no changes", TaskResult{NoChanges: true}, "success summary changedFiles commits noChanges"},
		// The merge queue (issue 25), the shape the VS Code extension is built against.
		{"Queue", Queue{EndedAt: now, Current: "t1", Verify: "make"}, "id state strategy verify baseRef startedAt endedAt current items"},
		// issue 34's additions.
		{"Queue, issue 34", Queue{Parallel: 4, Interrupted: "familiar stopped"}, "id state strategy baseRef startedAt items parallel interrupted"},
		{"QueueItem", QueueItem{Reason: "verify", Detail: "d", Files: []string{"a"}, Output: "o", OutputRef: "r", Merge: &QueueMerge{}},
			"taskId title state attempts reason detail files output outputRef merge"},
		{"QueueUpdated", QueueUpdatedNotification{}, "seq queue"},
		// Plans (issue 39), the shape the extension and familiar acp are built against.
		{"Plan", Plan{}, "id state baseRef steps totals createdAt updatedAt"},
		{"Plan, ended", Plan{Goal: "g", Why: "w", Verify: "v", ArchitectTaskID: "t", Problems: []PlanProblem{{}}, StartedAt: now, EndedAt: now},
			"id goal state why baseRef verify architectTaskId steps problems totals createdAt startedAt endedAt updatedAt"},
		{"PlanStep", PlanStep{}, "id title description needs state"},
		{"PlanStep, merged", PlanStep{PlanStepSpec: PlanStepSpec{AcceptanceCriteria: []string{"a"}, Files: []string{"f"}, Mode: ModeExecutor, Profile: "p"},
			Why: "w", TaskID: "t", Attempts: 1, TaskIDs: []string{"t"}, DurationMs: 1, Tokens: 1, CostUSD: 1, StartedAt: now, MergedAt: now, Merge: &QueueMerge{}},
			"id title description acceptanceCriteria files needs mode profile state why taskId attempts taskIds durationMs tokens costUsd startedAt mergedAt merge"},
		{"PlanProblem", PlanProblem{}, "index field message"},
		{"PlanTotals", PlanTotals{}, "wallMs workMs tokens costUsd"},
		{"PlanUpdated", PlanUpdatedNotification{}, "seq plan"},
		{"PlanListResult", PlanListResult{}, "plans"},
		{"TaskConflict", TaskConflict{}, "with files"},
		{"ServerStats", ServerStats{}, "tasks successRate avgDurationSec queueDepth running approvals toolUses"}, // toolUses: familiar's addition
	} {
		if got, want := keys(t, tc.v), sorted(tc.want); !slices.Equal(got, want) {
			t.Errorf("%s keys = %v, want %v", tc.name, got, want)
		}
	}
}

func TestTaskJSON(t *testing.T) {
	local := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	b, err := json.Marshal(Task{ID: "t1", CreatedAt: local, UpdatedAt: local, Result: &TaskResult{},
		PendingQuestion: &Question{}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"acceptanceCriteria":[]`, `"createdAt":"2026-01-02T02:04:05Z"`,
		`"changedFiles":[]`, `"commits":[]`, `"options":[]`} {
		if !strings.Contains(s, want) {
			t.Errorf("%s lacks %s", s, want)
		}
	}
	for _, absent := range []string{"startedAt", "queuePosition", "worktree", "costUsd", "expiresAt"} {
		if strings.Contains(s, absent) {
			t.Errorf("%s has unset optional field %s", s, absent)
		}
	}
	var back Task
	if err := json.Unmarshal(b, &back); err != nil || !back.CreatedAt.Equal(local) {
		t.Errorf("round trip: %v, %v", back.CreatedAt, err)
	}
}

func TestDefaultSettings(t *testing.T) {
	s := DefaultSettings()
	if s.MaxConcurrent != 3 || s.ApprovalTimeoutSec != 300 || s.NoProgressTimeoutSec != 900 ||
		s.TermGraceSec != 10 || s.OutputRetentionDays != 7 || s.UndoWindowSec != 300 || s.DefaultDriver != DriverPTY {
		t.Errorf("defaults = %+v", s)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestSettingsApply(t *testing.T) {
	base := DefaultSettings()
	base.McpServers["fs"] = McpServer{Type: McpStdio, Command: "fs"}
	var u SettingsUpdate
	if err := json.Unmarshal([]byte(`{"maxConcurrent":5,"termGraceSec":0,"mcpServers":{}}`), &u); err != nil {
		t.Fatal(err)
	}
	got := base.Apply(&u)
	if got.MaxConcurrent != 5 || got.TermGraceSec != 0 || got.ApprovalTimeoutSec != 300 || len(got.McpServers) != 0 {
		t.Errorf("Apply = %+v", got)
	}
	if base.MaxConcurrent != 3 || len(base.McpServers) != 1 {
		t.Errorf("Apply changed its receiver: %+v", base)
	}
	got.McpServers["x"] = McpServer{}
	if len(base.Apply(nil).McpServers) != 1 {
		t.Error("Apply(nil) shares the map")
	}
}

func TestValidate(t *testing.T) {
	neg := -1
	for _, tc := range []struct {
		name  string
		v     interface{ Validate() error }
		field string // "" means valid
	}{
		{"create ok", &TaskCreateParams{Title: "t", Description: "d"}, ""},
		{"create no title", &TaskCreateParams{Description: "d"}, "title"},
		{"create blank title", &TaskCreateParams{Title: " ", Description: "d"}, "title"},
		{"create no description", &TaskCreateParams{Title: "t"}, "description"},
		{"create criteria", &TaskCreateParams{Title: "t", Description: "d", AcceptanceCriteria: []string{"a", "b", ""}}, "acceptanceCriteria[2]"},
		{"create type", &TaskCreateParams{Title: "t", Description: "d", Type: "chore"}, "type"},
		{"create driver", &TaskCreateParams{Title: "t", Description: "d", Driver: "tmux"}, "driver"},
		{"create baseRef option", &TaskCreateParams{Title: "t", Description: "d", BaseRef: "-x"}, "baseRef"},
		{"create timeout", &TaskCreateParams{Title: "t", Description: "d", NoProgressTimeoutSec: &neg}, "noProgressTimeoutSec"},
		{"create stdio without command", &TaskCreateParams{Title: "t", Description: "d",
			McpServers: map[string]McpServer{"a": {Type: McpStdio}}}, "mcpServers.a.command"},
		{"create bad url", &TaskCreateParams{Title: "t", Description: "d",
			McpServers: map[string]McpServer{"a": {Type: McpSSE, URL: "ftp://x"}}}, "mcpServers.a.url"},
		{"create policy rule", &TaskCreateParams{Title: "t", Description: "d",
			PermissionPolicy: &Policy{Default: PolicyAsk, Deny: []string{"Read", "Bash(rm:*"}}}, "permissionPolicy.deny[1]"},
		{"create hint", &TaskCreateParams{Title: "t", Description: "d", Hints: &Hints{Files: []string{""}}}, "hints.files[0]"},
		{"initialize relative", &InitializeParams{WorkspaceRoot: "repo"}, "workspaceRoot"},
		{"initialize settings", &InitializeParams{WorkspaceRoot: "/r", Settings: &SettingsUpdate{UndoWindowSec: &neg}}, "settings.undoWindowSec"},
		{"settings driver", &SettingsUpdateParams{Settings: &SettingsUpdate{DefaultDriver: ptr(Driver("x"))}}, "settings.defaultDriver"},
		{"settings ok", &SettingsUpdateParams{Settings: &SettingsUpdate{TermGraceSec: ptr(0)}}, ""},
		{"settings nice", &SettingsUpdateParams{Settings: &SettingsUpdate{AgentNice: ptr(20)}}, "settings.agentNice"},
		{"settings nice negative", &SettingsUpdateParams{Settings: &SettingsUpdate{AgentNice: ptr(-1)}}, "settings.agentNice"},
		{"get", &TaskGetParams{}, "id"},
		{"list status", &TaskListParams{Status: []Status{StatusRunning, "done"}}, "status[1]"},
		{"list order", &TaskListParams{Since: Time{time.Unix(10, 0)}, Until: Time{time.Unix(5, 0)}}, "until"},
		{"respond nothing", &TaskRespondParams{ID: "t", QuestionID: "q"}, "optionId"},
		{"respond input", &TaskRespondParams{ID: "t", QuestionID: "q", OptionID: "allow", UpdatedInput: json.RawMessage(`[1]`)}, "updatedInput"},
		{"respond ok", &TaskRespondParams{ID: "t", QuestionID: "q", OptionID: "deny", Text: "use go test"}, ""},
		{"input empty", &TaskInputParams{ID: "t"}, "data"},
		{"input cr", &TaskInputParams{ID: "t", Data: "\r"}, ""},
		{"resize", &TaskResizeParams{ID: "t", Cols: 80, Rows: 0}, "rows"},
		{"output offset", &TaskOutputParams{ID: "t", Offset: -1}, "offset"},
		{"output limit", &TaskOutputParams{ID: "t", Limit: MaxOutputLimit + 1}, "limit"},
		{"reorder nothing", &TaskReorderParams{ID: "t"}, "priority"},
		{"reorder self", &TaskReorderParams{ID: "t", Before: "t"}, "before"},
		{"setMode missing", &TaskSetModeParams{ID: "t"}, "mode"},
		{"merge strategy", &TaskMergeParams{ID: "t", Strategy: "octopus"}, "strategy"},
		{"events seq", &TaskEventsParams{SinceSeq: -1}, "sinceSeq"},
		{"skills get", &SkillsGetParams{}, "name"},
		{"mcp check", &McpCheckParams{Servers: map[string]McpServer{"b": {Type: "grpc"}}}, "servers.b.type"},
		{"audit limit", &AuditListParams{Limit: -1}, "limit"},
		{"profiles", &ProfilesListParams{}, ""},
	} {
		err := tc.v.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != CodeInvalidParams {
			t.Errorf("%s: got %v, want -32602", tc.name, err)
			continue
		}
		if f := pe.Data.(*ErrorData).Field; f != tc.field {
			t.Errorf("%s: field %q (%s), want %q", tc.name, f, pe.Message, tc.field)
		}
		if !strings.HasSuffix(pe.Message, ".") {
			t.Errorf("%s: message %q is not a sentence", tc.name, pe.Message)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestTimeParam(t *testing.T) {
	var p TaskListParams
	if err := json.Unmarshal([]byte(`{"since":"2026-01-02T03:04:05+01:00"}`), &p); err != nil {
		t.Fatal(err)
	}
	if !p.Since.Equal(time.Date(2026, 1, 2, 2, 4, 5, 0, time.UTC)) || !p.Until.IsZero() {
		t.Errorf("since = %v, until = %v", p.Since, p.Until)
	}
	err := json.Unmarshal([]byte(`{"until":"tomorrow"}`), &p)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field != "until" {
		t.Errorf("bad time: %v, want an UnmarshalTypeError for until", err)
	}
	if strings.Contains(mustMarshal(t, TaskListParams{}), "since") {
		t.Error("zero since is marshalled")
	}
}

func mustMarshal(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		err  *Error
		code int
		data string
	}{
		{InvalidParams("a.b", "a.b is wrong."), CodeInvalidParams, `{"field":"a.b"}`},
		{NotFound("task", "t9"), CodeNotFound, `{"kind":"task","id":"t9"}`},
		{FailedPrecondition("Task t1 is running; cancel it first.", StatusRunning), CodeFailedPrecondition, `{"status":"running"}`},
		{Conflict("Merging t1 conflicts.", nil), CodeConflict, `{"files":[]}`},
		{Unavailable("claude is not installed."), CodeUnavailable, `null`},
		{ServerNotInitialized(), CodeServerNotInitialized, `null`},
	} {
		if tc.err.Code != tc.code || mustMarshal(t, tc.err.Data) != tc.data || tc.err.Error() != tc.err.Message {
			t.Errorf("%+v: want code %d data %s", tc.err, tc.code, tc.data)
		}
	}
	// Found through wrapping, as package jsonrpc does.
	var pe *Error
	if !errors.As(errors.Join(errors.New("ctx"), NotFound("task", "x")), &pe) || pe.Code != CodeNotFound {
		t.Error("errors.As does not find a wrapped *Error")
	}
}

func TestNewEvent(t *testing.T) {
	e, err := NewEvent(TaskOutputNotification{Seq: 7, ID: "t1", Data: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Seq != 7 || e.Method != NotifyTaskOutput || string(e.Params) != `{"seq":7,"id":"t1","data":"hi"}` {
		t.Errorf("event = %+v (%s)", e, e.Params)
	}
}

// TestEveryStatusHasTraits: each Status is named in the table of the
// predicates, and the predicates say what PROTOCOL.md says of each.
func TestEveryStatusHasTraits(t *testing.T) {
	for _, s := range Statuses {
		if _, ok := traitsOf[s]; !ok {
			t.Errorf("status %q has no row in traitsOf", s)
		}
	}
	if len(traitsOf) != len(Statuses) {
		t.Errorf("traitsOf has %d rows for %d statuses", len(traitsOf), len(Statuses))
	}
	type row struct{ live, finished, resumable, undoable, holds bool }
	want := map[Status]row{
		StatusQueued:    {false, false, false, false, true},
		StatusStarting:  {true, false, false, false, true},
		StatusRunning:   {true, false, false, false, true},
		StatusWaiting:   {true, false, false, false, true},
		StatusPaused:    {false, false, true, false, false},
		StatusMerging:   {false, true, false, true, false},
		StatusMerged:    {false, true, false, true, false},
		StatusBlocked:   {false, true, true, true, false},
		StatusCancelled: {false, true, false, true, false},
	}
	for s, w := range want {
		got := row{s.Live(), s.Finished(), s.Resumable(), s.Undoable(), s.HoldsWorktree()}
		if got != w {
			t.Errorf("%s: %+v, want %+v", s, got, w)
		}
	}
	if Status("nope").Live() || Status("nope").Finished() {
		t.Error("an unknown status is in a set")
	}
}

// Every status reads as words, and none by an internal name a person cannot
// read ("merging" is a task ready to merge).
func TestStatusWords(t *testing.T) {
	for _, st := range Statuses {
		if w := st.Words(); w == "" || w == string(StatusMerging) {
			t.Errorf("%s reads %q", st, w)
		}
	}
	if w := StatusMerging.Words(); w != "ready to merge" {
		t.Errorf("merging reads %q", w)
	}
}
