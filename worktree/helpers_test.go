package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

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
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		code = checkLeaks()
	}
	os.Exit(code)
}

// checkLeaks reports goroutines or child processes the tests left behind:
// every git run must have been waited for.
func checkLeaks() int {
	// Goroutines of finished tests (testing's own, os/exec's) wind down
	// just after m.Run returns: give them a moment before calling it a leak.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > 1 {
		buf := make([]byte, 1<<16)
		fmt.Fprintf(os.Stderr, "leaked %d goroutines:\n%s\n", n-1, buf[:runtime.Stack(buf, true)])
		return 1
	}
	// Linux lists each thread's children; elsewhere the check is skipped.
	files, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			fmt.Fprintf(os.Stderr, "child processes left running: %s\n", b)
			return 1
		}
	}
	return 0
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
