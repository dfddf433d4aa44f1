package main

import (
	"encoding/json"
	"fmt"
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
	"github.com/familiar-dev/familiar/daemon"
	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/workspace"
)

// daemonRig is one repository with its own state dirs, served by the
// background familiar that `familiar serve --stdio` starts.
type daemonRig struct {
	t       *testing.T
	repo    string
	repoDir string // where commands run; "" = the repository
	env     []string
	dd      string
}

// newDaemonRig makes a repository and state dirs, and registers a cleanup
// that stops the background familiar and checks that it is gone (it is
// nobody's child, so nothing else would).
func newDaemonRig(t *testing.T, api *fakeapi.Server) *daemonRig {
	t.Helper()
	repo := gitRepo(t)
	state := t.TempDir()
	env := []string{mainEnv + "=1", "FAMILIAR_CLAUDE=" + testenv.Claude(t),
		"XDG_STATE_HOME=" + filepath.Join(state, "state"), "XDG_DATA_HOME=" + filepath.Join(state, "data")}
	for k, v := range api.Env() {
		env = append(env, k+"="+v)
	}
	r := &daemonRig{t: t, repo: repo, env: env}
	r.dd = filepath.Join(state, "state", "familiar", filepath.Base(repo)+"-"+dataDirHash(repo))
	t.Cleanup(func() {
		info, _ := daemon.ReadInfo(r.dd)
		if out, err := r.familiar("stop", "--workspace", r.repo).CombinedOutput(); err != nil {
			t.Errorf("familiar stop: %v\n%s", err, out)
		}
		if info.PID != 0 && daemon.Alive(info.PID) {
			t.Errorf("the background familiar (pid %d) outlived familiar stop", info.PID)
		}
		// The daemon is nobody's child: a race report (go test -race) or a
		// panic only shows in its stderr file.
		if e, _ := os.ReadFile(filepath.Join(r.dd, daemon.ErrFile)); strings.Contains(string(e), "DATA RACE") || strings.Contains(string(e), "panic:") {
			t.Errorf("the background familiar's stderr:\n%s", e)
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(r.dd, "familiar.log"))
			e, _ := os.ReadFile(filepath.Join(r.dd, daemon.ErrFile))
			t.Logf("daemon log:\n%s\ndaemon stderr:\n%s", tail(string(b), 6000), e)
		}
	})
	return r
}

// dataDirHash is the hash part of workspace.DefaultDataDir.
func dataDirHash(repo string) string {
	d := workspace.DefaultDataDir(repo)
	return d[strings.LastIndexByte(d, '-')+1:]
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (r *daemonRig) familiar(args ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = r.repo
	if r.repoDir != "" {
		cmd.Dir = r.repoDir
	}
	cmd.Env = append(os.Environ(), r.env...)
	return cmd
}

// window starts `familiar serve --stdio` (an editor window) with extra
// environment. Its cleanup closes stdin and waits for the forwarder.
func (r *daemonRig) window(extraEnv ...string) *familiarProc {
	r.t.Helper()
	cmd := r.familiar("serve", "--stdio")
	cmd.Env = append(cmd.Env, extraEnv...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	p := &familiarProc{cmd: cmd, stdin: stdin, stderr: &strings.Builder{}}
	cmd.Stderr = &lockedWriter{b: p.stderr}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	p.client = editor.New(r.t, stdout, stdin)
	p.client.InitSettings = map[string]any{"agentNice": 0} // see startFamiliarIn
	r.t.Cleanup(func() { p.close(r.t) })
	return p
}

// close is the editor going away: stdin closes, the forwarder exits.
func (p *familiarProc) close(t *testing.T) {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-done
		t.Errorf("serve --stdio did not exit after its stdin closed\n%s", p.stderr)
	}
}

func (r *daemonRig) info() daemon.Info {
	r.t.Helper()
	info, err := daemon.ReadInfo(r.dd)
	if err != nil {
		r.t.Fatalf("daemon info: %v", err)
	}
	return info
}

// daemonPIDs lists the background familiars serving this rig's data dir.
func (r *daemonRig) daemonPIDs() []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdline := string(b)
		if strings.Contains(cmdline, "--daemon\x00") && strings.Contains(cmdline, r.dd) {
			if pid := e.Name(); daemon.Alive(atoi(pid)) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

const askingTask = "go\n@@TOOL Bash {\"command\":\"touch reload.txt\",\"description\":\"make it\"}\n@@TEXT Finished after the reload."

// The editor reloads mid-task: its serve --stdio loses stdin while the agent
// waits on a permission. A new serve --stdio sees the same task still
// waiting, on the same claude process, answers the question, and the task
// completes; what the first window missed replays from task/events.
func TestEditorReloadKeepsAgents(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)

	first := r.window()
	first.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	var task protocol.Task
	first.client.Result("task/create", map[string]any{"title": "survive a reload", "description": askingTask}, &task)
	q, _ := first.client.WaitNotification(0, "question", editor.Method("task/question", task.ID))
	lastSeen := seqOf(t, q.Params)
	var before protocol.Task
	first.client.Result("task/get", map[string]any{"id": task.ID}, &before)
	if before.Agent == nil || before.Agent.PID == 0 {
		t.Fatalf("no agent: %+v", before)
	}
	daemonPID := r.info().PID
	first.close(t) // the reload: no shutdown, stdin just ends

	reloaded := time.Now()
	second := r.window()
	second.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	var list protocol.TaskListResult
	second.client.Result("task/list", map[string]any{}, &list)
	t.Logf("reload to all tasks visible: %v", time.Since(reloaded))
	if list.Total != 1 || list.Tasks[0].ID != task.ID {
		t.Fatalf("after the reload: %+v", list)
	}
	got := list.Tasks[0]
	if got.Status != protocol.StatusWaiting || got.PendingQuestion == nil || got.Agent == nil || got.Agent.PID != before.Agent.PID {
		t.Fatalf("after the reload the task is %s, agent %+v (was pid %d)", got.Status, got.Agent, before.Agent.PID)
	}
	if !claudeRunning(before.Agent.PID) {
		t.Fatalf("claude (pid %d) is gone", before.Agent.PID)
	}
	if pid := r.info().PID; pid != daemonPID {
		t.Fatalf("the background familiar changed: pid %d, was %d", pid, daemonPID)
	}
	second.client.Result("task/respond", map[string]any{"id": task.ID, "questionId": got.PendingQuestion.ID, "optionId": "allow"}, nil)
	second.client.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))
	var evs protocol.TaskEventsResult
	second.client.Result("task/events", map[string]any{"id": task.ID, "sinceSeq": lastSeen, "limit": 1000}, &evs)
	var methods []string
	for _, e := range evs.Events {
		methods = append(methods, e.Method)
	}
	if !strings.Contains(strings.Join(methods, " "), "task/completed") {
		t.Errorf("task/events after seq %d: %v", lastSeen, methods)
	}
	// An editor's shutdown/exit ends its session only.
	second.client.Result("shutdown", nil, nil)
	second.client.Notify("exit", nil)
	<-second.client.Done()
	if !daemon.Alive(daemonPID) {
		t.Fatal("an editor's shutdown stopped the background familiar")
	}
}

// Editors started at the same instant all join one background familiar.
func TestSimultaneousStartsJoinOneDaemon(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	for round := range 3 {
		const n = 4
		windows := make([]*familiarProc, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				windows[i] = r.window()
			}()
		}
		wg.Wait()
		var pids []int
		for i, w := range windows {
			m := w.client.Call("initialize", map[string]any{"workspaceRoot": r.repo})
			if m.Error != nil {
				t.Fatalf("round %d: window %d: initialize = %+v\n%s", round, i, m.Error, w.stderr)
			}
			var st protocol.ServerStats
			w.client.Result("server/stats", map[string]any{}, &st)
		}
		pids = append(pids, r.info().PID)
		if d := r.daemonPIDs(); len(d) != 1 {
			t.Fatalf("round %d: %d background familiars: %v", round, len(d), d)
		}
		for _, w := range windows {
			w.close(t)
		}
		if out, err := r.familiar("stop").CombinedOutput(); err != nil {
			t.Fatalf("familiar stop: %v\n%s", err, out)
		}
		if daemon.Alive(pids[0]) {
			t.Fatalf("round %d: familiar stop left pid %d", round, pids[0])
		}
	}
}

// With no client and nothing to do, the background familiar exits by itself
// after idleExitSec.
func TestDaemonExitsWhenIdle(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	w := r.window()
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo,
		"settings": map[string]any{"idleExitSec": 1, "permissionPolicy": map[string]any{"default": "allow"}}}, nil)
	var task protocol.Task
	w.client.Result("task/create", map[string]any{"title": "quick", "description": "@@TEXT done"}, &task)
	w.client.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))
	pid := r.info().PID
	w.close(t)
	testenv.Await(t, 60*time.Second, "the idle familiar to exit", func() bool { return !daemon.Alive(pid) })
	if _, err := daemon.ReadInfo(r.dd); err == nil {
		t.Error("daemon.json outlived the daemon")
	}
	log, _ := os.ReadFile(filepath.Join(r.dd, "familiar.log"))
	if !strings.Contains(string(log), `"why":"idle"`) {
		t.Errorf("the log does not say it stopped for being idle:\n%s", tail(string(log), 3000))
	}
}

// familiar stop stops the agents gracefully; the task is resumable and
// finishes in the next familiar.
func TestFamiliarStopThenResume(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	w := r.window()
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	var task protocol.Task
	w.client.Result("task/create", map[string]any{"title": "stop me", "description": askingTask}, &task)
	w.client.WaitNotification(0, "question", editor.Method("task/question", task.ID))
	var before protocol.Task
	w.client.Result("task/get", map[string]any{"id": task.ID}, &before)
	pid := r.info().PID

	out, err := r.familiar("stop").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "stopped familiar") {
		t.Fatalf("familiar stop: %v\n%s", err, out)
	}
	if daemon.Alive(pid) || claudeRunning(before.Agent.PID) {
		t.Fatalf("after familiar stop: daemon alive %v, claude alive %v", daemon.Alive(pid), claudeRunning(before.Agent.PID))
	}
	select {
	case <-w.client.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the window's connection outlived the familiar")
	}
	w.close(t)

	again := r.window()
	again.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	var stopped protocol.Task
	again.client.Result("task/get", map[string]any{"id": task.ID}, &stopped)
	if stopped.Status != protocol.StatusBlocked || stopped.Blocked == nil || stopped.Blocked.Reason != protocol.BlockedInterrupted {
		t.Fatalf("after familiar stop the task is %s %+v", stopped.Status, stopped.Blocked)
	}
	again.client.Result("task/resume", map[string]any{"id": task.ID}, nil)
	// It continues the same claude session in the same worktree.
	again.client.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))
	var resumed protocol.Task
	again.client.Result("task/get", map[string]any{"id": task.ID}, &resumed)
	if resumed.Agent.SessionID != before.Agent.SessionID || resumed.Worktree.Path != before.Worktree.Path {
		t.Fatalf("resumed elsewhere: %+v %+v", resumed.Agent, resumed.Worktree)
	}
}

// A client of another protocol version is refused, with both versions
// named; a newer binary replaces an idle older familiar.
func TestVersionMismatch(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	first := r.window()
	first.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	oldPID := r.info().PID

	// The editor names its protocol version.
	m := first.client.Call("initialize", map[string]any{"workspaceRoot": r.repo, "protocolVersion": 99})
	if m.Error == nil {
		t.Fatal("initialize again with protocolVersion 99 succeeded")
	}
	probe := r.window()
	m = probe.client.Call("initialize", map[string]any{"workspaceRoot": r.repo, "protocolVersion": 99})
	if m.Error == nil || m.Error.Code != protocol.CodeInvalidParams || !strings.Contains(m.Error.Message, "version 99") ||
		!strings.Contains(m.Error.Message, "speaks version 1") {
		t.Fatalf("initialize with protocolVersion 99 = %+v", m.Error)
	}
	probe.close(t)

	// A familiar binary of protocol 2 meets the busy (a window is
	// connected) familiar of protocol 1.
	newer := []string{"FAMILIAR_TEST_VERSION=9.0.0", "FAMILIAR_TEST_PROTOCOL_VERSION=2"}
	w := r.window(newer...)
	m = w.client.Call("initialize", map[string]any{"workspaceRoot": r.repo})
	if m.Error == nil || !strings.Contains(m.Error.Message, "version 2") || !strings.Contains(m.Error.Message, "speaks version 1") {
		t.Fatalf("a protocol-2 window on a busy protocol-1 familiar: initialize = %+v", m.Error)
	}
	w.close(t)
	if !daemon.Alive(oldPID) {
		t.Fatal("the busy familiar was stopped")
	}

	// Once it is idle, the newer binary replaces it.
	first.close(t)
	var init protocol.InitializeResult
	testenv.Await(t, 60*time.Second, "the newer familiar to replace the idle one", func() bool {
		w := r.window(newer...)
		defer w.close(t)
		m := w.client.Call("initialize", map[string]any{"workspaceRoot": r.repo, "protocolVersion": 2})
		if m.Error != nil {
			return false // the old one had not yet seen the first window go
		}
		json.Unmarshal(m.Result, &init)
		return true
	})
	if init.ServerInfo.Version != "9.0.0" || init.ProtocolVersion != 2 || daemon.Alive(oldPID) {
		t.Fatalf("after replacement: %+v (old pid %d alive %v)", init.ServerInfo, oldPID, daemon.Alive(oldPID))
	}
}

// The background familiar crashes (kill -9) with one task working on its own
// and one waiting on a person. The next familiar continues the first by
// itself; the second waits for its person (blocked{interrupted}).
func TestCrashResumesUnattendedTasks(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	w := r.window()
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	var asking, working protocol.Task
	w.client.Result("task/create", map[string]any{"title": "asks", "description": askingTask}, &asking)
	w.client.WaitNotification(0, "question", editor.Method("task/question", asking.ID))
	w.client.Result("task/create", map[string]any{"title": "works", "description": "think long\n@@DELAY 8s\n@@TEXT Done on my own."}, &working)
	w.client.WaitNotification(0, "working", editor.Method("task/updated", working.ID, `"status":"running"`))
	pid := r.info().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.Await(t, 30*time.Second, "the killed familiar to be gone", func() bool { return !daemon.Alive(pid) })
	w.close(t)

	again := r.window()
	again.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	again.client.WaitNotification(0, "the unattended task completes by itself", editor.Method("task/completed", working.ID))
	var got protocol.Task
	again.client.Result("task/get", map[string]any{"id": asking.ID}, &got)
	if got.Status != protocol.StatusBlocked || got.Blocked == nil || got.Blocked.Reason != protocol.BlockedInterrupted {
		t.Fatalf("the task that waited on a person is %s %+v", got.Status, got.Blocked)
	}
}

// claudeReporting is the real claude behind a wrapper that reports version v
// to --version: how a release familiar was not tested with looks to it.
func claudeReporting(t *testing.T, v string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "claude")
	// familiar subscribes the hook events of the version it is told, and a
	// claude older than the event refuses it (2.1.330 stops at "Unknown hook
	// event PreSkillShellCommand": the task never got its first turn), so the
	// wrapper drops from the session's settings what the claude behind it
	// does not know, as the version it plays would not have refused it.
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '" + v + " (Claude Code)'; exit 0; fi\n" +
		"prev=\nfor a; do\n  if [ \"$prev\" = --settings ]; then\n" +
		"    node -e 'const fs=require(\"fs\"),f=process.argv[1],s=JSON.parse(fs.readFileSync(f));" +
		"if(s.hooks){delete s.hooks.PreSkillShellCommand}fs.writeFileSync(f,JSON.stringify(s))' \"$a\" || exit 1\n" +
		"  fi\n  prev=$a\ndone\nexec " + testenv.Claude(t) + " \"$@\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A newer, untested claude runs, with a warning in initialize, a
// server/message and doctor; an older one is refused naming the oldest
// supported.
func TestClaudeVersionWindow(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()

	r := newDaemonRig(t, api)
	r.env = append(r.env, "FAMILIAR_CLAUDE="+claudeReporting(t, "2.1.999"))
	w := r.window()
	var init protocol.InitializeResult
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo,
		"settings": map[string]any{"permissionPolicy": map[string]any{"default": "allow"}}}, &init)
	if !init.Claude.Available || init.Claude.Support != "newer-untested" || !strings.Contains(init.Claude.Warning, agent.NewestTested) {
		t.Fatalf("claude status for 2.1.999: %+v", init.Claude)
	}
	w.client.WaitNotification(0, "warning", editor.Method("server/message", `"level":"warning"`, "2.1.999"))
	var task protocol.Task
	w.client.Result("task/create", map[string]any{"title": "runs", "description": "@@TEXT fine"}, &task)
	w.client.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))
	out, _ := r.familiar("doctor").CombinedOutput()
	if !strings.Contains(string(out), "newer-untested") {
		t.Errorf("doctor on 2.1.999:\n%s", out)
	}

	old := newDaemonRig(t, api)
	old.env = append(old.env, "FAMILIAR_CLAUDE="+claudeReporting(t, "2.1.150"))
	ow := old.window()
	ow.client.Result("initialize", map[string]any{"workspaceRoot": old.repo}, &init)
	if init.Claude.Available || init.Claude.Support != "too-old" || !strings.Contains(init.Claude.Problem, "oldest supported 2.1.200") {
		t.Fatalf("claude status for 2.1.150: %+v", init.Claude)
	}
	out, _ = old.familiar("doctor").CombinedOutput()
	if !strings.Contains(string(out), "older than the oldest supported 2.1.200") {
		t.Errorf("doctor on 2.1.150:\n%s", out)
	}
}

// An editor that starts serve --stdio outside the repository (VS Code's
// extension host runs in /) still gets the repository's background familiar:
// the forwarder reads the workspace from initialize.
func TestForwarderFindsTheRepositoryFromInitialize(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	r.repoDir = t.TempDir()
	w := r.window()
	var init protocol.InitializeResult
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, &init)
	if init.Workspace.Root != r.repo {
		t.Fatalf("workspace = %+v", init.Workspace)
	}
	pid := r.info().PID
	if pid == w.cmd.Process.Pid {
		t.Fatal("served in the forwarder's process")
	}
	w.close(t)
	if !daemon.Alive(pid) {
		t.Fatal("the background familiar left with the editor")
	}
}

// The agents and the background familiar itself run at agentNice: under
// load they yield the CPU to the editor. Where the kernel has autogroups
// (each session its own scheduling group) the daemon's and each agent's
// session group carry it, since a process's niceness does not reach across
// groups.
func TestAgentsAndDaemonYieldToTheEditor(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	w := r.window()
	defer w.close(t)
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo, "settings": map[string]any{"agentNice": 7}}, nil)
	var task protocol.Task
	w.client.Result("task/create", map[string]any{"title": "yield", "description": askingTask}, &task)
	w.client.WaitNotification(0, "question", editor.Method("task/question", task.ID))
	w.client.Result("task/get", map[string]any{"id": task.ID}, &task)
	if task.Agent == nil || task.Agent.PID == 0 {
		t.Fatalf("no agent: %+v", task)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", task.Agent.PID))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if f[19-3] != "7" { // field 19 is the niceness
		t.Errorf("claude runs at nice %s, want 7", f[19-3])
	}
	autogroup := func(pid int) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/autogroup", pid))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	// The file exists wherever the kernel has autogroups; it reads empty for
	// a process still in the kernel's default group (the test itself, in
	// some containers), but the agent and the daemon each lead a session.
	if _, err := os.Stat("/proc/self/autogroup"); err != nil {
		t.Logf("no autogroups on this kernel (%v): only the agent's niceness is checked", err)
		return
	}
	ownGroup := autogroup(os.Getpid())
	testenv.Await(t, 60*time.Second, "claude's session group at nice 7", func() bool {
		return strings.HasSuffix(autogroup(task.Agent.PID), " nice 7")
	})
	daemonPID := r.info().PID
	testenv.Await(t, 60*time.Second, "the daemon's session group at nice 7", func() bool {
		return strings.HasSuffix(autogroup(daemonPID), " nice 7")
	})
	// It follows the setting both ways (an autogroup may go back to 0).
	w.client.Result("settings/update", map[string]any{"settings": map[string]any{"agentNice": 0}}, nil)
	testenv.Await(t, 60*time.Second, "the daemon's session group back at nice 0", func() bool {
		return strings.HasSuffix(autogroup(daemonPID), " nice 0")
	})
	if got := autogroup(os.Getpid()); got != ownGroup {
		t.Errorf("the test's own session group was changed: %q, was %q", got, ownGroup)
	}
}

// A data dir familiar cannot write gets the editor an answer to its
// initialize that names the dir and what to do, both ways (the forwarder
// used to exit 1 with the reason on its stderr, which editors do not show).
//
// Tests run as root in CI, where permission bits stop nothing, so the dirs
// are unwritable for root too: a data dir whose parent is a regular file
// (it cannot be made), and one on a read-only tmpfs (it exists, but its
// lock file cannot be made: EROFS).
func TestUnwritableDataDirAnswersInitialize(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	bothModes(t, func(t *testing.T, mode serveMode) {
		t.Run("parent is a file", func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "state")
			if err := os.WriteFile(file, []byte("not a directory\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			refusedInitialize(t, mode, api, file, "not a directory", func(string) {})
		})
		t.Run("read-only filesystem", func(t *testing.T) {
			state := t.TempDir()
			mountTmpfs(t, state, 1<<20)
			refusedInitialize(t, mode, api, state, "read-only file system", func(dd string) {
				if err := os.MkdirAll(dd, 0o700); err != nil {
					t.Fatal(err)
				}
				remountReadOnly(t, state)
			})
		})
	})
}

// refusedInitialize starts serve --stdio with XDG_STATE_HOME=state, after
// prepare(data dir), and checks that initialize is answered -32005 naming
// the data dir, the system's reason (want) and what to do, and that nothing
// else is served.
func refusedInitialize(t *testing.T, mode serveMode, api *fakeapi.Server, state, want string, prepare func(dd string)) {
	t.Helper()
	repo := gitRepo(t)
	dd := filepath.Join(state, "familiar", filepath.Base(repo)+"-"+dataDirHash(repo))
	prepare(dd)
	f := startFamiliarIn(t, mode, repo, api, "XDG_STATE_HOME="+state)
	m := f.client.Call("initialize", map[string]any{"workspaceRoot": repo})
	if m.Error == nil || m.Error.Code != protocol.CodeUnavailable || !strings.Contains(m.Error.Message, dd) ||
		!strings.Contains(m.Error.Message, want) || !strings.Contains(m.Error.Message, "--data-dir") {
		t.Fatalf("initialize with data dir %s = %+v, want -32005 naming it, %q and what to do", dd, m.Error, want)
	}
	t.Logf("initialize: %s", m.Error.Message)
	if m := f.client.Call("task/list", map[string]any{}); m.Error == nil {
		t.Fatalf("task/list after the refusal = %s", m.Result)
	}
	f.stdin.Close()
	if err := f.cmd.Wait(); err == nil {
		t.Error("serve --stdio exited 0 after refusing its editor")
	}
}

// A window that connects while a killed background familiar is being
// replaced always gets its initialize answered: 20 times in a row the
// background familiar is killed with SIGKILL and, without waiting for it to
// be gone, a new window initializes. (1 run in 21 once got no answer: the
// killed familiar's listening socket still took connections while its
// threads were exiting, and the forwarder joined it.)
func TestInitializeAnsweredAfterKillNine(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	w := r.window()
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	pid := r.info().PID
	rejoined := 0
	for round := range 20 {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("round %d: kill -9 %d: %v", round, pid, err)
		}
		next := r.window()
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("round %d: the window's serve --stdio:\n%s", round, next.stderr)
			}
		})
		m := next.client.Call("initialize", map[string]any{"workspaceRoot": r.repo})
		if m.Error != nil {
			t.Fatalf("round %d: initialize after kill -9 of pid %d = %v", round, pid, m.Error)
		}
		var st protocol.ServerStats
		next.client.Result("server/stats", map[string]any{}, &st)
		info := r.info()
		if info.PID == pid {
			t.Fatalf("round %d: daemon.json still names the killed familiar (pid %d)", round, pid)
		}
		pid = info.PID
		next.close(t)
		if strings.Contains(next.stderr.String(), "joining again") {
			rejoined++
		}
	}
	w.close(t)
	t.Logf("in %d of 20 rounds the window first joined the dying familiar and then the new one", rejoined)
}

// A data dir too long for a socket's address puts the socket under
// ~/.familiar/run, whatever $TMPDIR says. A cleaner deletes it under the
// running familiar (macOS's does, 3 days untouched under $TMPDIR): the
// familiar listens again, and a new editor window with no $TMPDIR (an SSH
// login) joins it, not a second one; familiar stop reaches it too.
func TestSocketDeletedUnderTheDaemon(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	long := filepath.Join(t.TempDir(), strings.Repeat("s", 60))
	r.env = append(r.env, "XDG_STATE_HOME="+long)
	r.dd = filepath.Join(long, "familiar", filepath.Base(r.repo)+"-"+dataDirHash(r.repo))
	if len(filepath.Join(r.dd, "familiar.sock")) <= 107 {
		t.Fatalf("data dir %s is short enough for its own socket", r.dd)
	}

	first := r.window("TMPDIR=" + t.TempDir())
	first.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	info := r.info()
	if want := workspace.RunDir(os.Getenv("HOME")); filepath.Dir(info.Socket) != want {
		t.Fatalf("socket %s, want one in %s", info.Socket, want)
	}
	if err := os.Remove(info.Socket); err != nil {
		t.Fatal(err)
	}

	second := r.window("TMPDIR=")
	second.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	var st protocol.ServerStats
	second.client.Result("server/stats", map[string]any{}, &st)
	if pid := r.info().PID; pid != info.PID {
		t.Errorf("the second window reached familiar pid %d, not %d", pid, info.PID)
	}
	if d := r.daemonPIDs(); len(d) != 1 {
		t.Errorf("%d background familiars: %v", len(d), d)
	}
	log, _ := os.ReadFile(filepath.Join(r.dd, "familiar.log"))
	if !strings.Contains(string(log), "listening there again") {
		t.Errorf("the log does not say the familiar listened again:\n%s", tail(string(log), 3000))
	}
}

// The CPU the background familiar uses while its agent idles, waiting on a
// question (a measurement, not a check: run with
// FAMILIAR_MEASURE_IDLE_CPU=<seconds>, once as built and once with
// -tags portableprocs, which reads the PTY in blocking mode as macOS does).
func TestMeasureIdleAgentDaemonCPU(t *testing.T) {
	secs, err := strconv.Atoi(os.Getenv("FAMILIAR_MEASURE_IDLE_CPU"))
	if err != nil || secs <= 0 {
		t.Skip("a measurement: set FAMILIAR_MEASURE_IDLE_CPU=<seconds>")
	}
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	w := r.window()
	defer w.close(t)
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	var task protocol.Task
	w.client.Result("task/create", map[string]any{"title": "idle", "description": askingTask}, &task)
	w.client.WaitNotification(0, "question", editor.Method("task/question", task.ID))
	pid := r.info().PID
	cpu := func() time.Duration {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
	}
	time.Sleep(2 * time.Second) // let the start settle: this is the measurement's window, not a wait for a condition
	before, start := cpu(), time.Now()
	time.Sleep(time.Duration(secs) * time.Second)
	used, wall := cpu()-before, time.Since(start)
	t.Logf("background familiar (pid %d) with its agent waiting on a question: %v CPU in %v (%.2f %%)", pid, used, wall.Round(time.Millisecond), 100*used.Seconds()/wall.Seconds())
}
