package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Submodule is one submodule of a worktree: a gitlink in its HEAD commit.
type Submodule struct {
	Name string // the name in .gitmodules ("" if .gitmodules lacks it)
	Path string // slash-separated, relative to the worktree
	// Commit is the commit the worktree's HEAD records for it.
	Commit string
	// Initialised: its files are checked out in the worktree, so the agent
	// sees them and ChangedFiles reports changes inside it.
	Initialised bool
	// Problem says why it is not: the main checkout has not initialised it
	// either (familiar never fetches from the network), or git failed.
	Problem string
}

// Submodules returns the submodules of the worktree and whether each is
// checked out in it (Create checks them out from the main checkout's copies,
// without the network). A caller shows the ones that are not on the task: the
// agent sees an empty directory there, and writes into it are not changes
// familiar can report.
func (r *Repo) Submodules(ctx context.Context, wt Worktree) ([]Submodule, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if _, err := r.checkWorktree(wt, false); err != nil {
		return nil, err
	}
	subs, err := r.submodules(ctx, wt.Path, "HEAD")
	for i := range subs {
		s := &subs[i]
		switch {
		case s.Initialised:
		case s.Name == "":
			s.Problem = problemUnnamed
		case r.sourceOf(*s) == "":
			s.Problem = problemNoSource
		default:
			s.Problem = "not checked out in the worktree (see familiar's log for why)"
		}
	}
	return subs, err
}

const (
	problemUnnamed  = "not named in .gitmodules"
	problemNoSource = "the main checkout has not initialised it (git submodule update --init); familiar does not fetch it from the network"
)

// submodules lists the gitlinks of rev in the worktree at dir with their
// names from the worktree's .gitmodules.
func (r *Repo) submodules(ctx context.Context, dir, rev string) ([]Submodule, error) {
	subs, _, err := r.listTree(ctx, dir, rev, false)
	return subs, err
}

// listTree lists the gitlinks of rev in the worktree at dir, as submodules
// does, and with paths every path of rev (at most maxTracked): what
// ListTracked says of a worktree just checked out, from the same git run.
func (r *Repo) listTree(ctx context.Context, dir, rev string, withPaths bool) ([]Submodule, []string, error) {
	out, err := r.git.run(ctx, invocation{dir: dir, readOnly: true,
		args: []string{"ls-tree", "-r", "-z", "--full-tree", "--end-of-options", rev}})
	if err != nil {
		return nil, nil, fmt.Errorf("listing submodules of %s: %w", dir, err)
	}
	var subs []Submodule
	var paths []string
	if withPaths {
		paths = []string{}
	}
	for _, rec := range splitNUL(out) {
		// "<mode> SP <type> SP <object> TAB <path>"
		meta, p, ok := strings.Cut(rec, "\t")
		if withPaths && ok && len(paths) < maxTracked {
			paths = append(paths, p)
		}
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[0] != "160000" {
			continue
		}
		subs = append(subs, Submodule{Path: p, Commit: f[2]})
	}
	if len(subs) == 0 {
		return nil, paths, nil
	}
	names := map[string]string{} // path → name
	if _, err := os.Stat(filepath.Join(dir, ".gitmodules")); err == nil {
		out, err := r.git.run(ctx, invocation{dir: dir, readOnly: true,
			args: []string{"config", "-z", "--file", ".gitmodules", "--get-regexp", `^submodule\..*\.path$`}})
		if err != nil && exitCode(err) != 1 {
			return nil, nil, fmt.Errorf("reading .gitmodules of %s: %w", dir, err)
		}
		for _, rec := range splitNUL(out) {
			key, value, _ := strings.Cut(rec, "\n")
			name := strings.TrimSuffix(strings.TrimPrefix(key, "submodule."), ".path")
			names[path.Clean(value)] = name
		}
	}
	for i := range subs {
		s := &subs[i]
		s.Name = names[s.Path]
		if fileExists(filepath.Join(dir, filepath.FromSlash(s.Path), ".git")) {
			s.Initialised = true
		}
	}
	return subs, paths, nil
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// sourceOf returns the repository in the main checkout that holds the
// submodule's objects: its absorbed git dir under the common dir's
// modules/, or an old-style .git directory inside the main checkout.
func (r *Repo) sourceOf(s Submodule) string {
	if s.Name != "" {
		if d := filepath.Join(r.commonDir, "modules", filepath.FromSlash(s.Name)); isDir(d) {
			return d
		}
	}
	if d := filepath.Join(r.root, filepath.FromSlash(s.Path), ".git"); isDir(d) {
		return filepath.Join(r.root, filepath.FromSlash(s.Path))
	}
	return ""
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// initSubmodules checks the worktree's submodules out from the main
// checkout's copies of them, never from the network: the url is overridden
// for this one command (the shared config keeps the user's), and only the
// file protocol is allowed. One that cannot be initialised is reported with
// its Problem, not an error: the task can run without it.
func (r *Repo) initSubmodules(ctx context.Context, dir string) ([]Submodule, []string, error) {
	subs, paths, err := r.listTree(ctx, dir, "HEAD", true)
	if err != nil {
		return nil, nil, err
	}
	for i := range subs {
		s := &subs[i]
		if s.Initialised {
			continue
		}
		src := r.sourceOf(*s)
		switch {
		case s.Name == "":
			s.Problem = problemUnnamed
			continue
		case src == "":
			s.Problem = problemNoSource
			continue
		}
		args := []string{"-c", "protocol.file.allow=always", "-c", "submodule." + s.Name + ".url=" + src,
			"submodule", "--quiet", "update", "--init", "--no-recommend-shallow", "--", s.Path}
		if _, err := r.git.run(ctx, invocation{dir: dir, env: []string{"GIT_ALLOW_PROTOCOL=file"}, args: args}); err != nil {
			s.Problem = "checking it out from the main checkout failed: " + err.Error()
			r.log.Warn("submodule not initialised in the worktree", "worktree", dir, "submodule", s.Path, "err", err)
			continue
		}
		s.Initialised = true
	}
	return subs, paths, nil
}

// submoduleChanges lists the changes inside the initialised submodules of
// the worktree against the commits wt.BaseCommit records for them, as paths
// of the worktree (sub/dir/file.go). It returns the paths of the submodules
// it looked into, whose own gitlink entries they replace.
func (r *Repo) submoduleChanges(ctx context.Context, wt Worktree) ([]FileChange, map[string]bool, error) {
	subs, err := r.submodules(ctx, wt.Path, "HEAD")
	if err != nil || len(subs) == 0 {
		return nil, nil, err
	}
	base, err := r.submodules(ctx, wt.Path, wt.BaseCommit)
	if err != nil {
		return nil, nil, err
	}
	baseCommit := map[string]string{}
	for _, s := range base {
		baseCommit[s.Path] = s.Commit
	}
	var all []FileChange
	covered := map[string]bool{}
	for _, s := range subs {
		from := baseCommit[s.Path]
		if !s.Initialised || from == "" {
			continue
		}
		dir := filepath.Join(wt.Path, filepath.FromSlash(s.Path))
		out, err := r.git.run(ctx, invocation{dir: dir, readOnly: true, args: []string{"rev-parse", "--absolute-git-dir"}})
		if err != nil {
			return nil, nil, fmt.Errorf("finding the git dir of submodule %s: %w", s.Path, err)
		}
		gitDir := strings.TrimSpace(string(out))
		var changes []FileChange
		err = r.withIntentIndex(ctx, dir, gitDir, func(env []string) error {
			changes, err = r.changedFiles(ctx, Worktree{Path: dir, BaseCommit: from}, env)
			return err
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("changes in submodule %s: %w", s.Path, err)
		}
		for _, c := range changes {
			c.Submodule = s.Path
			c.Path = s.Path + "/" + c.Path
			if c.OldPath != "" {
				c.OldPath = s.Path + "/" + c.OldPath
			}
			all = append(all, c)
		}
		covered[s.Path] = true
	}
	return all, covered, nil
}

// SubmoduleChangesError says that the task changed files inside
// submodules, which Merge does not carry: a submodule is another repository,
// and its change would have to be committed there and reach the repository
// everyone fetches it from, or the base would record a commit that exists
// only in the task's worktree. Merging the rest alone would drop the edits
// without a word, so Merge refuses and names them.
type SubmoduleChangesError struct {
	Worktree   string
	Submodules []string // their paths
	Files      []string // the changed files inside them, worktree paths
}

func (e *SubmoduleChangesError) Error() string {
	files := e.Files
	if len(files) > 5 {
		files = append(slices.Clone(files[:5]), fmt.Sprintf("and %d more", len(e.Files)-5))
	}
	what := "submodule " + e.Submodules[0]
	if len(e.Submodules) > 1 {
		what = "submodules " + strings.Join(e.Submodules, ", ")
	}
	return fmt.Sprintf("the task changed files inside %s (%s), which familiar does not merge: a submodule is a repository of its own, "+
		"and its changes belong there. Take them to that repository yourself (they are in the task's worktree, %s), "+
		"then restore the submodule there and merge again; nothing was merged",
		what, strings.Join(files, ", "), e.Worktree)
}

// Unwrap makes it an ErrFailedPrecondition.
func (e *SubmoduleChangesError) Unwrap() error { return ErrFailedPrecondition }

// checkSubmoduleChanges returns a *SubmoduleChangesError if the worktree
// has changes inside its submodules.
func (r *Repo) checkSubmoduleChanges(ctx context.Context, wt Worktree) error {
	inner, _, err := r.submoduleChanges(ctx, wt)
	if err != nil || len(inner) == 0 {
		return err
	}
	e := &SubmoduleChangesError{Worktree: wt.Path}
	for _, c := range inner {
		e.Files = append(e.Files, c.Path)
		if !slices.Contains(e.Submodules, c.Submodule) {
			e.Submodules = append(e.Submodules, c.Submodule)
		}
	}
	return e
}

// BranchElsewhereError says the task's branch is also checked out in
// another working tree (the user ran `git checkout --ignore-other-worktrees`
// or `git worktree add -f`): a commit on it would change that checkout's HEAD
// under its files, and its user would see the task's work as deletions.
type BranchElsewhereError struct {
	Branch string
	Path   string // the other working tree
}

func (e *BranchElsewhereError) Error() string {
	return fmt.Sprintf("branch %s is also checked out in %s; familiar does not commit to it while it is (check out another branch there)", e.Branch, e.Path)
}

// Unwrap makes it an ErrFailedPrecondition.
func (e *BranchElsewhereError) Unwrap() error { return ErrFailedPrecondition }

// CheckBranch returns a *BranchElsewhereError if the worktree's branch is
// checked out in another working tree of the repository, nil if not. The
// orchestrator calls it to warn on the task; Checkpoint refuses on it.
func (r *Repo) CheckBranch(ctx context.Context, wt Worktree) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.checkBranchLocked(ctx, wt)
}

func (r *Repo) checkBranchLocked(ctx context.Context, wt Worktree) error {
	if wt.Branch == "" {
		return nil
	}
	entries, err := r.listLocked(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Detached && e.Branch == wt.Branch && !e.Prunable && !samePath(e.Path, wt.Path) {
			return &BranchElsewhereError{Branch: wt.Branch, Path: e.Path}
		}
	}
	return nil
}
