package demomodel_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/demomodel"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// End-to-end tests: the real claude CLI in -p mode against the fake API.
//
// Traffic seen with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 (what Env
// sets), CLI 2.1.330: only POST /v1/messages?beta=true, one per model turn,
// no side requests, in -p mode and in the TUI alike. With non-essential
// traffic enabled the CLI also calls /api/hello on the base URL, and the TUI
// (not -p) sends a session-title request after each prompt
// (testdata/requests/tui_title.json).

// runTimeout bounds one claude run. A trivial turn takes 1–2 s; the margin
// is for a loaded 2-core machine.
const runTimeout = 90 * time.Second

// run is one finished `claude -p` process.
type run struct {
	lines     []map[string]any // stream-json lines of stdout
	stdout    string
	stderr    string
	err       error  // from Wait
	configDir string // CLAUDE_CONFIG_DIR of the run, for a --resume
}

// result returns the final "result" line, or nil.
func (r run) result() map[string]any {
	for i := len(r.lines) - 1; i >= 0; i-- {
		if r.lines[i]["type"] == "result" {
			return r.lines[i]
		}
	}
	return nil
}

// newRepo makes a git repository in a temp dir and returns its real path
// (the CLI records trust by the resolved path).
func newRepo(t *testing.T) string {
	t.Helper()
	git := testenv.Git(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(git, "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return dir
}

// runClaude runs `claude -p` with prompt in repo against srv, with a fresh
// config dir, and waits for it to exit. claude runs in its own process
// group, killed when the run outlives runTimeout; afterwards no process may
// be left that carries the run's config dir in its environment (Bash tool
// commands run in sessions of their own, so the group alone proves nothing).
func runClaude(t *testing.T, srv *demomodel.Server, repo, prompt string, args ...string) run {
	t.Helper()
	return runClaudeIn(t, srv, repo, filepath.Join(t.TempDir(), "claude-config"), prompt, args...)
}

// runClaudeIn is runClaude with a given config dir (seeded again if it exists).
func runClaudeIn(t *testing.T, srv *demomodel.Server, repo, configDir, prompt string, args ...string) run {
	t.Helper()
	claude := testenv.Claude(t)
	if err := agent.SeedConfigDir(configDir, repo, demomodel.APIKey); err != nil {
		t.Fatal(err)
	}
	extra := srv.Env()
	// The CLI writes $HOME/.config/git/ignore even with CLAUDE_CONFIG_DIR
	// set (CLAUDE-CLI.md §7); keep the developer's HOME out of it.
	extra["HOME"] = t.TempDir()

	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	argv := append([]string{"-p", "--output-format", "stream-json", "--verbose",
		"--permission-mode", "default"}, args...)
	argv = append(argv, "--", prompt) // a prompt after --allowedTools would be read as a tool
	cmd := exec.CommandContext(ctx, claude, argv...)
	cmd.Dir = repo
	cmd.Env = agent.SessionEnv(os.Environ(), configDir, extra)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second

	start := time.Now()
	err := cmd.Run()
	t.Logf("claude ran %v (exit: %v)", time.Since(start).Round(time.Millisecond), err)
	if ctx.Err() != nil {
		t.Errorf("claude did not finish within %v\nstdout:\n%s\nstderr:\n%s", runTimeout, stdout.String(), stderr.String())
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group's stragglers, if any
	if pids := processesWithEnv("CLAUDE_CONFIG_DIR=" + configDir); len(pids) > 0 {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("processes left behind by claude: %v", pids)
	}

	r := run{stdout: stdout.String(), stderr: stderr.String(), err: err, configDir: configDir}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Errorf("stdout line is not JSON: %q", sc.Text())
			continue
		}
		r.lines = append(r.lines, m)
	}
	if r.result() == nil {
		t.Fatalf("no result line\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	return r
}

// processesWithEnv returns the pids of processes whose environment holds
// the exact entry kv (Linux /proc; elsewhere it finds nothing).
func processesWithEnv(kv string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, v := range bytes.Split(b, []byte{0}) {
			if string(v) == kv {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// noSideTraffic checks what the package doc promises about the CLI's
// traffic with non-essential traffic disabled.
func noSideTraffic(t *testing.T, srv *demomodel.Server) {
	t.Helper()
	for i, r := range srv.Requests() {
		if r.IsSideRequest() {
			t.Errorf("request %d is a side request (%s): %s", i, r.SideKind(), r.Raw)
		}
	}
	for _, o := range srv.OtherRequests() {
		t.Errorf("unexpected request %s: %s", o.Path, o.Raw)
	}
}

func TestCLIPlainText(t *testing.T) {
	t.Parallel()
	srv := demomodel.Start(demomodel.PromptScript())
	defer srv.Close()
	repo := newRepo(t)
	prompt := "Say hello\n@@TEXT Hello from the script.\\nSecond line."
	r := runClaude(t, srv, repo, prompt)

	res := r.result()
	if res["is_error"] != false || res["subtype"] != "success" || res["result"] != "Hello from the script.\nSecond line." {
		t.Errorf("result %v\nstderr:\n%s", res, r.stderr)
	}
	if r.err != nil {
		t.Errorf("exit: %v", r.err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	req := reqs[0]
	if req.LastUserText() != prompt || !req.Stream || !req.HasTool("Bash") || req.SessionID() != res["session_id"] {
		t.Errorf("request: last user text %q, stream %v, tools %q, session %q (result's %v)",
			req.LastUserText(), req.Stream, req.Tools, req.SessionID(), res["session_id"])
	}
	if init := r.lines[0]; init["subtype"] != "init" || init["model"] != req.Model {
		t.Errorf("init %v; request model %q", init, req.Model)
	}
	noSideTraffic(t, srv)
}

func TestCLIToolUse(t *testing.T) {
	t.Parallel()
	srv := demomodel.Start(demomodel.PromptScript())
	defer srv.Close()
	var (
		mu      sync.Mutex
		replies []demomodel.Reply
	)
	srv.OnResponseDone(func(_ demomodel.Request, reply demomodel.Reply) {
		mu.Lock()
		defer mu.Unlock()
		replies = append(replies, reply)
	})
	repo := newRepo(t)
	r := runClaude(t, srv, repo, "make a file\n@@TOOL Bash {\"command\":\"echo hi > created.txt\"}\n@@TEXT Created it.",
		"--allowedTools", "Bash")

	if b, err := os.ReadFile(filepath.Join(repo, "created.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("created.txt: %q, %v", b, err)
	}
	if res := r.result(); res["is_error"] != false || res["result"] != "Created it." {
		t.Errorf("result %v", res)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(replies) != 2 || len(replies[0].ToolUses) != 1 || replies[0].StopReason != "tool_use" {
		t.Fatalf("replies sent: %+v", replies)
	}
	results := reqs[1].ToolResults()
	if len(results) != 1 || results[0].ToolUseID != replies[0].ToolUses[0].ID || results[0].IsError {
		t.Errorf("second request's tool results %+v; tool_use id %s", results, replies[0].ToolUses[0].ID)
	}
	if reqs[1].LastUserText() != reqs[0].LastUserText() {
		t.Errorf("the tool result was taken for a prompt: %q", reqs[1].LastUserText())
	}
	noSideTraffic(t, srv)
}

func TestCLIHTTPError(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		script  demomodel.Script
		prompt  string
		message string
		resends bool // whether the CLI may send the turn again
	}{
		// On a 400 the CLI resends the turn with fewer beta features (five
		// times with 2.1.330); every resend must get the error too.
		{"400 directive", demomodel.PromptScript(), "fail\n@@ERROR 400 fake bad request", "fake bad request", true},
		{"400 sequence", demomodel.Sequence(demomodel.Reply{Status: 400, Error: "fake bad request"}, demomodel.Reply{Text: "not for a resend"}),
			"fail", "fake bad request", true},
		// A 5xx would be retried with backoff; Reply sets x-should-retry:
		// false, so the CLI gives up at once.
		{"500 directive", demomodel.PromptScript(), "fail\n@@ERROR 500 fake server error", "fake server error", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := demomodel.Start(tt.script)
			defer srv.Close()
			repo := newRepo(t)
			r := runClaude(t, srv, repo, tt.prompt)
			res := r.result()
			if res["is_error"] != true {
				t.Errorf("result is not an error: %v", res)
			}
			if s, _ := res["result"].(string); !strings.Contains(s, tt.message) {
				t.Errorf("result %q does not carry %q", s, tt.message)
			}
			if r.err == nil {
				t.Error("claude exited 0 after an error result")
			}
			reqs := srv.Requests()
			t.Logf("%d requests for one turn", len(reqs))
			if len(reqs) == 0 || (!tt.resends && len(reqs) != 1) {
				t.Errorf("%d requests", len(reqs))
			}
			for i, req := range reqs {
				if req.LastUserText() != tt.prompt || len(req.ToolResults()) != 0 || req.IsSideRequest() {
					t.Errorf("request %d is not a resend of the turn: %q", i, req.LastUserText())
				}
			}
		})
	}
}

// TestCaptureRequests refreshes testdata/requests/p_*.json from the
// installed CLI: FAKEAPI_CAPTURE=dir go test -run TestCaptureRequests
// writes each request of a tool turn, a --tools "" turn and a /compact.
func TestCaptureRequests(t *testing.T) {
	dir := os.Getenv("FAKEAPI_CAPTURE")
	if dir == "" {
		t.Skip("set FAKEAPI_CAPTURE=dir to capture the CLI's requests")
	}
	write := func(name string, req demomodel.Request) {
		if err := os.WriteFile(filepath.Join(dir, name), req.Raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := demomodel.Start(demomodel.PromptScript())
	defer srv.Close()
	repo := newRepo(t)
	prompt := "go\n@@TOOL Bash {\"command\":\"echo hi > created.txt\",\"description\":\"Create a file\"}\n@@TEXT All done here."
	r := runClaude(t, srv, repo, prompt, "--allowedTools", "Bash")
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	write("p_first.json", reqs[0])
	write("p_tool_result.json", reqs[1])

	runClaude(t, srv, repo, "hello there", "--tools", "")
	write("p_no_tools.json", srv.Requests()[2])

	// /compact needs a conversation: resume the first one, with its config.
	sid, _ := r.result()["session_id"].(string)
	runClaudeIn(t, srv, repo, r.configDir, "/compact", "--resume", sid)
	last := srv.Requests()[len(srv.Requests())-1]
	if last.SideKind() != demomodel.SideCompact {
		t.Errorf("last request is %q, not a compaction", last.SideKind())
	}
	write("p_compact.json", last)
}
