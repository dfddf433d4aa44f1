// Package worktree owns the git worktrees familiar makes for tasks: create,
// list, remove and prune them, and report what changed in one (changed files,
// numstat, diffs, checkpoints, commits since the base).
//
// It is the only package that runs git, always through the git CLI (go-git
// cannot add or remove linked worktrees) with LC_ALL=C, GIT_TERMINAL_PROMPT=0,
// -z porcelain output and "--" before paths, so user text is never read as an
// option. Operations on one repository are serialised by one lock.
//
// It never decides task policy: whether a task may be merged or removed is the
// orchestrator's call; this package only refuses what would lose work.
package worktree
