package main

import (
	"context"
	"encoding/json"
	"fmt"
	"go/build"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/daemon"
	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/leakcheck"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
)

// mainEnv makes the test binary run familiar's main instead of the tests, so
// the end-to-end tests drive the real program over its real stdio.
const mainEnv = "FAMILIAR_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) != "" {
		// A familiar of another version, for the version tests.
		if v := os.Getenv("FAMILIAR_TEST_VERSION"); v != "" {
			version = v
		}
		if v, err := strconv.Atoi(os.Getenv("FAMILIAR_TEST_PROTOCOL_VERSION")); err == nil {
			protocolVersion = v
		}
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(runWithFakeHome(m))
}

// runWithFakeHome runs the tests with HOME a directory of their own, which
// every familiar and claude they start inherits (a test that needs another
// sets its own): the user's shell profile is not read by claude's Bash
// tool (a login shell) and nothing of the user's claude or familiar
// config leaks in. What the real HOME gave and the tests need stays: git's
// identity (GIT_CONFIG_GLOBAL) and Go's caches, for the tests that build.
func runWithFakeHome(m *testing.M) int {
	home, err := os.MkdirTemp("", "familiar-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake HOME:", err)
		return 1
	}
	defer os.RemoveAll(home)
	if real, err := os.UserHomeDir(); err == nil {
		if _, err := os.Stat(filepath.Join(real, ".gitconfig")); err == nil && os.Getenv("GIT_CONFIG_GLOBAL") == "" {
			os.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(real, ".gitconfig"))
		}
	}
	if cfg, err := os.UserConfigDir(); err == nil && os.Getenv("GOENV") == "" {
		os.Setenv("GOENV", filepath.Join(cfg, "go", "env"))
	}
	if os.Getenv("GOPATH") == "" {
		os.Setenv("GOPATH", build.Default.GOPATH)
	}
	if cache, err := os.UserCacheDir(); err == nil && os.Getenv("GOCACHE") == "" {
		os.Setenv("GOCACHE", filepath.Join(cache, "go-build"))
	}
	os.Setenv("HOME", home)
	return leakcheck.Run(m)
}

type familiarProc struct {
	mode   serveMode
	cmd    *exec.Cmd
	client *editor.Client
	stdin  io.WriteCloser
	stderr *strings.Builder
	// env and dir are what cmd runs with; dd is the data dir the background
	// familiar of viaDaemon serves from (computed as familiar does).
	env []string
	dir string
	dd  string
}

// serveMode is how familiar serves a test's editor.
type serveMode string

const (
	// viaDaemon is `familiar serve --stdio` as editors run it: a forwarder
	// to the repository's background familiar, which it starts.
	viaDaemon serveMode = "daemon"
	// noDaemon is `familiar serve --stdio --no-daemon`: familiar serves in
	// the editor's child process.
	noDaemon serveMode = "no-daemon"
)

// bothModes runs test through the background familiar and in-process, as
// subtests: the cross-mode subset (the lifecycle, every method at least
// once). The rest of the suite runs viaDaemon only, the path users take.
func bothModes(t *testing.T, test func(t *testing.T, mode serveMode)) {
	for _, mode := range []serveMode{viaDaemon, noDaemon} {
		t.Run(string(mode), func(t *testing.T) { test(t, mode) })
	}
}

func gitRepo(t *testing.T) string {
	return testenv.GitRepo(t, map[string]string{"README.md": "hello\n"})
}

// startFamiliar runs `familiar serve --stdio` in repo, as an editor does,
// with claude pointed at api, and returns an editor client talking to it
// through the background familiar it starts.
func startFamiliar(t *testing.T, repo string, api *fakeapi.Server, extraEnv ...string) *familiarProc {
	t.Helper()
	return startFamiliarIn(t, viaDaemon, repo, api, extraEnv...)
}

// startFamiliarIn is startFamiliar in the given mode. Tests that kill or
// signal familiar itself run noDaemon, where cmd is the familiar serving.
// viaDaemon's cleanup stops the background familiar (familiar stop) and
// checks that it is gone and left no race report or panic.
func startFamiliarIn(t *testing.T, mode serveMode, repo string, api *fakeapi.Server, extraEnv ...string) *familiarProc {
	t.Helper()
	claude := testenv.Claude(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	args := []string{"serve", "--stdio"}
	if mode == noDaemon {
		args = append(args, "--no-daemon")
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), mainEnv+"=1", "FAMILIAR_CLAUDE="+claude,
		"XDG_STATE_HOME="+filepath.Join(state, "state"), "XDG_DATA_HOME="+filepath.Join(state, "data"))
	for k, v := range api.Env() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	p := &familiarProc{mode: mode, cmd: cmd, stdin: stdin, stderr: &strings.Builder{}, env: cmd.Env, dir: repo}
	if mode == viaDaemon {
		p.dd = filepath.Join(lastEnv(cmd.Env, "XDG_STATE_HOME"), "familiar", filepath.Base(repo)+"-"+dataDirHash(repo))
		// Registered first, so it runs after the forwarder has exited.
		t.Cleanup(func() { p.stopDaemon(t) })
	}
	cmd.Stderr = &lockedWriter{b: p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.client = editor.New(t, stdout, stdin)
	// Agents run at the priority of the test's other work, as familiar
	// bench runs them: at the default agentNice 10, each PTY agent's own
	// session group got a tenth of a share at load 20, and a turn took
	// 30–60 s instead of 3.
	p.client.InitSettings = map[string]any{"agentNice": 0}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("familiar did not exit after stdin closed\n%s", p.stderr)
		}
		if t.Failed() {
			t.Logf("familiar serve --stdio (%s) stderr:\n%s", mode, p.stderr)
		}
	})
	return p
}

// lastEnv is the value of key in env as a child sees it (the last one wins).
func lastEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// stopDaemon stops the background familiar of a viaDaemon familiarProc,
// waits until it has exited and checks what it left in its stderr file. It
// may be called more than once (a test that restarts familiar, then the
// cleanup).
func (p *familiarProc) stopDaemon(t *testing.T) {
	t.Helper()
	if p.mode != viaDaemon {
		return
	}
	if _, err := os.Stat(filepath.Join(p.dd, daemon.InfoFile)); err != nil {
		return // none started (or it removed its info as it stopped)
	}
	info, _ := daemon.ReadInfo(p.dd)
	exe, _ := os.Executable()
	stop := exec.Command(exe, "stop", "--data-dir", p.dd)
	stop.Dir, stop.Env = p.dir, p.env
	if out, err := stop.CombinedOutput(); err != nil {
		t.Errorf("familiar stop: %v\n%s", err, out)
	}
	if info.PID != 0 && daemon.Alive(info.PID) {
		t.Errorf("the background familiar (pid %d) outlived familiar stop", info.PID)
	}
	// The daemon is nobody's child: a race report (go test -race) or a
	// panic only shows in its stderr file.
	if e, _ := os.ReadFile(filepath.Join(p.dd, daemon.ErrFile)); strings.Contains(string(e), "DATA RACE") || strings.Contains(string(e), "panic:") {
		t.Errorf("the background familiar's stderr:\n%s", e)
	}
	if t.Failed() {
		b, _ := os.ReadFile(filepath.Join(p.dd, "familiar.log"))
		t.Logf("background familiar's log:\n%s", tail(string(b), 6000))
	}
}

// stop ends the editor's session (shutdown, exit, stdin closed) and waits
// for serve --stdio to exit; viaDaemon it then stops the background
// familiar too, so its store is closed and a next familiar starts afresh.
func (p *familiarProc) stop(t *testing.T) {
	t.Helper()
	p.client.Result("shutdown", nil, nil)
	p.client.Notify("exit", nil)
	<-p.client.Done()
	p.stdin.Close()
	p.cmd.Wait()
	p.stopDaemon(t)
}

// logs is everything familiar logged: serve --stdio's stderr, and viaDaemon
// the background familiar's log and stderr files.
func (p *familiarProc) logs() string {
	s := p.stderr.String()
	if p.mode == viaDaemon {
		for _, f := range []string{"familiar.log", daemon.ErrFile} {
			b, _ := os.ReadFile(filepath.Join(p.dd, f))
			s += "\n" + string(b)
		}
	}
	return s
}

type lockedWriter struct {
	b *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) { return w.b.Write(p) }

// One task's whole life, both ways (through the background familiar and
// in-process).
func TestServeStdioTaskLifecycle(t *testing.T) { bothModes(t, serveStdioTaskLifecycle) }

func serveStdioTaskLifecycle(t *testing.T, mode serveMode) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	f := startFamiliarIn(t, mode, repo, api)
	c := f.client

	// Requests before initialize are refused.
	if m := c.Call("task/list", map[string]any{}); m.Error == nil || m.Error.Code != protocol.CodeServerNotInitialized {
		t.Fatalf("task/list before initialize = %+v", m)
	}
	var init protocol.InitializeResult
	c.Result("initialize", map[string]any{"workspaceRoot": repo}, &init)
	if !init.Claude.Available || init.Workspace.Root != repo || !init.Git.Available {
		t.Fatalf("initialize = %+v", init)
	}

	// Bad input: a clear error naming the field, and the connection keeps working.
	if m := c.Call("task/create", map[string]any{"description": "x"}); m.Error == nil || m.Error.Code != protocol.CodeInvalidParams || !strings.Contains(string(m.Error.Data), "title") {
		t.Fatalf("task/create without title = %+v", m.Error)
	}
	c.WriteRaw([]byte("{not json"))
	if m := c.Call("task/get", map[string]any{"id": "nope"}); m.Error == nil || m.Error.Code != protocol.CodeNotFound {
		t.Fatalf("task/get unknown = %+v", m.Error)
	}

	var task protocol.Task
	c.Result("task/create", map[string]any{
		"title":       "Make a file",
		"description": "Create made.txt.\n@@TOOL Bash {\"command\":\"touch made.txt\",\"description\":\"make it\"}\n@@TEXT Created made.txt as asked.",
	}, &task)
	if task.Status != protocol.StatusQueued || task.Attempt != 1 {
		t.Fatalf("created task = %+v", task)
	}
	q, next := c.WaitNotification(0, "task/question", editor.Method("task/question", task.ID))
	var qn protocol.TaskQuestionNotification
	json.Unmarshal(q.Params, &qn)
	if qn.Question.Kind != protocol.QuestionPermission || qn.Question.Tool != "Bash" || qn.Seq == 0 {
		t.Fatalf("question = %s", q.Params)
	}
	var waiting protocol.Task
	c.Result("task/get", map[string]any{"id": task.ID}, &waiting)
	if waiting.Status != protocol.StatusWaiting || waiting.PendingQuestion == nil {
		t.Fatalf("task while asking = %+v", waiting)
	}
	c.Result("task/respond", map[string]any{"id": task.ID, "questionId": qn.Question.ID, "optionId": "allow"}, nil)
	c.WaitNotification(next, "questionResolved", editor.Method("task/questionResolved", task.ID, `"decidedBy":"user"`))
	done, _ := c.WaitNotification(next, "task/completed", editor.Method("task/completed", task.ID))
	var comp protocol.TaskCompletedNotification
	json.Unmarshal(done.Params, &comp)
	if !comp.Result.Success || comp.Result.Summary != "Created made.txt as asked." {
		t.Errorf("result = %+v", comp.Result)
	}
	if len(comp.Result.ChangedFiles) != 1 || comp.Result.ChangedFiles[0].Path != "made.txt" || comp.Result.ChangedFiles[0].Status != protocol.FileAdded {
		t.Errorf("changed files = %+v", comp.Result.ChangedFiles)
	}
	// The checkpoint is named by what the agent said it did (issue 34), not
	// the title the merge commit carries.
	if len(comp.Result.Commits) != 1 || comp.Result.Commits[0].Subject != "Created made.txt as asked" {
		t.Errorf("commits = %+v", comp.Result.Commits)
	}
	var final protocol.Task
	c.Result("task/get", map[string]any{"id": task.ID}, &final)
	if final.Status != protocol.StatusMerging || final.Worktree == nil || final.Agent == nil {
		t.Fatalf("final task = %+v", final)
	}
	if _, err := os.Stat(filepath.Join(final.Worktree.Path, "made.txt")); err != nil {
		t.Errorf("made.txt not in the worktree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "made.txt")); err == nil {
		t.Error("the task wrote into the user's checkout")
	}

	// Seqs are strictly increasing, and task/events replays the same objects.
	var last int64
	for _, n := range c.Notifications() {
		var s struct{ Seq int64 }
		json.Unmarshal(n.Params, &s)
		if s.Seq <= last {
			t.Fatalf("seq %d after %d (%s)", s.Seq, last, n.Method)
		}
		last = s.Seq
	}
	var evs protocol.TaskEventsResult
	c.Result("task/events", map[string]any{"id": task.ID, "sinceSeq": 0, "limit": 1000}, &evs)
	if len(evs.Events) == 0 || evs.LastSeq < last {
		t.Errorf("events = %d, lastSeq %d (saw %d)", len(evs.Events), evs.LastSeq, last)
	}
	var out protocol.TaskOutputResult
	c.Result("task/output", map[string]any{"id": task.ID}, &out)
	if out.Size == 0 || out.Data == "" {
		t.Errorf("task/output = %+v", out)
	}
	var list protocol.TaskListResult
	c.Result("task/list", map[string]any{"query": "made.txt"}, &list)
	if list.Total != 1 || len(list.Tasks) != 1 {
		t.Errorf("task/list query = %+v", list)
	}

	c.Result("shutdown", nil, nil)
	c.Notify("exit", nil)
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("familiar did not close the connection after exit")
	}
	_ = context.Background
}

// A second `familiar serve --stdio` for the same repository joins the first
// (another editor window): both see the same tasks and notifications.
func TestSecondWindowJoinsTheRunningFamiliar(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	state := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + filepath.Join(state, "state"), "XDG_DATA_HOME=" + filepath.Join(state, "data")}
	first := startFamiliar(t, repo, api, env...)
	var init protocol.InitializeResult
	first.client.Result("initialize", map[string]any{"workspaceRoot": repo}, &init)
	sock := filepath.Join(init.Workspace.DataDir, "familiar.sock")
	waitFile(t, sock)

	second := startFamiliar(t, repo, api, env...)
	second.client.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
	var task protocol.Task
	second.client.Result("task/create", map[string]any{"title": "from window two", "description": "@@TEXT hello"}, &task)
	// The first window hears about the second window's task.
	first.client.WaitNotification(0, "task/updated from the other window", editor.Method("task/updated", task.ID))
	var got protocol.Task
	first.client.Result("task/get", map[string]any{"id": task.ID}, &got)
	if got.Title != "from window two" {
		t.Fatalf("first window sees %+v", got)
	}

	// A shutdown from one window does not stop the other's agents, and when
	// the first window (which owns the process) leaves, the second keeps
	// being served.
	first.client.Result("shutdown", nil, nil)
	first.client.Notify("exit", nil)
	first.stdin.Close()
	var still protocol.Task
	second.client.Result("task/get", map[string]any{"id": task.ID}, &still)
	if still.ID != task.ID {
		t.Fatal("the second window lost its familiar")
	}

	// A second server (not a window) on the same data dir exits at once,
	// naming the running one.
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "serve", "--listen", "unix:"+filepath.Join(t.TempDir(), "x.sock"))
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), append(env, mainEnv+"=1", "FAMILIAR_CLAUDE="+testenv.Claude(t))...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another familiar is running for this repository (pid ") {
		t.Fatalf("second server: err=%v\n%s", err, out)
	}
}

func TestInitializeRefusesNonRepository(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	notRepo := t.TempDir()
	f := startFamiliar(t, notRepo, api)
	m := f.client.Call("initialize", map[string]any{"workspaceRoot": notRepo})
	if m.Error == nil || m.Error.Code != protocol.CodeInvalidParams || !strings.Contains(string(m.Error.Data), "workspaceRoot") {
		t.Fatalf("initialize on a plain dir = %+v", m.Error)
	}
	// The connection still works: initialize with a real repository.
	repo := gitRepo(t)
	f.client.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	// No event for a file appearing in another process.
	testenv.Await(t, 30*time.Second, path+" to appear", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

func TestMissingClaudeIsReportedNotFatal(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	f := startFamiliar(t, repo, api, "FAMILIAR_CLAUDE=/nonexistent/claude")
	var init protocol.InitializeResult
	f.client.Result("initialize", map[string]any{"workspaceRoot": repo}, &init)
	if init.Claude.Available || init.Claude.Problem == "" {
		t.Fatalf("claude status = %+v", init.Claude)
	}
	f.client.WaitNotification(0, "warning", editor.Method("server/message", `"level":"warning"`, "claude"))
	m := f.client.Call("task/create", map[string]any{"title": "t", "description": "d"})
	if m.Error == nil || m.Error.Code != protocol.CodeUnavailable {
		t.Fatalf("task/create without claude = %+v", m.Error)
	}
}

// familiar is killed with SIGKILL while an agent waits on a permission; a
// new familiar with --resume-interrupted continues the same conversation in
// the same worktree. In-process (noDaemon), so the test holds the familiar
// it kills; TestInitializeAnsweredAfterKillNine kills the background one.
func TestKillNineThenResume(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	state := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + filepath.Join(state, "state"), "XDG_DATA_HOME=" + filepath.Join(state, "data")}

	first := startFamiliarIn(t, noDaemon, repo, api, env...)
	first.client.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
	var task protocol.Task
	first.client.Result("task/create", map[string]any{"title": "survive a crash",
		"description": "go\n@@TOOL Bash {\"command\":\"touch crash.txt\"}\n@@TEXT Finished after the crash."}, &task)
	first.client.WaitNotification(0, "question", editor.Method("task/question", task.ID))
	var before protocol.Task
	first.client.Result("task/get", map[string]any{"id": task.ID}, &before)
	requestsBefore := len(api.MainRequests())
	if err := first.cmd.Process.Kill(); err != nil { // kill -9
		t.Fatal(err)
	}
	first.cmd.Wait()

	exe, _ := os.Executable()
	cmd := exec.Command(exe, "serve", "--stdio", "--no-daemon", "--resume-interrupted")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), append(env, mainEnv+"=1", "FAMILIAR_CLAUDE="+testenv.Claude(t))...)
	for k, v := range api.Env() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{b: &stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
		if t.Failed() {
			t.Logf("second familiar:\n%s", stderr.String())
		}
	}()
	c := editor.New(t, stdout, stdin)
	c.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
	// The crash left the task interrupted; --resume-interrupted continued it
	// in the same session and worktree, and it finished.
	c.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))
	var again protocol.Task
	c.Result("task/get", map[string]any{"id": task.ID}, &again)
	if again.Worktree.Path != before.Worktree.Path || again.Agent.SessionID != before.Agent.SessionID {
		t.Fatalf("resumed elsewhere: %+v vs %+v", again.Worktree, before.Worktree)
	}
	// The old agent is gone.
	if b, err := os.ReadFile(filepath.Join("/proc", itoaPID(before.Agent.PID), "cmdline")); err == nil && strings.Contains(string(b), "claude") {
		t.Errorf("the agent of the killed familiar still runs (pid %d)", before.Agent.PID)
	}
	// The model saw the conversation from before the crash.
	reqs := api.MainRequests()
	last := reqs[len(reqs)-1]
	if len(reqs) <= requestsBefore || len(last.Messages) < 3 || !strings.Contains(string(last.Raw), "touch crash.txt") {
		t.Errorf("the resumed conversation has %d messages", len(last.Messages))
	}
}

func itoaPID(pid int) string { return strconv.Itoa(pid) }

// No secret from the environment reaches the store, the logs or the
// notifications, even when the agent prints it and the model repeats it.
func TestSecretsNeverLeave(t *testing.T) {
	const secret = "tok_live_9f8e7d6c5b4a39281706f5e4d3c2b1a0"
	// The agent prints the secret and the model repeats it; neither the
	// task's text nor familiar wrote it.
	api := fakeapi.Start(fakeapi.Sequence(
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{
			"command": "echo the token is $MY_SERVICE_TOKEN and the key is $ANTHROPIC_API_KEY"}}}},
		fakeapi.Reply{Text: "I saw " + secret + " and " + fakeapi.APIKey + " in the output."},
	))
	defer api.Close()
	repo := gitRepo(t)
	state := t.TempDir()
	f := startFamiliar(t, repo, api, "MY_SERVICE_TOKEN="+secret,
		"XDG_STATE_HOME="+filepath.Join(state, "state"), "XDG_DATA_HOME="+filepath.Join(state, "data"))
	c := f.client
	var init protocol.InitializeResult
	c.Result("initialize", map[string]any{"workspaceRoot": repo, "settings": map[string]any{
		"permissionPolicy": map[string]any{"default": "allow"}}}, &init)
	var task protocol.Task
	c.Result("task/create", map[string]any{"title": "leak test", "description": "print the token"}, &task)
	c.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))
	f.stop(t)

	for _, n := range c.Notifications() {
		for _, s := range []string{secret, fakeapi.APIKey} {
			if strings.Contains(string(n.Params), s) {
				t.Errorf("%s notification carries a secret: %.300s", n.Method, n.Params)
			}
		}
	}
	if logs := f.logs(); strings.Contains(logs, secret) || strings.Contains(logs, fakeapi.APIKey) {
		t.Error("familiar's log carries a secret")
	}
	db, err := os.ReadFile(filepath.Join(init.Workspace.DataDir, "familiar.db"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(db), secret) || strings.Contains(string(db), fakeapi.APIKey) {
		t.Error("the store holds a secret")
	}
	// The masked form keeps a prefix and the length, so logs stay useful.
	sawMasked := false
	for _, n := range c.Notifications() {
		sawMasked = sawMasked || strings.Contains(string(n.Params), "masked")
	}
	if !sawMasked {
		t.Error("no masked secret in the notifications: was anything masked at all?")
	}
}
