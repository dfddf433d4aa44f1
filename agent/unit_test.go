package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/procs"
)

func fakeCLI(t *testing.T, version string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\necho '" + version + " (Claude Code)'\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFindCLI(t *testing.T) {
	ctx := context.Background()
	t.Run("newer than tested: runs with a warning", func(t *testing.T) {
		c, err := FindCLI(ctx, fakeCLI(t, "2.1.333"), "")
		if err != nil || c.Version != "2.1.333" || c.Support != SupportNewerUntested ||
			!strings.Contains(c.Warning, "2.1.333") || !strings.Contains(c.Warning, NewestTested) {
			t.Fatalf("FindCLI = %+v, %v", c, err)
		}
	})
	for _, v := range TestedVersions {
		t.Run("tested "+v, func(t *testing.T) {
			c, err := FindCLI(ctx, fakeCLI(t, v), "")
			if err != nil || c.Support != SupportSupported || c.Warning != "" {
				t.Fatalf("FindCLI = %+v, %v", c, err)
			}
		})
	}
	t.Run("too old: refused, naming the oldest supported", func(t *testing.T) {
		c, err := FindCLI(ctx, fakeCLI(t, "2.1.199"), "")
		if !errors.Is(err, ErrCLIUnavailable) || !strings.Contains(err.Error(), "older than the oldest supported "+MinVersion) ||
			c.Support != SupportTooOld {
			t.Fatalf("FindCLI = %+v, err = %v", c, err)
		}
	})
	t.Run("configured path missing", func(t *testing.T) {
		_, err := FindCLI(ctx, "/nonexistent/claude", "")
		if !errors.Is(err, ErrCLIUnavailable) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("not on PATH", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := FindCLI(ctx, "", t.TempDir())
		if !errors.Is(err, ErrCLIUnavailable) || !strings.Contains(err.Error(), "npm install") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("tools dir", func(t *testing.T) {
		tools := t.TempDir()
		bin := filepath.Join(tools, "node_modules", ".bin")
		os.MkdirAll(bin, 0o755)
		os.Rename(fakeCLI(t, "2.1.330"), filepath.Join(bin, "claude"))
		c, err := FindCLI(ctx, "", tools)
		if err != nil || c.Path != filepath.Join(bin, "claude") {
			t.Fatalf("FindCLI = %+v, %v", c, err)
		}
	})
}

func TestSeedConfigDirKeepsStateAndApprovesKeyTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude.json")
	os.WriteFile(path, []byte(`{"numStartups":7,"projects":{"/other":{"x":1}}}`), 0o600)
	key := "sk-ant-0123456789abcdefghijklmnopqrstuvwxyz"
	if err := SeedConfigDir(dir, "/repo", key); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Onboarded bool           `json:"hasCompletedOnboarding"`
		Startups  int            `json:"numStartups"`
		Projects  map[string]any `json:"projects"`
		Keys      struct {
			Approved []string `json:"approved"`
		} `json:"customApiKeyResponses"`
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Onboarded || doc.Startups != 7 || doc.Projects["/other"] == nil || doc.Projects["/repo"] == nil {
		t.Errorf("seeded doc = %s", b)
	}
	if len(doc.Keys.Approved) != 1 || doc.Keys.Approved[0] != key[len(key)-20:] {
		t.Errorf("approved = %v", doc.Keys.Approved)
	}
	if bytes.Contains(b, []byte(key)) {
		t.Error("the whole key was written")
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v", fi.Mode())
	}
}

func TestSessionEnvScrubsParentSession(t *testing.T) {
	env := SessionEnv([]string{
		"PATH=/bin", "CLAUDECODE=1", "CLAUDE_CODE_SESSION_ID=x", "CLAUDE_CODE_ENTRYPOINT=cli",
		"CLAUDE_CODE_MAX_RETRIES=2", "ANTHROPIC_API_KEY=k", "HTTPS_PROXY=http://p", "CLAUDE_CONFIG_DIR=/home/u/.claude",
		// A background job of Claude Code's own (claude --bg).
		"CLAUDE_JOB_DIR=/home/u/.claude/jobs/j1", "CLAUDE_CODE_SESSION_KIND=bg", "CLAUDE_BG_ISOLATION=worktree",
		"CLAUDE_BG_SESSION_PERMISSION_RULES=[]", "CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS=s1",
	}, "/cfg", map[string]string{"TERM": "xterm-256color"})
	got := strings.Join(env, " ")
	// The user's own config dir is not the session's (its credential store
	// may still be: CLAUDE_SECURESTORAGE_CONFIG_DIR, see auth.go).
	for _, gone := range []string{"CLAUDECODE=", "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CONFIG_DIR=/home/u/.claude",
		"CLAUDE_JOB_DIR", "CLAUDE_CODE_SESSION_KIND", "CLAUDE_BG_", "CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS"} {
		if strings.Contains(got, gone) {
			t.Errorf("%s not scrubbed: %s", gone, got)
		}
	}
	for _, kept := range []string{"PATH=/bin", "CLAUDE_CODE_MAX_RETRIES=2", "ANTHROPIC_API_KEY=k", "HTTPS_PROXY=http://p", "CLAUDE_CONFIG_DIR=/cfg", "TERM=xterm-256color",
		// The session's state is familiar's; its login is the user's own.
		"CLAUDE_SECURESTORAGE_CONFIG_DIR=/home/u/.claude"} {
		if !strings.Contains(got, kept) {
			t.Errorf("%s missing: %s", kept, got)
		}
	}
}

func TestHookServerRejectsCallsWithoutTheSecret(t *testing.T) {
	h, err := NewHookServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	called := false
	url, secret, unregister := h.Register(func(ctx context.Context, event string, payload json.RawMessage) any {
		called = true
		return map[string]string{"ok": event}
	})
	body := `{"hook_event_name":"Stop"}`
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"no secret", "", http.StatusUnauthorized},
		{"wrong secret", "Bearer nope", http.StatusUnauthorized},
		{"right secret", "Bearer " + secret, http.StatusOK},
	} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	if !called {
		t.Error("the authorised call did not reach the handler")
	}
	unregister()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after unregister: status %d", resp.StatusCode)
	}
}

func TestProseReply(t *testing.T) {
	q := Question{Kind: KindQuestion, Options: []Option{{ID: "1", Label: "Use Postgres"}, {ID: "2", Label: "Use SQLite"}}, AllowText: true}
	for _, tc := range []struct {
		a    Answer
		want string
	}{
		{Answer{OptionID: "2"}, "Use SQLite"},
		{Answer{Text: "neither"}, "neither"},
		{Answer{OptionID: "1", Text: "with pgx"}, "Use Postgres\n\nwith pgx"},
	} {
		if got := proseReply(q, tc.a); got != tc.want {
			t.Errorf("proseReply(%+v) = %q, want %q", tc.a, got, tc.want)
		}
	}
}

func TestValidateAnswer(t *testing.T) {
	perm := Question{Kind: KindPermission, Options: permissionOptions(), AllowText: true}
	choice := Question{Kind: KindChoice, Options: []Option{{ID: "1"}, {ID: "2"}}}
	multi := Question{Kind: KindChoice, Options: []Option{{ID: "1"}, {ID: "2"}, {ID: "3"}}, MultiSelect: true}
	for _, tc := range []struct {
		q    Question
		a    Answer
		okay bool
	}{
		{perm, Answer{OptionID: "allow"}, true},
		{perm, Answer{OptionID: "deny", Text: "no"}, true},
		{perm, Answer{OptionID: "maybe"}, false},
		{perm, Answer{}, false},
		{perm, Answer{OptionID: "allow", UpdatedInput: json.RawMessage(`{"command":"ls"}`)}, true},
		{perm, Answer{OptionID: "allow", UpdatedInput: json.RawMessage(`{`)}, false},
		{choice, Answer{OptionID: "2"}, true},
		{choice, Answer{Text: "free"}, false},
		{choice, Answer{OptionID: "1", UpdatedInput: json.RawMessage(`{}`)}, false},
		{choice, Answer{OptionID: "1,2"}, false}, // one option only
		{multi, Answer{OptionID: "1,3"}, true},
		{multi, Answer{OptionID: "2"}, true},
		{multi, Answer{OptionID: "1,4"}, false},
		{multi, Answer{OptionID: "1,"}, false},
	} {
		err := validate(tc.q, tc.a)
		if (err == nil) != tc.okay {
			t.Errorf("validate(%s, %+v) = %v", tc.q.Kind, tc.a, err)
		}
	}
}

func TestAllowAlwaysGrantsTheNamedRuleOnly(t *testing.T) {
	s := &Session{opts: Options{Dir: "/w/task"}}
	sugg := json.RawMessage(`[{"type":"setMode","mode":"acceptEdits","destination":"session"}]`)
	for _, tc := range []struct {
		tool, input, option, want string
	}{
		// Issue 37: claude matches a prefix rule by prefix, risky flags
		// included, so a prefix grant stays familiar's (claude asks again,
		// familiar's policy allows); exact commands and single files are
		// handed to claude.
		{"Bash", `{"command":"npm test"}`, OptionAllowAlways, `null`},
		{"Bash", `{"command":"npm test"}`, OptionAllowAlwaysExact, `[{"behavior":"allow","destination":"session","rules":[{"ruleContent":"npm test","toolName":"Bash"}],"type":"addRules"}]`},
		{"Bash", `{"command":"touch a.txt"}`, OptionAllowAlways, `[{"behavior":"allow","destination":"session","rules":[{"ruleContent":"touch a.txt","toolName":"Bash"}],"type":"addRules"}]`},
		{"Write", `{"file_path":"/w/task/src/a.go"}`, OptionAllowAlways, `null`},
		{"Write", `{"file_path":"/w/task/src/a.go"}`, OptionAllowAlwaysExact, `[{"behavior":"allow","destination":"session","rules":[{"ruleContent":"./src/a.go","toolName":"Edit"}],"type":"addRules"}]`},
		{"Write", `{"file_path":"/w/task/src/a.go"}`, OptionAcceptEdits, `[{"destination":"session","mode":"acceptEdits","type":"setMode"}]`},
		{"Write", `{"file_path":"/w/task/src/a.go"}`, OptionAllow, `null`},
	} {
		p := &pendingQuestion{q: Question{Kind: KindPermission, Options: s.permissionOptions(tc.tool, json.RawMessage(tc.input))}, tool: tc.tool, input: json.RawMessage(tc.input)}
		if err := validate(p.q, Answer{OptionID: tc.option}); err != nil {
			t.Errorf("%s %s: %v (options %+v)", tc.tool, tc.option, err, p.q.Options)
			continue
		}
		d := permissionDecision(p, Answer{OptionID: tc.option}, sugg)
		b, _ := json.Marshal(d["updatedPermissions"])
		if string(b) != tc.want {
			t.Errorf("%s %s %s: updatedPermissions = %s, want %s", tc.tool, tc.input, tc.option, b, tc.want)
		}
	}
	// Every label of an allow-always names its rule.
	for _, o := range s.permissionOptions("Bash", json.RawMessage(`{"command":"npm test"}`)) {
		if o.Rule != "" && !strings.HasSuffix(o.Label, o.Rule) {
			t.Errorf("option %+v does not name its rule", o)
		}
	}
}

// A question or a command pauses the no-progress watchdog; a claude stopped
// by a signal is excused by neither (issue 22), and once continued the
// pause holds again.
func TestStoppedClaudeIsNotExcused(t *testing.T) {
	clk := clock.NewFake(time.Now())
	fired := make(chan struct{}, 1)
	w := procs.NewWatchdog(clk, 10*time.Second, func() { fired <- struct{}{} })
	defer w.Stop()
	var g progressGate
	one, zero, running := 1, 0, true
	g.set(w, &one, nil) // a question waits on a person
	if clk.Pending() != 0 {
		t.Fatal("a question did not pause the watchdog")
	}
	g.setStopped(w, true)
	if clk.Pending() != 1 {
		t.Fatal("a stopped claude is excused by the question")
	}
	clk.Advance(10 * time.Second)
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the watchdog did not fire for a stopped claude")
	}
	g.setStopped(w, false)
	if clk.Pending() != 0 {
		t.Fatal("continued, the question no longer pauses the watchdog")
	}
	g.set(w, &zero, &running) // the question answered, a command runs
	g.setStopped(w, true)
	if clk.Pending() != 1 {
		t.Fatal("a stopped claude is excused by the command")
	}
}

// TestStartCalledOffIsNotTransient: a start whose context is done spawns
// nothing and says it is not worth retrying, by its type.
func TestStartCalledOffIsNotTransient(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Start(ctx, Options{})
	var se *StartError
	if !errors.As(err, &se) || se.Transient || !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a done context: %#v", err)
	}
	if !strings.HasPrefix(err.Error(), "start claude: ") {
		t.Errorf("message %q", err)
	}
}

// The startup refusals as claude 2.1.332 writes them: on stderr (-p) or its
// terminal, where escape sequences and line ends cut them up.
func TestStartupRefusal(t *testing.T) {
	sideload := "--mcp-config is disabled by your organization's managed settings (disableSideloadFlags). Plugins, custom agents, " +
		"and MCP servers can only be loaded from sources your administrator has approved. Ask your administrator to remove " +
		"disableSideloadFlags from managed settings, or use an approved marketplace / settings file instead.\n"
	held := "Error: That session is running in the background (j-4f2a). Run `claude attach j-4f2a` to open it, " +
		"or `claude stop j-4f2a` first to resume it here. Add --fork-session to branch off a copy instead.\n"
	for _, tc := range []struct {
		name, out, reason, starts string
	}{
		{"sideload on stderr", sideload, RefusalSideload, "--mcp-config is disabled"},
		{"sideload on a terminal", "\x1b[?25l\x1b[31m--mcp-config is disabled by your\r\n organization's managed settings\x1b[39m (disableSideloadFlags). Ask your administrator.\r\n",
			RefusalSideload, "--mcp-config is disabled"},
		{"held by the background daemon", "some output\n" + held, RefusalSessionHeld, "Error: That session is running"},
		{"anything else", "Error: something else broke\n", "", ""},
		{"the words alone are not a refusal", "we discussed running in the background\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startupRefusal(tc.out)
			if tc.reason == "" {
				if r != nil {
					t.Fatalf("refusal %+v", r)
				}
				return
			}
			if r == nil || r.Reason != tc.reason || !strings.HasPrefix(r.Message, tc.starts) || strings.ContainsAny(r.Message, "\x1b\r\n") || r.Fix() == "" {
				t.Fatalf("refusal %+v", r)
			}
		})
	}
}
