package worktree

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
)

// work commits files in the task's worktree as the agent would.
func work(t *testing.T, r *Repo, wt Worktree, files map[string]string, msg string) {
	t.Helper()
	writeFiles(t, wt.Path, files)
	if _, _, err := r.Checkpoint(context.Background(), wt, msg); err != nil {
		t.Fatal(err)
	}
}

func TestMergeStrategiesAndUndo(t *testing.T) {
	for _, s := range []Strategy{Merge, Squash, Rebase} {
		t.Run(string(s), func(t *testing.T) {
			ctx := context.Background()
			dir := newRepo(t, map[string]string{"README.md": "hello\n"})
			r := openRepo(t, dir)
			wt := create(t, r, "task-merge-"+string(s), "add feature")
			work(t, r, wt, map[string]string{"feature.txt": "new\n"}, "add feature")
			// Someone commits on main meanwhile: no fast-forward.
			writeFiles(t, dir, map[string]string{"other.txt": "x\n"})
			gitT(t, dir, "add", "other.txt")
			gitT(t, dir, "commit", "-qm", "other")
			before := gitT(t, dir, "rev-parse", "HEAD")

			res, err := r.Merge(ctx, wt, "main", s, "familiar: add feature")
			if err != nil {
				t.Fatal(err)
			}
			if res.Before != before || res.After == before || res.UpdatedCheckout != dir {
				t.Fatalf("result = %+v", res)
			}
			// The user's checkout moved along and has the feature.
			if readFile(t, filepath.Join(dir, "feature.txt")) != "new\n" || gitT(t, dir, "rev-parse", "HEAD") != res.After {
				t.Fatal("the checkout of main did not get the merge")
			}
			parents := gitT(t, dir, "log", "-1", "--format=%P", res.After)
			switch s {
			case Merge:
				if len(parents) != 81 {
					t.Errorf("merge commit parents = %q", parents)
				}
			case Squash, Rebase:
				if parents != before {
					t.Errorf("parent = %q, want %q", parents, before)
				}
			}
			if err := r.UndoMerge(ctx, wt.TaskID, res); err != nil {
				t.Fatal(err)
			}
			if gitT(t, dir, "rev-parse", "HEAD") != before || exists(filepath.Join(dir, "feature.txt")) {
				t.Fatal("undo did not restore main")
			}
			if kept, err := r.UndoRefs(ctx, wt.TaskID); err != nil || len(kept) == 0 || kept[len(kept)-1].Commit != res.After {
				t.Errorf("the undone merge is not kept under refs/familiar/undo: %+v %v", kept, err)
			}
			// Merge again after the undo.
			if _, err := r.Merge(ctx, wt, "main", s, "again"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMergeRefusesDirtyCheckout(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t, map[string]string{"README.md": "hello\n"})
	r := openRepo(t, dir)
	wt := create(t, r, "task-dirty", "change")
	work(t, r, wt, map[string]string{"a.txt": "a\n"}, "a")
	writeFiles(t, dir, map[string]string{"README.md": "my local edit\n", "scratch.txt": "wip\n"})
	before := gitT(t, dir, "rev-parse", "HEAD")
	_, err := r.Merge(ctx, wt, "main", Squash, "")
	var de *DirtyError
	if !errors.As(err, &de) || !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("err = %v", err)
	}
	if !slices.Contains(de.Files, "README.md") || !slices.Contains(de.Files, "scratch.txt") {
		t.Errorf("files = %v", de.Files)
	}
	if gitT(t, dir, "rev-parse", "HEAD") != before || readFile(t, filepath.Join(dir, "README.md")) != "my local edit\n" {
		t.Error("the dirty checkout was touched")
	}
}

func TestMergeConflictChangesNothing(t *testing.T) {
	for _, s := range []Strategy{Merge, Squash, Rebase} {
		t.Run(string(s), func(t *testing.T) {
			ctx := context.Background()
			dir := newRepo(t, map[string]string{"README.md": "hello\n"})
			r := openRepo(t, dir)
			wt := create(t, r, "task-conflict-"+string(s), "edit readme")
			work(t, r, wt, map[string]string{"README.md": "task version\n"}, "task edit")
			writeFiles(t, dir, map[string]string{"README.md": "user version\n"})
			gitT(t, dir, "commit", "-qam", "user edit")
			before := gitT(t, dir, "rev-parse", "HEAD")
			_, err := r.Merge(ctx, wt, "main", s, "")
			var ce *ConflictError
			if !errors.As(err, &ce) || !slices.Contains(ce.Files, "README.md") {
				t.Fatalf("err = %v", err)
			}
			if gitT(t, dir, "rev-parse", "HEAD") != before || gitT(t, dir, "status", "--porcelain") != "" {
				t.Error("a conflicting merge left something behind")
			}
			if list, _ := r.List(ctx); len(list) != 2 {
				t.Errorf("worktrees after the conflict: %+v", list)
			}
		})
	}
}

func TestMergeIntoBranchNotCheckedOut(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t, map[string]string{"README.md": "hello\n"})
	gitT(t, dir, "branch", "release")
	r := openRepo(t, dir)
	wt := create(t, r, "task-release", "fix")
	work(t, r, wt, map[string]string{"fix.txt": "f\n"}, "fix")
	mainBefore := gitT(t, dir, "rev-parse", "main")
	res, err := r.Merge(ctx, wt, "release", Squash, "fix")
	if err != nil {
		t.Fatal(err)
	}
	if res.UpdatedCheckout != "" || gitT(t, dir, "rev-parse", "release") != res.After || gitT(t, dir, "rev-parse", "main") != mainBefore {
		t.Fatalf("result %+v", res)
	}
	// Somebody moves release: undo refuses.
	gitT(t, dir, "update-ref", "refs/heads/release", mainBefore)
	if err := r.UndoMerge(ctx, wt.TaskID, res); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("undo after the base moved = %v", err)
	}
}

func TestStepBack(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t, map[string]string{"README.md": "hello\n"})
	r := openRepo(t, dir)
	wt := create(t, r, "task-step", "steps")
	work(t, r, wt, map[string]string{"one.txt": "1\n"}, "turn 1")
	first := gitT(t, wt.Path, "rev-parse", "HEAD")
	work(t, r, wt, map[string]string{"two.txt": "2\n"}, "turn 2")
	second := gitT(t, wt.Path, "rev-parse", "HEAD")
	at, err := r.StepBack(ctx, wt)
	if err != nil || at != first || exists(filepath.Join(wt.Path, "two.txt")) {
		t.Fatalf("step back = %s, %v", at, err)
	}
	if gitT(t, dir, "rev-parse", "refs/familiar/undo/task-step/1") != second {
		t.Error("the undone turn is not kept at refs/familiar/undo/<task-id>/1")
	}
	if at, err = r.StepBack(ctx, wt); err != nil || at != wt.BaseCommit {
		t.Fatalf("second step back = %s, %v", at, err)
	}
	// Both undos are kept, in order.
	kept, err := r.UndoRefs(ctx, wt.TaskID)
	if err != nil || len(kept) != 2 || kept[0].Commit != second || kept[1].Commit != first || kept[1].Ref != "refs/familiar/undo/task-step/2" {
		t.Fatalf("undo refs = %+v, %v", kept, err)
	}
	if _, err := r.StepBack(ctx, wt); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("stepping back past the base = %v", err)
	}
}

// Issue 22: a branch with nothing beyond its base is not merged: no empty
// commit on the base, whatever the strategy, even when the base moved on.
func TestMergeOfNothingMakesNoCommit(t *testing.T) {
	for _, s := range []Strategy{Merge, Squash, Rebase} {
		t.Run(string(s), func(t *testing.T) {
			ctx := context.Background()
			dir := newRepo(t, map[string]string{"README.md": "hello\n"})
			r := openRepo(t, dir)
			wt := create(t, r, "task-nothing-"+string(s), "answer a question")
			writeFiles(t, dir, map[string]string{"other.txt": "x\n"})
			gitT(t, dir, "add", "other.txt")
			gitT(t, dir, "commit", "-qm", "other")
			// A dirty checkout does not matter: nothing would touch it.
			writeFiles(t, dir, map[string]string{"scratch.txt": "wip\n"})
			before := gitT(t, dir, "rev-parse", "HEAD")
			res, err := r.Merge(ctx, wt, "main", s, "familiar: nothing")
			if err != nil {
				t.Fatal(err)
			}
			if res.Before != before || res.After != before {
				t.Errorf("result = %+v, want before = after = %s", res, before)
			}
			if got := gitT(t, dir, "rev-parse", "HEAD"); got != before {
				t.Errorf("main moved to %s", got)
			}
		})
	}
}
