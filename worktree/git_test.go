package worktree

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/testenv"
)

func testRunner(t *testing.T) *runner {
	return &runner{git: testenv.Git(t), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestRunErrorNamesArgsAndStderr(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, nil)
	_, err := testRunner(t).run(context.Background(), invocation{dir: dir,
		args: []string{"rev-parse", "--verify", "no such ref"}})
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{`git rev-parse --verify "no such ref"`, "exit status 128", "fatal: Needed a single revision"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if exitCode(err) != 128 {
		t.Errorf("exitCode = %d; want 128", exitCode(err))
	}
}

func TestRunCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := testRunner(t).run(ctx, invocation{dir: t.TempDir(), args: []string{"version"}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v; want context.Canceled", err)
	}
}

// TestRunIgnoresInheritedRepositoryEnv: familiar started from a git hook
// inherits GIT_DIR and friends, which must not redirect its git commands.
// Not parallel: it sets the environment.
func TestRunIgnoresInheritedRepositoryEnv(t *testing.T) {
	dir := newRepo(t, map[string]string{"a.txt": "a\n"})
	other := newRepo(t, map[string]string{"b.txt": "b\n"})
	t.Setenv("GIT_DIR", other+"/.git")
	t.Setenv("GIT_WORK_TREE", other)
	t.Setenv("GIT_INDEX_FILE", other+"/.git/index")
	r := openRepo(t, dir)
	if r.Root() != dir {
		t.Fatalf("Root() = %s; want %s", r.Root(), dir)
	}
	wt := create(t, r, "env", "env")
	if !exists(wt.Path + "/a.txt") {
		t.Error("the worktree is not of the opened repository")
	}
}
