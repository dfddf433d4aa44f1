// Package worktree owns the git worktrees familiar makes for tasks: create,
// list, remove and prune them, and report what changed in one (changed files
// with line counts, diffs, checkpoints, commits since the base).
//
// It is the only package that runs git, always through the git CLI (go-git
// cannot add or remove linked worktrees) with LC_ALL=C, GIT_TERMINAL_PROMPT=0,
// GIT_OPTIONAL_LOCKS=0 for read-only queries, -z porcelain output, and
// --end-of-options and "--" before refs and paths, so user text is never read
// as an option. Titles become branch names only as [a-z0-9-] slugs; refs are
// checked against git's ref-name rules before git sees them.
//
// A task's worktree is on branch <prefix><short-id>-<slug> (prefix
// "familiar/" by default) in <root>/<repo-name>-<hash>/<short-id>-<slug>, outside
// the repository (root $XDG_DATA_HOME/familiar/worktrees by default). The task
// id and base are also kept in familiar.json in the worktree's directory under
// .git/worktrees, which git deletes with the worktree, so List and Prune know
// the owner after a restart. Ignored files named by .worktreeinclude (.env…)
// are copied into new worktrees.
//
// Operations that change a repository are serialised by one lock per
// repository (its common git dir), shared by every Repo in the process;
// read-only ones run alongside each other. Errors wrap one of ErrInvalid,
// ErrNotFound, ErrFailedPrecondition, ErrConflict or ErrUnavailable.
//
// It never decides task policy: whether a task may be merged or removed is the
// orchestrator's call; this package only refuses what would lose work
// (uncommitted changes, unmerged commits) and never deletes a branch it did
// not make.
package worktree
