package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// invocation is one run of git. The runner is modelled on
// golang.org/x/tools/internal/gocommand: one function runs the tool with a
// context, captures stdout and stderr, and turns a failure into an error that
// names the arguments and carries git's own (trimmed) explanation.
type invocation struct {
	args  []string
	dir   string // working directory: a worktree or the repository root
	stdin []byte
	env   []string // extra KEY=value pairs, after the fixed ones
	// readOnly sets GIT_OPTIONAL_LOCKS=0 so that polling (status, diff) never
	// takes index.lock or rewrites the index while an agent is using the
	// worktree: an agent's own `git add` would otherwise fail on the lock.
	readOnly bool
}

// waitDelay bounds how long run waits for git's output pipes after git has
// exited or been killed: a hook's grandchild that keeps them open must not
// hang familiar.
const waitDelay = 5 * time.Second

// maxStderr caps the stderr kept in an error; git's useful line is short.
const maxStderr = 1024

// scrubbedEnv are inherited variables that would point git at another
// repository, index or pathspec mode than the one each call names (they are
// set when familiar itself is started from a git hook or alias).
var scrubbedEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
	"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE",
	"GIT_PREFIX", "GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS",
	"GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS", "GIT_OPTIONAL_LOCKS",
	"GIT_TERMINAL_PROMPT", "LC_ALL",
}

// gitEnv returns the environment for one git run: the process's own minus
// scrubbedEnv, then the fixed settings, then extra.
func gitEnv(readOnly bool, extra []string) []string {
	env := make([]string, 0, len(os.Environ())+4+len(extra))
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !scrubbed(name) {
			env = append(env, kv)
		}
	}
	// LC_ALL=C keeps messages and sorting stable for the few places that
	// look at them; GIT_TERMINAL_PROMPT=0 makes a credential prompt fail
	// instead of hanging a headless run.
	env = append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
	if readOnly {
		env = append(env, "GIT_OPTIONAL_LOCKS=0")
	}
	return append(env, extra...)
}

func scrubbed(name string) bool {
	for _, s := range scrubbedEnv {
		if name == s {
			return true
		}
	}
	return false
}

// gitError is a failed git run.
type gitError struct {
	args   []string
	stderr string // trimmed
	code   int    // exit status; -1 if git did not exit by itself
	err    error
}

func (e *gitError) Error() string {
	var b strings.Builder
	b.WriteString("git")
	for _, a := range e.args {
		b.WriteByte(' ')
		b.WriteString(quoteArg(a))
	}
	b.WriteString(": ")
	b.WriteString(e.err.Error())
	if e.stderr != "" {
		b.WriteString(": ")
		b.WriteString(e.stderr)
	}
	return b.String()
}

func (e *gitError) Unwrap() error { return e.err }

// quoteArg quotes arguments that would be ambiguous in a message (spaces,
// control characters, empty), so a hostile name shows as what it is.
func quoteArg(a string) string {
	if a == "" || strings.ContainsFunc(a, func(r rune) bool { return r <= ' ' || r == '"' || r == 0x7f }) {
		return strconv.Quote(a)
	}
	return a
}

// exitCode returns git's exit status from an error of run, or -1.
func exitCode(err error) int {
	var ge *gitError
	if errors.As(err, &ge) {
		return ge.code
	}
	return -1
}

// runner runs one git binary and logs each run at debug level.
type runner struct {
	git string
	log *slog.Logger
}

// run runs git and returns its stdout. A failure is a *gitError; if ctx ended
// it wraps ctx.Err(), and a missing binary wraps ErrUnavailable.
func (r *runner) run(ctx context.Context, inv invocation) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, r.git, inv.args...)
	cmd.Dir = inv.dir
	cmd.Env = gitEnv(inv.readOnly, inv.env)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if inv.stdin != nil {
		cmd.Stdin = bytes.NewReader(inv.stdin)
	}
	cmd.WaitDelay = waitDelay

	start := time.Now()
	err := cmd.Run()
	r.log.LogAttrs(ctx, slog.LevelDebug, "git", slog.Any("args", inv.args),
		slog.String("dir", inv.dir), slog.Duration("took", time.Since(start)),
		slog.Any("err", err))
	if err == nil {
		return stdout.Bytes(), nil
	}

	ge := &gitError{args: inv.args, stderr: trimStderr(stderr.Bytes()), code: -1, err: err}
	var ee *exec.ExitError
	var pe *fs.PathError
	switch {
	case ctx.Err() != nil:
		// The kill is a consequence; the cause is the context.
		ge.err = ctx.Err()
	case errors.As(err, &ee):
		ge.code = ee.ExitCode()
	case errors.As(err, &pe) && pe.Op == "chdir":
		ge.err = fmt.Errorf("%w: %w", ErrNotFound, err)
	default:
		ge.err = fmt.Errorf("%w: cannot run %s: %w", ErrUnavailable, r.git, err)
	}
	return stdout.Bytes(), ge
}

func trimStderr(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > maxStderr {
		b = append(b[:maxStderr:maxStderr], "…"...)
	}
	return string(b)
}
