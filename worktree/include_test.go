package worktree

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestWorktreeInclude(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret": "outside\n"})
	dir := newRepo(t, map[string]string{
		".gitignore":       ".env*\nsecrets/\n*.log\nlink-*\nnested/**/local.json\n",
		".worktreeinclude": "# copy these\n.env\n.env.*\n!.env.skip\nsecrets/\nnotignored.txt\nlink-*\nlocal.json\n",
		"src/app.go":       "package app\n",
	})
	files := map[string]struct {
		content string
		mode    os.FileMode
	}{
		".env":                  {"A=1\n", 0o600},
		".env.local":            {"B=2\n", 0o640},
		".env.skip":             {"skip\n", 0o644},
		"secrets/key.pem":       {"key\n", 0o400},
		"secrets/deep/run.sh":   {"#!/bin/sh\n", 0o755},
		"notignored.txt":        {"untracked but not ignored\n", 0o644},
		"debug.log":             {"ignored but not included\n", 0o644},
		"nested/a/b/local.json": {"{}\n", 0o644},
		"src/.env":              {"C=3\n", 0o600},
	}
	for name, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link-out")))
	rel, err := filepath.Rel(dir, filepath.Join(outside, "secret"))
	must(t, err)
	must(t, os.Symlink(rel, filepath.Join(dir, "link-rel-out")))
	must(t, os.Symlink(".env", filepath.Join(dir, "link-in")))

	r := openRepo(t, dir)
	wt := create(t, r, "inc", "include")

	for name, f := range files {
		p := filepath.Join(wt.Path, filepath.FromSlash(name))
		wantCopied := name != ".env.skip" && name != "notignored.txt" && name != "debug.log"
		if !wantCopied {
			if exists(p) {
				t.Errorf("%s was copied", name)
			}
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s not copied: %v", name, err)
			continue
		}
		if fi.Mode().Perm() != f.mode {
			t.Errorf("%s copied with mode %v; want %v", name, fi.Mode().Perm(), f.mode)
		}
		if got := readFile(t, p); got != f.content {
			t.Errorf("%s copied as %q; want %q", name, got, f.content)
		}
	}
	if exists(filepath.Join(wt.Path, "link-out")) || exists(filepath.Join(wt.Path, "link-rel-out")) {
		t.Error("a symlink pointing out of the repository was copied")
	}
	if got, err := os.Readlink(filepath.Join(wt.Path, "link-in")); err != nil || got != ".env" {
		t.Errorf("link-in copied as %q, %v; want a symlink to .env", got, err)
	}
	// Copied files are ignored in the worktree too: it stays clean.
	if err := r.checkClean(context.Background(), wt.Path); err != nil {
		t.Errorf("worktree after copying: %v", err)
	}
}

// TestWorktreeIncludeRefusesSymlinkOut: the base commit has a tracked
// symlink to a directory outside where the main checkout has a real
// directory with an included file. Copying must not write through the
// link; Create fails and leaves nothing behind.
func TestWorktreeIncludeRefusesSymlinkOut(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	dir := newRepo(t, map[string]string{".gitignore": ".env\n", ".worktreeinclude": ".env\n"})
	must(t, os.Symlink(outside, filepath.Join(dir, "conf")))
	gitT(t, dir, "add", "conf")
	gitT(t, dir, "commit", "-qm", "conf is a link")
	gitT(t, dir, "tag", "with-link")
	gitT(t, dir, "rm", "-q", "conf")
	gitT(t, dir, "commit", "-qm", "conf is a directory")
	writeFiles(t, dir, map[string]string{"conf/.env": "SECRET=1\n", "conf/sub/.env": "SECRET=2\n"})

	r := openRepo(t, dir)
	_, err := r.Create(context.Background(), CreateOptions{TaskID: "t", Title: "escape", BaseRef: "with-link"})
	wantKind(t, err, ErrInvalid)
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("files were written outside the worktree: %v", entries)
	}
	if got := listPaths(t, r); len(got) != 1 {
		t.Errorf("a failed Create left worktrees: %v", got)
	}
	if hasBranch(t, dir, r.BranchPrefix()+shortID("t")+"-escape") {
		t.Error("a failed Create left its branch")
	}
	// Retrying after the cause is gone works: the rollback freed the name.
	if _, err := r.Create(context.Background(), CreateOptions{TaskID: "t", Title: "escape"}); err != nil {
		t.Fatal(err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
