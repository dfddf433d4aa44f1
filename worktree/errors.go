package worktree

import "github.com/familiar-dev/familiar/errkind"

// The kinds of error this package returns. Every error it returns wraps at
// most one of them (test with errors.Is), with context saying what was refused
// and why; callers map kinds to protocol codes in one place. An error that
// wraps none of them is an unexpected git or filesystem failure.
var (
	// ErrInvalid: the input is unsafe or malformed (a ref starting with "-",
	// a title with no usable characters, a path that leaves the worktree…).
	ErrInvalid error = errkind.New(errkind.Invalid, "invalid argument")
	// ErrNotFound: the ref, worktree or path does not exist.
	ErrNotFound error = errkind.New(errkind.NotFound, "not found")
	// ErrFailedPrecondition: the operation would lose work or the repository
	// is not in a state that allows it (uncommitted changes, unmerged commits,
	// a branch familiar did not create, no commits yet).
	ErrFailedPrecondition error = errkind.New(errkind.FailedPrecondition, "failed precondition")
	// ErrConflict: something by that name already exists (branch, path).
	ErrConflict error = errkind.New(errkind.Conflict, "conflict")
	// ErrUnavailable: git itself cannot be run.
	ErrUnavailable error = errkind.New(errkind.Unavailable, "unavailable")
)
