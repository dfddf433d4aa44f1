package worktree

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Integration: the pieces task/merge and the merge queue share. A merge is
// built as a candidate commit beside the base (never in a checkout of the
// person's), checked, and only then is the base moved to it by a
// compare-and-swap. Nothing here moves a task's branch.

// Marker is a leftover conflict marker: a line git's `diff --check` calls
// "leftover conflict marker".
type Marker struct {
	Path string
	Line int
}

// UnresolvedError says a conflict is not resolved: files git still has as
// unmerged, or conflict markers left in the change. Nothing was committed.
type UnresolvedError struct {
	Files   []string // unmerged in the index
	Markers []Marker // leftover conflict markers
}

func (e *UnresolvedError) Error() string { return "unresolved conflict: " + e.Words() }

func (e *UnresolvedError) Unwrap() error { return ErrFailedPrecondition }

// Paths are the files the conflict is left in, unmerged ones first, each
// once.
func (e *UnresolvedError) Paths() []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range e.Files {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, m := range e.Markers {
		if !seen[m.Path] {
			seen[m.Path] = true
			out = append(out, m.Path)
		}
	}
	return out
}

// Words says where the conflict is left, for a person: "flag.go (not
// resolved), main.go (conflict markers at lines 12, 20)".
func (e *UnresolvedError) Words() string {
	lines := map[string][]string{}
	for _, m := range e.Markers {
		lines[m.Path] = append(lines[m.Path], strconv.Itoa(m.Line))
	}
	unmerged := map[string]bool{}
	for _, f := range e.Files {
		unmerged[f] = true
	}
	var parts []string
	for _, p := range e.Paths() {
		var what []string
		if unmerged[p] {
			what = append(what, "not marked resolved")
		}
		if l := lines[p]; len(l) > 0 {
			if len(l) > 6 {
				l = append(l[:6:6], "…")
			}
			word := "line"
			if len(lines[p]) > 1 {
				word = "lines"
			}
			what = append(what, "conflict markers at "+word+" "+strings.Join(l, ", "))
		}
		parts = append(parts, p+" ("+strings.Join(what, "; ")+")")
	}
	return strings.Join(parts, ", ")
}

// Unresolved reports a conflict left in the worktree: unmerged index
// entries, or leftover conflict markers anywhere in the task's change (its
// files against its base commit, uncommitted ones included). nil when
// there is none.
func (r *Repo) Unresolved(ctx context.Context, wt Worktree) (*UnresolvedError, error) {
	if _, err := r.checkWorktree(wt, false); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.unresolvedLocked(ctx, wt)
}

func (r *Repo) unresolvedLocked(ctx context.Context, wt Worktree) (*UnresolvedError, error) {
	files, err := r.untouchedConflicts(ctx, wt.Path)
	if err != nil {
		return nil, err
	}
	from := wt.BaseCommit
	if !isHash(from) {
		from = "HEAD"
	}
	markers, err := r.markers(ctx, wt.Path, from)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 && len(markers) == 0 {
		return nil, nil
	}
	return &UnresolvedError{Files: files, Markers: markers}, nil
}

// untouchedConflicts lists the unmerged files of dir that are still as the
// merge left them: this side's version (or none), with no edit since. A
// file the agent edited counts as resolved by the edit (the checkpoint's
// `git add` marks it so) unless it keeps conflict markers, which markers
// finds; a binary or delete conflict left alone would otherwise be
// committed silently as this side's.
func (r *Repo) untouchedConflicts(ctx context.Context, dir string) ([]string, error) {
	out, err := r.git.run(ctx, invocation{dir: dir, readOnly: true, args: []string{"ls-files", "-u", "-z"}})
	if err != nil {
		return nil, fmt.Errorf("listing unmerged files in %s: %w", dir, err)
	}
	ours := map[string]string{}
	var paths []string
	for _, rec := range splitNUL(out) {
		info, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(info)
		if !ok || len(f) != 3 {
			continue
		}
		if _, seen := ours[path]; !seen {
			ours[path] = ""
			paths = append(paths, path)
		}
		if f[2] == "2" {
			ours[path] = f[1]
		}
	}
	var untouched []string
	for _, p := range paths {
		now := ""
		if fi, err := os.Lstat(filepath.Join(dir, p)); err == nil && fi.Mode().IsRegular() {
			h, err := r.git.run(ctx, invocation{dir: dir, readOnly: true, args: []string{"hash-object", "--", p}})
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", p, err)
			}
			now = strings.TrimSpace(string(h))
		}
		if now == ours[p] {
			untouched = append(untouched, p)
		}
	}
	return untouched, nil
}

// LeftoverMarkers lists the conflict markers the change from..to adds (two
// commits), as `git diff --check` finds them.
func (r *Repo) LeftoverMarkers(ctx context.Context, from, to string) ([]Marker, error) {
	return r.markers(ctx, r.root, from, to)
}

var markerLine = regexp.MustCompile(`^(.+):([0-9]+): leftover conflict marker$`)

// markers runs `git diff --check` over revs in dir (one rev: the working
// tree against it) and keeps what it says of conflict markers; whitespace
// errors are not familiar's business.
func (r *Repo) markers(ctx context.Context, dir string, revs ...string) ([]Marker, error) {
	args := append([]string{"-c", "core.quotePath=false", "diff", "--check", "--no-ext-diff", "--no-color"}, revs...)
	args = append(args, "--")
	out, err := r.git.run(ctx, invocation{dir: dir, readOnly: true, args: args})
	if err != nil && exitCode(err) != 2 { // 2: --check found something
		return nil, fmt.Errorf("looking for conflict markers in %s: %w", dir, err)
	}
	var list []Marker
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		m := markerLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		list = append(list, Marker{Path: m[1], Line: n})
	}
	return list, nil
}

// ConflictHunks reads the conflicted regions of files in the worktree (a
// merge left in progress), each from its <<<<<<< to its >>>>>>> line, for a
// hand-back prompt: at most maxLines lines in all.
func (r *Repo) ConflictHunks(wt Worktree, files []string, maxLines int) string {
	var b strings.Builder
	left := maxLines
	for _, f := range files {
		if !filepath.IsLocal(f) || left <= 0 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(wt.Path, f))
		if err != nil {
			continue
		}
		in := false
		var hunk []string
		for i, line := range strings.Split(string(data), "\n") {
			switch {
			case strings.HasPrefix(line, "<<<<<<<"):
				in = true
				hunk = append(hunk, fmt.Sprintf("%s, line %d:", f, i+1))
			}
			if in {
				hunk = append(hunk, line)
			}
			if in && strings.HasPrefix(line, ">>>>>>>") {
				in = false
			}
		}
		if len(hunk) > left {
			hunk = append(hunk[:left], "…")
		}
		left -= len(hunk)
		if len(hunk) > 0 {
			b.WriteString(strings.Join(hunk, "\n"))
			b.WriteString("\n")
		}
	}
	return b.String()
}

// Candidate builds, beside everything, the commit the base would have if
// the task's branch were merged onto parent (a commit: the base's tip, or
// the candidate before this one) with strategy. No ref and no checkout
// moves. When parent already holds the branch it returns parent. A
// *ConflictError names the files that conflict.
func (r *Repo) Candidate(ctx context.Context, parent string, wt Worktree, strategy Strategy, message string) (string, error) {
	if strings.ContainsRune(message, 0) {
		return "", fmt.Errorf("%w: message has a NUL", ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.candidateLocked(ctx, parent, wt, strategy, message)
}

func (r *Repo) candidateLocked(ctx context.Context, parent string, wt Worktree, strategy Strategy, message string) (string, error) {
	head, err := r.revParse(ctx, "refs/heads/"+wt.Branch)
	if err != nil {
		return "", fmt.Errorf("%w: task branch %q: %w", ErrNotFound, wt.Branch, err)
	}
	// A worktree already removed has no submodule checkouts left to lose.
	if wt.Path != "" && wt.BaseCommit != "" && isDir(wt.Path) {
		if err := r.checkSubmoduleChanges(ctx, wt); err != nil {
			return "", err
		}
	}
	if in, err := r.isAncestor(ctx, head, parent); err != nil {
		return "", fmt.Errorf("checking whether %s is in %s: %w", wt.Branch, short(parent), err)
	} else if in {
		return parent, nil
	}
	if message == "" {
		message = fmt.Sprintf("Merge %s", wt.Branch)
	}
	switch strategy {
	case Merge, "":
		return r.mergeCommit(ctx, parent, head, message, true)
	case Squash:
		return r.mergeCommit(ctx, parent, head, message, false)
	case Rebase:
		return r.rebaseCommits(ctx, parent, head)
	default:
		return "", fmt.Errorf("%w: unknown merge strategy %q", ErrInvalid, strategy)
	}
}

// Tip is the commit the branch base is at.
func (r *Repo) Tip(ctx context.Context, base string) (string, error) {
	if err := validRef("base branch", base); err != nil {
		return "", err
	}
	c, err := r.revParse(ctx, "refs/heads/"+base)
	if err != nil {
		return "", fmt.Errorf("%w: base %q is not a local branch: %w", ErrNotFound, base, err)
	}
	return c, nil
}

// Advance moves the branch base from before to after, a candidate made on
// it: in its checkout by a fast-forward when it has one (which must be
// clean: the files follow), else by a compare-and-swap of the ref. It fails
// (ErrFailedPrecondition) when base is no longer at before.
func (r *Repo) Advance(ctx context.Context, base, before, after string) (MergeResult, error) {
	if err := validRef("base branch", base); err != nil {
		return MergeResult{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.advanceLocked(ctx, base, before, after)
}

func (r *Repo) advanceLocked(ctx context.Context, base, before, after string) (MergeResult, error) {
	baseRef := "refs/heads/" + base
	now, err := r.revParse(ctx, baseRef)
	if err != nil {
		return MergeResult{}, fmt.Errorf("%w: base %q is not a local branch: %w", ErrNotFound, base, err)
	}
	if now != before {
		return MergeResult{}, fmt.Errorf("%w: %s moved (now %s, expected %s)", ErrFailedPrecondition, base, short(now), short(before))
	}
	checkout, err := r.cleanCheckoutOf(ctx, base)
	if err != nil {
		return MergeResult{}, err
	}
	if err := r.moveBase(ctx, checkout, baseRef, before, after); err != nil {
		return MergeResult{}, err
	}
	return MergeResult{Base: base, Before: before, After: after, UpdatedCheckout: checkout}, nil
}

// Scratch checks commit out in scratch worktree number slot, for the merge
// queue's verify command: made once (with the files .worktreeinclude
// names, as a task's worktree gets them) and reused, each use a checkout of
// the commit and a clean of what the last one left but the files git
// ignores (build output stays, so a build there is incremental, and a
// checkout changes only the files that differ: a new worktree of a
// 10,000-file repository each time cost 0.5 s). RemoveScratch takes the
// slots away.
func (r *Repo) Scratch(ctx context.Context, slot int, commit string) (string, error) {
	if !isHash(commit) {
		return "", fmt.Errorf("%w: %q is not a commit hash", ErrInvalid, commit)
	}
	if slot < 0 || slot > 999 {
		return "", fmt.Errorf("%w: scratch slot %d", ErrInvalid, slot)
	}
	dir := filepath.Join(r.dir0(), fmt.Sprintf(".verify-%d", slot))
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.adminDir(dir); err == nil {
		_, err1 := r.git.run(ctx, invocation{dir: dir, args: []string{"checkout", "--quiet", "--detach", "--force", commit}})
		_, err2 := r.git.run(ctx, invocation{dir: dir, args: []string{"clean", "-ffdq"}})
		if err1 == nil && err2 == nil {
			return dir, nil
		}
		// A slot git cannot bring to the commit is made again.
		r.removeScratchLocked(dir)
	} else {
		os.RemoveAll(dir)
		_, _ = r.git.run(ctx, invocation{dir: r.root, args: []string{"worktree", "prune"}})
	}
	if _, err := r.git.run(ctx, invocation{dir: r.root, args: []string{"worktree", "add", "--quiet", "--detach", dir, commit}}); err != nil {
		r.removeScratchLocked(dir)
		return "", fmt.Errorf("making a scratch worktree at %s: %w", short(commit), err)
	}
	if err := r.copyIncluded(ctx, dir); err != nil {
		r.removeScratchLocked(dir)
		return "", err
	}
	return dir, nil
}

// RemoveScratch takes every scratch worktree away.
func (r *Repo) RemoveScratch(ctx context.Context) error {
	slots, err := filepath.Glob(filepath.Join(r.dir0(), ".verify-*"))
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, dir := range slots {
		r.removeScratchLocked(dir)
	}
	return nil
}

func (r *Repo) removeScratchLocked(dir string) {
	_, _ = r.git.run(context.Background(), invocation{dir: r.root, args: []string{"worktree", "remove", "--force", dir}})
	os.RemoveAll(dir)
	_, _ = r.git.run(context.Background(), invocation{dir: r.root, args: []string{"worktree", "prune"}})
}

// BranchTip is the commit the task's branch is at.
func (r *Repo) BranchTip(ctx context.Context, wt Worktree) (string, error) {
	c, err := r.revParse(ctx, "refs/heads/"+wt.Branch)
	if err != nil {
		return "", fmt.Errorf("%w: task branch %q: %w", ErrNotFound, wt.Branch, err)
	}
	return c, nil
}

// RestoreBranch moves the task's branch back from its tip to commit (what
// it was before the merge queue handed it a conflict), keeping the tip at
// the task's next undo ref; in its worktree, which must be clean, when it
// has one. Nothing is done when the branch is already there.
func (r *Repo) RestoreBranch(ctx context.Context, wt Worktree, commit string) error {
	if !isHash(commit) {
		return fmt.Errorf("%w: %q is not a commit hash", ErrInvalid, commit)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := "refs/heads/" + wt.Branch
	tip, err := r.revParse(ctx, ref)
	if err != nil {
		return fmt.Errorf("%w: task branch %q: %w", ErrNotFound, wt.Branch, err)
	}
	if tip == commit {
		return nil
	}
	live := wt.Path != "" && isDir(wt.Path)
	if live {
		if files, err := r.dirtyFiles(ctx, wt.Path); err != nil {
			return err
		} else if len(files) > 0 {
			return &DirtyError{Checkout: wt.Path, Files: files}
		}
	}
	if _, err := r.keepUndone(ctx, wt.TaskID, tip); err != nil {
		return err
	}
	if live {
		_, err = r.git.run(ctx, invocation{dir: wt.Path, args: []string{"reset", "--quiet", "--keep", commit}})
	} else {
		_, err = r.git.run(ctx, invocation{dir: r.root, args: []string{"update-ref", "-m", "familiar: queue undo", ref, commit, tip}})
	}
	if err != nil {
		return fmt.Errorf("moving %s back to %s: %w", wt.Branch, short(commit), err)
	}
	return nil
}

// Contains tells whether the branch base holds commit.
func (r *Repo) Contains(ctx context.Context, base, commit string) (bool, error) {
	tip, err := r.Tip(ctx, base)
	if err != nil {
		return false, err
	}
	if !isHash(commit) {
		return false, fmt.Errorf("%w: %q is not a commit hash", ErrInvalid, commit)
	}
	return r.isAncestor(ctx, commit, tip)
}

// cleanCheckoutOf is the working tree that has branch checked out ("" if
// none), refused (a *DirtyError naming its files) when it has uncommitted
// changes: familiar never moves a branch under the person's work.
func (r *Repo) cleanCheckoutOf(ctx context.Context, branch string) (string, error) {
	checkout, err := r.checkoutOf(ctx, branch)
	if err != nil || checkout == "" {
		return "", err
	}
	files, err := r.dirtyFiles(ctx, checkout)
	if err != nil {
		return "", err
	}
	if len(files) > 0 {
		return "", &DirtyError{Checkout: checkout, Files: files}
	}
	return checkout, nil
}

// KeepOnly is a commit on parent that takes from candidate (a merge made on
// parent) only the given paths, as candidate has them (a path candidate
// lacks is deleted); every other file stays as parent has it. It is a
// single-parent commit: the task's branch is not merged, so its discarded
// files stay in it, untouched, for a later merge to bring. Paths are exact
// file paths, not pathspecs. The index is a temporary one: no checkout,
// index or branch of anyone's is touched.
func (r *Repo) KeepOnly(ctx context.Context, parent, candidate string, paths []string, message string) (string, error) {
	if strings.ContainsRune(message, 0) {
		return "", fmt.Errorf("%w: message has a NUL", ErrInvalid)
	}
	for _, p := range paths {
		if p == "" || strings.ContainsAny(p, "\x00\n") {
			return "", fmt.Errorf("%w: path %q", ErrInvalid, p)
		}
	}
	tmp, err := os.MkdirTemp("", "familiar-keep-")
	if err != nil {
		return "", fmt.Errorf("keep files: %w", err)
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index"), "GIT_LITERAL_PATHSPECS=1"}
	run := func(stdin []byte, args ...string) ([]byte, error) {
		return r.git.run(ctx, invocation{dir: r.root, env: env, stdin: stdin, args: args})
	}
	if _, err := run(nil, "read-tree", parent); err != nil {
		return "", fmt.Errorf("keep files: %w", err)
	}
	out, err := run(nil, append([]string{"ls-tree", "-z", "--full-tree", candidate, "--"}, paths...)...)
	if err != nil {
		return "", fmt.Errorf("keep files: %w", err)
	}
	// Each kept path as the candidate has it; mode 0 removes one it lacks.
	var info bytes.Buffer
	have := map[string]bool{}
	for _, e := range strings.Split(string(out), "\x00") {
		meta, path, ok := strings.Cut(e, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta) // mode type object
		if len(f) != 3 || f[1] == "tree" {
			continue
		}
		have[path] = true
		fmt.Fprintf(&info, "%s %s\t%s\x00", f[0], f[2], path)
	}
	for _, p := range paths {
		if !have[p] {
			fmt.Fprintf(&info, "0 %s\t%s\x00", strings.Repeat("0", 40), p)
		}
	}
	if _, err := run(info.Bytes(), "update-index", "-z", "--index-info"); err != nil {
		return "", fmt.Errorf("keep files: %w", err)
	}
	tree, err := run(nil, "write-tree")
	if err != nil {
		return "", fmt.Errorf("keep files: %w", err)
	}
	args, err := r.identityArgs(ctx, r.root)
	if err != nil {
		return "", err
	}
	args = append(args, "commit-tree", strings.TrimSpace(string(tree)), "-p", parent, "-F", "-")
	c, err := r.git.run(ctx, invocation{dir: r.root, stdin: []byte(message), args: args})
	if err != nil {
		return "", fmt.Errorf("keep files: making the commit: %w", err)
	}
	return strings.TrimSpace(string(c)), nil
}
