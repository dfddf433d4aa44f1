package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestChangedFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	long := strings.Repeat("a fairly long line so that rename detection has content to match\n", 10)
	dir := newRepo(t, map[string]string{
		"modify.txt":     "one\ntwo\nthree\n",
		"delete.txt":     "gone\n",
		"gitmv.txt":      long,
		"plainmv.txt":    long + "different\n",
		"committed.txt":  "old\n",
		"untouched.txt":  "same\n",
		".gitignore":     "*.log\n",
		"dir/nested.txt": "nested\n",
	})
	r := openRepo(t, dir)
	wt := create(t, r, "changes", "changes")

	// Committed, staged, unstaged and untracked changes, all at once.
	writeFiles(t, wt.Path, map[string]string{"committed.txt": "new\n"})
	gitT(t, wt.Path, "commit", "-qam", "committed change")
	writeFiles(t, wt.Path, map[string]string{
		"modify.txt":      "one\n2\n3\nfour\n",
		"untracked.txt":   "u1\nu2\n",
		"dir/new/x.txt":   "x\n",
		"ignored.log":     "ignored\n",
		"name with space": "s\n",
	})
	must(t, os.WriteFile(filepath.Join(wt.Path, "image.bin"), []byte{0, 1, 2, 0, 255}, 0o644))
	must(t, os.Remove(filepath.Join(wt.Path, "delete.txt")))
	gitT(t, wt.Path, "mv", "gitmv.txt", "renamed-by-git.txt")
	must(t, os.Rename(filepath.Join(wt.Path, "plainmv.txt"), filepath.Join(wt.Path, "renamed-by-mv.txt")))
	statusBefore := gitT(t, wt.Path, "status", "--porcelain")
	index := gitT(t, wt.Path, "rev-parse", "--path-format=absolute", "--git-path", "index")
	indexBefore := readFile(t, index)

	got, err := r.ChangedFiles(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{
		{Path: "committed.txt", Status: Modified, Additions: 1, Deletions: 1},
		{Path: "delete.txt", Status: Deleted, Deletions: 1},
		{Path: "dir/new/x.txt", Status: Added, Additions: 1},
		{Path: "image.bin", Status: Added, Binary: true},
		{Path: "modify.txt", Status: Modified, Additions: 3, Deletions: 2},
		{Path: "name with space", Status: Added, Additions: 1},
		{Path: "renamed-by-git.txt", OldPath: "gitmv.txt", Status: Renamed},
		{Path: "renamed-by-mv.txt", OldPath: "plainmv.txt", Status: Renamed},
		{Path: "untracked.txt", Status: Added, Additions: 2},
	}
	slices.SortFunc(got, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
	if !slices.Equal(got, want) {
		t.Errorf("ChangedFiles =\n%+v\nwant\n%+v", got, want)
	}
	// Asking must not change what the agent sees (index first: status
	// itself may refresh it).
	if readFile(t, index) != indexBefore {
		t.Error("ChangedFiles wrote the worktree's index")
	}
	if after := gitT(t, wt.Path, "status", "--porcelain"); after != statusBefore {
		t.Errorf("ChangedFiles changed git status:\nbefore %s\nafter %s", statusBefore, after)
	}

	// A fresh worktree has no changes.
	fresh := create(t, r, "fresh", "fresh")
	if got, err := r.ChangedFiles(ctx, fresh); err != nil || len(got) != 0 {
		t.Errorf("ChangedFiles(fresh) = %v, %v; want none", got, err)
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	long := strings.Repeat("content that survives the move\n", 8)
	dir := newRepo(t, map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n", "old.txt": long, "*.txt": "star\n"})
	gitT(t, dir, "config", "diff.noprefix", "true") // the user's taste must not change the patch
	gitT(t, dir, "config", "color.ui", "always")
	r := openRepo(t, dir)
	wt := create(t, r, "diff", "diff")
	writeFiles(t, wt.Path, map[string]string{"a.txt": "alpha\nmore\n", "b.txt": "beta!\n", "new.txt": "fresh\n"})
	must(t, os.Rename(filepath.Join(wt.Path, "old.txt"), filepath.Join(wt.Path, "moved.txt")))

	all, err := r.Diff(ctx, wt, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"diff --git a/a.txt b/a.txt", "+more", "diff --git a/b.txt b/b.txt",
		"diff --git a/new.txt b/new.txt", "new file mode", "+fresh", "rename from old.txt", "rename to moved.txt"} {
		if !strings.Contains(all, want) {
			t.Errorf("Diff(all) lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "\x1b[") {
		t.Error("Diff has colour escapes")
	}

	tests := []struct {
		path    string
		want    []string
		notWant []string
	}{
		{"a.txt", []string{"diff --git a/a.txt b/a.txt", "+more"}, []string{"b.txt", "new.txt"}},
		{"new.txt", []string{"new file mode", "+fresh"}, []string{"a.txt"}},
		{"moved.txt", []string{"rename from old.txt", "rename to moved.txt"}, []string{"a.txt", "new file"}},
		{"*.txt", nil, []string{"diff --git"}}, // a literal name, not a glob: that file is unchanged
		{"unchanged-or-missing.txt", nil, []string{"diff --git"}},
	}
	for _, tt := range tests {
		got, err := r.Diff(ctx, wt, tt.path)
		if err != nil {
			t.Errorf("Diff(%q): %v", tt.path, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("Diff(%q) lacks %q:\n%s", tt.path, w, got)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(got, w) {
				t.Errorf("Diff(%q) has %q:\n%s", tt.path, w, got)
			}
		}
	}

	for _, bad := range []string{"../outside", "/etc/passwd", "a/../../b", ":(glob)*"} {
		_, err := r.Diff(ctx, wt, bad)
		if bad == ":(glob)*" {
			// Allowed as a file name, but read literally: nothing matches.
			if err != nil {
				t.Errorf("Diff(%q): %v", bad, err)
			}
			continue
		}
		wantKind(t, err, ErrInvalid)
	}
}

func TestCheckpointAndCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, map[string]string{"a.txt": "a\n", ".gitignore": ".env\n"})
	r := openRepo(t, dir)
	wt := create(t, r, "cp", "checkpoint")

	if _, committed, err := r.Checkpoint(ctx, wt, "nothing yet"); err != nil || committed {
		t.Fatalf("Checkpoint(clean) = committed %v, %v; want a clean no-op", committed, err)
	}
	if commits, err := r.Commits(ctx, wt); err != nil || len(commits) != 0 {
		t.Fatalf("Commits(fresh) = %v, %v; want none", commits, err)
	}

	writeFiles(t, wt.Path, map[string]string{"a.txt": "changed\n", "new/untracked.txt": "u\n", ".env": "SECRET=1\n"})
	c1, committed, err := r.Checkpoint(ctx, wt, "--amend\n\nbody text")
	if err != nil || !committed {
		t.Fatalf("Checkpoint = %v, %v; want a commit", committed, err)
	}
	if c1.Subject != "--amend" || !isHash(c1.SHA) {
		t.Errorf("Checkpoint commit = %+v; want subject --amend (the message is never an option)", c1)
	}
	if status := gitT(t, wt.Path, "status", "--porcelain"); status != "" {
		t.Errorf("status after Checkpoint = %q; want clean", status)
	}
	if files := gitT(t, wt.Path, "show", "--name-only", "--format=", "HEAD"); files != "a.txt\nnew/untracked.txt" {
		t.Errorf("checkpoint committed %q; want a.txt and the untracked file, not .env", files)
	}
	// No identity is configured anywhere in the tests: the fallback is used.
	if who := gitT(t, wt.Path, "log", "-1", "--format=%an <%ae> / %cn <%ce>"); who != "familiar <familiar@localhost> / familiar <familiar@localhost>" {
		t.Errorf("checkpoint identity = %q", who)
	}

	if _, committed, err := r.Checkpoint(ctx, wt, "again"); err != nil || committed {
		t.Errorf("second Checkpoint = committed %v, %v; want a clean no-op", committed, err)
	}

	// With an identity configured, it is used.
	gitT(t, dir, "config", "user.name", "Repo Owner")
	gitT(t, dir, "config", "user.email", "owner@example.com")
	must(t, os.Remove(filepath.Join(wt.Path, "a.txt")))
	c2, committed, err := r.Checkpoint(ctx, wt, "remove a")
	if err != nil || !committed {
		t.Fatalf("Checkpoint = %v, %v", committed, err)
	}
	if who := gitT(t, wt.Path, "log", "-1", "--format=%an <%ae>"); who != "Repo Owner <owner@example.com>" {
		t.Errorf("checkpoint identity = %q; want the repository's", who)
	}

	commits, err := r.Commits(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Commit{c1, {c2.SHA, "remove a"}}; !slices.Equal(commits, want) {
		t.Errorf("Commits = %+v; want %+v", commits, want)
	}

	for _, msg := range []string{"", "  \n", "a\x00b"} {
		_, _, err := r.Checkpoint(ctx, wt, msg)
		wantKind(t, err, ErrInvalid)
	}
}

// TestOperationsRefuseForeignWorktrees: a Worktree that is not a linked
// worktree of this repository, or has no proper base, is refused before git
// runs in it.
func TestOperationsRefuseForeignWorktrees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, map[string]string{"a.txt": "a\n"})
	other := newRepo(t, map[string]string{"b.txt": "b\n"})
	r := openRepo(t, dir)
	wt := create(t, r, "mine", "mine")
	otherWT := create(t, openRepo(t, other), "theirs", "theirs")

	tests := []struct {
		name string
		wt   Worktree
		kind error
	}{
		{"main worktree", Worktree{Path: dir, BaseCommit: wt.BaseCommit}, ErrInvalid},
		{"relative path", Worktree{Path: "relative", BaseCommit: wt.BaseCommit}, ErrInvalid},
		{"not a worktree", Worktree{Path: t.TempDir(), BaseCommit: wt.BaseCommit}, ErrNotFound},
		{"another repository's", Worktree{Path: otherWT.Path, BaseCommit: otherWT.BaseCommit}, ErrNotFound},
		{"symbolic base", Worktree{Path: wt.Path, BaseCommit: "HEAD"}, ErrInvalid},
		{"option base", Worktree{Path: wt.Path, BaseCommit: "--output=x"}, ErrInvalid},
	}
	for _, tt := range tests {
		_, err := r.ChangedFiles(ctx, tt.wt)
		wantKind(t, err, tt.kind)
		_, err = r.Diff(ctx, tt.wt, "")
		wantKind(t, err, tt.kind)
		_, err = r.Commits(ctx, tt.wt)
		wantKind(t, err, tt.kind)
	}
	// A forged .git file pointing at a real worktree's admin dir.
	forged := t.TempDir()
	must(t, os.WriteFile(filepath.Join(forged, ".git"), []byte(readFile(t, filepath.Join(wt.Path, ".git"))), 0o644))
	_, _, err := r.Checkpoint(ctx, Worktree{Path: forged}, "m")
	wantKind(t, err, ErrNotFound)
	if exists(filepath.Join(wt.Path, "x")) || exists(filepath.Join(dir, "x")) {
		t.Error("file x created")
	}
}

func TestParseRawNumstat(t *testing.T) {
	t.Parallel()
	bad := [][]string{
		{":100644 100644 abc def M"},                        // path missing
		{":100644 100644 abc def R100", "old"},              // new path missing
		{":100644 100644 abc def M", "a", "x\ty\ta"},        // counts not numbers
		{":100644 100644 abc def M", "a"},                   // no numstat
		{":100644 100644 abc def M", "a", "1\t0\tb"},        // out of step
		{":bogus", "a", "1\t0\ta"},                          // short raw record
		{":100644 100644 abc def R100", "o", "n", "1\t1\t"}, // rename numstat cut short
	}
	for _, toks := range bad {
		if got, err := parseRawNumstat(toks); err == nil {
			t.Errorf("parseRawNumstat(%q) = %v; want an error", toks, got)
		}
	}
}
