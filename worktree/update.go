package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The merge queue's git work in a task's worktree: bringing the base into
// the task's branch before the task is merged, so what is checked (the
// verify command) is what the base will hold.

// CheckBaseClean refuses (a *DirtyError) when base is checked out in a
// working tree with uncommitted changes: the merge queue refuses to start
// then, rather than merge some tasks and fail on the rest.
func (r *Repo) CheckBaseClean(ctx context.Context, base string) error {
	if err := validRef("base branch", base); err != nil {
		return err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, err := r.cleanCheckoutOf(ctx, base)
	return err
}

// BringBase brings base (a branch) into the task's branch, in its worktree,
// which must be clean (a finished task's is): with strategy rebase the
// task's commits are replayed onto base (on conflict the rebase is aborted:
// the worktree is as it was), otherwise base is merged in with a merge
// commit (on conflict the merge stays in progress, the conflict markers in
// the files, for the agent to resolve; the next checkpoint commits the
// merge). A *ConflictError names the conflicting files. Nothing is done
// when the branch already holds base.
func (r *Repo) BringBase(ctx context.Context, wt Worktree, base string, strategy Strategy) error {
	if err := validRef("base branch", base); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	admin, err := r.checkWorktree(wt, false)
	if err != nil {
		return err
	}
	if err := r.checkBranchLocked(ctx, wt); err != nil {
		return err
	}
	if files, err := r.dirtyFiles(ctx, wt.Path); err != nil {
		return err
	} else if len(files) > 0 {
		return &DirtyError{Checkout: wt.Path, Files: files}
	}
	baseRef := "refs/heads/" + base
	tip, err := r.revParse(ctx, baseRef)
	if err != nil {
		return fmt.Errorf("%w: base %q is not a local branch: %w", ErrNotFound, base, err)
	}
	if in, err := r.isAncestor(ctx, tip, "refs/heads/"+wt.Branch); err != nil {
		return err
	} else if in {
		return nil
	}
	args, err := r.identityArgs(ctx, wt.Path)
	if err != nil {
		return err
	}
	if strategy == Rebase {
		_, err = r.git.run(ctx, invocation{dir: wt.Path, args: append(args, "rebase", "--no-autosquash", "--no-verify", "--quiet", tip)})
	} else {
		_, err = r.git.run(ctx, invocation{dir: wt.Path, args: append(args, "merge", "--no-edit", "--no-verify", "--quiet",
			"-m", "Merge "+base, tip)})
	}
	if err == nil {
		return nil
	}
	files, lerr := r.unmerged(ctx, wt.Path)
	if lerr != nil || len(files) == 0 {
		r.abortLocked(ctx, wt.Path, admin)
		return fmt.Errorf("bringing %s into %s: %w", base, wt.Branch, err)
	}
	if strategy == Rebase {
		r.abortLocked(ctx, wt.Path, admin)
	}
	return &ConflictError{Files: files}
}

// AbortBringBase takes back a merge or rebase BringBase left in progress
// (the worktree as it was before it).
func (r *Repo) AbortBringBase(ctx context.Context, wt Worktree) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	admin, err := r.checkWorktree(wt, false)
	if err != nil {
		return err
	}
	r.abortLocked(ctx, wt.Path, admin)
	return nil
}

// abortLocked aborts a merge or rebase in progress in the worktree dir
// whose administrative directory is gitDir.
func (r *Repo) abortLocked(ctx context.Context, dir, gitDir string) {
	if _, err := os.Stat(filepath.Join(gitDir, "MERGE_HEAD")); err == nil {
		_, _ = r.git.run(ctx, invocation{dir: dir, args: []string{"merge", "--abort"}})
	}
	for _, d := range []string{"rebase-merge", "rebase-apply"} {
		if _, err := os.Stat(filepath.Join(gitDir, d)); err == nil {
			_, _ = r.git.run(ctx, invocation{dir: dir, args: []string{"rebase", "--abort"}})
			break
		}
	}
}

// unmerged lists the files with conflicts in dir's index.
func (r *Repo) unmerged(ctx context.Context, dir string) ([]string, error) {
	out, err := r.git.run(ctx, invocation{dir: dir, readOnly: true, args: []string{"diff", "--name-only", "-z", "--diff-filter=U"}})
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}
