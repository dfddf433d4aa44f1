package orchestrator_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// queueScript answers tasks from their @@ directives, and the merge queue's
// hand-back (a follow-up naming "familiar's merge queue") with the command
// of the task's "FIX: <command>" line, then "Fixed.".
func queueScript() fakeapi.Script {
	prompts := fakeapi.PromptScript()
	return func(req fakeapi.Request) fakeapi.Reply {
		if req.IsSideRequest() || !strings.Contains(req.LastUserText(), "familiar's merge queue") {
			return prompts(req)
		}
		if len(req.ToolResults()) > 0 {
			return fakeapi.Reply{Text: "Fixed."}
		}
		for _, m := range req.Messages {
			for _, b := range m.Content {
				for _, line := range strings.Split(b.Text, "\n") {
					if fix, ok := strings.CutPrefix(line, "FIX: "); ok {
						return fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{"command": fix}}}}
					}
				}
			}
		}
		return fakeapi.Reply{Text: "Nothing to fix."}
	}
}

// writes is a task's script: one command, then done; fix is what its agent
// runs when the queue hands it back.
func writes(cmd, fix string) string {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	s := "go\n@@TOOL Bash " + string(b) + "\n@@TEXT Done."
	if fix != "" {
		s += "\nFIX: " + fix
	}
	return s
}

func queueNote(state protocol.QueueState) func(note) bool {
	return is(protocol.NotifyQueueUpdated, `"state":"`+string(state)+`"`)
}

func openQueue(t testing.TB, timeoutSec int) *env {
	t.Helper()
	return openQueueWith(t, &protocol.SettingsUpdate{CommandTimeoutSec: &timeoutSec})
}

// openQueueWith opens a repository with shared.txt committed, every call
// allowed, and settings.
func openQueueWith(t testing.TB, settings *protocol.SettingsUpdate) *env {
	t.Helper()
	settings.PermissionPolicy = &protocol.Policy{Default: protocol.PolicyAllow}
	e := openWith(t, nil, settings, queueScript())
	os.WriteFile(filepath.Join(e.repo, "shared.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	gitIn(t, e.repo, "add", "-A")
	gitIn(t, e.repo, "commit", "-qm", "shared")
	return e
}

func finished(t *testing.T, e *env, title, script string, priority int) *protocol.Task {
	t.Helper()
	task := e.create(t, title, script, priority)
	e.notes.wait(t, title+" finished", statusIs(task.ID, protocol.StatusMerging))
	return task
}

// TestQueueMergesHandsBackAndUndoes: A merges; B conflicts with the new base
// and goes back to its agent, which resolves it, then merges; C's verify
// fails once, goes back, is fixed, merges. The base ends with all three,
// and queue/undo takes the three merges back, leaving the base exactly as
// it was, each undone merge kept under refs/familiar/undo.
func TestQueueMergesHandsBackAndUndoes(t *testing.T) {
	e := openQueue(t, 60)
	ctx := context.Background()
	a := finished(t, e, "A", writes(`printf 'one\nA\nthree\n' > shared.txt`, ""), 3)
	b := finished(t, e, "B", writes(`printf 'one\nB\nthree\n' > shared.txt`, `printf 'one\nA and B\nthree\n' > shared.txt`), 2)
	c := finished(t, e, "C", writes(`printf 'C\n' > c.txt`, `touch ok-marker`), 1)
	before := gitIn(t, e.repo, "rev-parse", "main")

	verify := "test ! -f c.txt || test -f ok-marker || { echo 'ok-marker is missing'; exit 1; }"
	q, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{Verify: &verify})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Items) != 3 || q.Items[0].TaskID != a.ID || q.Items[1].TaskID != b.ID || q.Items[2].TaskID != c.ID {
		t.Fatalf("queue order = %+v, want A, B, C (priority order)", q.Items)
	}
	if _, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{}); err == nil {
		t.Error("a second queue started while one runs")
	}
	var end protocol.QueueUpdatedNotification
	json.Unmarshal(e.notes.wait(t, "the queue done", queueNote(protocol.QueueDone)).params, &end)
	attempts := map[string]int{a.ID: 1, b.ID: 2, c.ID: 2}
	for _, it := range end.Queue.Items {
		if it.State != protocol.QueueItemMerged || it.Attempts != attempts[it.TaskID] {
			t.Errorf("%s: %s after %d attempts (%s %s), want merged after %d", it.Title, it.State, it.Attempts, it.Reason, it.Detail, attempts[it.TaskID])
		}
	}
	e.notes.wait(t, "B handed back with the conflict", is(protocol.NotifyQueueUpdated, `"taskId":"`+b.ID+`"`, `"state":"handedBack"`, `"reason":"conflict"`, `"files":["shared.txt"]`))
	e.notes.wait(t, "C handed back with the verify output", is(protocol.NotifyQueueUpdated, `"taskId":"`+c.ID+`"`, `"state":"handedBack"`, `"reason":"verify"`, "ok-marker is missing"))
	// Merged in the end, each item still says why it went back: an editor's
	// closing notification reads it there.
	backs := map[string]string{a.ID: "", b.ID: "conflict shared.txt", c.ID: "verify "}
	for _, it := range end.Queue.Items {
		got := ""
		for _, hb := range it.HandBacks {
			got += hb.Reason + " " + strings.Join(hb.Files, ",")
		}
		if got != backs[it.TaskID] {
			t.Errorf("%s's hand-backs = %+v, want %q", it.Title, it.HandBacks, backs[it.TaskID])
		}
	}

	if got, _ := os.ReadFile(filepath.Join(e.repo, "shared.txt")); string(got) != "one\nA and B\nthree\n" {
		t.Errorf("shared.txt on the base = %q", got)
	}
	for _, f := range []string{"c.txt", "ok-marker"} {
		if _, err := os.Stat(filepath.Join(e.repo, f)); err != nil {
			t.Errorf("the base lacks %s: %v", f, err)
		}
	}
	if s := gitIn(t, e.repo, "status", "--porcelain"); s != "" {
		t.Errorf("the base's checkout is not clean: %s", s)
	}
	for _, id := range []string{a.ID, b.ID, c.ID} {
		if got := e.get(t, id); got.Status != protocol.StatusMerged {
			t.Errorf("%s is %s", got.Title, got.Status)
		}
	}
	entries, _, err := e.ws.Store.Audit(storeAuditFilter(""))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, en := range entries {
		count[en.Action]++
	}
	if count["queue.started"] != 1 || count["task.merged"] != 3 || count["queue.handedBack"] != 2 || count["queue.verifyFailed"] != 1 || count["queue.ended"] != 1 {
		t.Errorf("audit = %v", count)
	}

	u, err := e.o.QueueUndo(ctx, &protocol.QueueUndoParams{})
	if err != nil {
		t.Fatal(err)
	}
	if u.State != protocol.QueueUndone {
		t.Errorf("queue after undo = %s", u.State)
	}
	// One warning for the whole queue, not one per task.
	e.notes.wait(t, "the queue's undo warning", is(protocol.NotifyServerMessage, "Undid the merge queue's 3 merges into main"))
	for _, n := range e.notes.all() {
		if n.method == protocol.NotifyServerMessage && strings.Contains(string(n.params), "The undone commit stays at") {
			t.Errorf("queue/undo warned per task: %s", n.params)
		}
	}
	if got := gitIn(t, e.repo, "rev-parse", "main"); got != before {
		t.Errorf("main after queue/undo = %s, want %s", got, before)
	}
	if s := gitIn(t, e.repo, "status", "--porcelain"); s != "" {
		t.Errorf("the base's checkout after undo: %s", s)
	}
	repo, err := worktree.Open(ctx, e.repo, worktree.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Each undone merge is kept; B's branch, which the queue moved (its
	// conflict, resolved by its agent), is back where it was and its
	// resolution kept too: two undo refs.
	kept := map[string]int{a.ID: 1, b.ID: 2, c.ID: 1}
	for _, id := range []string{a.ID, b.ID, c.ID} {
		if refs, err := repo.UndoRefs(ctx, id); err != nil || len(refs) != kept[id] {
			t.Errorf("undo refs of %s = %+v, %v", id, refs, err)
		}
		if got := e.get(t, id); got.Status != protocol.StatusMerging {
			t.Errorf("after queue/undo %s is %s", got.Title, got.Status)
		}
	}
	// Every task's change is its own again: no other task's file in its
	// diff, B's shared.txt as its agent first wrote it.
	own := map[string][]string{a.ID: {"shared.txt"}, b.ID: {"shared.txt"}, c.ID: {"c.txt", "ok-marker"}}
	for _, id := range []string{a.ID, b.ID, c.ID} {
		got := e.get(t, id)
		var files []string
		for _, f := range got.Result.ChangedFiles {
			files = append(files, f.Path)
		}
		slices.Sort(files)
		if !slices.Equal(files, own[id]) {
			t.Errorf("after queue/undo %s's changed files = %v, want %v", got.Title, files, own[id])
		}
	}
	if got, _ := os.ReadFile(filepath.Join(e.get(t, b.ID).Worktree.Path, "shared.txt")); string(got) != "one\nB\nthree\n" {
		t.Errorf("B's shared.txt after queue/undo = %q", got)
	}
}

// TestQueueRemovesWorktreesAfterMerge: with removeWorktreeAfterMerge the
// queue's merges take the task's worktree and branch away as task/merge's
// do, queue/status reports the settings' verify command for an editor to
// prefill, and queue/undo still restores the base.
func TestQueueRemovesWorktreesAfterMerge(t *testing.T) {
	yes, verify := true, "test -f a.txt"
	e := openQueueWith(t, &protocol.SettingsUpdate{RemoveWorktreeAfterMerge: &yes, MergeVerify: &verify})
	ctx := context.Background()
	a := finished(t, e, "A", writes(`printf 'A\n' > a.txt`, ""), 0)
	wt := e.get(t, a.ID).Worktree
	before := gitIn(t, e.repo, "rev-parse", "main")
	if st, err := e.o.QueueStatus(ctx, &protocol.QueueStatusParams{}); err != nil || st.DefaultVerify != verify {
		t.Errorf("queue/status = %+v, %v; want defaultVerify %q", st, err, verify)
	}
	if _, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{}); err != nil {
		t.Fatal(err)
	}
	var end protocol.QueueUpdatedNotification
	json.Unmarshal(e.notes.wait(t, "the queue done", queueNote(protocol.QueueDone)).params, &end)
	if it := end.Queue.Items[0]; it.State != protocol.QueueItemMerged || end.Queue.Verify != verify {
		t.Fatalf("queue = %+v", end.Queue)
	}
	testenv.Await(t, 30*time.Second, "A's worktree removed after its merge", func() bool {
		_, err := os.Stat(wt.Path)
		return os.IsNotExist(err)
	})
	if out := gitIn(t, e.repo, "branch", "--list", wt.Branch); out != "" {
		t.Errorf("A's branch is still there: %q", out)
	}
	if _, err := os.Stat(filepath.Join(e.repo, "a.txt")); err != nil {
		t.Errorf("the base lacks a.txt: %v", err)
	}
	if _, err := e.o.QueueUndo(ctx, &protocol.QueueUndoParams{}); err != nil {
		t.Fatal(err)
	}
	if got := gitIn(t, e.repo, "rev-parse", "main"); got != before {
		t.Errorf("main after queue/undo = %s, want %s", got, before)
	}
}

// TestQueueRefusesADirtyBase: uncommitted work in the base's checkout
// refuses the whole queue, naming the file, and nothing is merged.
func TestQueueRefusesADirtyBase(t *testing.T) {
	e := openQueue(t, 60)
	ctx := context.Background()
	a := finished(t, e, "A", writes(`printf 'A\n' > a.txt`, ""), 0)
	before := gitIn(t, e.repo, "rev-parse", "main")
	os.WriteFile(filepath.Join(e.repo, "wip.txt"), []byte("mine\n"), 0o644)
	_, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{})
	pe, ok := err.(*protocol.Error)
	if !ok || pe.Code != protocol.CodeFailedPrecondition || !strings.Contains(pe.Message, "wip.txt") {
		t.Fatalf("queue on a dirty base = %v", err)
	}
	if gitIn(t, e.repo, "rev-parse", "main") != before {
		t.Error("the refused queue moved the base")
	}
	if got := e.get(t, a.ID); got.Status != protocol.StatusMerging {
		t.Errorf("the task is %s", got.Status)
	}
	if st, _ := e.o.QueueStatus(ctx, &protocol.QueueStatusParams{}); st.Queue != nil {
		t.Errorf("a refused queue is reported: %+v", st.Queue)
	}
}

// TestQueueStopsAHangingVerify: a verify command that hangs is stopped with
// its children at commandTimeoutSec and counts as failed; failing twice, the
// task is set aside blocked{merge}, and nothing is merged.
func TestQueueStopsAHangingVerify(t *testing.T) {
	e := openQueue(t, 60)
	ctx := context.Background()
	a := finished(t, e, "A", writes(`printf 'A\n' > a.txt`, ""), 0)
	// Set now: the agent's own commands are held to it too.
	one := 1
	if _, err := e.o.UpdateSettings(ctx, &protocol.SettingsUpdate{CommandTimeoutSec: &one}); err != nil {
		t.Fatal(err)
	}
	before := gitIn(t, e.repo, "rev-parse", "main")
	pidFile := filepath.Join(t.TempDir(), "pids")
	verify := "sleep 600 & echo $! >> " + pidFile + "; echo $$ >> " + pidFile + "; wait"
	if _, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{Verify: &verify}); err != nil {
		t.Fatal(err)
	}
	var end protocol.QueueUpdatedNotification
	json.Unmarshal(e.notes.wait(t, "the queue done", queueNote(protocol.QueueDone)).params, &end)
	it := end.Queue.Items[0]
	if it.State != protocol.QueueItemBlocked || it.Attempts != 2 || it.Reason != "verify" || !strings.Contains(it.Detail, "did not finish within 1 s") {
		t.Errorf("item = %+v", it)
	}
	got := e.get(t, a.ID)
	if got.Status != protocol.StatusBlocked || got.Blocked == nil || got.Blocked.Reason != protocol.BlockedMerge {
		t.Errorf("task = %s %+v", got.Status, got.Blocked)
	}
	if gitIn(t, e.repo, "rev-parse", "main") != before {
		t.Error("a task whose verify failed was merged")
	}
	b, _ := os.ReadFile(pidFile)
	pids := strings.Fields(string(b))
	if len(pids) != 4 {
		t.Fatalf("pids = %q", pids)
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		testenv.Await(t, 10*time.Second, "process "+p+" of the verify command to end with it", func() bool {
			return syscall.Kill(pid, 0) != nil || zombie(pid)
		})
	}
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// TestQueueCancelStopsAfterTheCurrentStep: queue/cancel while the first
// task's verify runs lets that task finish its step (merged), and the queue
// ends cancelled without touching the second.
func TestQueueCancelStopsAfterTheCurrentStep(t *testing.T) {
	e := openQueue(t, 60)
	ctx := context.Background()
	a := finished(t, e, "A", writes(`printf 'A\n' > a.txt`, ""), 2)
	b := finished(t, e, "B", writes(`printf 'B\n' > b.txt`, ""), 1)
	gate := filepath.Join(t.TempDir(), "gate")
	// The verify waits for the test to open the gate, so the cancel comes
	// while A's step runs.
	verify := "while ! test -f " + gate + "; do sleep 0.05; done"
	q, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{Verify: &verify})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "A verifying", is(protocol.NotifyQueueUpdated, `"taskId":"`+a.ID+`","title":"A","state":"verifying"`))
	if c, err := e.o.QueueCancel(ctx, &protocol.QueueCancelParams{}); err != nil || c.ID != q.ID {
		t.Fatalf("queue/cancel = %+v, %v", c, err)
	}
	os.WriteFile(gate, nil, 0o644)
	var end protocol.QueueUpdatedNotification
	json.Unmarshal(e.notes.wait(t, "the queue cancelled", queueNote(protocol.QueueCancelled)).params, &end)
	if it := end.Queue.Items; it[0].State != protocol.QueueItemMerged || it[1].State != protocol.QueueItemCancelled || it[1].Attempts != 0 {
		t.Errorf("items = %+v", it)
	}
	if got := e.get(t, b.ID); got.Status != protocol.StatusMerging {
		t.Errorf("B is %s", got.Status)
	}
	if _, err := os.Stat(filepath.Join(e.repo, "a.txt")); err != nil {
		t.Error("A's step did not finish")
	}
	if _, err := e.o.QueueCancel(ctx, &protocol.QueueCancelParams{}); err == nil {
		t.Error("queue/cancel with no queue running succeeded")
	}
}
