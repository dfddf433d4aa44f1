package fakeapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// runTimeout bounds one claude run. A trivial turn takes 1–2 s; the margin
// is for a loaded 2-core machine.
const runTimeout = 60 * time.Second

// run is one finished `claude -p` process.
type run struct {
	lines  []map[string]any // stream-json lines of stdout
	stdout string
	stderr string
	err    error // from Wait
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

// runClaude runs `claude -p` with prompt in repo against srv and waits for
// it to exit. The process runs in its own process group, which is killed if
// the run outlives runTimeout or the test, so nothing is left behind.
func runClaude(t *testing.T, srv *fakeapi.Server, repo, prompt string, args ...string) run {
	t.Helper()
	return runClaudeIn(t, srv, repo, filepath.Join(t.TempDir(), "claude-config"), prompt, args...)
}

func runClaudeIn(t *testing.T, srv *fakeapi.Server, repo, configDir, prompt string, args ...string) run {
	t.Helper()
	claude := testenv.Claude(t)
	if err := agent.SeedConfigDir(configDir, repo, fakeapi.APIKey); err != nil {
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
	argv = append(argv, "--", prompt)
	cmd := exec.CommandContext(ctx, claude, argv...)
	cmd.Dir = repo
	cmd.Env = agent.SessionEnv(os.Environ(), configDir, extra)
	cmd.Stdin = nil
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second

	start := time.Now()
	err := cmd.Run()
	t.Logf("claude ran %v (exit: %v)", time.Since(start).Round(time.Millisecond), err)
	if ctx.Err() != nil {
		t.Fatalf("claude did not finish within %v\nstdout:\n%s\nstderr:\n%s", runTimeout, stdout.String(), stderr.String())
	}
	// Anything of the group still alive (a tool's child) goes too.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

	r := run{stdout: stdout.String(), stderr: stderr.String(), err: err}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			r.lines = append(r.lines, m)
		}
	}
	return r
}

// TestExplore dumps the raw requests of a run to $FAKEAPI_DUMP (a dir).
func TestExplore(t *testing.T) {
	dump := os.Getenv("FAKEAPI_DUMP")
	if dump == "" {
		t.Skip("set FAKEAPI_DUMP=dir to dump real traffic")
	}
	srv := fakeapi.Start(fakeapi.PromptScript())
	defer srv.Close()
	repo := newRepo(t)
	r := runClaudeIn(t, srv, repo, filepath.Join(filepath.Dir(repo), "cfg"), os.Getenv("FAKEAPI_PROMPT"), splitArgs(os.Getenv("FAKEAPI_ARGS"))...)
	t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	if p2 := os.Getenv("FAKEAPI_PROMPT2"); p2 != "" {
		sid, _ := r.lines[0]["session_id"].(string)
		r2 := runClaudeIn(t, srv, repo, filepath.Join(filepath.Dir(repo), "cfg"), p2, "--resume", sid)
		t.Logf("stdout2:\n%s\nstderr:\n%s", r2.stdout, r2.stderr)
	}
	for i, req := range srv.Requests() {
		os.WriteFile(filepath.Join(dump, "req"+string(rune('0'+i))+".json"), req.Raw, 0o644)
		h, _ := json.Marshal(req.Header)
		os.WriteFile(filepath.Join(dump, "req"+string(rune('0'+i))+".header"), h, 0o644)
	}
	for _, o := range srv.OtherRequests() {
		t.Logf("other: %s %s", o.Path, o.Raw)
	}
}

// TestExploreTUI runs the interactive CLI under tmux and dumps its traffic.
func TestExploreTUI(t *testing.T) {
	dump := os.Getenv("FAKEAPI_DUMP_TUI")
	if dump == "" {
		t.Skip("set FAKEAPI_DUMP_TUI=dir")
	}
	claude := testenv.Claude(t)
	srv := fakeapi.Start(fakeapi.PromptScript())
	defer srv.Close()
	repo := newRepo(t)
	configDir := filepath.Join(t.TempDir(), "cfg")
	agent.SeedConfigDir(configDir, repo, fakeapi.APIKey)
	extra := srv.Env()
	extra["HOME"] = t.TempDir()
	if os.Getenv("FAKEAPI_NO_DISABLE") != "" {
		delete(extra, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
	}
	env := agent.SessionEnv(os.Environ(), configDir, extra)
	var sh strings.Builder
	sh.WriteString("#!/bin/sh\n")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		sh.WriteString("export " + k + "='" + strings.ReplaceAll(v, "'", `'\''`) + "'\n")
	}
	sh.WriteString("cd " + repo + "\nexec " + claude + " --permission-mode default\n")
	script := filepath.Join(t.TempDir(), "run.sh")
	os.WriteFile(script, []byte(sh.String()), 0o755)
	tm := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-L", "fakeapi-explore"}, args...)...).CombinedOutput()
		return string(out)
	}
	tm("new-session", "-d", "-x", "160", "-y", "50", "-s", "x", script)
	defer tm("kill-server")
	time.Sleep(4 * time.Second)
	tm("send-keys", "-t", "x", "-l", os.Getenv("FAKEAPI_PROMPT"))
	time.Sleep(500 * time.Millisecond)
	tm("send-keys", "-t", "x", "Enter")
	time.Sleep(10 * time.Second)
	t.Logf("screen:\n%s", tm("capture-pane", "-p", "-t", "x"))
	if p2 := os.Getenv("FAKEAPI_PROMPT2"); p2 != "" {
		tm("send-keys", "-t", "x", "-l", p2)
		time.Sleep(500 * time.Millisecond)
		tm("send-keys", "-t", "x", "Enter")
		time.Sleep(8 * time.Second)
		t.Logf("screen:\n%s", tm("capture-pane", "-p", "-t", "x"))
	}
	for i, req := range srv.Requests() {
		os.WriteFile(filepath.Join(dump, "req"+string(rune('a'+i))+".json"), req.Raw, 0o644)
	}
	for _, o := range srv.OtherRequests() {
		t.Logf("other: %s %s", o.Path, o.Raw)
	}
}

func splitArgs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "|")
}
