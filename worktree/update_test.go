package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BringBase merges the base into a task's branch in its worktree: cleanly,
// or leaving the merge in progress with the conflicting files named, which
// the next checkpoint concludes; a rebase that conflicts is aborted.
func TestBringBase(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t, map[string]string{"shared.txt": "one\ntwo\nthree\n"})
	r := openRepo(t, root)
	clean := create(t, r, "task-clean", "clean")
	conflict := create(t, r, "task-conflict", "conflict")
	rebase := create(t, r, "task-rebase", "rebase")
	for wt, content := range map[Worktree]string{clean: "", conflict: "one\nTASK\nthree\n", rebase: "one\nREBASE\nthree\n"} {
		files := map[string]string{"own-" + wt.TaskID: "x\n"}
		if content != "" {
			files["shared.txt"] = content
		}
		writeFiles(t, wt.Path, files)
		if _, _, err := r.Checkpoint(ctx, wt, "work"); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, root, map[string]string{"shared.txt": "one\nBASE\nthree\n"})
	gitT(t, root, "commit", "-qam", "base moves")

	if err := r.BringBase(ctx, clean, "main", Merge); err != nil {
		t.Fatalf("clean: %v", err)
	}
	if got := readFile(t, filepath.Join(clean.Path, "shared.txt")); got != "one\nBASE\nthree\n" {
		t.Errorf("clean worktree's shared.txt = %q", got)
	}
	if err := r.BringBase(ctx, clean, "main", Merge); err != nil {
		t.Errorf("again, with nothing to bring: %v", err)
	}

	err := r.BringBase(ctx, conflict, "main", Merge)
	var ce *ConflictError
	if !errors.As(err, &ce) || !slices.Equal(ce.Files, []string{"shared.txt"}) {
		t.Fatalf("conflict: %v", err)
	}
	// The agent resolves it; the checkpoint concludes the merge.
	writeFiles(t, conflict.Path, map[string]string{"shared.txt": "one\nTASK and BASE\nthree\n"})
	if _, committed, err := r.Checkpoint(ctx, conflict, "resolved"); err != nil || !committed {
		t.Fatalf("checkpoint of the resolution: %v, %v", committed, err)
	}
	if parents := gitT(t, conflict.Path, "log", "-1", "--format=%P"); len(parents) != 81 {
		t.Errorf("the resolution is not a merge commit: parents %q", parents)
	}
	if err := r.BringBase(ctx, conflict, "main", Merge); err != nil {
		t.Errorf("after the resolution: %v", err)
	}

	err = r.BringBase(ctx, rebase, "main", Rebase)
	if !errors.As(err, &ce) || !slices.Equal(ce.Files, []string{"shared.txt"}) {
		t.Fatalf("rebase conflict: %v", err)
	}
	if st := gitT(t, rebase.Path, "status", "--porcelain"); st != "" {
		t.Errorf("the aborted rebase left %q", st)
	}
	if got := readFile(t, filepath.Join(rebase.Path, "shared.txt")); got != "one\nREBASE\nthree\n" {
		t.Errorf("after the aborted rebase shared.txt = %q", got)
	}

	// A dirty checkout of the base is refused, naming the file.
	writeFiles(t, root, map[string]string{"wip.txt": "mine\n"})
	var de *DirtyError
	if err := r.CheckBaseClean(ctx, "main"); !errors.As(err, &de) || !slices.Equal(de.Files, []string{"wip.txt"}) {
		t.Errorf("CheckBaseClean on a dirty checkout = %v", err)
	}
	os.Remove(filepath.Join(root, "wip.txt"))
	if err := r.CheckBaseClean(ctx, "main"); err != nil {
		t.Errorf("CheckBaseClean = %v", err)
	}
}

// BenchmarkQueueStepVsGitMerge measures the git work of one merge-queue
// step — the base checked clean, brought into the task's branch, the task
// merged into the base (merge-tree, then a fast-forward of the checkout) —
// (the candidate, its marker check, its scratch worktree made and removed,
// the base advanced) against a plain `git merge` of an equal branch in the base's checkout, on
// the 10,000-file repository, alternately so both see the same load. The
// base moves before each (another task merged), so the step brings it in.
// Reported: queue-ms/op and git-merge-ms/op.
func BenchmarkQueueStepVsGitMerge(b *testing.B) {
	ctx := context.Background()
	dir := benchRepo(b)
	r := openRepo(b, dir)
	var queue, plain, scratchTime time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		mk := func(name string) Worktree {
			wt := create(b, r, fmt.Sprintf("%s-%d", name, i), name)
			writeFiles(b, wt.Path, map[string]string{fmt.Sprintf("dir%03d/%s-%d.go", i%100, name, i): "package p\n"})
			if _, _, err := r.Checkpoint(ctx, wt, "work"); err != nil {
				b.Fatal(err)
			}
			return wt
		}
		q, g := mk("queue"), mk("plain")
		writeFiles(b, dir, map[string]string{fmt.Sprintf("dir%03d/base-%d.go", (i+50)%100, i): "package p\n"})
		gitT(b, dir, "add", "-A")
		gitT(b, dir, "commit", "-qm", "the base moves")
		b.StartTimer()
		start := time.Now()
		if err := r.CheckBaseClean(ctx, "main"); err != nil {
			b.Fatal(err)
		}
		// The queue's step (issue 34): the candidate built beside
		// everything, checked for markers, checked out in a scratch
		// worktree for the verify command (which is not timed), and main
		// moved to it.
		before, err := r.Tip(ctx, "main")
		if err != nil {
			b.Fatal(err)
		}
		c, err := r.Candidate(ctx, before, q, Merge, "merge")
		if err != nil {
			b.Fatal(err)
		}
		if m, err := r.LeftoverMarkers(ctx, before, c); err != nil || len(m) > 0 {
			b.Fatal(m, err)
		}
		scratch := time.Now()
		if _, err := r.Scratch(ctx, 0, c); err != nil {
			b.Fatal(err)
		}
		scratchTime += time.Since(scratch)
		if _, err := r.Advance(ctx, "main", before, c); err != nil {
			b.Fatal(err)
		}
		queue += time.Since(start)
		start = time.Now()
		gitT(b, dir, "merge", "--no-edit", "-q", g.Branch)
		plain += time.Since(start)
		b.StopTimer()
		for _, wt := range []Worktree{q, g} {
			gitT(b, dir, "worktree", "remove", "--force", wt.Path)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(queue.Microseconds())/1000/float64(i), "queue-ms/op")
	b.ReportMetric(float64(plain.Microseconds())/1000/float64(i), "git-merge-ms/op")
	b.ReportMetric(float64(scratchTime.Microseconds())/1000/float64(i), "scratch-ms/op")
}
