package orchestrator

import (
	"context"

	"github.com/familiar-dev/familiar/mergequeue"
	"github.com/familiar-dev/familiar/worktree"
)

// Repository is what the orchestrator needs of the git repository
// (*worktree.Repo). Narrow, so that the runner can be tested without git.
type Repository interface {
	Root() string
	CurrentBranch(ctx context.Context) (string, error)
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
	KeepOnly(ctx context.Context, parent, candidate string, paths []string, message string) (string, error)
	mergequeue.Integration
}

var _ Repository = (*worktree.Repo)(nil)
