package orchestrator_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
)

// replayBase and replayCommits are a stretch of this repository's own
// history (stop 32's work): several commits change the same files
// (agent/pty.go, bench/compare.go, docs/CLAUDE-CLI.md, the compare README),
// so replayed side by side from one base some merge cleanly and some
// conflict, as parallel agents' work does.
const replayBase = "376db5d"

var replayCommits = []string{"b8dd2cd", "d0fc033", "635342c", "bc0fc56", "1db341b", "dc8995b",
	"420679e", "263d2b8", "399674a", "dae2baa", "3bc4441", "52add39", "7f6e7ed"}

// Issue 34: real history replayed as tasks. Each commit becomes a task from
// one base whose agent makes the commit's files what they are at the
// commit (and gives up on any conflict the queue hands back). The conflict forecast agrees with git merge-tree
// on every pair; the queue's main is the tree git makes doing the same
// merges by hand in the same order; queue/undo puts main back at the base,
// and every task's changed files are its own commit's again.
func TestQueueReplaysRealHistory(t *testing.T) {
	src := repoRootOrSkip(t)
	e := openQueue(t, 120)
	ctx := context.Background()
	// The test repository becomes a copy of this one at the base.
	gitIn(t, e.repo, "fetch", "-q", src, "+refs/heads/*:refs/remotes/src/*")
	base, err := exec.Command(testenv.Git(t), "-C", src, "rev-parse", replayBase).Output()
	if err != nil {
		t.Skipf("this clone lacks the replayed history (%s): %v", replayBase, err)
	}
	gitIn(t, e.repo, "reset", "-q", "--hard", strings.TrimSpace(string(base)))
	baseSHA := gitIn(t, e.repo, "rev-parse", "HEAD")

	type replayed struct {
		commit, title string
		files         []string
		task          *protocol.Task
	}
	var tasks []*replayed
	for i, c := range replayCommits {
		// The task's agent makes the commit's files what they are at the
		// commit, from the older base: its change then carries what the
		// commits before it did to those files, as a parallel agent's
		// work overlaps another's.
		var checkout, remove, files []string
		for _, line := range strings.Split(gitIn(t, src, "diff", "--no-renames", "--name-status", c+"^", c), "\n") {
			status, path, ok := strings.Cut(line, "\t")
			if !ok {
				continue
			}
			files = append(files, path)
			if status == "D" {
				remove = append(remove, shellQuote(path))
			} else {
				checkout = append(checkout, shellQuote(path))
			}
		}
		var cmd []string
		if len(checkout) > 0 {
			cmd = append(cmd, "git checkout "+c+" -- "+strings.Join(checkout, " "))
		}
		if len(remove) > 0 {
			cmd = append(cmd, "git rm -q --ignore-unmatch -- "+strings.Join(remove, " "))
		}
		subject := gitIn(t, src, "log", "-1", "--format=%s", c)
		title := clipTitle(subject)
		b, _ := json.Marshal(map[string]string{"command": strings.Join(cmd, " && ")})
		script := "replay\n@@TOOL Bash " + string(b) + "\n@@TEXT Replayed " + c + "."
		task := e.create(t, title, script, len(replayCommits)-i)
		tasks = append(tasks, &replayed{commit: c, title: title, files: files, task: task})
	}
	if len(tasks) < 6 {
		t.Fatalf("only %d commits of the stretch apply to the base", len(tasks))
	}
	for _, r := range tasks {
		e.notes.wait(t, r.commit+" replayed", statusIs(r.task.ID, protocol.StatusMerging))
	}
	branch := map[string]string{}
	for _, r := range tasks {
		branch[r.task.ID] = e.get(t, r.task.ID).Worktree.Branch
	}

	// The forecast, pair by pair, against git merge-tree.
	conflicts := 0
	want := map[string][]string{}
	for i, a := range tasks {
		for j, b := range tasks {
			if i >= j {
				continue
			}
			cmd := exec.Command(testenv.Git(t), "-C", e.repo, "merge-tree", "--write-tree", "--name-only", branch[a.task.ID], branch[b.task.ID])
			if err := cmd.Run(); err != nil {
				conflicts++
				want[a.task.ID] = append(want[a.task.ID], b.task.ID)
				want[b.task.ID] = append(want[b.task.ID], a.task.ID)
			}
		}
	}
	t.Logf("%d tasks, %d conflicting pairs of %d", len(tasks), conflicts, len(tasks)*(len(tasks)-1)/2)
	if conflicts == 0 {
		t.Fatal("no pair of the replayed commits conflicts: the replay proves little")
	}
	forecastOf := func(id string) []string {
		var with []string
		for _, c := range e.get(t, id).Conflicts {
			if c.With != "base" {
				with = append(with, c.With)
			}
		}
		slices.Sort(with)
		return with
	}
	testenv.Await(t, 90*time.Second, "the forecast to agree with git merge-tree on every pair", func() bool {
		for _, r := range tasks {
			w := slices.Clone(want[r.task.ID])
			slices.Sort(w)
			if !slices.Equal(forecastOf(r.task.ID), w) {
				return false
			}
		}
		return true
	})

	// The same merges by hand, in the queue's order: what main must be.
	expected := baseSHA
	var merges []string
	for _, r := range tasks {
		out, err := exec.Command(testenv.Git(t), "-C", e.repo, "merge-tree", "--write-tree", expected, branch[r.task.ID]).Output()
		if err != nil {
			continue // a conflict: its agent gives up, it is not merged
		}
		tree := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
		expected = gitIn(t, e.repo, "commit-tree", tree, "-p", expected, "-p", branch[r.task.ID], "-m", r.title)
		merges = append(merges, r.title)
	}
	if _, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{}); err != nil {
		t.Fatal(err)
	}
	var end protocol.QueueUpdatedNotification
	json.Unmarshal(e.notes.wait(t, "the queue done", queueNote(protocol.QueueDone)).params, &end)
	var got []string
	for _, it := range end.Queue.Items {
		if it.State == protocol.QueueItemMerged {
			got = append(got, it.Title)
		} else if it.State != protocol.QueueItemBlocked || it.Reason != "conflict" {
			t.Errorf("%s: %s %s %s", it.Title, it.State, it.Reason, it.Detail)
		}
	}
	if !slices.Equal(got, merges) {
		t.Errorf("the queue merged %q, git by hand %q", got, merges)
	}
	if tree, want := gitIn(t, e.repo, "rev-parse", "main^{tree}"), gitIn(t, e.repo, "rev-parse", expected+"^{tree}"); tree != want {
		t.Errorf("main's tree after the queue = %s, git's merges by hand = %s", tree, want)
	}
	if m := markersOn(t, e.repo, "main"); m != "" {
		t.Errorf("main has conflict markers in %s", m)
	}

	if _, err := e.o.QueueUndo(ctx, &protocol.QueueUndoParams{}); err != nil {
		t.Fatal(err)
	}
	if now := gitIn(t, e.repo, "rev-parse", "main"); now != baseSHA {
		t.Errorf("main after queue/undo = %s, want the base %s", now, baseSHA)
	}
	for _, r := range tasks {
		diff, err := e.o.TaskDiff(ctx, &protocol.TaskDiffParams{ID: r.task.ID})
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, f := range diff.Files {
			files = append(files, f.Path)
		}
		slices.Sort(files)
		w := slices.Clone(r.files)
		slices.Sort(w)
		if !slices.Equal(files, w) {
			t.Errorf("after queue/undo %s's task/diff = %v, its commit's = %v", r.commit, files, w)
		}
	}
}

// repoRootOrSkip is this repository's checkout, whose history the replay
// reads.
func repoRootOrSkip(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(testenv.Git(t), "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout of familiar: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func clipTitle(s string) string {
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60])
	}
	return strings.TrimSpace(s)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
