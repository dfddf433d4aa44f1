package acp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// No status reaches the person by its internal name ("merging" is a
// finished task whose work waits to be merged).
func TestStatusWords(t *testing.T) {
	for _, st := range protocol.Statuses {
		w := statusWords(st)
		if w == "" || strings.Contains(w, "merging") || w == "in an unknown state" {
			t.Errorf("%s → %q", st, w)
		}
	}
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	undo := commandDone("undo", &protocol.Task{Status: protocol.StatusMerging, Worktree: &protocol.Worktree{BaseRef: "main"}}, now)
	if undo != "The merge into main is undone; the task is ready to merge. familiar cannot undo pushes, nor changes made outside the worktree (other files, services, databases). The undone commit is kept under refs/familiar/undo/." {
		t.Errorf("/undo says %q", undo)
	}
	if m := commandDone("merge", &protocol.Task{Status: protocol.StatusMerged, Worktree: &protocol.Worktree{BaseRef: "main"}}, now); m != "Merged into main. Your next prompt starts a new task from there." {
		t.Errorf("/merge says %q", m)
	}
	// With familiar's undoableUntil, /merge says how long /undo holds.
	merged := &protocol.Task{Status: protocol.StatusMerged, Worktree: &protocol.Worktree{BaseRef: "main"}, UndoableUntil: now.Add(4*time.Minute + 59600*time.Millisecond)}
	if m := commandDone("merge", merged, now); !strings.HasSuffix(m, " /undo takes it back for 5 min 0 s more (until 10:04:59 UTC).") {
		t.Errorf("/merge with an undo window says %q", m)
	}
	if m := commandDone("merge", merged, now.Add(30*time.Second)); !strings.Contains(m, "for 4 min 30 s more") {
		t.Errorf("/merge 30 s later says %q", m)
	}
	if m := commandDone("merge", merged, now.Add(time.Hour)); strings.Contains(m, "/undo") {
		t.Errorf("/merge after the window says %q", m)
	}
}

// A server/message is a task's when familiar starts it "task <id>: ".
func TestMessageTask(t *testing.T) {
	for text, want := range map[string]string{
		"task t-1a: MCP server bad: command not found": "t-1a",
		"task t-1a changed files inside a submodule":   "",
		"The permission policy's default is allow":     "",
		"task : nothing": "",
	} {
		if got := messageTask(text); got != want {
			t.Errorf("messageTask(%q) = %q, want %q", text, got, want)
		}
	}
}

// /revoke takes the number /grants showed or the rule; anything else is
// refused in words.
func TestPickGrant(t *testing.T) {
	grants := []protocol.Grant{{Rule: "Bash(touch:*)", Scope: protocol.GrantTask, TaskID: "t1"}, {Rule: "Read", Scope: protocol.GrantUser}}
	if g, err := pickGrant(grants, "2"); err != nil || g.Rule != "Read" {
		t.Errorf("2: %+v %v", g, err)
	}
	if g, err := pickGrant(grants, " Bash(touch:*) "); err != nil || g.Scope != protocol.GrantTask {
		t.Errorf("rule: %+v %v", g, err)
	}
	for _, bad := range []string{"", "3", "0", "Edit"} {
		if _, err := pickGrant(grants, bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
	if txt := grantsText(grants); !strings.Contains(txt, "1. Bash(touch:*) — this task") || !strings.Contains(txt, "2. Read — all your repositories") {
		t.Errorf("grants text %q", txt)
	}
}

// Each allow-always option familiar offers becomes one of ACP's, named by
// the rule it grants; "deny" is Reject; reject-and-stop is familiar's own.
func TestPermissionOptions(t *testing.T) {
	q := protocol.Question{Options: []protocol.Option{
		{ID: "allow", Label: "Allow"},
		{ID: "allow_always", Label: "Allow always: Bash(npm test:*)", Rule: "Bash(npm test:*)"},
		{ID: "allow_always_exact", Label: "Allow always: Bash(npm test -- -u)", Rule: "Bash(npm test -- -u)"},
		{ID: "deny", Label: "Deny"},
		{ID: "mode_accept_edits", Label: "Accept edits"},
	}}
	b, _ := json.Marshal(permissionOptions(q))
	want := `[{"kind":"allow_once","name":"Allow once","optionId":"allow_once"},` +
		`{"kind":"allow_always","name":"Allow always in this task: Bash(npm test:*)","optionId":"allow_always"},` +
		`{"kind":"allow_always","name":"Allow always in this task: Bash(npm test -- -u)","optionId":"allow_always_exact"},` +
		`{"kind":"reject_once","name":"Reject","optionId":"reject_once"},` +
		`{"kind":"reject_always","name":"Reject, and stop this turn","optionId":"reject_always"}]`
	if string(b) != want {
		t.Errorf("options\n%s\nwant\n%s", b, want)
	}
	// No rule covers the call: familiar's label says so.
	q.Options = []protocol.Option{{ID: "allow_always", Label: "Allow (no rule can cover this call, so nothing is remembered)"}}
	opts := permissionOptions(q)
	if n := opts[1].(map[string]any)["name"]; n != q.Options[0].Label {
		t.Errorf("allow-always without a rule is named %q", n)
	}
}

// An edit's diff comes from its input, its path absolute in the worktree;
// the title shows the path relative to it.
func TestEditDiffs(t *testing.T) {
	wt := "/w/t"
	for _, tc := range []struct {
		tool, input, want string
	}{
		{"Edit", `{"file_path":"/w/t/a.go","old_string":"x","new_string":"y"}`, `[{"newText":"y","oldText":"x","path":"/w/t/a.go","type":"diff"}]`},
		{"Write", `{"file_path":"b.txt","content":"hi\n"}`, `[{"newText":"hi\n","path":"/w/t/b.txt","type":"diff"}]`},
		{"MultiEdit", `{"file_path":"/w/t/c","edits":[{"old_string":"1","new_string":"2"},{"old_string":"3","new_string":"4"}]}`,
			`[{"newText":"2","oldText":"1","path":"/w/t/c","type":"diff"},{"newText":"4","oldText":"3","path":"/w/t/c","type":"diff"}]`},
		{"Bash", `{"command":"ls"}`, `null`},
		{"Edit", `{"old_string":"x"}`, `null`},
		{"Edit", `not json`, `null`},
	} {
		b, _ := json.Marshal(editDiffs(protocol.Question{Tool: tc.tool, Input: json.RawMessage(tc.input)}, wt))
		if string(b) != tc.want {
			t.Errorf("%s %s → %s, want %s", tc.tool, tc.input, b, tc.want)
		}
	}
	if got := relTitle("Edit /w/t/src/a.go", wt+"/"); got != "Edit src/a.go" {
		t.Errorf("title %q", got)
	}
	if got := relTitle("Edit /elsewhere/a.go", wt); got != "Edit /elsewhere/a.go" {
		t.Errorf("title outside the worktree %q", got)
	}
}

func TestPlainName(t *testing.T) {
	for id, want := range map[string]bool{"acp-1f": true, "": false, "../x": false, ".hidden": false, `a\b`: false, "a/b": false} {
		if plainName(id) != want {
			t.Errorf("plainName(%q) = %v", id, !want)
		}
	}
}

// The model's current value is always one of its options, also for a task
// another client created with a model's full name.
func TestModelOptionHoldsTheCurrentValue(t *testing.T) {
	for _, model := range []string{modelDefault, "opus", "claude-opus-5-5"} {
		s := &session{a: &Agent{}, mode: "executor", model: model}
		var found bool
		for _, o := range s.configOptions() {
			opt := o.(map[string]any)
			if opt["id"] != "model" {
				continue
			}
			if opt["currentValue"] != model {
				t.Errorf("currentValue %v, want %s", opt["currentValue"], model)
			}
			for _, v := range opt["options"].([]any) {
				found = found || v.(map[string]any)["value"] == model
			}
		}
		if !found {
			t.Errorf("model %s is not among the options", model)
		}
	}
	s := &session{a: &Agent{}, mode: "executor", model: modelDefault, taskID: "t1"}
	if err := s.setModel("opus"); err == nil || !strings.Contains(err.Error(), "claude's default model") {
		t.Errorf("a model change once the task runs: %v", err)
	}
	if err := s.setModel(modelDefault); err != nil {
		t.Errorf("setting the model it has: %v", err)
	}
}

// /diff says the task's conflict forecast: the base and other tasks by name,
// conflicts before overlaps; nothing when there is none.
func TestForecastWords(t *testing.T) {
	if w := forecastWords(nil, nil); w != "" {
		t.Errorf("no forecast says %q", w)
	}
	w := forecastWords([]protocol.TaskConflict{{With: "base", Files: []string{"a.go"}}, {With: "t1", Files: []string{"b.go", "c.go"}}},
		[]protocol.TaskConflict{{With: "t2", Files: []string{"d.go"}}})
	want := "This task's changes would conflict with the base branch in a.go; with task t1 in b.go, c.go. They overlap (and still merge cleanly) with task t2 in d.go."
	if w != want {
		t.Errorf("forecastWords = %q\nwant %q", w, want)
	}
}

// The skills option's value as task/create's skills: absent for the
// profile's defaults (and a loaded task's), [] for none, every skill, one.
func TestTaskSkills(t *testing.T) {
	s := &session{skillList: []protocol.Skill{{Name: "a"}, {Name: "b"}}}
	for v, want := range map[string][]string{skillsDefault: nil, skillsStarted: nil, skillsNone: {}, skillsAll: {"a", "b"}, "b": {"b"}} {
		got := s.taskSkills(v)
		if (got == nil) != (want == nil) || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %#v, want %#v", v, got, want)
		}
	}
	if err := s.setSkills("c"); err == nil || !strings.Contains(err.Error(), "a, b") {
		t.Errorf("an unknown skill: %v", err)
	}
}

// A resumed session shows no history: a call its task had ended when
// task/get answered is not sent again when its late notification comes
// (TestACPSessionLifecycle in CI: the interrupted call's end came after
// session/resume), but a later change to one still open is.
func TestSettledBefore(t *testing.T) {
	settled := settledFrom([]protocol.ToolCall{
		{ID: "done", Status: "completed"}, {ID: "cut", Status: "failed"}, {ID: "open", Status: "pending"}, {ID: "run", Status: "running"},
	})
	for _, c := range []struct {
		tc   protocol.ToolCall
		want bool
	}{
		{protocol.ToolCall{ID: "cut", Status: "failed"}, true},
		{protocol.ToolCall{ID: "done", Status: "completed"}, true},
		{protocol.ToolCall{ID: "open", Status: "failed"}, false},
		{protocol.ToolCall{ID: "run", Status: "completed"}, false},
		{protocol.ToolCall{ID: "new", Status: "pending"}, false},
	} {
		if got := settledBefore(settled, c.tc); got != c.want {
			t.Errorf("settledBefore(%s %s) = %v, want %v", c.tc.ID, c.tc.Status, got, c.want)
		}
	}
	if settledBefore(nil, protocol.ToolCall{ID: "cut", Status: "failed"}) {
		t.Error("a session not resumed has nothing settled")
	}
}

// An edit's permission names its file, so the editor can show it (issue 37).
func TestQuestionFiles(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  []string
	}{
		{`{"file_path":"/w/t/src/a.go","old_string":"a"}`, []string{"/w/t/src/a.go"}},
		{`{"file_path":"src/a.go"}`, []string{"/w/t/src/a.go"}},
		{`{"notebook_path":"n.ipynb"}`, []string{"/w/t/n.ipynb"}},
		{`{"command":"ls"}`, nil},
		{`"nope"`, nil},
	} {
		got := questionFiles(protocol.Question{Tool: "Edit", Input: json.RawMessage(tc.input)}, "/w/t")
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("questionFiles(%s) = %q, want %q", tc.input, got, tc.want)
		}
	}
}

// A task familiar stopped after claude's own error message says the error
// once (issue 37: an API failing every time said it twice at the end).
func TestBlockedWordsSayTheErrorOnce(t *testing.T) {
	boom := "API Error: 500 fake boom. This is a server-side issue."
	for _, tc := range []struct {
		b    protocol.Blocked
		said string
		want string
	}{
		{protocol.Blocked{Reason: protocol.BlockedAPIError, Detail: boom + " (claude gave up after 3 retries)"}, "familiar: retrying\n" + boom,
			"familiar stopped this task (api_error): claude gave up after 3 retries, with the error above."},
		{protocol.Blocked{Reason: protocol.BlockedAPIError, Detail: boom}, boom,
			"familiar stopped this task (api_error): the error above."},
		// Nothing said before it: the whole detail.
		{protocol.Blocked{Reason: protocol.BlockedAPIError, Detail: boom + " (claude gave up after 3 retries)"}, "",
			"familiar stopped this task (api_error): " + boom + " (claude gave up after 3 retries)"},
		{protocol.Blocked{Reason: protocol.BlockedTimeout, Detail: "no progress for 10 min"}, "working on it",
			"familiar stopped this task (timeout): no progress for 10 min"},
	} {
		if got := blockedWords(tc.b, tc.said); got != tc.want {
			t.Errorf("%+v after %q:\n got %q\nwant %q", tc.b, tc.said, got, tc.want)
		}
	}
}

// A refused login's auth_required names the fix that fits how claude logs
// in (issue 37 item 4): a refused key is replaced, not set; a claude.ai
// login is logged into again; no login at all is made.
func TestAuthWordsFitTheLogin(t *testing.T) {
	detail := "the model API refused the credentials (HTTP 401: authentication_failed); " + "run `claude auth login` (or /login inside claude), or set ANTHROPIC_API_KEY"
	for _, tc := range []struct {
		auth      *protocol.AuthStatus
		want, not []string
	}{
		{&protocol.AuthStatus{Method: "api_key", Source: "ANTHROPIC_API_KEY"},
			[]string{"HTTP 401", "refused the key in ANTHROPIC_API_KEY", "replace it"}, []string{"set ANTHROPIC_API_KEY", "retrying"}},
		{&protocol.AuthStatus{Method: "claude_login", Source: "~/.claude/.credentials.json"},
			[]string{"claude.ai login was refused or has expired", "claude auth login"}, []string{"ANTHROPIC_API_KEY"}},
		{&protocol.AuthStatus{Method: "oauth_token", Source: "CLAUDE_CODE_OAUTH_TOKEN"},
			[]string{"CLAUDE_CODE_OAUTH_TOKEN", "claude setup-token"}, []string{"set ANTHROPIC_API_KEY"}},
		{&protocol.AuthStatus{Method: "api_key_helper", Source: "settings.json"},
			[]string{"apiKeyHelper in settings.json", "fix the helper"}, []string{"set ANTHROPIC_API_KEY"}},
		{&protocol.AuthStatus{Method: "none"}, []string{"not logged in", "claude auth login"}, nil},
		{nil, []string{"not logged in"}, nil}, // an older familiar says nothing of its login
	} {
		s := &session{f: &familiar{claudeAuth: tc.auth}}
		got := s.authWords(detail)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%+v: %q lacks %q", tc.auth, got, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("%+v: %q says %q", tc.auth, got, w)
			}
		}
		if strings.Count(got, "claude auth login") > 1 {
			t.Errorf("%+v: %q names the fix twice", tc.auth, got)
		}
	}
}
