package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
)

// stateEnv gives familiar state and data dirs of the test's own, so a
// second familiar can be started on the same ones.
func stateEnv(t *testing.T) []string {
	state := t.TempDir()
	return []string{"XDG_STATE_HOME=" + filepath.Join(state, "state"), "XDG_DATA_HOME=" + filepath.Join(state, "data")}
}

// seqOf returns the seq of a notification's params.
func seqOf(t *testing.T, params json.RawMessage) int64 {
	t.Helper()
	var s struct {
		Seq *int64 `json:"seq"`
	}
	if err := json.Unmarshal(params, &s); err != nil || s.Seq == nil {
		t.Fatalf("notification without a seq: %s", params)
	}
	return *s.Seq
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func maxStoredSeq(events map[int64]protocol.Event) int64 {
	var m int64
	for seq := range events {
		m = max(m, seq)
	}
	return m
}

// claudeRunning reports whether pid is (still) a claude process.
func claudeRunning(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && strings.Contains(string(b), "claude")
}

// familiar is killed with SIGKILL while several agents pour out terminal
// output, tool results and verbose hook payloads. Every notification the
// client received had been committed before it was sent, so a new familiar
// on the same dirs opens the store and replays each of them from task/events
// with the same seq, method and params. Raw terminal output is the exception
// by design: it is in the task's log file (task/output pages it), so
// task/output notifications take a seq but are not written to the store; no
// seq they took is ever handed out again.
func TestKillNineDuringHeavyEventWritesKeepsEverySeenEvent(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	env := stateEnv(t)

	// In-process (noDaemon): the test kills the familiar it holds.
	first := startFamiliarIn(t, noDaemon, repo, api, env...)
	c := first.client
	c.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
	c.Result("settings/update", map[string]any{"settings": map[string]any{
		"maxConcurrent": 3, "permissionPolicy": map[string]any{"default": "allow"}}}, nil)
	// Each tool call prints ~200 KB; PostToolUse hook payloads carry up to
	// 30 KB of it, and the TUI redraws the transcript after each.
	desc := "Print a lot.\n" +
		strings.Repeat(`@@TOOL Bash {"command":"seq 1 40000","description":"print numbers"}`+"\n", 8) +
		"@@TEXT " + strings.Repeat("All printed. ", 400)
	var ids []string
	for i := range 3 {
		var task protocol.Task
		c.Result("task/create", map[string]any{"title": "heavy " + strconv.Itoa(i), "description": desc,
			"directives": map[string]any{"verbose": true}}, &task)
		ids = append(ids, task.ID)
	}
	// Kill in the middle: three tool calls done, many more to come.
	next := 0
	for range 3 {
		_, next = c.WaitNotification(next, "a PostToolUse hook", editor.Method("task/hook", `"name":"PostToolUse"`))
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Everything familiar wrote before it died is read before Wait closes
	// the pipe.
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("familiar's stdout did not end after SIGKILL")
	}
	first.cmd.Wait()

	seen := map[int64]editor.Message{}
	var maxSeq int64
	pids := map[int]bool{}
	for _, n := range c.Notifications() {
		seq := seqOf(t, n.Params)
		if _, dup := seen[seq]; dup {
			t.Fatalf("seq %d sent twice", seq)
		}
		maxSeq = max(maxSeq, seq)
		if n.Method == protocol.NotifyTaskOutput {
			continue
		}
		seen[seq] = n
		if n.Method == protocol.NotifyTaskUpdated {
			var u protocol.TaskUpdatedNotification
			json.Unmarshal(n.Params, &u)
			if u.Task.Agent != nil && u.Task.Agent.PID > 0 {
				pids[u.Task.Agent.PID] = true
			}
		}
	}
	t.Logf("the client saw %d notifications, up to seq %d, before SIGKILL", len(seen), maxSeq)
	t.Cleanup(func() {
		// Never leave an agent of the killed familiar behind, whatever failed.
		for pid := range pids {
			if claudeRunning(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	second := startFamiliarIn(t, noDaemon, repo, api, env...)
	c2 := second.client
	c2.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
	var list protocol.TaskListResult
	c2.Result("task/list", map[string]any{}, &list)
	if list.Total != len(ids) {
		t.Errorf("after the restart task/list has %d tasks, want %d", list.Total, len(ids))
	}
	stored := map[int64]protocol.Event{}
	for since := int64(0); since < maxSeq; {
		var page protocol.TaskEventsResult
		c2.Result("task/events", map[string]any{"sinceSeq": since, "limit": protocol.MaxEventsLimit}, &page)
		if len(page.Events) == 0 {
			break
		}
		for _, e := range page.Events {
			stored[e.Seq] = e
		}
		since = page.Events[len(page.Events)-1].Seq
	}
	t.Logf("after the restart task/events has %d events up to seq %d", len(stored), maxStoredSeq(stored))
	missing := 0
	for seq, n := range seen {
		e, ok := stored[seq]
		switch {
		case !ok:
			missing++
			if missing <= 5 {
				t.Errorf("seq %d (%s), which the client saw, is not in task/events after the restart", seq, n.Method)
			}
		case e.Method != n.Method:
			t.Errorf("seq %d was %s, task/events replays %s", seq, n.Method, e.Method)
		case !jsonEqual(e.Params, n.Params):
			t.Errorf("seq %d %s: sent %.300s, replayed %.300s", seq, n.Method, n.Params, e.Params)
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d seen events are missing after the restart", missing, len(seen))
	}
	for _, n := range c2.Notifications() {
		if seq := seqOf(t, n.Params); seq <= maxSeq {
			t.Errorf("after the restart %s has seq %d, which the killed familiar had already sent (up to %d)", n.Method, seq, maxSeq)
		}
	}

	// The killed familiar's agents lost their terminal with it and end; no
	// event says so, hence the polling.
	deadline := time.Now().Add(30 * time.Second)
	for pid := range pids {
		for claudeRunning(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if claudeRunning(pid) {
			t.Errorf("agent pid %d of the killed familiar still runs", pid)
		}
	}
}

// The disk holding a task's output log fills up while the agent writes: the
// task is blocked with reason agent_failed and the write error in its
// detail, and familiar keeps serving.
//
// The full disk is an 8 KiB tmpfs mounted on the task's own dir before its
// agent starts (the task waits in the queue behind one that holds the only
// slot), with the CLI's config dir kept on the real disk through a symlink,
// so only familiar's log write can run out of space.
func TestOutputLogWriteFailureBlocksTheTask(t *testing.T) {
	mountTmpfs(t, t.TempDir(), 4<<10) // skip (or fail in CI) before any agent runs
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	f := startFamiliar(t, repo, api, stateEnv(t)...)
	c := f.client
	var init protocol.InitializeResult
	c.Result("initialize", map[string]any{"workspaceRoot": repo}, &init)
	c.Result("settings/update", map[string]any{"settings": map[string]any{"maxConcurrent": 1}}, nil)

	var holder protocol.Task
	c.Result("task/create", map[string]any{"title": "hold the slot",
		"description": "@@TOOL Bash {\"command\":\"touch held.txt\"}\n@@TEXT held"}, &holder)
	c.WaitNotification(0, "the holder's question", editor.Method("task/question", holder.ID))

	var victim protocol.Task
	c.Result("task/create", map[string]any{"title": "fill the disk",
		"description": strings.Repeat(`@@TOOL Bash {"command":"seq 1 3000","description":"print numbers"}`+"\n", 4) +
			"@@TEXT " + strings.Repeat(`A long answer that the terminal draws line by line.\n`, 200),
		"permissionPolicy": map[string]any{"default": "allow"}}, &victim)
	dir := filepath.Join(init.Workspace.DataDir, "tasks", victim.ID)
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the queued task's dir exists before it starts (%v): the test cannot mount on it in time", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mountTmpfs(t, dir, 8<<10)
	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "claude")); err != nil {
		t.Fatal(err)
	}

	c.Result("task/cancel", map[string]any{"id": holder.ID}, nil)
	blocked := editor.Method("task/updated", victim.ID, `"status":"blocked"`)
	completed := editor.Method("task/completed", victim.ID)
	c.WaitNotification(0, "the victim blocked", func(m editor.Message) bool { return blocked(m) || completed(m) })
	var got protocol.Task
	c.Result("task/get", map[string]any{"id": victim.ID}, &got)
	if got.Status != protocol.StatusBlocked {
		var out protocol.TaskOutputResult
		c.Result("task/output", map[string]any{"id": victim.ID}, &out)
		t.Fatalf("the victim ended %s with a log of %d bytes on a full disk", got.Status, out.Size)
	}
	if got.Status != protocol.StatusBlocked || got.Blocked == nil || got.Blocked.Reason != protocol.BlockedAgentFailed {
		t.Fatalf("victim = %s %+v, want blocked agent_failed", got.Status, got.Blocked)
	}
	t.Logf("blocked.detail: %s", got.Blocked.Detail)
	if !strings.HasPrefix(got.Blocked.Detail, agent.ProblemOutputLog) || !strings.Contains(got.Blocked.Detail, "no space left on device") {
		t.Errorf("blocked.detail = %q, want the output log's write error", got.Blocked.Detail)
	}
	c.WaitNotification(0, "a warning", editor.Method("server/message", `"level":"warning"`, "no space left on device"))

	// familiar is still serving: the task's record and other requests work.
	var out protocol.TaskOutputResult
	c.Result("task/output", map[string]any{"id": victim.ID}, &out)
	if out.Size == 0 || out.Size > 8<<10 {
		t.Errorf("the log kept %d bytes, want what fitted on the disk", out.Size)
	}
	var list protocol.TaskListResult
	c.Result("task/list", map[string]any{}, &list)
	if list.Total != 2 {
		t.Errorf("task/list = %d tasks, want 2", list.Total)
	}
	var holderNow protocol.Task
	c.Result("task/get", map[string]any{"id": holder.ID}, &holderNow)
	if holderNow.Status != protocol.StatusCancelled {
		t.Errorf("holder = %s", holderNow.Status)
	}
}

// Titles full of shell and git syntax reach git, the CLI, the prompt and
// commit messages, and do nothing: no file appears, HOME survives, branch and
// directory names are slugs. Paths a client passes (hints.files, task/diff)
// cannot leave the worktree or reach .git, and task/output takes no path at
// all.
func TestHostileTitlesAndPathsAreInert(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	// If `$(rm -rf ~)` ever ran, it would only empty this.
	home := t.TempDir()
	canary := filepath.Join(home, "canary")
	if err := os.WriteFile(canary, []byte("still here"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(stateEnv(t), "HOME="+home)
	f := startFamiliar(t, repo, api, env...)
	c := f.client
	var init protocol.InitializeResult
	c.Result("initialize", map[string]any{"workspaceRoot": repo}, &init)
	c.Result("settings/update", map[string]any{"settings": map[string]any{"maxConcurrent": 4}}, nil)

	titles := []string{
		"--upload-pack=touch x",
		"$(rm -rf ~)",
		"`touch x`; touch x && echo $(touch x) | sh -c 'touch x'",
		"-b x --exec=touch x ../../x",
	}
	tasks := map[string]string{} // id → title
	for _, title := range titles {
		var task protocol.Task
		c.Result("task/create", map[string]any{"title": title, "description": "@@TEXT Nothing to do."}, &task)
		if task.Title != title {
			t.Errorf("title %q stored as %q", title, task.Title)
		}
		tasks[task.ID] = title
	}
	slug := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	var worktrees []string
	for id, title := range tasks {
		c.WaitNotification(0, "completion of "+title, editor.Method("task/completed", id))
		var task protocol.Task
		c.Result("task/get", map[string]any{"id": id}, &task)
		if task.Worktree == nil {
			t.Fatalf("%q: no worktree", title)
		}
		wt := task.Worktree
		worktrees = append(worktrees, wt.Path)
		base := filepath.Base(wt.Path)
		if !slug.MatchString(base) || !strings.HasPrefix(wt.Path, init.Workspace.WorktreesDir+string(filepath.Separator)) {
			t.Errorf("%q: worktree at %s, want a slug dir under %s", title, wt.Path, init.Workspace.WorktreesDir)
		}
		branchName, ok := strings.CutSuffix(wt.Branch, base)
		if !ok || strings.HasPrefix(wt.Branch, "-") || strings.ContainsAny(branchName, " $`;&|'\\") {
			t.Errorf("%q: branch %q is not <prefix><dir name %s>", title, wt.Branch, base)
		}
		if out, err := exec.Command(testenv.Git(t), "check-ref-format", "--branch", wt.Branch).CombinedOutput(); err != nil {
			t.Errorf("%q: branch %q: %v %s", title, wt.Branch, err, out)
		}
	}
	if b, err := os.ReadFile(canary); err != nil || string(b) != "still here" {
		t.Fatalf("HOME was touched: %v", err)
	}
	cwd, _ := os.Getwd()
	for _, root := range append([]string{repo, home, init.Workspace.DataDir, init.Workspace.WorktreesDir}, worktrees...) {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "x" {
				t.Errorf("a title ran a command: %s exists", path)
			}
			return nil
		})
	}
	if _, err := os.Lstat(filepath.Join(cwd, "x")); err == nil {
		t.Errorf("a title ran a command: %s exists", filepath.Join(cwd, "x"))
	}

	var anyID string
	for id := range tasks {
		anyID = id
		break
	}
	escapes := []string{"../../etc/passwd", "/etc/passwd", ".git/config", "./.git/config", "a/../../x", "sub/../.git/HEAD", "..", ".git"}
	for _, p := range escapes {
		m := c.Call("task/diff", map[string]any{"id": anyID, "path": p})
		wantInvalid(t, "task/diff path "+p, m, "path")
		m = c.Call("task/create", map[string]any{"title": "hint", "description": "@@TEXT no",
			"hints": map[string]any{"files": []string{"README.md", p}}})
		wantInvalid(t, "hints.files "+p, m, "hints.files[1]")
	}
	// A path inside is fine (and has no diff).
	var diff protocol.TaskDiffResult
	c.Result("task/diff", map[string]any{"id": anyID, "path": "README.md"}, &diff)

	// task/output reads the task's own log by offset: an id is looked up, a
	// path is not a param (an unknown field is ignored), and offsets stay
	// inside the log.
	m := c.Call("task/output", map[string]any{"id": "../../../etc/passwd"})
	if m.Error == nil || m.Error.Code != protocol.CodeNotFound {
		t.Errorf("task/output with a path as id = %+v", m.Error)
	}
	var out protocol.TaskOutputResult
	c.Result("task/output", map[string]any{"id": anyID, "path": "/etc/passwd", "limit": 1 << 20}, &out)
	if strings.Contains(out.Data, "root:") || out.Size == 0 {
		t.Errorf("task/output with a path param read %d bytes: %.200q", out.Size, out.Data)
	}
	wantInvalid(t, "negative offset", c.Call("task/output", map[string]any{"id": anyID, "offset": -1}), "offset")
	// The task may still be writing: an offset a gigabyte past what was
	// read is past the end whatever it wrote since.
	wantInvalid(t, "offset past the end", c.Call("task/output", map[string]any{"id": anyID, "offset": out.Size + 1<<30}), "offset")
}

func wantInvalid(t *testing.T, what string, m editor.Message, field string) {
	t.Helper()
	var data struct{ Field string }
	if m.Error != nil {
		json.Unmarshal(m.Error.Data, &data)
	}
	if m.Error == nil || m.Error.Code != protocol.CodeInvalidParams || data.Field != field {
		t.Errorf("%s: got %+v, want -32602 on %s", what, m.Error, field)
	}
}
