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

// The data dir is named after the repository's on-disk path however it is
// typed; one made before that, named after the path as typed (here through
// a symbolic link), is kept while the new one does not exist, so its tasks
// are not lost.
func TestDefaultDataDirOnDiskAndEarlier(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(tmp, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	if got, want := DefaultDataDir(link), dataDirFor(repo); got != want {
		t.Fatalf("DefaultDataDir(link) = %s, want %s", got, want)
	}
	if got := OnDisk(link); got != repo {
		t.Errorf("OnDisk(%s) = %s, want %s", link, got, repo)
	}
	earlier := dataDirFor(link)
	if err := os.MkdirAll(earlier, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := DefaultDataDir(link); got != earlier {
		t.Errorf("with an earlier data dir: %s, want %s", got, earlier)
	}
	if err := os.MkdirAll(dataDirFor(repo), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := DefaultDataDir(link); got != dataDirFor(repo) {
		t.Errorf("with both: %s, want the on-disk one", got)
	}
}
