package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/leakcheck"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// TestMain points git at an empty global config and no system config, and
// HOME at a temporary directory, so the tests neither depend on the
// machine's identity or settings nor touch anything of the user's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "worktree-test-")
	if err != nil {
		panic(err)
	}
	global := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(global, nil, 0o600); err != nil {
		panic(err)
	}
	os.Setenv("GIT_CONFIG_GLOBAL", global)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.Setenv("HOME", filepath.Join(dir, "home"))
	for _, v := range []string{"XDG_DATA_HOME", "EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
		"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"} {
		os.Unsetenv(v)
	}
	// Every git run must have been waited for: no goroutine or child left.
	code := leakcheck.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// gitT runs git in dir for a test's setup, with a test identity given on
// the command line (the global config is empty on purpose).
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	full := append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com"}, args...)
	cmd := exec.Command(testenv.Git(t), full...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// writeFiles writes name → content under dir, making parent directories.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newRepo makes a repository on branch main with files committed, and
// returns its (real) root.
func newRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	testenv.Git(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(dir, "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "init", "-q", "-b", "main")
	writeFiles(t, dir, files)
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "initial")
	return dir
}

// openRepo opens dir with worktrees under a fresh temporary root.
func openRepo(t testing.TB, dir string) *Repo {
	t.Helper()
	r, err := Open(context.Background(), dir, Options{Root: t.TempDir()})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return r
}

func create(t testing.TB, r *Repo, id, title string) Worktree {
	t.Helper()
	wt, err := r.Create(context.Background(), CreateOptions{TaskID: id, Title: title})
	if err != nil {
		t.Fatalf("Create(%q, %q): %v", id, title, err)
	}
	return wt
}

func wantKind(t testing.TB, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error = %v; want one wrapping %v", err, kind)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func branches(t testing.TB, dir string) []string {
	t.Helper()
	return strings.Fields(gitT(t, dir, "for-each-ref", "--format=%(refname:short)", "refs/heads/"))
}

func hasBranch(t testing.TB, dir, name string) bool {
	return slices.Contains(branches(t, dir), name)
}

func listPaths(t testing.TB, r *Repo) []string {
	t.Helper()
	entries, err := r.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range entries {
		paths = append(paths, e.Path)
	}
	return paths
}
