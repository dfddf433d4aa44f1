package worktree

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Forecast says how two lines of work would merge, computed without touching
// any checkout (git merge-tree --write-tree writes only objects).
type Forecast struct {
	// Conflicts are the files git could not merge on its own.
	Conflicts []string
	// Overlaps are files both sides changed that still merge cleanly: a
	// softer signal, worth a look before the merge.
	Overlaps []string
}

// Snapshot returns a commit holding the worktree's files as they are now —
// committed or not, untracked included, ignored not — made through a scratch
// index, so the worktree's own index, HEAD and files are untouched and an
// agent working in it never meets a lock of ours. With nothing pending it is
// the worktree's HEAD. The commit is on no branch (git gc takes it in time).
func (r *Repo) Snapshot(ctx context.Context, wt Worktree) (string, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	admin, err := r.checkWorktree(wt, false)
	if err != nil {
		return "", err
	}
	head, err := r.revParseIn(ctx, wt.Path, "HEAD")
	if err != nil {
		return "", fmt.Errorf("%w: the HEAD of %s: %w", ErrNotFound, wt.Path, err)
	}
	dir, err := os.MkdirTemp("", "familiar-snapshot-")
	if err != nil {
		return "", fmt.Errorf("making a scratch index: %w", err)
	}
	defer os.RemoveAll(dir)
	index := filepath.Join(dir, "index")
	if err := copyFile(filepath.Join(admin, "index"), index); err != nil && !os.IsNotExist(err) {
		return "", fmt.Errorf("copying the index of %s: %w", wt.Path, err)
	}
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := r.git.run(ctx, invocation{dir: wt.Path, env: env, readOnly: true, args: []string{"add", "-A", "--", "."}}); err != nil {
		return "", fmt.Errorf("snapshot of %s: %w", wt.Path, err)
	}
	out, err := r.git.run(ctx, invocation{dir: wt.Path, env: env, readOnly: true, args: []string{"write-tree"}})
	if err != nil {
		return "", fmt.Errorf("snapshot of %s: %w", wt.Path, err)
	}
	tree := strings.TrimSpace(string(out))
	headTree, err := r.git.run(ctx, invocation{dir: wt.Path, readOnly: true, args: []string{"rev-parse", "--verify", "--end-of-options", head + "^{tree}"}})
	if err != nil {
		return "", fmt.Errorf("snapshot of %s: %w", wt.Path, err)
	}
	if strings.TrimSpace(string(headTree)) == tree {
		return head, nil
	}
	args, err := r.identityArgs(ctx, wt.Path)
	if err != nil {
		return "", err
	}
	args = append(args, "commit-tree", tree, "-p", head, "-m", "familiar: snapshot for the conflict forecast")
	c, err := r.git.run(ctx, invocation{dir: wt.Path, readOnly: true, args: args})
	if err != nil {
		return "", fmt.Errorf("snapshot of %s: %w", wt.Path, err)
	}
	return strings.TrimSpace(string(c)), nil
}

// Forecast computes how head would merge into base (two commits, or names
// git resolves such as a branch): the conflicting files, and the files both
// changed since their merge base that merge cleanly. Either side may be a
// Snapshot.
//
// What it learns about commits is kept (commits never change), and git's
// merge is run only when both sides changed a path in common or one side's
// path is the other's directory; otherwise the two merge cleanly by
// construction. Most pairs of tasks touch different files, so a forecast of
// one task against ten others costs about a merge base and a diff each.
func (r *Repo) Forecast(ctx context.Context, base, head string) (Forecast, error) {
	for _, rev := range []string{base, head} {
		if rev == "" || strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, "\x00\n") {
			return Forecast{}, fmt.Errorf("%w: revision %q", ErrInvalid, rev)
		}
	}
	var err error
	if base, err = r.commitOf(ctx, base); err != nil {
		return Forecast{}, err
	}
	if head, err = r.commitOf(ctx, head); err != nil {
		return Forecast{}, err
	}
	from, err := r.mergeBase(ctx, base, head)
	if err != nil {
		return Forecast{}, err
	}
	var ours, theirs []string
	if from != "" {
		if ours, err = r.namesChanged(ctx, from, base); err != nil {
			return Forecast{}, err
		}
		if theirs, err = r.namesChanged(ctx, from, head); err != nil {
			return Forecast{}, err
		}
		if !touchSamePaths(ours, theirs) {
			return Forecast{}, nil
		}
	}
	var f Forecast
	out, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true,
		args: []string{"merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", base, head}})
	switch {
	case err == nil:
	case exitCode(err) == 1:
		f.Conflicts = conflictFiles(out)
	default:
		return Forecast{}, fmt.Errorf("forecasting the merge of %s into %s: %w", head, base, err)
	}
	for _, p := range theirs {
		if _, found := slices.BinarySearch(ours, p); found && !slices.Contains(f.Conflicts, p) {
			f.Overlaps = append(f.Overlaps, p)
		}
	}
	return f, nil
}

// touchSamePaths reports whether two sorted path lists share a path, or one
// has a path that is a directory of a path of the other (a file against a
// directory of the same name conflicts too).
func touchSamePaths(a, b []string) bool {
	dirs := func(paths []string) map[string]bool {
		m := map[string]bool{}
		for _, p := range paths {
			for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
				m[d] = true
			}
		}
		return m
	}
	da, db := dirs(a), dirs(b)
	for _, p := range a {
		if _, found := slices.BinarySearch(b, p); found || db[p] {
			return true
		}
	}
	for _, p := range b {
		if da[p] {
			return true
		}
	}
	return false
}

// commitOf resolves rev to a commit hash; a full hash is taken as it is.
func (r *Repo) commitOf(ctx context.Context, rev string) (string, error) {
	if isHash(rev) {
		return rev, nil
	}
	c, err := r.revParse(ctx, rev)
	if err != nil {
		return "", fmt.Errorf("%w: revision %q: %w", ErrNotFound, rev, err)
	}
	return c, nil
}

// mergeBase returns the merge base of two commits, "" for unrelated ones.
func (r *Repo) mergeBase(ctx context.Context, a, b string) (string, error) {
	key := "mb " + a + " " + b
	if v, ok := r.known.get(key); ok {
		return v[0], nil
	}
	out, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true, args: []string{"merge-base", a, b}})
	mb := strings.TrimSpace(string(out))
	if err != nil {
		if exitCode(err) != 1 {
			return "", fmt.Errorf("the merge base of %s and %s: %w", a, b, err)
		}
		mb = ""
	}
	r.known.put(key, []string{mb})
	return mb, nil
}

// namesChanged lists, sorted, the paths that differ between two commits.
func (r *Repo) namesChanged(ctx context.Context, from, to string) ([]string, error) {
	if from == to {
		return nil, nil
	}
	key := "diff " + from + " " + to
	if v, ok := r.known.get(key); ok {
		return v, nil
	}
	out, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true,
		args: append(diffFlags[:len(diffFlags):len(diffFlags)], "--name-only", "-z", "--no-renames", "--end-of-options", from, to, "--")})
	if err != nil {
		return nil, fmt.Errorf("listing the changes from %s to %s: %w", from, to, err)
	}
	names := splitNUL(out)
	slices.Sort(names)
	r.known.put(key, names)
	return names, nil
}

// commitCache keeps facts about immutable commits (merge bases, the paths
// changed between two). It is bounded: when full it starts over, which
// costs a few git runs, never a wrong answer.
type commitCache struct {
	mu sync.Mutex
	m  map[string][]string // guarded by mu
}

const commitCacheSize = 4096

func newCommitCache() *commitCache { return &commitCache{m: map[string][]string{}} }

func (c *commitCache) get(key string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *commitCache) put(key string, v []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= commitCacheSize {
		clear(c.m)
	}
	c.m[key] = v
}

// ResolveCommit returns the commit rev names (a branch, a ref, a hash).
// Cheap: the forecaster polls the base branch with it.
func (r *Repo) ResolveCommit(ctx context.Context, rev string) (string, error) {
	if rev == "" || strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, "\x00\n") {
		return "", fmt.Errorf("%w: revision %q", ErrInvalid, rev)
	}
	return r.commitOf(ctx, rev)
}
