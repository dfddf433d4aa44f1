package orchestrator_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
)

// Issue 34: a task handed back with a conflict whose agent ends its turn
// without resolving it (it gives up: "Nothing to fix.") is never a success
// and never committed with its markers; the queue sets it aside naming the
// conflict, with no verify command and with one that does not read the
// file, and main never gets a marker. queue/undo then puts main and the
// task's branch back: its change is its own again.
func TestQueueNeverMergesAnUnresolvedConflict(t *testing.T) {
	for _, verify := range []string{"", "true"} {
		t.Run("verify="+verify, func(t *testing.T) {
			e := openQueue(t, 60)
			ctx := context.Background()
			a := finished(t, e, "Alpha", writes(`printf 'one\nA\nthree\n' > shared.txt`, ""), 2)
			b := finished(t, e, "Beta", writes(`printf 'one\nB\nthree\n' > shared.txt`, ""), 1)
			base := gitIn(t, e.repo, "rev-parse", "main")
			bTip := gitIn(t, e.repo, "rev-parse", e.get(t, b.ID).Worktree.Branch)
			if _, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{Verify: &verify}); err != nil {
				t.Fatal(err)
			}
			var end protocol.QueueUpdatedNotification
			json.Unmarshal(e.notes.wait(t, "the queue done", queueNote(protocol.QueueDone)).params, &end)
			items := map[string]protocol.QueueItem{}
			for _, it := range end.Queue.Items {
				items[it.TaskID] = it
			}
			if it := items[a.ID]; it.State != protocol.QueueItemMerged {
				t.Errorf("Alpha: %+v", it)
			}
			it := items[b.ID]
			if it.State != protocol.QueueItemBlocked || it.Reason != "conflict" || !strings.Contains(it.Detail, "not resolved") || !strings.Contains(it.Detail, "shared.txt") {
				t.Errorf("Beta's item = %+v, want set aside for its unresolved conflict in shared.txt", it)
			}
			got := e.get(t, b.ID)
			if got.Status != protocol.StatusBlocked || got.Blocked == nil || got.Blocked.Reason != protocol.BlockedConflict ||
				!strings.Contains(got.Blocked.Detail, "conflict markers at lines") {
				t.Fatalf("Beta is %s %+v", got.Status, got.Blocked)
			}
			completed := e.notes.wait(t, "Beta's end announced", is(protocol.NotifyTaskCompleted, b.ID, `"reason":"conflict"`))
			if strings.Contains(string(completed.params), `"success":true`) {
				t.Errorf("Beta announced as a success: %s", completed.params)
			}
			if m := markersOn(t, e.repo, "main"); m != "" {
				t.Errorf("main has conflict markers: %s", m)
			}
			if log := gitIn(t, e.repo, "log", "-p", "--format=%s", base+".."+got.Worktree.Branch); strings.Contains(log, "<<<<<<<") {
				t.Errorf("Beta's branch holds a commit with markers:\n%s", log)
			}
			if now := gitIn(t, e.repo, "rev-parse", got.Worktree.Branch); now != bTip {
				t.Errorf("Beta's branch moved: %s → %s", bTip, now)
			}
			if got, _ := os.ReadFile(filepath.Join(e.repo, "shared.txt")); string(got) != "one\nA\nthree\n" {
				t.Errorf("main's shared.txt = %q", got)
			}
			entries, _, err := e.ws.Store.Audit(storeAuditFilter(b.ID))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, en := range entries {
				found = found || en.Action == "task.unresolvedConflict"
			}
			if !found {
				t.Error("no audit entry of the unresolved conflict")
			}

			if _, err := e.o.QueueUndo(ctx, &protocol.QueueUndoParams{}); err != nil {
				t.Fatal(err)
			}
			if now := gitIn(t, e.repo, "rev-parse", "main"); now != base {
				t.Errorf("main after queue/undo = %s, want %s", now, base)
			}
			after := e.get(t, b.ID)
			if s := gitIn(t, after.Worktree.Path, "status", "--porcelain"); s != "" {
				t.Errorf("Beta's worktree after queue/undo still holds the queue's merge: %s", s)
			}
			if got, _ := os.ReadFile(filepath.Join(after.Worktree.Path, "shared.txt")); string(got) != "one\nB\nthree\n" {
				t.Errorf("Beta's shared.txt after queue/undo = %q", got)
			}
		})
	}
}

// Issue 34: a verify command that never reads the file does not let a
// leftover conflict marker through: a task whose branch got one (committed
// by hand after it finished) is not merged, the queue names the marker.
func TestQueueRefusesLeftoverMarkersWhateverVerifySays(t *testing.T) {
	e := openQueue(t, 60)
	ctx := context.Background()
	a := finished(t, e, "Alpha", writes(`printf 'A\n' > a.txt`, ""), 1)
	wt := e.get(t, a.ID).Worktree.Path
	os.WriteFile(filepath.Join(wt, "a.txt"), []byte("<<<<<<< HEAD\nA\n=======\nB\n>>>>>>> other\n"), 0o644)
	gitIn(t, wt, "commit", "-qam", "by hand")
	base := gitIn(t, e.repo, "rev-parse", "main")
	verify := "true"
	if _, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{Verify: &verify}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "refused for its markers", is(protocol.NotifyQueueUpdated, `"taskId":"`+a.ID+`"`, `"reason":"conflict"`, "leftover conflict markers", "a.txt"))
	e.notes.wait(t, "the queue done", queueNote(protocol.QueueDone))
	if now := gitIn(t, e.repo, "rev-parse", "main"); now != base {
		t.Errorf("main moved to %s", now)
	}
	// task/merge refuses the same.
	if _, err := e.o.TaskMerge(ctx, &protocol.TaskMergeParams{ID: a.ID}); err == nil || !strings.Contains(err.Error(), "leftover conflict markers") {
		if got := e.get(t, a.ID); got.Status == protocol.StatusMerging {
			t.Errorf("task/merge of a change with markers: %v", err)
		}
	}
}

// Issue 34: the speculative queue. Eight ready tasks, queueParallel 4, a
// verify that takes a while and fails for one of them: main ends with the
// seven good ones in the queue's order, each once, and the bad one is
// handed back (its agent finds nothing to fix) and then set aside.
func TestQueueSpeculativeMergesTheLongestPassingPrefix(t *testing.T) {
	four, three := 4, 3
	e := openQueueWith(t, &protocol.SettingsUpdate{QueueParallel: &four, MaxConcurrent: &three})
	ctx := context.Background()
	var ids, titles []string
	bad := 2
	for i := range 8 {
		cmd := "printf '" + string(rune('a'+i)) + "\\n' > t" + string(rune('a'+i)) + ".txt"
		if i == bad {
			cmd += " && touch bad.txt"
		}
		title := "Task " + string(rune('A'+i))
		task := e.create(t, title, writes(cmd, ""), 10-i)
		ids, titles = append(ids, task.ID), append(titles, title)
	}
	for i, id := range ids {
		e.notes.wait(t, titles[i]+" finished", statusIs(id, protocol.StatusMerging))
	}
	for i, id := range ids {
		if got := e.get(t, id); got.Result == nil || len(got.Result.Commits) == 0 {
			t.Logf("%s finished with no commit: %+v", titles[i], got.Result)
			full, _ := e.o.TaskGet(ctx, &protocol.TaskGetParams{ID: id})
			for _, st := range full.Steps {
				t.Logf("  step %s %s %s: %q", st.Kind, st.Title, st.Status, st.Result)
			}
		}
	}
	verify := "sleep 1; test ! -f bad.txt || { echo 'bad.txt is here'; exit 1; }"
	started := time.Now()
	if _, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{IDs: ids, Verify: &verify}); err != nil {
		t.Fatal(err)
	}
	var end protocol.QueueUpdatedNotification
	json.Unmarshal(e.notes.wait(t, "the queue done", queueNote(protocol.QueueDone)).params, &end)
	t.Logf("8 tasks, parallel 4, one failing: %s", time.Since(started).Round(time.Millisecond))
	for i, it := range end.Queue.Items {
		want := protocol.QueueItemMerged
		if i == bad {
			want = protocol.QueueItemBlocked
		}
		if it.State != want {
			got := e.get(t, it.TaskID)
			t.Errorf("%s: %s (%s %s; hand-backs %+v), want %s; its branch: %s", it.Title, it.State, it.Reason, it.Detail, it.HandBacks, want,
				gitIn(t, e.repo, "log", "--oneline", "-3", got.Worktree.Branch))
		}
	}
	e.notes.wait(t, "the bad one handed back", is(protocol.NotifyQueueUpdated, `"taskId":"`+ids[bad]+`"`, `"state":"handedBack"`, `"reason":"verify"`, "bad.txt is here"))
	var want []string
	for i, title := range titles {
		if i != bad {
			want = append(want, title)
		}
	}
	subjects := strings.Split(gitIn(t, e.repo, "log", "--first-parent", "--format=%s", "-7", "main"), "\n")
	slices.Reverse(subjects)
	if !slices.Equal(subjects, want) {
		t.Errorf("main's merges = %q, want %q", subjects, want)
	}
	if _, err := os.Stat(filepath.Join(e.repo, "bad.txt")); err == nil {
		t.Error("the failing task reached main")
	}
}

// Issue 34: the history a queue of three tasks leaves on main, per
// strategy, as README says: merge — one merge commit per task titled with
// the task's title once, the task's own commit below it named by what its
// agent said; squash — one commit per task; rebase — the tasks' commits,
// linear. No subject names an internal branch, and each commit carries the
// Familiar-Task trailer.
func TestQueueHistoryPerStrategy(t *testing.T) {
	e := openQueue(t, 60)
	ctx := context.Background()
	type made struct{ id, title string }
	byStrategy := map[protocol.MergeStrategy][]made{}
	n := 0
	for _, s := range []protocol.MergeStrategy{protocol.MergeMerge, protocol.MergeSquash, protocol.MergeRebase} {
		for range 3 {
			n++
			title := string(s) + " task " + string(rune('0'+n))
			file := "f" + string(rune('0'+n)) + ".txt"
			script := "go\n@@TOOL Bash {\"command\":\"echo " + title + " > " + file + "\"}\n@@TEXT Wrote " + file + " with the task's words."
			task := e.create(t, title, script, 0)
			byStrategy[s] = append(byStrategy[s], made{task.ID, title})
		}
	}
	for _, tasks := range byStrategy {
		for _, m := range tasks {
			e.notes.wait(t, m.title+" finished", statusIs(m.id, protocol.StatusMerging))
		}
	}
	for _, s := range []protocol.MergeStrategy{protocol.MergeMerge, protocol.MergeSquash, protocol.MergeRebase} {
		tasks := byStrategy[s]
		var ids []string
		for _, m := range tasks {
			ids = append(ids, m.id)
		}
		before := gitIn(t, e.repo, "rev-parse", "main")
		empty := ""
		q, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{IDs: ids, Strategy: s, Verify: &empty})
		if err != nil {
			t.Fatal(err)
		}
		e.notes.wait(t, string(s)+" queue done", is(protocol.NotifyQueueUpdated, q.ID, `"state":"done"`))
		oneline := gitIn(t, e.repo, "log", "--format=%s", before+"..main")
		t.Logf("%s:\n%s", s, oneline)
		subjects := strings.Split(oneline, "\n")
		if strings.Contains(oneline, "familiar/") || strings.Contains(oneline, "familiar:") {
			t.Errorf("%s: a subject names familiar's internals:\n%s", s, oneline)
		}
		count := func(title string) int {
			c := 0
			for _, sub := range subjects {
				if sub == title {
					c++
				}
			}
			return c
		}
		switch s {
		case protocol.MergeMerge:
			if len(subjects) != 6 {
				t.Errorf("merge: %d commits, want 3 merges and the 3 tasks' own", len(subjects))
			}
			first := strings.Split(gitIn(t, e.repo, "log", "--first-parent", "--format=%s", before+"..main"), "\n")
			slices.Reverse(first)
			if want := []string{tasks[0].title, tasks[1].title, tasks[2].title}; !slices.Equal(first, want) {
				t.Errorf("merge: first-parent subjects %q, want %q", first, want)
			}
		case protocol.MergeSquash:
			if len(subjects) != 3 {
				t.Errorf("squash: %d commits, want 3", len(subjects))
			}
		case protocol.MergeRebase:
			if len(subjects) != 3 || gitIn(t, e.repo, "log", "--merges", "--format=%s", before+"..main") != "" {
				t.Errorf("rebase: not three linear commits")
			}
		}
		if s != protocol.MergeRebase {
			for _, m := range tasks {
				if c := count(m.title); c != 1 {
					t.Errorf("%s: %q is the subject of %d commits, want 1", s, m.title, c)
				}
			}
		}
		for _, m := range tasks {
			if body := gitIn(t, e.repo, "log", "--format=%b", "--grep", "Familiar-Task: "+m.id, before+"..main"); body == "" {
				t.Errorf("%s: no commit carries Familiar-Task: %s", s, m.id)
			}
		}
	}
}

// Issue 34: a task whose branch main already holds (merged by hand) is not
// merged again: task/merge says so and records nothing, and task/undo
// refuses rather than claim to take it back.
func TestMergedByHandIsNotClaimed(t *testing.T) {
	e := openQueue(t, 60)
	ctx := context.Background()
	a := finished(t, e, "Alpha", writes(`printf 'A\n' > a.txt`, ""), 1)
	gitIn(t, e.repo, "merge", "-q", "--no-ff", "-m", "by hand", e.get(t, a.ID).Worktree.Branch)
	before := gitIn(t, e.repo, "rev-parse", "main")
	_, err := e.o.TaskMerge(ctx, &protocol.TaskMergeParams{ID: a.ID})
	if err == nil || !strings.Contains(err.Error(), "already holds this task's work") {
		t.Errorf("task/merge of a branch main holds: %v", err)
	}
	if got := e.get(t, a.ID); got.Status != protocol.StatusMerging {
		t.Errorf("after task/merge the task is %s", got.Status)
	}
	_, err = e.o.TaskUndo(ctx, &protocol.TaskIDParams{ID: a.ID})
	if err == nil || !strings.Contains(err.Error(), "did not merge it") {
		t.Errorf("task/undo: %v", err)
	}
	if now := gitIn(t, e.repo, "rev-parse", "main"); now != before {
		t.Errorf("main moved: %s", now)
	}
	if _, err := os.Stat(filepath.Join(e.repo, "a.txt")); err != nil {
		t.Error("the change left main")
	}
}

// markersOn lists the files of rev with a line that opens a conflict.
func markersOn(t *testing.T, repo, rev string) string {
	t.Helper()
	out, err := exec.Command(testenv.Git(t), "-C", repo, "grep", "-l", "-e", "^<<<<<<<", rev, "--").CombinedOutput()
	if err != nil && !strings.Contains(err.Error(), "exit status 1") {
		t.Fatalf("git grep: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// Issue 34: a verify command that prints secrets (a test that dumps its
// environment does) has them masked before anything keeps or sends them:
// the queue's notifications, the task's, the stored events and the
// hand-back prompt the model receives.
func TestQueueMasksTheVerifyOutput(t *testing.T) {
	e := openQueue(t, 60)
	ctx := context.Background()
	a := finished(t, e, "Alpha", writes(`printf 'A\n' > a.txt`, ""), 1)
	// Assembled at run time, so the source holds nothing a scanner flags.
	token := "gh" + "p_" + strings.Repeat("aB3dE5fG7h", 4)[:36]
	awsSecret := "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
	// The command builds them, so only its output holds them whole.
	verify := "p=gh; echo GITHUB_TOKEN=${p}p_" + token[4:] + "; k=wJalrXUtnFEMI; echo aws_secret_access_key = $k" + awsSecret[len("wJalrXUtnFEMI"):] + "; exit 1"
	if _, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{Verify: &verify}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "the queue done", queueNote(protocol.QueueDone))
	e.notes.wait(t, "Alpha set aside", statusIs(a.ID, protocol.StatusBlocked))
	leaks := func(where, s string) {
		for _, secret := range []string{token, awsSecret} {
			if strings.Contains(s, secret) {
				t.Errorf("%s holds a secret of the verify output", where)
			}
		}
	}
	shown := false
	for _, n := range e.notes.all() {
		leaks(n.method, string(n.params))
		shown = shown || n.method == protocol.NotifyQueueUpdated && strings.Contains(string(n.params), "GITHUB_TOKEN=")
	}
	if !shown {
		t.Error("the verify output was not shown at all")
	}
	evs, err := e.o.TaskEvents(ctx, &protocol.TaskEventsParams{ID: a.ID, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Events {
		leaks("stored event "+ev.Method, string(ev.Params))
	}
	asked := false
	for _, r := range e.api.MainRequests() {
		text := r.LastUserText()
		leaks("the hand-back prompt", text)
		asked = asked || strings.Contains(text, "familiar's merge queue")
	}
	if !asked {
		t.Error("the task was never handed back")
	}
	entries, _, err := e.ws.Store.Audit(storeAuditFilter(""))
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		b, _ := json.Marshal(en)
		leaks("audit "+en.Action, string(b))
	}
}
