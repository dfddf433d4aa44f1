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

	"github.com/familiar-dev/familiar/daemon"
	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
)

// holdRefUpdate makes the base's ref update wait, in git's
// reference-transaction hook at state (prepared: before the ref moves;
// committed: after), until release is called: exit is the hook's status
// then (non-zero at prepared aborts the update). entered exists once git
// is held.
func holdRefUpdate(t *testing.T, repo, state string, exit int) (entered string, release func()) {
	t.Helper()
	hooks := filepath.Join(repo, ".git", "hooks")
	dir := t.TempDir()
	entered, fifo := filepath.Join(dir, "entered"), filepath.Join(dir, "release")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	hook := "#!/bin/sh\n[ \"$1\" = " + state + " ] || exit 0\nheld=\nwhile read -r old new ref; do\n" +
		"  if [ \"$ref\" = refs/heads/main ]; then held=1; fi\ndone\n" +
		"[ -n \"$held\" ] || exit 0\n: > '" + entered + "'\nread -r x < '" + fifo + "'\nexit " + strconv.Itoa(exit) + "\n"
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hooks, "reference-transaction"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		os.Remove(filepath.Join(hooks, "reference-transaction"))
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return // nothing reads: the hook never ran
		}
		f.WriteString("go\n")
		f.Close()
	}
	t.Cleanup(release)
	return entered, release
}

// Issue 34, through the background familiar: familiar is killed (kill -9)
// in the middle of task/merge, before or after git moved main. The next
// familiar settles the task by what main holds — merged (and undoable) if
// the ref moved, still ready to merge if not — so main and familiar never
// disagree, and says so.
func TestCrashDuringMergeSettlesOnStart(t *testing.T) {
	for _, tc := range []struct {
		name, state string
		exit        int
		moved       bool
	}{
		{"after main moved", "committed", 0, true},
		{"before main moved", "prepared", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := fakeapi.Start(fakeapi.PromptScript())
			defer api.Close()
			r := newDaemonRig(t, api)
			w := r.window()
			w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo,
				"settings": map[string]any{"permissionPolicy": map[string]any{"default": "allow"}}}, nil)
			var task protocol.Task
			w.client.Result("task/create", map[string]any{"title": "Add merged.txt",
				"description": "go\n@@TOOL Bash {\"command\":\"echo merged > merged.txt\"}\n@@TEXT Wrote merged.txt."}, &task)
			w.client.WaitNotification(0, "completed", editor.Method("task/completed", task.ID, `"success":true`))
			var done protocol.Task
			w.client.Result("task/get", map[string]any{"id": task.ID}, &done)
			testenv.Await(t, 30*time.Second, "the finished agent to go", func() bool { return done.Agent == nil || !claudeRunning(done.Agent.PID) })
			before := gitOut(t, r.repo, "rev-parse", "main")
			if !tc.moved {
				// main not checked out: its move is the ref update alone,
				// so a stop before it leaves nothing half-done (a checkout
				// of main would already have its files updated by git's
				// fast-forward: familiar then refuses its dirty checkout).
				gitOut(t, r.repo, "checkout", "-q", "-b", "elsewhere")
			}

			entered, release := holdRefUpdate(t, r.repo, tc.state, tc.exit)
			w.client.Send("task/merge", map[string]any{"id": task.ID})
			testenv.Await(t, 60*time.Second, "the merge to reach main's ref update", func() bool {
				_, err := os.Stat(entered)
				return err == nil
			})
			pid := r.info().PID
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			testenv.Await(t, 30*time.Second, "the killed familiar to be gone", func() bool { return !daemon.Alive(pid) })
			w.close(t)
			release()
			// git (an orphan now) finishes what the hook let it do.
			want := before
			if tc.moved {
				testenv.Await(t, 30*time.Second, "main to hold the merge", func() bool { return gitOut(t, r.repo, "rev-parse", "main") != before })
				want = gitOut(t, r.repo, "rev-parse", "main")
			}

			again := r.window()
			again.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
			var got protocol.Task
			again.client.Result("task/get", map[string]any{"id": task.ID}, &got)
			if now := gitOut(t, r.repo, "rev-parse", "main"); now != want {
				t.Fatalf("main = %s, want %s", now, want)
			}
			var evs protocol.TaskEventsResult
			again.client.Result("task/events", map[string]any{"id": task.ID, "sinceSeq": 0}, &evs)
			said := ""
			for _, e := range evs.Events {
				if e.Method == protocol.NotifyServerMessage && strings.Contains(string(e.Params), "stopped in the middle of merging") {
					said = string(e.Params)
				}
			}
			if tc.moved {
				if got.Status != protocol.StatusMerged || got.UndoableUntil.IsZero() {
					t.Fatalf("after the restart the task is %s (undoable until %v), main has its merge", got.Status, got.UndoableUntil)
				}
				if !strings.Contains(said, "the task is merged") {
					t.Errorf("the person was not told the merge was found done: %q", said)
				}
				var undone protocol.Task
				again.client.Result("task/undo", map[string]any{"id": task.ID}, &undone)
				if undone.Status != protocol.StatusMerging || gitOut(t, r.repo, "rev-parse", "main") != before {
					t.Errorf("task/undo after the restart: %s, main %s (want %s)", undone.Status, gitOut(t, r.repo, "rev-parse", "main"), before)
				}
			} else {
				if got.Status != protocol.StatusMerging {
					t.Fatalf("after the restart the task is %s, main does not have it", got.Status)
				}
				if !strings.Contains(said, "still ready to merge") {
					t.Errorf("the person was not told the merge did not happen: %q", said)
				}
				var merged protocol.Task
				again.client.Result("task/merge", map[string]any{"id": task.ID}, &merged)
				if merged.Status != protocol.StatusMerged || gitOut(t, r.repo, "show", "main:merged.txt") != "merged" {
					t.Errorf("task/merge after the restart: %s", merged.Status)
				}
			}
		})
	}
}

// Issue 34, through the background familiar: familiar is killed while the
// merge queue's verify command runs (a tree with a setsid child). The next
// familiar stops what the verify left running, and queue/status says the
// queue was interrupted, what merged and what did not; the audit has the
// queue's end.
func TestCrashDuringQueueVerify(t *testing.T) {
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	r := newDaemonRig(t, api)
	w := r.window()
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo,
		"settings": map[string]any{"permissionPolicy": map[string]any{"default": "allow"}}}, nil)
	var task protocol.Task
	w.client.Result("task/create", map[string]any{"title": "Add v.txt",
		"description": "go\n@@TOOL Bash {\"command\":\"echo v > v.txt\"}\n@@TEXT Wrote v.txt."}, &task)
	w.client.WaitNotification(0, "completed", editor.Method("task/completed", task.ID, `"success":true`))
	pids := filepath.Join(t.TempDir(), "pids")
	verify := "setsid sleep 300 & echo $! > " + pids + ".tmp; mv " + pids + ".tmp " + pids + "; sleep 300"
	w.client.Result("queue/merge", map[string]any{"verify": verify}, nil)
	testenv.Await(t, 60*time.Second, "the verify command to start", func() bool {
		_, err := os.Stat(pids)
		return err == nil
	})
	b, _ := os.ReadFile(pids)
	child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	pid := r.info().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.Await(t, 30*time.Second, "the killed familiar to be gone", func() bool { return !daemon.Alive(pid) })
	w.close(t)
	if syscall.Kill(child, 0) != nil {
		t.Fatalf("the verify's setsid child %d died with familiar: the test proves nothing", child)
	}

	again := r.window()
	again.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
	testenv.Await(t, 60*time.Second, "the verify's setsid child to be stopped", func() bool {
		return syscall.Kill(child, 0) != nil || zombieProc(child)
	})
	var st protocol.QueueStatusResult
	again.client.Result("queue/status", map[string]any{}, &st)
	if st.Queue == nil || st.Queue.State != protocol.QueueCancelled || !strings.Contains(st.Queue.Interrupted, "Not merged: Add v.txt") {
		b, _ := json.Marshal(st.Queue)
		t.Fatalf("queue/status after the restart = %s", b)
	}
	var got protocol.Task
	again.client.Result("task/get", map[string]any{"id": task.ID}, &got)
	if got.Status != protocol.StatusMerging {
		t.Errorf("the task is %s, want still ready to merge", got.Status)
	}
	out, err := r.familiar("audit", "export").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"queue.ended"`) || !strings.Contains(string(out), `"interrupted":true`) {
		t.Errorf("the audit has no end of the interrupted queue:\n%s", out)
	}
}

// zombieProc reports a process that has exited but not been reaped.
func zombieProc(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}
