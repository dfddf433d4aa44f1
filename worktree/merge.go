package worktree

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Strategy is how a task's branch is merged into its base.
type Strategy string

const (
	Merge  Strategy = "merge"  // a merge commit with both parents
	Squash Strategy = "squash" // one commit with the task's changes
	Rebase Strategy = "rebase" // the task's commits replayed onto the base
)

// MergeResult says what a merge did, for undo.
type MergeResult struct {
	Base   string // the branch merged into (short name)
	Before string // the base's commit before the merge
	After  string // the base's commit after it
	// UpdatedCheckout is the working tree that had Base checked out and
	// was moved along (clean, so nothing of the user's was touched); "" if
	// Base was not checked out anywhere and only the ref moved.
	UpdatedCheckout string
}

// ConflictError lists the files a merge conflicts on. Nothing was changed.
type ConflictError struct{ Files []string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("merge conflicts in %s", strings.Join(e.Files, ", "))
}
func (e *ConflictError) Unwrap() error { return ErrConflict }

// Conflicting is the files, for the protocol's Conflict (errkind.Conflicting).
func (e *ConflictError) Conflicting() []string { return e.Files }

// DirtyError lists the uncommitted files of a checkout familiar will not
// touch.
type DirtyError struct {
	Checkout string
	Files    []string
}

func (e *DirtyError) Error() string {
	return fmt.Sprintf("the checkout of the base branch at %s has uncommitted changes (%s); commit or stash them first",
		e.Checkout, strings.Join(e.Files, ", "))
}
func (e *DirtyError) Unwrap() error { return ErrFailedPrecondition }

// Merge merges the task's branch into base (a branch name) with strategy.
// It never disturbs a checkout the user works in: the merged commit is made
// without a working tree (git merge-tree), or for rebase in a temporary
// worktree; then base moves, in its checkout if it has one (which must be
// clean: a fast-forward there updates files) or as a bare ref update
// (compare-and-swap). On conflicts nothing is changed and the files are
// named. A branch base already contains is not merged (After == Before).
func (r *Repo) Merge(ctx context.Context, wt Worktree, base string, strategy Strategy, message string) (MergeResult, error) {
	if err := validRef("base branch", base); err != nil {
		return MergeResult{}, err
	}
	if strings.ContainsRune(message, 0) {
		return MergeResult{}, fmt.Errorf("%w: message has a NUL", ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	before, err := r.revParse(ctx, "refs/heads/"+base)
	if err != nil {
		return MergeResult{}, fmt.Errorf("%w: base %q is not a local branch: %w", ErrNotFound, base, err)
	}
	// A branch the base already holds (a task that changed nothing, or
	// merged by hand) has nothing to merge: no commit, base stays (After ==
	// Before).
	if head, err := r.revParse(ctx, "refs/heads/"+wt.Branch); err != nil {
		return MergeResult{}, fmt.Errorf("%w: task branch %q: %w", ErrNotFound, wt.Branch, err)
	} else if in, err := r.isAncestor(ctx, head, before); err != nil {
		return MergeResult{}, fmt.Errorf("checking whether %s is in %s: %w", wt.Branch, base, err)
	} else if in {
		return MergeResult{Base: base, Before: before, After: before}, nil
	}
	// A dirty checkout of the base is refused before any work.
	if _, err := r.cleanCheckoutOf(ctx, base); err != nil {
		return MergeResult{}, err
	}
	after, err := r.candidateLocked(ctx, before, wt, strategy, message)
	if err != nil {
		return MergeResult{}, err
	}
	if markers, err := r.markers(ctx, r.root, before, after); err != nil {
		return MergeResult{}, err
	} else if len(markers) > 0 {
		return MergeResult{}, &UnresolvedError{Markers: markers}
	}
	return r.advanceLocked(ctx, base, before, after)
}

// UndoMerge moves base back from res.After to res.Before, only if nobody
// moved it since (and its checkout, if any, is clean). The undone commit
// stays reachable at refs/familiar/undo/<taskID>/<n> (see UndoRefs).
func (r *Repo) UndoMerge(ctx context.Context, taskID string, res MergeResult) error {
	if err := validTaskID(taskID); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	baseRef := "refs/heads/" + res.Base
	now, err := r.revParse(ctx, baseRef)
	if err != nil {
		return fmt.Errorf("%w: base %q: %w", ErrNotFound, res.Base, err)
	}
	if now != res.After {
		return fmt.Errorf("%w: %s has moved since the merge (now %s, merged %s); undo it by hand", ErrFailedPrecondition, res.Base, short(now), short(res.After))
	}
	checkout, err := r.cleanCheckoutOf(ctx, res.Base)
	if err != nil {
		return err
	}
	if _, err := r.keepUndone(ctx, taskID, res.After); err != nil {
		return err
	}
	if checkout != "" {
		// reset --keep refuses rather than lose a local change; the ref
		// check above makes it a move from exactly res.After.
		_, err = r.git.run(ctx, invocation{dir: checkout, args: []string{"reset", "--quiet", "--keep", res.Before}})
	} else {
		_, err = r.git.run(ctx, invocation{dir: r.root, args: []string{"update-ref", "-m", "familiar: undo merge of " + taskID, baseRef, res.Before, res.After}})
	}
	if err != nil {
		return fmt.Errorf("undoing the merge into %s: %w", res.Base, err)
	}
	return nil
}

// StepBack moves the task's branch back one checkpoint (to the commit
// before its last, or to its base), keeping what it undid at
// refs/familiar/undo/<taskID>/<n>. The worktree must be clean. It returns the
// commit the branch is now at.
func (r *Repo) StepBack(ctx context.Context, wt Worktree) (string, error) {
	if _, err := r.checkWorktree(wt, true); err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if files, err := r.dirtyFiles(ctx, wt.Path); err != nil {
		return "", err
	} else if len(files) > 0 {
		return "", &DirtyError{Checkout: wt.Path, Files: files}
	}
	head, err := r.revParseIn(ctx, wt.Path, "HEAD")
	if err != nil {
		return "", err
	}
	if head == wt.BaseCommit {
		return "", fmt.Errorf("%w: the task has no commits to step back from", ErrFailedPrecondition)
	}
	target, err := r.revParse(ctx, head+"^")
	if err != nil {
		return "", err
	}
	// Never step back past the base (a merge commit's first parent could).
	if ok, _ := r.isAncestor(ctx, wt.BaseCommit, target); !ok {
		target = wt.BaseCommit
	}
	if _, err := r.keepUndone(ctx, wt.TaskID, head); err != nil {
		return "", err
	}
	if _, err := r.git.run(ctx, invocation{dir: wt.Path, args: []string{"reset", "--quiet", "--keep", target}}); err != nil {
		return "", fmt.Errorf("stepping %s back: %w", wt.Branch, err)
	}
	return target, nil
}

// keepUndone keeps commit reachable at the task's next undo ref,
// refs/familiar/undo/<task-id>/<n> (n from 1), so that every undo is kept,
// not only the last. It returns the ref.
func (r *Repo) keepUndone(ctx context.Context, taskID, commit string) (string, error) {
	refs, err := r.undoRefs(ctx, taskID)
	if err != nil {
		return "", fmt.Errorf("keeping the undone commit: %w", err)
	}
	n := 1
	if len(refs) > 0 {
		n = refs[len(refs)-1].N + 1
	}
	ref := fmt.Sprintf("%s/%d", UndoRef(taskID), n)
	// The zero old value makes update-ref fail rather than overwrite a ref
	// another familiar made meanwhile.
	if _, err := r.git.run(ctx, invocation{dir: r.root, args: []string{"update-ref", ref, commit, strings.Repeat("0", len(commit))}}); err != nil {
		return "", fmt.Errorf("keeping the undone commit: %w", err)
	}
	return ref, nil
}

// UndoRef is the namespace under which a task's undone work stays
// reachable: each undo at UndoRef(id)/<n>, n counting from 1.
func UndoRef(taskID string) string { return "refs/familiar/undo/" + shortID(taskID) }

// Undone is one kept undo of a task.
type Undone struct {
	Ref    string // refs/familiar/undo/<task-id>/<n>
	N      int
	Commit string
}

// UndoRefs lists the task's kept undos, oldest first.
func (r *Repo) UndoRefs(ctx context.Context, taskID string) ([]Undone, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.undoRefs(ctx, taskID)
}

func (r *Repo) undoRefs(ctx context.Context, taskID string) ([]Undone, error) {
	out, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true,
		args: []string{"for-each-ref", "--format=%(refname) %(objectname)", UndoRef(taskID) + "/"}})
	if err != nil {
		return nil, fmt.Errorf("listing undo refs: %w", err)
	}
	var list []Undone
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ref, commit, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(ref, UndoRef(taskID)+"/"))
		if err != nil || n < 1 {
			continue
		}
		list = append(list, Undone{Ref: ref, N: n, Commit: commit})
	}
	slices.SortFunc(list, func(a, b Undone) int { return a.N - b.N })
	return list, nil
}

// mergeCommit makes the merge of head into base without a working tree.
func (r *Repo) mergeCommit(ctx context.Context, base, head, message string, twoParents bool) (string, error) {
	out, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true,
		args: []string{"merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", base, head}})
	if err != nil {
		if exitCode(err) == 1 {
			return "", &ConflictError{Files: conflictFiles(out)}
		}
		return "", fmt.Errorf("merging: %w", err)
	}
	tree := strings.TrimRight(strings.SplitN(string(out), "\x00", 2)[0], "\n")
	args, err := r.identityArgs(ctx, r.root)
	if err != nil {
		return "", err
	}
	args = append(args, "commit-tree", tree, "-p", base)
	if twoParents {
		args = append(args, "-p", head)
	}
	c, err := r.git.run(ctx, invocation{dir: r.root, stdin: []byte(message), args: append(args, "-F", "-")})
	if err != nil {
		return "", fmt.Errorf("making the merge commit: %w", err)
	}
	return strings.TrimSpace(string(c)), nil
}

// conflictFiles reads the conflicted paths from merge-tree -z --name-only
// output: the tree, then NUL-separated paths, then an empty field.
func conflictFiles(out []byte) []string {
	parts := strings.Split(string(out), "\x00")
	var files []string
	seen := map[string]bool{}
	for _, p := range parts[1:] {
		if p == "" {
			break
		}
		if !seen[p] {
			seen[p] = true
			files = append(files, p)
		}
	}
	return files
}

// rebaseCommits replays base..head onto base in a temporary worktree (git
// 2.39's merge-tree cannot replay one commit), so no checkout of the user's
// is involved. On conflict the rebase is aborted and the files named.
func (r *Repo) rebaseCommits(ctx context.Context, base, head string) (string, error) {
	if ok, _ := r.isAncestor(ctx, base, head); ok {
		return head, nil // already on top: a fast-forward
	}
	tmp, err := os.MkdirTemp(r.dir0(), ".rebase-")
	if err != nil {
		return "", fmt.Errorf("rebase: %w", err)
	}
	os.Remove(tmp) // worktree add wants to create it
	defer func() {
		_, _ = r.git.run(context.Background(), invocation{dir: r.root, args: []string{"worktree", "remove", "--force", tmp}})
		os.RemoveAll(tmp)
	}()
	if _, err := r.git.run(ctx, invocation{dir: r.root, args: []string{"worktree", "add", "--quiet", "--detach", tmp, head}}); err != nil {
		return "", fmt.Errorf("rebase: %w", err)
	}
	args, err := r.identityArgs(ctx, tmp)
	if err != nil {
		return "", err
	}
	if _, err := r.git.run(ctx, invocation{dir: tmp, args: append(args, "rebase", "--quiet", "--no-autostash", base)}); err != nil {
		out, _ := r.git.run(ctx, invocation{dir: tmp, readOnly: true, args: []string{"diff", "--name-only", "-z", "--diff-filter=U"}})
		_, _ = r.git.run(ctx, invocation{dir: tmp, args: []string{"rebase", "--abort"}})
		files := strings.FieldsFunc(string(out), func(c rune) bool { return c == 0 })
		if len(files) > 0 {
			return "", &ConflictError{Files: files}
		}
		return "", fmt.Errorf("rebase: %w", err)
	}
	return r.revParseIn(ctx, tmp, "HEAD")
}

// dir0 is where temporary worktrees go: familiar's worktrees dir.
func (r *Repo) dir0() string {
	if err := os.MkdirAll(r.dir, 0o755); err == nil {
		return r.dir
	}
	return os.TempDir()
}

// moveBase moves baseRef from before to after: in its checkout by a
// fast-forward (the files follow), else by a compare-and-swap ref update.
func (r *Repo) moveBase(ctx context.Context, checkout, baseRef, before, after string) error {
	var err error
	if checkout != "" {
		_, err = r.git.run(ctx, invocation{dir: checkout, args: []string{"merge", "--quiet", "--ff-only", after}})
	} else {
		_, err = r.git.run(ctx, invocation{dir: r.root, args: []string{"update-ref", "-m", "familiar: merge", baseRef, after, before}})
	}
	if err != nil {
		return fmt.Errorf("%w: moving %s to the merge: %w", ErrFailedPrecondition, baseRef, err)
	}
	return nil
}

// checkoutOf returns the working tree that has branch checked out, or "".
func (r *Repo) checkoutOf(ctx context.Context, branch string) (string, error) {
	entries, err := r.listLocked(ctx)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if !e.Detached && e.Branch == branch && !e.Prunable {
			return e.Path, nil
		}
	}
	return "", nil
}

// dirtyFiles lists uncommitted changes (untracked files included) in dir.
func (r *Repo) dirtyFiles(ctx context.Context, dir string) ([]string, error) {
	out, err := r.git.run(ctx, invocation{dir: dir, readOnly: true,
		args: []string{"status", "--porcelain=v1", "-z", "--untracked-files=all"}})
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", dir, err)
	}
	var files []string
	fields := strings.Split(string(out), "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		files = append(files, f[3:])
		if f[0] == 'R' || f[0] == 'C' {
			i++ // the rename's source follows
		}
	}
	return files, nil
}

func (r *Repo) revParse(ctx context.Context, rev string) (string, error) {
	return r.revParseIn(ctx, r.root, rev)
}

func (r *Repo) revParseIn(ctx context.Context, dir, rev string) (string, error) {
	out, err := r.git.run(ctx, invocation{dir: dir, readOnly: true,
		args: []string{"rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}"}})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

func (r *Repo) isAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true, args: []string{"merge-base", "--is-ancestor", a, b}})
	if err == nil {
		return true, nil
	}
	if exitCode(err) == 1 {
		return false, nil
	}
	return false, err
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
