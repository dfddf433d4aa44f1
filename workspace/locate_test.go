package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// Locate finds the same repository and data dir however the directory is
// named: the top itself, a directory inside it, a path through a symbolic
// link; a directory in no repository is no location.
func TestLocate(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(tmp, "repo")
	sub := filepath.Join(repo, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// A linked worktree's .git is a file: it counts as a repository's top.
	if err := os.WriteFile(filepath.Join(repo, ".git"), []byte("gitdir: /elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(sub, link); err != nil {
		t.Fatal(err)
	}
	want := Location{Root: repo, DataDir: DefaultDataDir(repo)}
	for _, dir := range []string{repo, sub, link, filepath.Join(sub, "..", "b")} {
		got, ok := Locate(dir)
		if !ok || got != want {
			t.Errorf("Locate(%s) = %+v, %v; want %+v", dir, got, ok, want)
		}
	}
	outside := filepath.Join(tmp, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, ok := Locate(outside); ok {
		t.Errorf("Locate(%s) = %+v, want none", outside, got)
	}
	// Relative to the working directory, as the commands give it.
	t.Chdir(sub)
	if got, ok := Locate("."); !ok || got != want {
		t.Errorf("Locate(.) in %s = %+v, %v; want %+v", sub, got, ok, want)
	}
}
