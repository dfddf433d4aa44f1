package orchestrator

import (
	"context"

	"github.com/familiar-dev/familiar/worktree"
)

// Repository is what the orchestrator needs of the git repository
// (*worktree.Repo). Narrow, so that the runner can be tested without git.
type Repository interface {
	Root() string
	Create(ctx context.Context, opts worktree.CreateOptions) (worktree.Worktree, error)
	CheckRef(ctx context.Context, ref string) error
	CheckRefAt(ctx context.Context, branch, sha string) error
	CheckPath(rel string) error
	ListTracked(ctx context.Context, dir string) ([]string, error)
	Checkpoint(ctx context.Context, wt worktree.Worktree, message string) (worktree.Commit, bool, error)
	Submodules(ctx context.Context, wt worktree.Worktree) ([]worktree.Submodule, error)
	ChangedFiles(ctx context.Context, wt worktree.Worktree) ([]worktree.FileChange, error)
	Commits(ctx context.Context, wt worktree.Worktree) ([]worktree.Commit, error)
	Diff(ctx context.Context, wt worktree.Worktree, path string) (string, error)
	FileTexts(ctx context.Context, wt worktree.Worktree, c worktree.FileChange) (oldText, newText string, ok bool, err error)
	UndoMerge(ctx context.Context, taskID string, res worktree.MergeResult) error
	StepBack(ctx context.Context, wt worktree.Worktree) (string, error)
	UndoRefs(ctx context.Context, taskID string) ([]worktree.Undone, error)
	Remove(ctx context.Context, path string, opts worktree.RemoveOptions) error
	Integration
}

// Integration is the git the merge queue and task/merge share: a candidate
// built beside everything, checked in a scratch worktree, the base moved to
// it by compare-and-swap (issue 34).
type Integration interface {
	Tip(ctx context.Context, base string) (string, error)
	Candidate(ctx context.Context, parent string, wt worktree.Worktree, strategy worktree.Strategy, message string) (string, error)
	LeftoverMarkers(ctx context.Context, from, to string) ([]worktree.Marker, error)
	Advance(ctx context.Context, base, before, after string) (worktree.MergeResult, error)
	Contains(ctx context.Context, base, commit string) (bool, error)
	Scratch(ctx context.Context, commit string) (dir string, remove func(), err error)
	CheckBaseClean(ctx context.Context, base string) error
	BringBase(ctx context.Context, wt worktree.Worktree, base string, strategy worktree.Strategy) error
	AbortBringBase(ctx context.Context, wt worktree.Worktree) error
	BranchTip(ctx context.Context, wt worktree.Worktree) (string, error)
	RestoreBranch(ctx context.Context, wt worktree.Worktree, commit string) error
	ConflictHunks(wt worktree.Worktree, files []string, maxLines int) string
}

var _ Repository = (*worktree.Repo)(nil)
