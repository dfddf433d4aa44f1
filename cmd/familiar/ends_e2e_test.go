package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
)

// Issue 22, through the binary and its background familiar: a blocked task
// is announced with task/completed (success false, the reason, what to do).
func TestBlockedTaskIsAnnounced(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	w := r.window()
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	var task protocol.Task
	w.client.Result("task/create", map[string]any{"title": "spender", "maxBudgetUsd": 0.0001,
		"description": "go\n@@TOOL Bash {\"command\":\"true\"}\n@@TEXT finished"}, &task)
	_, next := w.client.WaitNotification(0, "blocked", editor.Method("task/updated", task.ID, `"status":"blocked"`))
	blockedAt := time.Now()
	m, _ := w.client.WaitNotification(next-1, "task/completed", editor.Method("task/completed", task.ID))
	if d := time.Since(blockedAt); d > 5*time.Second {
		t.Errorf("task/completed %s after the block", d)
	}
	var c protocol.TaskCompletedNotification
	if err := json.Unmarshal(m.Params, &c); err != nil {
		t.Fatal(err)
	}
	if c.Result.Success || c.Status != protocol.StatusBlocked || c.Reason != protocol.BlockedBudget || !strings.Contains(c.Detail, "maxBudgetUsd") {
		t.Errorf("task/completed = %s", m.Params)
	}
	// The same in the replay a reconnecting client reads.
	var evs protocol.TaskEventsResult
	w.client.Result("task/events", map[string]any{"id": task.ID, "sinceSeq": 0}, &evs)
	found := false
	for _, e := range evs.Events {
		found = found || e.Method == "task/completed" && strings.Contains(string(e.Params), `"reason":"budget"`)
	}
	if !found {
		t.Error("task/events has no task/completed of the block")
	}
}

// Issue 22, through the binary and its background familiar: a merge that
// takes a while (a git hook the test holds) owns the task. A task/resume
// and a task/send meanwhile are refused naming the merge, and claude does
// not start in the task's worktree.
func TestMergeInProgressOwnsTheTask(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	w := r.window()
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo,
		"settings": map[string]any{"permissionPolicy": map[string]any{"default": "allow"}}}, nil)
	var task protocol.Task
	w.client.Result("task/create", map[string]any{"title": "slow merge",
		"description": "go\n@@TOOL Bash {\"command\":\"echo merged > merged.txt\"}\n@@TEXT Wrote merged.txt."}, &task)
	w.client.WaitNotification(0, "completed", editor.Method("task/completed", task.ID, `"success":true`))
	var done protocol.Task
	w.client.Result("task/get", map[string]any{"id": task.ID}, &done)
	if done.Status != protocol.StatusMerging || done.Worktree == nil || done.Agent == nil || done.Result == nil || done.Result.NoChanges {
		t.Fatalf("finished task = %s %+v %+v", done.Status, done.Worktree, done.Result)
	}
	testenv.Await(t, 30*time.Second, "the finished agent to go", func() bool { return !claudeRunning(done.Agent.PID) })
	requests := len(api.Requests())

	// The base's ref update waits in a reference-transaction hook until
	// the test writes to a fifo: a merge held open for as long as needed.
	hooks := filepath.Join(r.repo, ".git", "hooks")
	dir := t.TempDir()
	entered, release := filepath.Join(dir, "entered"), filepath.Join(dir, "release")
	if err := syscall.Mkfifo(release, 0o600); err != nil {
		t.Fatal(err)
	}
	hook := "#!/bin/sh\n[ \"$1\" = prepared ] || exit 0\nwhile read -r old new ref; do\n" +
		"  if [ \"$ref\" = refs/heads/main ]; then : > '" + entered + "'; read -r x < '" + release + "'; fi\ndone\nexit 0\n"
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hooks, "reference-transaction"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	released := false
	releaseMerge := func() {
		if released {
			return
		}
		released = true
		// Non-blocking: with no hook reading (it never ran), nothing waits.
		f, err := os.OpenFile(release, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Logf("release the merge: %v", err)
			return
		}
		f.WriteString("go\n")
		f.Close()
	}
	defer releaseMerge() // never leave git (and the daemon's merge) hanging

	before := len(w.client.Notifications())
	mergeID := w.client.Send("task/merge", map[string]any{"id": task.ID})
	testenv.Await(t, 60*time.Second, "the merge to reach the base's ref update", func() bool {
		_, err := os.Stat(entered)
		return err == nil
	})
	for _, call := range []struct {
		method string
		params map[string]any
	}{
		{"task/resume", map[string]any{"id": task.ID}},
		{"task/send", map[string]any{"id": task.ID, "text": "one more thing"}},
	} {
		m := w.client.Call(call.method, call.params)
		if m.Error == nil || m.Error.Code != protocol.CodeFailedPrecondition || !strings.Contains(m.Error.Message, "merge of this task is in progress") {
			t.Errorf("%s during the merge: %+v %s, want -32003 naming the merge", call.method, m.Error, m.Result)
		}
	}
	// Nothing started: no process works in the worktree, the task keeps
	// its finished agent and nothing asked the model.
	if pids := processesIn(done.Worktree.Path); len(pids) > 0 {
		t.Errorf("processes in the worktree during the merge: %v", pids)
	}
	var during protocol.Task
	w.client.Result("task/get", map[string]any{"id": task.ID}, &during)
	if during.Status != protocol.StatusMerging || during.Agent == nil || during.Agent.PID != done.Agent.PID {
		t.Errorf("during the merge the task is %s with agent %+v", during.Status, during.Agent)
	}

	releaseMerge()
	m := w.client.Response(mergeID)
	if m.Error != nil {
		t.Fatalf("task/merge: %v", m.Error)
	}
	var merged protocol.Task
	if err := json.Unmarshal(m.Result, &merged); err != nil || merged.Status != protocol.StatusMerged {
		t.Fatalf("task/merge = %s (%v)", m.Result, err)
	}
	if got := gitOut(t, r.repo, "show", "HEAD:merged.txt"); got != "merged" {
		t.Errorf("merged.txt on main = %q", got)
	}
	if pids := processesIn(done.Worktree.Path); len(pids) > 0 {
		t.Errorf("processes in the worktree after the merge: %v", pids)
	}
	if n := len(api.Requests()); n != requests {
		t.Errorf("the model got %d requests during and after the merge", n-requests)
	}
	for _, n := range w.client.Notifications()[before:] {
		if editor.Method("task/updated", task.ID, `"status":"queued"`)(n) || editor.Method("task/updated", task.ID, `"status":"starting"`)(n) {
			t.Errorf("the task was started again: %s", n.Params)
		}
	}
}

// processesIn lists the processes whose working directory is dir or below.
func processesIn(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			pids = append(pids, pid)
		}
	}
	return pids
}
