package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Entry is one worktree of the repository as git lists it.
type Entry struct {
	// Worktree has Path, Branch (short name, "" if detached) and
	// RepoRoot; for worktrees Create made, also TaskID, BaseRef and
	// BaseCommit.
	Worktree
	// Head is the commit checked out ("" if the branch has none yet).
	Head string
	// Main is the repository's main working tree.
	Main bool
	// Detached: HEAD is not on a branch.
	Detached bool
	// Locked: `git worktree lock` protects it; Prune leaves it alone.
	Locked bool
	// Prunable: its directory is gone; Prune drops git's record of it.
	Prunable bool
	// Familiar: it is under WorktreesDir and on a branch with
	// BranchPrefix, i.e. familiar made it and the agent has not moved it
	// to another branch.
	Familiar bool
}

// List returns every worktree of the repository, the main one first.
func (r *Repo) List(ctx context.Context) ([]Entry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.listLocked(ctx)
}

func (r *Repo) listLocked(ctx context.Context) ([]Entry, error) {
	out, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true,
		args: []string{"worktree", "list", "--porcelain", "-z"}})
	if err != nil {
		return nil, fmt.Errorf("listing worktrees: %w", err)
	}
	// Records are runs of NUL-terminated "key[ value]" fields, each run
	// ended by an empty field.
	var entries []Entry
	var e *Entry
	for _, field := range splitNUL(out) {
		if field == "" {
			e = nil
			continue
		}
		key, value, _ := strings.Cut(field, " ")
		if key == "worktree" {
			entries = append(entries, Entry{Worktree: Worktree{Path: value, RepoRoot: r.root}})
			e = &entries[len(entries)-1]
			continue
		}
		if e == nil {
			return nil, fmt.Errorf("listing worktrees: field %q outside a record", field)
		}
		switch key {
		case "HEAD":
			if strings.Trim(value, "0") != "" {
				e.Head = value
			}
		case "branch":
			e.Branch = strings.TrimPrefix(value, "refs/heads/")
		case "detached":
			e.Detached = true
		case "locked":
			e.Locked = true
		case "prunable":
			e.Prunable = true
		}
	}
	for i := range entries {
		e := &entries[i]
		e.Main = i == 0 // git lists the main working tree first
		e.Familiar = !e.Main && within(filepath.Clean(e.Path), r.dir) && strings.HasPrefix(e.Branch, r.prefix)
		if e.Main || e.Prunable {
			continue
		}
		if admin, err := r.adminDir(e.Path); err == nil {
			if m, ok := readMeta(admin); ok {
				e.TaskID, e.BaseRef, e.BaseCommit = m.TaskID, m.BaseRef, m.BaseCommit
			}
		}
	}
	return entries, nil
}

// RemoveOptions say how far Remove may go.
type RemoveOptions struct {
	// DeleteBranch deletes the worktree's branch too. Only a branch with
	// BranchPrefix is ever deleted; asking for another is ErrFailedPrecondition.
	DeleteBranch bool
	// Force removes the worktree even with uncommitted changes, and
	// deletes the branch even with commits no other branch has.
	Force bool
}

// Remove removes the linked worktree at path. Without opts.Force it refuses
// (ErrFailedPrecondition) while the worktree has uncommitted changes,
// untracked files included, or is locked; with DeleteBranch, also while the
// branch has commits that no other branch (local or remote-tracking) has.
// Without DeleteBranch the branch keeps the worktree's commits, so they do
// not block removal. Ignored files (.env…) are removed with the worktree.
func (r *Repo) Remove(ctx context.Context, path string, opts RemoveOptions) error {
	r.mu.Lock()
	defer r.mu.Unlock()

	entries, err := r.listLocked(ctx)
	if err != nil {
		return err
	}
	var e *Entry
	for i := range entries {
		if samePath(entries[i].Path, path) {
			e = &entries[i]
			break
		}
	}
	switch {
	case e == nil:
		return fmt.Errorf("%w: %s is not a worktree of %s", ErrNotFound, path, r.root)
	case e.Main:
		return fmt.Errorf("%w: %s is the repository's main working tree", ErrInvalid, path)
	}

	branch := e.Branch
	if opts.DeleteBranch {
		if branch == "" {
			return fmt.Errorf("%w: %s is not on a branch; nothing to delete", ErrFailedPrecondition, path)
		}
		if !strings.HasPrefix(branch, r.prefix) {
			return fmt.Errorf("%w: branch %s was not made by familiar (no %q prefix); not deleting it", ErrFailedPrecondition, branch, r.prefix)
		}
	}
	if !opts.Force {
		if e.Locked {
			return fmt.Errorf("%w: %s is locked (git worktree unlock)", ErrFailedPrecondition, path)
		}
		if !e.Prunable {
			if err := r.checkClean(ctx, e.Path); err != nil {
				return err
			}
		}
		if opts.DeleteBranch && e.Head != "" {
			if err := r.checkMerged(ctx, branch, e.Head); err != nil {
				return err
			}
		}
	}

	if err := r.removeLocked(ctx, *e, opts.Force); err != nil {
		return err
	}
	if opts.DeleteBranch {
		return r.deleteBranch(ctx, branch, e.Head)
	}
	return nil
}

// removeLocked removes one worktree, or git's record of it if its
// directory is already gone.
func (r *Repo) removeLocked(ctx context.Context, e Entry, force bool) error {
	if _, err := os.Lstat(e.Path); errors.Is(err, fs.ErrNotExist) {
		if _, err := r.git.run(ctx, invocation{dir: r.root, args: []string{"worktree", "prune"}}); err != nil {
			return fmt.Errorf("pruning missing worktree %s: %w", e.Path, err)
		}
		return nil
	}
	args := []string{"worktree", "remove"}
	switch {
	case force:
		// Twice: once for changes, once more for a lock.
		args = append(args, "--force", "--force")
	case r.hasInitialisedSubmodules(e.Path):
		// git refuses any worktree with submodules checked out unless
		// forced; Remove has checked it clean (submodules included) and
		// unlocked, which is what git would have checked.
		args = append(args, "--force")
	}
	args = append(args, "--", e.Path)
	if _, err := r.git.run(ctx, invocation{dir: r.root, args: args}); err != nil {
		if !force && exitCode(err) != -1 {
			// Changed between our check and git's own (git refuses too).
			return fmt.Errorf("%w: removing %s: %w", ErrFailedPrecondition, e.Path, err)
		}
		return fmt.Errorf("removing worktree %s: %w", e.Path, err)
	}
	return nil
}

// deleteBranch deletes the branch only if it still points at head, the
// commit the checks were made on: update-ref compares and deletes
// atomically, unlike `git branch -D`.
func (r *Repo) deleteBranch(ctx context.Context, branch, head string) error {
	args := []string{"update-ref", "-d", "refs/heads/" + branch}
	if head != "" {
		args = append(args, head)
	}
	if _, err := r.git.run(ctx, invocation{dir: r.root, args: args}); err != nil {
		return fmt.Errorf("deleting branch %s: %w", branch, err)
	}
	return nil
}

// checkClean refuses a worktree with changes `git worktree remove` would
// refuse too: modified, staged or untracked files (ignored ones are fine).
func (r *Repo) checkClean(ctx context.Context, path string) error {
	out, err := r.git.run(ctx, invocation{dir: path, readOnly: true,
		args: []string{"status", "--porcelain", "-z", "--untracked-files=normal", "--ignore-submodules=none"}})
	if err != nil {
		return fmt.Errorf("checking %s for uncommitted changes: %w", path, err)
	}
	if recs := splitNUL(out); len(recs) > 0 {
		return fmt.Errorf("%w: %s has uncommitted changes (%s); checkpoint them or force", ErrFailedPrecondition, path, summarize(recs))
	}
	return nil
}

// checkMerged refuses a branch whose tip has commits no other branch or
// remote-tracking branch reaches: deleting it would lose them.
func (r *Repo) checkMerged(ctx context.Context, branch, head string) error {
	// --exclude drops the branch itself from --branches; branch names
	// cannot hold glob characters, so it matches exactly.
	out, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true,
		args: []string{"rev-list", "--max-count=1", head, "--not", "--exclude=" + branch, "--branches", "--remotes"}})
	if err != nil {
		return fmt.Errorf("checking branch %s for unmerged commits: %w", branch, err)
	}
	if sha := strings.TrimSpace(string(out)); sha != "" {
		return fmt.Errorf("%w: branch %s has commits no other branch has (e.g. %.12s); merge them or force", ErrFailedPrecondition, branch, sha)
	}
	return nil
}

// summarize names the first few paths of `status --porcelain -z` records.
func summarize(recs []string) string {
	const show = 3
	var paths []string
	for _, rec := range recs {
		if len(rec) > 3 && rec[2] == ' ' { // "XY path"; rename sources follow bare
			paths = append(paths, rec[3:])
		}
	}
	s := strings.Join(paths[:min(len(paths), show)], ", ")
	if len(paths) > show {
		s += fmt.Sprintf(" and %d more", len(paths)-show)
	}
	return s
}

// Skipped is a worktree Prune left in place, and why.
type Skipped struct {
	Entry  Entry
	Reason error
}

// PruneReport says what Prune did.
type PruneReport struct {
	Removed []Entry   // worktrees removed (their branches deleted too when merged)
	Skipped []Skipped // orphans kept because removing them would lose work
}

// Prune removes familiar's worktrees (Entry.Familiar) that none of the live
// tasks owns, then runs `git worktree prune` to drop records of worktrees
// whose directories are gone. An orphan with uncommitted changes, or locked,
// is kept and reported; an orphan's branch is deleted only when no commit of
// it would be lost. Worktrees familiar did not make are never touched.
func (r *Repo) Prune(ctx context.Context, liveTaskIDs []string) (PruneReport, error) {
	live := make(map[string]bool, len(liveTaskIDs))
	liveNames := make(map[string]bool, len(liveTaskIDs))
	for _, id := range liveTaskIDs {
		live[id] = true
		// Both forms: the id (or its hash) as names are made now, and the
		// hash older familiars used.
		liveNames[shortID(id)] = true
		liveNames[shortHash(id)] = true
	}
	owned := func(e Entry) bool {
		if e.TaskID != "" {
			return live[e.TaskID]
		}
		// No metadata (made by an older familiar, or the file was lost):
		// fall back to the short id in the branch name, which is followed by
		// "-<slug>" (and may itself hold "-").
		name := e.Branch[len(r.prefix):]
		for i := 0; i < len(name); i++ {
			if name[i] == '-' && liveNames[name[:i]] {
				return true
			}
		}
		return false
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	entries, err := r.listLocked(ctx)
	if err != nil {
		return PruneReport{}, err
	}
	var rep PruneReport
	for _, e := range entries {
		if !e.Familiar || e.Prunable || owned(e) {
			continue
		}
		if e.Locked {
			rep.Skipped = append(rep.Skipped, Skipped{e, fmt.Errorf("%w: %s is locked", ErrFailedPrecondition, e.Path)})
			continue
		}
		if err := r.checkClean(ctx, e.Path); err != nil {
			rep.Skipped = append(rep.Skipped, Skipped{e, err})
			continue
		}
		if err := r.removeLocked(ctx, e, false); err != nil {
			rep.Skipped = append(rep.Skipped, Skipped{e, err})
			continue
		}
		rep.Removed = append(rep.Removed, e)
		if e.Head != "" && r.checkMerged(ctx, e.Branch, e.Head) == nil {
			if err := r.deleteBranch(ctx, e.Branch, e.Head); err != nil {
				r.log.Warn("pruning: keeping the branch of a removed worktree", "branch", e.Branch, "err", err)
			}
		}
	}
	if _, err := r.git.run(ctx, invocation{dir: r.root, args: []string{"worktree", "prune"}}); err != nil {
		return rep, fmt.Errorf("git worktree prune: %w", err)
	}
	return rep, nil
}

// hasInitialisedSubmodules reports whether git keeps submodule
// repositories for the worktree at path (in its admin dir's modules/).
func (r *Repo) hasInitialisedSubmodules(path string) bool {
	admin, err := r.adminDir(path)
	return err == nil && isDir(filepath.Join(admin, "modules"))
}
