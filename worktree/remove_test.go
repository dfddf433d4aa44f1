package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestRemoveRefusesUncommittedWork(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, map[string]string{"a.txt": "a\n", ".gitignore": "*.log\n"})
	r := openRepo(t, dir)

	tests := []struct {
		name    string
		change  func(t *testing.T, wt string)
		refused bool
	}{
		{"clean", func(*testing.T, string) {}, false},
		{"modified", func(t *testing.T, wt string) { writeFiles(t, wt, map[string]string{"a.txt": "changed\n"}) }, true},
		{"untracked", func(t *testing.T, wt string) { writeFiles(t, wt, map[string]string{"new/file.txt": "n\n"}) }, true},
		{"staged", func(t *testing.T, wt string) {
			writeFiles(t, wt, map[string]string{"b.txt": "b\n"})
			gitT(t, wt, "add", "b.txt")
		}, true},
		{"deleted", func(t *testing.T, wt string) { os.Remove(filepath.Join(wt, "a.txt")) }, true},
		{"ignored only", func(t *testing.T, wt string) { writeFiles(t, wt, map[string]string{"debug.log": "l\n"}) }, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wt := create(t, r, "rm-"+string(rune('a'+i)), tt.name)
			tt.change(t, wt.Path)
			err := r.Remove(context.Background(), wt.Path, RemoveOptions{})
			if !tt.refused {
				if err != nil {
					t.Fatalf("Remove: %v", err)
				}
				if exists(wt.Path) {
					t.Fatal("Remove left the directory")
				}
				return
			}
			wantKind(t, err, ErrFailedPrecondition)
			if !exists(wt.Path) {
				t.Fatal("a refused Remove deleted the worktree")
			}
			if err := r.Remove(context.Background(), wt.Path, RemoveOptions{Force: true}); err != nil {
				t.Fatalf("Remove(Force): %v", err)
			}
			if exists(wt.Path) {
				t.Fatal("Remove(Force) left the directory")
			}
		})
	}
}

func TestRemoveDeleteBranch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := openRepo(t, dir)

	// No commits of its own: the branch goes with the worktree.
	wt := create(t, r, "plain", "plain")
	if err := r.Remove(ctx, wt.Path, RemoveOptions{DeleteBranch: true}); err != nil {
		t.Fatal(err)
	}
	if hasBranch(t, dir, wt.Branch) {
		t.Error("DeleteBranch kept the branch")
	}

	// A commit only this branch has: refused, nothing removed.
	wt = create(t, r, "work", "work")
	writeFiles(t, wt.Path, map[string]string{"b.txt": "b\n"})
	gitT(t, wt.Path, "add", "b.txt")
	gitT(t, wt.Path, "commit", "-qm", "unmerged work")
	wantKind(t, r.Remove(ctx, wt.Path, RemoveOptions{DeleteBranch: true}), ErrFailedPrecondition)
	if !exists(wt.Path) || !hasBranch(t, dir, wt.Branch) {
		t.Fatal("a refused Remove removed something")
	}
	// Once another branch has the commit, nothing would be lost.
	gitT(t, dir, "branch", "keep", wt.Branch)
	if err := r.Remove(ctx, wt.Path, RemoveOptions{DeleteBranch: true}); err != nil {
		t.Fatal(err)
	}
	if hasBranch(t, dir, wt.Branch) || !hasBranch(t, dir, "keep") {
		t.Errorf("branches after Remove = %v", branches(t, dir))
	}

	// Forced, unmerged work goes too.
	wt = create(t, r, "forced", "forced")
	writeFiles(t, wt.Path, map[string]string{"c.txt": "c\n"})
	gitT(t, wt.Path, "add", "c.txt")
	gitT(t, wt.Path, "commit", "-qm", "doomed")
	if err := r.Remove(ctx, wt.Path, RemoveOptions{DeleteBranch: true, Force: true}); err != nil {
		t.Fatal(err)
	}
	if exists(wt.Path) || hasBranch(t, dir, wt.Branch) {
		t.Error("Remove(Force, DeleteBranch) kept the worktree or branch")
	}
}

// TestRemoveNeverDeletesForeignBranches: a branch without familiar's
// prefix is refused even with Force, before anything is removed.
func TestRemoveNeverDeletesForeignBranches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := openRepo(t, dir)

	// A worktree the user made.
	user := filepath.Join(t.TempDir(), "users-own")
	gitT(t, dir, "worktree", "add", "-q", "-b", "users-branch", user)
	// A familiar worktree whose agent moved it to a branch of its own.
	wt := create(t, r, "moved", "moved")
	gitT(t, wt.Path, "switch", "-q", "-c", "agent-branch")

	for _, path := range []string{user, wt.Path} {
		for _, force := range []bool{false, true} {
			err := r.Remove(ctx, path, RemoveOptions{DeleteBranch: true, Force: force})
			wantKind(t, err, ErrFailedPrecondition)
		}
	}
	for _, b := range []string{"users-branch", "agent-branch", wt.Branch} {
		if !hasBranch(t, dir, b) {
			t.Errorf("branch %s was deleted", b)
		}
	}
	if !exists(user) || !exists(wt.Path) {
		t.Error("a refused Remove removed a worktree")
	}
	if got := len(listPaths(t, r)); got != 3 {
		t.Errorf("List has %d worktrees; want 3", got)
	}
}

func TestRemoveMissingDirectory(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := openRepo(t, dir)
	wt := create(t, r, "gone", "gone")
	if err := os.RemoveAll(wt.Path); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(context.Background(), wt.Path, RemoveOptions{DeleteBranch: true}); err != nil {
		t.Fatal(err)
	}
	if got := listPaths(t, r); !slices.Equal(got, []string{dir}) {
		t.Errorf("List = %v; want only the main worktree", got)
	}
	if hasBranch(t, dir, wt.Branch) {
		t.Error("branch kept")
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := openRepo(t, dir)

	live := create(t, r, "live", "live task")
	orphan := create(t, r, "orphan", "clean orphan")
	dirty := create(t, r, "dirty", "dirty orphan")
	writeFiles(t, dirty.Path, map[string]string{"wip.txt": "unsaved\n"})
	committed := create(t, r, "committed", "orphan with commits")
	writeFiles(t, committed.Path, map[string]string{"c.txt": "c\n"})
	gitT(t, committed.Path, "add", "c.txt")
	gitT(t, committed.Path, "commit", "-qm", "work")
	vanished := create(t, r, "vanished", "directory deleted")
	if err := os.RemoveAll(vanished.Path); err != nil {
		t.Fatal(err)
	}
	locked := create(t, r, "locked", "locked orphan")
	gitT(t, dir, "worktree", "lock", locked.Path)
	user := filepath.Join(t.TempDir(), "users-own")
	gitT(t, dir, "worktree", "add", "-q", "-b", "familiar/looks-like-ours", user)

	rep, err := r.Prune(ctx, []string{"live", "some-finished-task"})
	if err != nil {
		t.Fatal(err)
	}
	var removed, skipped []string
	for _, e := range rep.Removed {
		removed = append(removed, e.TaskID)
	}
	for _, s := range rep.Skipped {
		skipped = append(skipped, s.Entry.TaskID)
		wantKind(t, s.Reason, ErrFailedPrecondition)
	}
	slices.Sort(removed)
	slices.Sort(skipped)
	if want := []string{"committed", "orphan"}; !slices.Equal(removed, want) {
		t.Errorf("removed %v; want %v", removed, want)
	}
	if want := []string{"dirty", "locked"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %v; want %v", skipped, want)
	}

	got := listPaths(t, r)
	slices.Sort(got)
	want := []string{dir, live.Path, dirty.Path, locked.Path, user}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("List after Prune = %v; want %v", got, want)
	}
	if hasBranch(t, dir, orphan.Branch) {
		t.Error("the clean orphan's merged branch was kept")
	}
	if !hasBranch(t, dir, committed.Branch) {
		t.Error("Prune deleted a branch holding the only copy of a commit")
	}
	if readFile(t, filepath.Join(dirty.Path, "wip.txt")) != "unsaved\n" {
		t.Error("Prune touched a dirty worktree")
	}
}
