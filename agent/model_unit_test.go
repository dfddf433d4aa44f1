package agent

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/procs"
)

func TestParseResetTime(t *testing.T) {
	utc := time.UTC
	now := time.Date(2026, 11, 23, 17, 40, 10, 0, utc)
	for _, tc := range []struct {
		msg  string
		want time.Time
	}{
		// The CLI shows the minute: the end of it is the first sure time.
		{"You've hit your 5-hour limit · resets 7:33pm (UTC)", time.Date(2026, 11, 23, 19, 34, 0, 0, utc)},
		{"You've hit your 5-hour limit · resets 5:40pm (UTC)", time.Date(2026, 11, 23, 17, 41, 0, 0, utc)},
		// Earlier in the day: tomorrow.
		{"You've hit your limit · resets 9am (UTC)", time.Date(2026, 11, 24, 9, 1, 0, 0, utc)},
		{"resets 12am (UTC)", time.Date(2026, 11, 24, 0, 1, 0, 0, utc)},
		{"resets 12:15pm (UTC)", time.Date(2026, 11, 24, 12, 16, 0, 0, utc)},
		// With a date (testdata usage-limit).
		{"You've hit your 5-hour limit · resets Nov 25, 7:33pm (UTC)", time.Date(2026, 11, 25, 19, 34, 0, 0, utc)},
		{"Claude AI usage limit reached|1795462425", time.Unix(1795462425, 0)},
	} {
		got, ok := ParseResetTime(tc.msg, now)
		if !ok || !got.Equal(tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.msg, got, ok, tc.want)
		}
	}
	if _, ok := ParseResetTime("API Error: 529 overloaded", now); ok {
		t.Error("a reset time read from a message without one")
	}
	paris, err := time.LoadLocation("Europe/Paris")
	if err == nil {
		got, _ := ParseResetTime("resets 8pm (Europe/Paris)", now)
		if want := time.Date(2026, 11, 23, 20, 1, 0, 0, paris); !got.Equal(want) {
			t.Errorf("paris: %v, want %v", got, want)
		}
	}
}

func TestParseRetryLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want APIRetry
		sum  string
	}{
		{"API error · retrying in 1s · attempt 1/10", APIRetry{Attempt: 1, MaxAttempts: 10, Message: "API error"},
			"model error, retrying (1 of 10)"},
		{"Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED) · retrying in 4s · attempt 4/10",
			APIRetry{Attempt: 4, MaxAttempts: 10, Message: "Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"},
			"model API unreachable, retrying (4 of 10): Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"},
		{"529 Overloaded · retrying in 12s · attempt 6/10", APIRetry{Attempt: 6, MaxAttempts: 10, Status: 529, Message: "529 Overloaded"},
			"model error 529, retrying (6 of 10): Overloaded"},
		// What stream-json says of a refused connection: error "unknown",
		// no status (the driver drops the "unknown").
		{"", APIRetry{Attempt: 1, MaxAttempts: 2}, "model API unreachable, retrying (1 of 2)"},
		// The screen: the status and the count from the line.
		{"500 boom · retrying in 21s · attempt 10/10", APIRetry{Attempt: 10, MaxAttempts: 10, Status: 500, Message: "500 boom"},
			"model error 500, retrying (10 of 10): boom"},
	} {
		got, ok := parseRetryLine(tc.line)
		if tc.line == "" {
			got, ok = tc.want, true
		}
		if !ok || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.line, got, ok, tc.want)
		}
		if got.Summary() != tc.sum {
			t.Errorf("summary %q, want %q", got.Summary(), tc.sum)
		}
	}
	// The lines as the TUI draws them, on every recorded version (a
	// version without its own recording of a screen shows the nearest
	// newer one's): the status from the third retry on; a refused login
	// among them; an unreachable API in the words of each version (up to
	// 2.1.300 the line says "Retrying", which familiar did not read: the
	// task stayed "thinking" through claude's ten retries, issue 37).
	versions, err := os.ReadDir(filepath.Join("screen", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		for _, tc := range []struct {
			file   string
			status int
			auth   bool
			sum    string
		}{
			{"api-retry-status", 500, false, "model error 500, retrying (3 of 3): fake boom"},
			{"api-retry-401", 401, true, "model error 401, retrying (3 of 3): fake invalid x-api-key"},
			{"api-retry", 0, false, "model error, retrying ("},
			{"api-retry-unreachable", 0, false, "model API unreachable, retrying (3 of 10): "},
		} {
			b, err := os.ReadFile(filepath.Join("screen", "testdata", v.Name(), tc.file+".txt"))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			var r APIRetry
			var ok bool
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(strings.ToLower(l), "retrying in") {
					_, text, _ := strings.Cut(strings.TrimSpace(l), " ") // the spinner's glyph
					r, ok = parseRetryLine(text)
				}
			}
			if !ok || r.Status != tc.status || r.Auth() != tc.auth || r.Attempt == 0 || !strings.HasPrefix(r.Summary(), tc.sum) {
				t.Errorf("%s/%s: %+v %v (auth %v) %q", v.Name(), tc.file, r, ok, r.Auth(), r.Summary())
			}
		}
	}
	if _, ok := parseRetryLine("✻ Ruminating…"); ok {
		t.Error("a spinner read as a retry")
	}
}

func TestClassifyFailure(t *testing.T) {
	for _, tc := range []struct {
		status         int
		apiErr, errFld string
		msg            string
		want           string
	}{
		{429, "usage_limit_reached", "rate_limit", "You've hit your 5-hour limit · resets 7:33pm (UTC)", FailureUsageLimit},
		{0, "", "", "You've hit your 5-hour limit · resets 7:33pm (UTC)", FailureUsageLimit},
		{401, "", "", "Invalid API key · Fix external API key", FailureAuth},
		{0, "", "", "Not logged in · Please run /login", FailureAuth},
		{0, "", "authentication_failed", "x", FailureAuth},
		{403, "", "", "API Error: 403 forbidden", FailureAuth},
		{529, "", "", "API Error: 529 overloaded", FailureAPI},
		{429, "", "rate_limit", "API Error: 429 rate limited", FailureAPI},
		{0, "", "", "API Error: Connection refused", FailureAPI},
	} {
		if got := classifyFailure(tc.status, tc.apiErr, tc.errFld, tc.msg); got != tc.want {
			t.Errorf("%d %q %q %q: %s, want %s", tc.status, tc.apiErr, tc.errFld, tc.msg, got, tc.want)
		}
	}
}

// A usage-limit failure as the CLI 2.1.330 writes it into the transcript
// (captured from the real CLI, ids shortened).
const usageLimitLine = `{"parentUuid":"bd62","isSidechain":false,"type":"assistant","uuid":"d9ba","timestamp":"2026-11-23T17:33:57.140Z","message":{"id":"3063","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0},"content":[{"type":"text","text":"You've hit your 5-hour limit · resets 7:33pm (UTC)"}]},"apiError":"usage_limit_reached","apiErrorParams":{"rate_limit_info":{"status":"rejected","resetsAt":1795462425,"rateLimitType":"five_hour","isUsingOverage":false}},"error":"rate_limit","isApiErrorMessage":true,"apiErrorStatus":429,"apiErrorType":"rate_limit_error","sessionId":"1e76","version":"2.1.330"}`

func TestLastAPIError(t *testing.T) {
	dir := t.TempDir()
	write := func(lines ...string) string {
		p := filepath.Join(dir, "t.jsonl")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	user := `{"type":"user","message":{"role":"user","content":"go"}}`
	ok := `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}`
	f := LastAPIError(write(user, usageLimitLine, `{"type":"system","subtype":"x"}`))
	if f == nil || f.Kind != FailureUsageLimit || f.Status != 429 || !f.ResetsAt.Equal(time.Unix(1795462425, 0)) || !strings.Contains(f.Message, "5-hour") {
		t.Errorf("usage limit: %+v", f)
	}
	if f := LastAPIError(write(user, ok)); f != nil {
		t.Errorf("a good turn read as %+v", f)
	}
	// The failure of this turn is not written yet: an older one is not it.
	if f := LastAPIError(write(usageLimitLine, user)); f != nil {
		t.Errorf("an earlier turn's failure read as this one's: %+v", f)
	}
	gaveUp := `{"type":"assistant","isApiErrorMessage":true,"message":{"content":[{"type":"text","text":"API Error: 529 fake overloaded. This is a server-side issue"}]}}`
	if f := LastAPIError(write(user, gaveUp)); f == nil || f.Kind != FailureAPI || f.Status != 529 {
		t.Errorf("gave up: %+v", f)
	}
	if f := LastAPIError(filepath.Join(dir, "missing.jsonl")); f != nil {
		t.Errorf("missing file: %+v", f)
	}
}

func TestDetectAuthOrder(t *testing.T) {
	home := t.TempDir()
	base := []string{"PATH=/bin", "HOME=" + home}
	now := time.Now()
	with := func(kv ...string) []string { return append(append([]string(nil), base...), kv...) }
	for _, tc := range []struct {
		env    []string
		method string
	}{
		{with("CLAUDE_CODE_USE_BEDROCK=1", "ANTHROPIC_API_KEY=k"), AuthBedrock},
		{with("CLAUDE_CODE_USE_VERTEX=1"), AuthVertex},
		{with("CLAUDE_CODE_USE_BEDROCK=0", "ANTHROPIC_API_KEY=k"), AuthAPIKey},
		{with("ANTHROPIC_AUTH_TOKEN=t", "ANTHROPIC_API_KEY=k"), AuthToken},
		{with("ANTHROPIC_API_KEY=k", "CLAUDE_CODE_OAUTH_TOKEN=o"), AuthAPIKey},
		{with("CLAUDE_CODE_OAUTH_TOKEN=o"), AuthOAuthToken},
		{base, AuthNone},
	} {
		a := DetectAuth(tc.env, now)
		if a.Method != tc.method {
			t.Errorf("%v: %+v, want %s", tc.env, a, tc.method)
		}
		for _, kv := range tc.env {
			if _, v, _ := strings.Cut(kv, "="); len(v) > 2 && strings.Contains(a.String(), v) && !strings.HasPrefix(v, "/") {
				t.Errorf("the secret %q is in %q", v, a)
			}
		}
	}
	if a := DetectAuth(base, now); !strings.Contains(a.Problem, AuthFix) {
		t.Errorf("no login: %+v", a)
	}
	// apiKeyHelper in the user's settings comes before a claude.ai login.
	dir := filepath.Join(home, ".claude")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, ".credentials.json"), []byte(`{"claudeAiOauth":{"accessToken":"a","refreshToken":"r","expiresAt":1}}`), 0o600)
	if a := DetectAuth(base, now); a.Method != AuthLogin || a.Problem != "" {
		t.Errorf("refreshable login: %+v", a)
	}
	os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"apiKeyHelper":"~/bin/key"}`), 0o600)
	if a := DetectAuth(base, now); a.Method != AuthAPIKeyHelper {
		t.Errorf("helper: %+v", a)
	}
	// A custom CLAUDE_CONFIG_DIR is where the user's login is.
	custom := t.TempDir()
	os.WriteFile(filepath.Join(custom, ".credentials.json"), []byte(`{"claudeAiOauth":{"accessToken":"a","expiresAt":1}}`), 0o600)
	a := DetectAuth(append(base, "CLAUDE_CONFIG_DIR="+custom), now)
	if a.Method != AuthLogin || !strings.Contains(a.Problem, "expired") || a.Source != filepath.Join(custom, ".credentials.json") {
		t.Errorf("custom dir, expired without refresh: %+v", a)
	}
}

func TestLayerUserConfig(t *testing.T) {
	user := t.TempDir()
	mustWrite := func(p, s string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(filepath.Join(user, "settings.json"), `{"model":"opus"}`)
	mustWrite(filepath.Join(user, "CLAUDE.md"), "mine")
	mustWrite(filepath.Join(user, "agents", "a.md"), "agent")
	mustWrite(filepath.Join(user, "skills", "shared", "SKILL.md"), "user version")
	mustWrite(filepath.Join(user, "skills", "only-user", "SKILL.md"), "user only")
	cfg := t.TempDir()
	// A task skill of the same name, installed before (orchestrator).
	mustWrite(filepath.Join(cfg, "skills", "shared", "SKILL.md"), "task version")
	u := UserConfig{Dir: user}
	for range 2 { // idempotent: every start layers again
		if err := layerUserConfig(cfg, u); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(cfg, p)); return string(b) }
	if read("settings.json") != `{"model":"opus"}` || read("CLAUDE.md") != "mine" || read("agents/a.md") != "agent" {
		t.Errorf("layered: settings %q CLAUDE.md %q agent %q", read("settings.json"), read("CLAUDE.md"), read("agents/a.md"))
	}
	if read("skills/shared/SKILL.md") != "task version" || read("skills/only-user/SKILL.md") != "user only" {
		t.Errorf("skills: %q %q", read("skills/shared/SKILL.md"), read("skills/only-user/SKILL.md"))
	}
	// settings.json is a copy: what claude writes there stays familiar's.
	if fi, _ := os.Lstat(filepath.Join(cfg, "settings.json")); fi.Mode()&os.ModeSymlink != 0 {
		t.Error("settings.json is a link to the user's")
	}
	os.WriteFile(filepath.Join(cfg, "settings.json"), []byte(`{"written":"by claude"}`), 0o600)
	if b, _ := os.ReadFile(filepath.Join(user, "settings.json")); string(b) != `{"model":"opus"}` {
		t.Errorf("the user's settings changed: %s", b)
	}
	// A user file removed later goes away from the layer too.
	os.Remove(filepath.Join(user, "CLAUDE.md"))
	if err := layerUserConfig(cfg, u); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(cfg, "CLAUDE.md")); err == nil {
		t.Error("a removed CLAUDE.md is still linked")
	}
}

func TestMergeMCPConfig(t *testing.T) {
	cfg := t.TempDir()
	task := filepath.Join(cfg, "task-mcp.json")
	os.WriteFile(task, []byte(`{"mcpServers":{"db":{"command":"task-db"},"familiar":{"command":"f"}}}`), 0o600)
	st := filepath.Join(t.TempDir(), ".claude.json")
	os.WriteFile(st, []byte(`{"mcpServers":{"db":{"command":"user-db"},"search":{"command":"s"}},"projects":{"/repo":{"mcpServers":{"local":{"command":"l"}}}}}`), 0o600)
	u := UserConfig{StateFile: st}
	servers := u.userMCPServers("/repo")
	if len(servers) != 3 {
		t.Fatalf("user servers %v", servers)
	}
	out, err := mergeMCPConfig(cfg, task, servers)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	var doc struct {
		McpServers map[string]struct{ Command string } `json:"mcpServers"`
	}
	json.Unmarshal(b, &doc)
	if doc.McpServers["db"].Command != "task-db" || doc.McpServers["search"].Command != "s" || doc.McpServers["local"].Command != "l" || doc.McpServers["familiar"].Command != "f" {
		t.Errorf("merged %s", b)
	}
}

func TestSignalName(t *testing.T) {
	if got := procs.SignalName(syscall.SIGKILL); got != "SIGKILL (killed)" {
		t.Errorf("SIGKILL: %q", got)
	}
	if got := (procs.ExitStatus{Code: -1, Signal: syscall.SIGTERM}).String(); got != "killed by SIGTERM (terminated)" {
		t.Errorf("status: %q", got)
	}
}
