package agent_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/fakeapi"
)

// The model side failing (issue 13 §2), the user's own Claude (issue 14),
// long work (issue 14): the real claude against the fake API, a fake HOME
// per test.

// authFreeEnv is familiar's environment without any way to authenticate:
// each test adds the one it is about.
func authFreeEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE_CODE_USE_") || k == "CLAUDE_CODE_OAUTH_TOKEN" || k == "CLAUDE_CONFIG_DIR" || k == "CLAUDE_SECURESTORAGE_CONFIG_DIR" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// writeLogin gives home a claude.ai login as `claude login` leaves it.
func writeLogin(t testing.TB, home, access, refresh string, expires time.Time) string {
	t.Helper()
	dir := filepath.Join(home, ".claude")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".credentials.json")
	creds := fmt.Sprintf(`{"claudeAiOauth":{"accessToken":%q,"refreshToken":%q,"expiresAt":%d,"scopes":["user:inference","user:profile"],"subscriptionType":"max"}}`,
		access, refresh, expires.UnixMilli())
	if err := os.WriteFile(path, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// asUser runs the session as a user whose HOME is home, with no API key.
func asUser(home string) func(*agent.Options) {
	return func(o *agent.Options) {
		o.Env = authFreeEnv()
		delete(o.ExtraEnv, "ANTHROPIC_API_KEY")
		o.ExtraEnv["HOME"] = home
	}
}

func failedTurn(ev agent.Event) bool {
	return ev.Kind == agent.EventTurnEnded && ev.Turn.Failed
}

func noQuestions(t *testing.T, h *harness) {
	t.Helper()
	for _, ev := range h.rec.all() {
		if ev.Kind == agent.EventQuestion {
			t.Errorf("asked a question: %+v", ev.Question)
		}
	}
}

func TestOAuthLoginOfTheUser(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		home := t.TempDir()
		const token = "sk-ant-oat01-dummy-user-login-token"
		creds := writeLogin(t, home, token, "sk-ant-ort01-dummy-refresh", time.Now().Add(24*time.Hour))
		before, _ := os.ReadFile(creds)
		auth := agent.DetectAuth(append(authFreeEnv(), "HOME="+home), time.Now())
		if auth.Method != agent.AuthLogin || auth.Problem != "" || auth.Source != creds {
			t.Errorf("DetectAuth = %+v", auth)
		}
		if strings.Contains(auth.String(), token) {
			t.Errorf("DetectAuth shows the secret: %s", auth)
		}
		h := startWith(t, driver, "@@TEXT logged in as the user", asUser(home))
		ev, _ := h.rec.wait(t, 0, "turn end", turnEnded)
		if ev.Turn.Failed || ev.Turn.LastMessage != "logged in as the user" {
			t.Fatalf("turn = %+v", ev.Turn)
		}
		reqs := h.api.MainRequests()
		if len(reqs) == 0 {
			t.Fatal("no request reached the API")
		}
		for _, r := range reqs {
			if got := r.Header.Get("Authorization"); got != "Bearer "+token {
				t.Errorf("Authorization = %q, want the user's login", got)
			}
			if r.Header.Get("X-Api-Key") != "" {
				t.Errorf("an API key was sent")
			}
		}
		after, _ := os.ReadFile(creds)
		if string(after) != string(before) {
			t.Errorf("the user's credentials changed:\n%s", after)
		}
	})
}

func TestNoCredentialsIsAuthFailure(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		home := t.TempDir()
		auth := agent.DetectAuth(append(authFreeEnv(), "HOME="+home), time.Now())
		if auth.Method != agent.AuthNone || !strings.Contains(auth.Problem, "claude auth login") {
			t.Errorf("DetectAuth = %+v", auth)
		}
		startAt := time.Now()
		h := startWith(t, driver, "@@TEXT never", asUser(home))
		ev, _ := h.rec.wait(t, 0, "failed turn", failedTurn)
		if f := ev.Turn.Failure; f == nil || f.Kind != agent.FailureAuth {
			t.Fatalf("failure = %+v (turn %+v)", f, ev.Turn)
		}
		// claude itself says so on its first turn (the orchestrator blocks
		// before even starting it: TestNoLoginBlocksAuthAtOnce). Generous:
		// a loaded machine starts claude slowly.
		if d := time.Since(startAt); d > 30*time.Second {
			t.Errorf("took %s to report the missing login", d)
		}
		t.Logf("claude reported the missing login %s after start", time.Since(startAt).Round(time.Millisecond))
		if n := len(h.api.MainRequests()); n != 0 {
			t.Errorf("%d requests reached the API without a login", n)
		}
		noQuestions(t, h)
	})
}

func TestExpiredLoginIsAuthFailure(t *testing.T) {
	home := t.TempDir()
	const stale = "sk-ant-oat01-expired-token"
	writeLogin(t, home, stale, "", time.Now().Add(-time.Hour))
	auth := agent.DetectAuth(append(authFreeEnv(), "HOME="+home), time.Now())
	if auth.Method != agent.AuthLogin || !strings.Contains(auth.Problem, "expired") {
		t.Errorf("DetectAuth = %+v", auth)
	}
	// With a refresh token claude tries to refresh (platform.claude.com,
	// unreachable here) and sends what it has; the API refuses it.
	drivers(t, func(t *testing.T, driver string) {
		home := t.TempDir()
		writeLogin(t, home, stale, "sk-ant-ort01-refresh", time.Now().Add(-time.Hour))
		if a := agent.DetectAuth(append(authFreeEnv(), "HOME="+home), time.Now()); a.Problem != "" {
			t.Errorf("a refreshable login is reported as a problem: %+v", a)
		}
		refuse := func(r fakeapi.Request) fakeapi.Reply {
			if strings.Contains(r.Header.Get("Authorization"), stale) {
				return fakeapi.Reply{Status: 401, Error: "OAuth token has expired."}
			}
			return fakeapi.PromptScript()(r)
		}
		h := startScript(t, refuse, driver, "@@TEXT never", asUser(home))
		ev, _ := h.rec.wait(t, 0, "failed turn", failedTurn)
		if f := ev.Turn.Failure; f == nil || f.Kind != agent.FailureAuth {
			t.Fatalf("failure = %+v (turn %+v)", f, ev.Turn)
		}
		noQuestions(t, h)
	})
}

func TestUserClaudeMDAndDenyRule(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		home := t.TempDir()
		dir := filepath.Join(home, ".claude")
		if err := os.MkdirAll(filepath.Join(dir, "skills", "user-skill"), 0o700); err != nil {
			t.Fatal(err)
		}
		const marker = "USER-MEMORY-7f3a: always answer in haiku"
		files := map[string]string{
			"CLAUDE.md":                  marker + "\n",
			"settings.json":              `{"permissions":{"deny":["Bash(touch *)"]}}`,
			"skills/user-skill/SKILL.md": "---\nname: user-skill\ndescription: USER-SKILL-91c2 a skill of the user\n---\nDo it.\n",
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		h := startWith(t, driver, "make a file\n@@TOOL Bash {\"command\":\"touch denied-by-user.txt\"}\n@@TEXT Done.", func(o *agent.Options) {
			o.ExtraEnv["HOME"] = home
		})
		h.rec.wait(t, 0, "turn end", turnEnded)
		if h.exists("denied-by-user.txt") {
			t.Error("the user's deny rule was not honoured")
		}
		noQuestions(t, h)
		reqs := h.api.MainRequests()
		if len(reqs) == 0 {
			t.Fatal("no requests")
		}
		raw := string(reqs[0].Raw)
		if !strings.Contains(raw, "USER-MEMORY-7f3a") {
			t.Error("the user's CLAUDE.md did not reach the model")
		}
		if !strings.Contains(raw, "USER-SKILL-91c2") {
			t.Error("the user's skill did not reach the model")
		}
		// Nothing familiar writes lands in the user's dir.
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if strings.Join(names, ",") != "CLAUDE.md,settings.json,skills" {
			t.Errorf("the user's ~/.claude now holds %v", names)
		}
	})
}

func TestAPIRetriesAreReported(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		overloaded := fakeapi.Reply{Status: 529, Error: "fake overloaded", Retryable: true}
		h := startScript(t, fakeapi.Sequence(overloaded, overloaded, overloaded, fakeapi.Reply{Text: "made it"}), driver, "go", nil)
		ev, next := h.rec.wait(t, 0, "api retry", isKind(agent.EventAPIRetry))
		r := ev.Retry
		if r.Attempt < 1 || r.MaxAttempts != 10 {
			t.Errorf("retry = %+v", r)
		}
		// Within 5 s of the first failed request.
		first := h.api.MainRequests()[0].At
		if d := ev.At.Sub(first); d > 5*time.Second {
			t.Errorf("the retry was reported %s after the first failure", d)
		}
		t.Logf("retry reported %s after the first failed request", ev.At.Sub(first).Round(time.Millisecond))
		ev, _ = h.rec.wait(t, next, "turn end", turnEnded)
		if ev.Turn.Failed || ev.Turn.LastMessage != "made it" {
			t.Errorf("turn = %+v", ev.Turn)
		}
		noQuestions(t, h)
	})
}

func TestAPIGivesUpIsAPIError(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		t.Run("overloaded", func(t *testing.T) {
			overloaded := fakeapi.Reply{Status: 529, Error: "fake overloaded", Retryable: true}
			h := startScript(t, fakeapi.Sequence(overloaded, overloaded, overloaded), driver, "go", func(o *agent.Options) {
				o.ExtraEnv["CLAUDE_CODE_MAX_RETRIES"] = "1"
			})
			ev, _ := h.rec.wait(t, 0, "failed turn", failedTurn)
			if f := ev.Turn.Failure; f == nil || f.Kind != agent.FailureAPI || f.Status != 529 || !strings.Contains(f.Message, "overloaded") {
				t.Errorf("failure = %+v", f)
			}
			noQuestions(t, h)
		})
		t.Run("refused", func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			closed := "http://" + l.Addr().String()
			l.Close()
			h := startWith(t, driver, "go", func(o *agent.Options) {
				o.ExtraEnv["ANTHROPIC_BASE_URL"] = closed
				o.ExtraEnv["CLAUDE_CODE_MAX_RETRIES"] = "2"
			})
			ev, next := h.rec.wait(t, 0, "api retry", isKind(agent.EventAPIRetry))
			if !strings.Contains(ev.Retry.Summary(), "model API unreachable, retrying (1 of 2)") {
				t.Errorf("retry summary = %q", ev.Retry.Summary())
			}
			ev, _ = h.rec.wait(t, next, "failed turn", failedTurn)
			if f := ev.Turn.Failure; f == nil || f.Kind != agent.FailureAPI || !strings.Contains(f.Message, "ECONNREFUSED") && !strings.Contains(f.Message, "onnection") {
				t.Errorf("failure = %+v", f)
			}
			noQuestions(t, h)
		})
	})
}

func TestUsageLimitCarriesResetTime(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		home := t.TempDir()
		writeLogin(t, home, "sk-ant-oat01-subscriber", "sk-ant-ort01-r", time.Now().Add(24*time.Hour))
		reset := time.Now().Add(3 * time.Hour).Truncate(time.Minute).Add(17 * time.Second)
		h := startScript(t, fakeapi.Sequence(fakeapi.UsageLimitReply(reset)), driver, "go", asUser(home))
		ev, _ := h.rec.wait(t, 0, "failed turn", failedTurn)
		f := ev.Turn.Failure
		if f == nil || f.Kind != agent.FailureUsageLimit {
			t.Fatalf("failure = %+v (turn %+v)", f, ev.Turn)
		}
		if !f.ResetsAt.Equal(reset) {
			t.Errorf("resets at %s, want %s", f.ResetsAt, reset)
		}
		noQuestions(t, h)
	})
}

func TestLongWork(t *testing.T) {
	defer agent.SetCommandPoll(300 * time.Millisecond)()
	short := func(o *agent.Options) {
		o.NoProgress = 5 * time.Second
		o.CommandTimeout = 6 * time.Second
		o.AllowedTools = []string{"Bash"}
	}
	problem := func(prefix string) func(agent.Event) bool {
		return func(ev agent.Event) bool {
			return ev.Kind == agent.EventProblem && strings.HasPrefix(ev.Problem, prefix)
		}
	}
	// The timeouts are short, and a loaded machine can take longer than
	// them to start claude: only what happens once the command runs counts.
	isCommand := func(ev agent.Event) bool {
		return ev.Kind == agent.EventActivity && ev.Activity.State == agent.ActivityRunningCommand
	}
	drivers(t, func(t *testing.T, driver string) {
		t.Run("printing", func(t *testing.T) {
			// Runs 3× the no-progress timeout and 2.5× the command
			// timeout, printing every 0.5 s.
			h := startWith(t, driver, `count
@@TOOL Bash {"command":"for i in $(seq 1 30); do echo $i; sleep 0.5; done","description":"count"}
@@TEXT counted`, short)
			_, from := h.rec.wait(t, 0, "the command", isCommand)
			ev, _ := h.rec.wait(t, from, "turn end", turnEnded)
			if ev.Turn.LastMessage != "counted" {
				t.Errorf("turn = %+v", ev.Turn)
			}
			for _, ev := range h.rec.all()[from:] {
				if ev.Kind == agent.EventProblem {
					t.Errorf("problem: %s; events:\n%s", ev.Problem, dump(h.rec.all()))
				}
			}
		})
		t.Run("silent", func(t *testing.T) {
			h := startWith(t, driver, `wait
@@TOOL Bash {"command":"python3 -c 'import time; time.sleep(30)'","description":"wait"}
@@TEXT waited`, short)
			_, from := h.rec.wait(t, 0, "the command", isCommand)
			ev, _ := h.rec.wait(t, from, "command timeout", func(ev agent.Event) bool {
				return problem(agent.ProblemCommandTimeout)(ev) || problem(agent.ProblemNoProgress)(ev)
			})
			if !strings.HasPrefix(ev.Problem, agent.ProblemCommandTimeout) || !strings.Contains(ev.Problem, "time.sleep(30)") {
				t.Errorf("problem = %q; events:\n%s", ev.Problem, dump(h.rec.all()))
			}
		})
		t.Run("hung turn", func(t *testing.T) {
			h := startWith(t, driver, "@@DELAY 60s\n@@TEXT too late", short)
			h.rec.wait(t, 0, "no progress", problem(agent.ProblemNoProgress))
		})
	})
}

// TestLoginRefreshSharedByTasks: an expired claude.ai login is refreshed
// once for three concurrent tasks and the user's own claude, and the rotated
// refresh token lands in the user's credentials file (CLAUDE-CLI notes in
// the README). Copies or links of the file per task would refresh three
// times with one token (two refused, invalid_grant) and leave the user's file
// holding a token the server no longer accepts.
func TestLoginRefreshSharedByTasks(t *testing.T) {
	oauth, err := fakeapi.StartOAuth()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oauth.Close)
	home := t.TempDir()
	const expired, refresh = "sk-ant-oat01-expired-login", "sk-ant-ort01-original-refresh"
	creds := writeLogin(t, home, expired, refresh, time.Now().Add(-time.Hour))
	var hs []*harness
	for range 3 {
		hs = append(hs, startWith(t, agent.DriverStream, "@@TEXT refreshed", func(o *agent.Options) {
			asUser(home)(o)
			for k, v := range oauth.Env() {
				o.ExtraEnv[k] = v
			}
		}))
	}
	for _, h := range hs {
		ev, _ := h.rec.wait(t, 0, "turn end", turnEnded)
		if ev.Turn.Failed {
			t.Errorf("turn failed: %+v", ev.Turn)
		}
	}
	refs := oauth.Refreshes()
	if len(refs) != 1 || !refs[0].Granted || refs[0].RefreshToken != refresh {
		t.Fatalf("refreshes = %+v, want one with the original token", refs)
	}
	for i, h := range hs {
		for _, r := range h.api.MainRequests() {
			if got := r.Header.Get("Authorization"); got != "Bearer "+refs[0].AccessToken {
				t.Errorf("task %d sent %q", i, got)
			}
		}
	}
	b, err := os.ReadFile(creds)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), refs[0].NewRefresh) || !strings.Contains(string(b), refs[0].AccessToken) {
		t.Errorf("the user's credentials file does not hold the refreshed login: %s", b)
	}
	if fi, err := os.Stat(creds); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode: %v %v", fi.Mode(), err)
	}
}
