package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Status is how a file differs from the base commit.
type Status string

// The statuses of PROTOCOL.md's changedFiles.
const (
	Added    Status = "added"
	Modified Status = "modified"
	Deleted  Status = "deleted"
	Renamed  Status = "renamed"
)

// FileChange is one file that differs between a worktree and its base
// commit, with its line counts.
type FileChange struct {
	Path    string // slash-separated, relative to the worktree
	OldPath string // the path in the base commit, when Renamed
	Status  Status
	// Additions and Deletions count lines; both are 0 when Binary.
	Additions, Deletions int
	Binary               bool
	// Submodule is the path of the submodule the file is inside, "" for a
	// file of the worktree's own repository. Such a change is shown but
	// never merged (Merge refuses while there is one: SubmoduleChangesError).
	Submodule string
}

// Commit is one commit made in a worktree since its base.
type Commit struct {
	SHA     string
	Subject string
}

// diffFlags keep git's diff output machine-stable whatever the user's
// config says: no colour, no external diff driver or textconv filter (which
// would run arbitrary programs and change the counts), renames detected.
var diffFlags = []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"}

// ChangedFiles returns every file whose content in the worktree differs
// from wt.BaseCommit: committed or not, staged or not, untracked files
// included (as Added, or as the new side of a rename), ignored files not.
func (r *Repo) ChangedFiles(ctx context.Context, wt Worktree) ([]FileChange, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	admin, err := r.checkWorktree(wt, true)
	if err != nil {
		return nil, err
	}
	var changes []FileChange
	err = r.withIntentIndex(ctx, wt.Path, admin, func(env []string) error {
		changes, err = r.changedFiles(ctx, wt, env)
		return err
	})
	if err != nil {
		return nil, err
	}
	// The files changed inside submodules, in place of the submodules'
	// own entries (which only say "something in here changed").
	inner, covered, err := r.submoduleChanges(ctx, wt)
	if err != nil {
		return nil, err
	}
	if len(covered) > 0 {
		changes = slices.DeleteFunc(changes, func(c FileChange) bool { return covered[c.Path] })
		changes = append(changes, inner...)
		slices.SortFunc(changes, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
	}
	return changes, nil
}

func (r *Repo) changedFiles(ctx context.Context, wt Worktree, env []string) ([]FileChange, error) {
	args := append(diffFlags[:len(diffFlags):len(diffFlags)], "-z", "--raw", "--numstat", "--end-of-options", wt.BaseCommit, "--")
	out, err := r.git.run(ctx, invocation{dir: wt.Path, env: env, readOnly: true, args: args})
	if err != nil {
		return nil, fmt.Errorf("listing changes in %s: %w", wt.Path, err)
	}
	changes, err := parseRawNumstat(splitNUL(out))
	if err != nil {
		return nil, fmt.Errorf("listing changes in %s: %w", wt.Path, err)
	}
	return changes, nil
}

// Diff returns the unified diff of the worktree against wt.BaseCommit (the
// same changes as ChangedFiles), of every file or, if path is not "", of that
// one file (relative to the worktree; a renamed file's diff shows the rename).
func (r *Repo) Diff(ctx context.Context, wt Worktree, path string) (string, error) {
	if path != "" && (!filepath.IsLocal(filepath.FromSlash(path)) || strings.ContainsRune(path, 0)) {
		return "", fmt.Errorf("%w: path %q is not inside the worktree", ErrInvalid, path)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	admin, err := r.checkWorktree(wt, true)
	if err != nil {
		return "", err
	}
	var patch []byte
	err = r.withIntentIndex(ctx, wt.Path, admin, func(env []string) error {
		paths := []string{path}
		if path != "" {
			// Limited to one path, git cannot see the rename's other
			// side; name both so the diff shows a rename, not an add.
			changes, err := r.changedFiles(ctx, wt, env)
			if err != nil {
				return err
			}
			for _, c := range changes {
				if c.Path == filepath.ToSlash(path) && c.OldPath != "" {
					paths = append(paths, c.OldPath)
				}
			}
			// Paths are file names, never pathspec magic or globs.
			env = append(env, "GIT_LITERAL_PATHSPECS=1")
		} else {
			paths = nil
		}
		args := append(diffFlags[:len(diffFlags):len(diffFlags)],
			"--src-prefix=a/", "--dst-prefix=b/", "--end-of-options", wt.BaseCommit, "--")
		patch, err = r.git.run(ctx, invocation{dir: wt.Path, env: env, readOnly: true, args: append(args, paths...)})
		if err != nil {
			return fmt.Errorf("diffing %s: %w", wt.Path, err)
		}
		return nil
	})
	return string(patch), err
}

// withIntentIndex runs fn with env pointing git at a scratch copy of the
// worktree's index in which every untracked, unignored file is marked
// intent-to-add. Diffs against the base commit then include untracked files
// and pair them with deletions as renames, while the agent's real index is
// never touched and no object is written.
func (r *Repo) withIntentIndex(ctx context.Context, path, admin string, fn func(env []string) error) error {
	dir, err := os.MkdirTemp("", "familiar-index-")
	if err != nil {
		return fmt.Errorf("making a scratch index: %w", err)
	}
	defer os.RemoveAll(dir)
	index := filepath.Join(dir, "index")
	// A missing index is an empty one to git: leave the copy missing too.
	if err := copyFile(filepath.Join(admin, "index"), index); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("copying the index of %s: %w", path, err)
	}
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := r.git.run(ctx, invocation{dir: path, env: env, readOnly: true,
		args: []string{"add", "--intent-to-add", "--", "."}}); err != nil {
		return fmt.Errorf("marking untracked files of %s: %w", path, err)
	}
	return fn(env)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// parseRawNumstat parses `git diff -z --raw --numstat`: all raw records
// (":modes hashes status\0path\0[path\0]") and then all numstat records
// ("adds\tdels\tpath\0" or, for a rename, "adds\tdels\t\0old\0new\0"), in
// the same file order.
func parseRawNumstat(toks []string) ([]FileChange, error) {
	var changes []FileChange
	type stat struct {
		path     string
		add, del int
		binary   bool
	}
	var stats []stat
	next := func() (string, error) {
		if len(toks) == 0 {
			return "", errors.New("diff output ends mid-record")
		}
		t := toks[0]
		toks = toks[1:]
		return t, nil
	}
	for len(toks) > 0 {
		t, _ := next()
		if strings.HasPrefix(t, ":") {
			f := strings.Fields(t)
			if len(f) != 5 || f[4] == "" {
				return nil, fmt.Errorf("unexpected raw diff record %q", t)
			}
			c := FileChange{Status: rawStatus(f[4][0])}
			p, err := next()
			if err != nil {
				return nil, err
			}
			c.Path = p
			if f[4][0] == 'R' || f[4][0] == 'C' {
				if c.Path, err = next(); err != nil {
					return nil, err
				}
				if f[4][0] == 'R' {
					c.OldPath = p
				}
			}
			changes = append(changes, c)
			continue
		}
		f := strings.SplitN(t, "\t", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("unexpected numstat record %q", t)
		}
		s := stat{path: f[2]}
		if s.path == "" { // a rename: old and new path follow
			if _, err := next(); err != nil {
				return nil, err
			}
			p, err := next()
			if err != nil {
				return nil, err
			}
			s.path = p
		}
		if f[0] == "-" && f[1] == "-" {
			s.binary = true
		} else {
			var err1, err2 error
			s.add, err1 = strconv.Atoi(f[0])
			s.del, err2 = strconv.Atoi(f[1])
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("unexpected numstat record %q", t)
			}
		}
		stats = append(stats, s)
	}
	if len(stats) != len(changes) {
		return nil, fmt.Errorf("diff listed %d files but counted lines of %d", len(changes), len(stats))
	}
	for i, s := range stats {
		if s.path != changes[i].Path {
			return nil, fmt.Errorf("diff records out of step: %q vs %q", changes[i].Path, s.path)
		}
		changes[i].Additions, changes[i].Deletions, changes[i].Binary = s.add, s.del, s.binary
	}
	return changes, nil
}

// rawStatus maps git's status letters to ours: a type change (file to
// symlink) or an unmerged path is a modification, a copy (only detected
// with -C, which is not used) an addition.
func rawStatus(c byte) Status {
	switch c {
	case 'A', 'C':
		return Added
	case 'D':
		return Deleted
	case 'R':
		return Renamed
	default:
		return Modified
	}
}

// Commits returns the commits reachable from the worktree's HEAD and not
// from wt.BaseCommit, oldest first.
func (r *Repo) Commits(ctx context.Context, wt Worktree) ([]Commit, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if _, err := r.checkWorktree(wt, true); err != nil {
		return nil, err
	}
	// log.showSignature would put gpg output into stdout.
	out, err := r.git.run(ctx, invocation{dir: wt.Path, readOnly: true,
		args: []string{"-c", "log.showSignature=false", "log", "--no-color", "-z", "--reverse",
			"--format=%H %s", "--end-of-options", wt.BaseCommit + "..HEAD", "--"}})
	if err != nil {
		return nil, fmt.Errorf("listing commits in %s: %w", wt.Path, err)
	}
	var commits []Commit
	for _, rec := range splitNUL(out) {
		sha, subject, _ := strings.Cut(rec, " ")
		commits = append(commits, Commit{SHA: sha, Subject: subject})
	}
	return commits, nil
}

// Fallback identity for checkpoints in a repository with no user.name or
// user.email configured anywhere, where git commit would fail.
const (
	fallbackName  = "familiar"
	fallbackEmail = "familiar@localhost"
)

// Checkpoint commits everything pending in the worktree — modified,
// deleted and untracked files, not ignored ones — with message. When there
// is nothing to commit it does nothing and returns committed == false.
//
// Commit hooks are skipped (--no-verify): a checkpoint saves an agent's work
// as it is, and a failing or interactive hook must not make that impossible.
// A conflict left unresolved (unmerged files, or conflict markers anywhere
// in the task's change) is refused with an *UnresolvedError and nothing is
// staged or committed.
func (r *Repo) Checkpoint(ctx context.Context, wt Worktree, message string) (c Commit, committed bool, err error) {
	if strings.TrimSpace(message) == "" || strings.ContainsRune(message, 0) {
		return Commit{}, false, fmt.Errorf("%w: checkpoint message %q is empty or has a NUL", ErrInvalid, message)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	admin, err := r.checkWorktree(wt, false)
	if err != nil {
		return Commit{}, false, err
	}
	if err := r.checkBranchLocked(ctx, wt); err != nil {
		return Commit{}, false, err
	}
	// A conflict not resolved is never committed: not its unmerged files
	// (git add would mark them resolved, markers and all) nor its leftover
	// conflict markers. The task's branch never holds them by familiar's
	// doing.
	if unresolved, err := r.unresolvedLocked(ctx, wt); err != nil {
		return Commit{}, false, err
	} else if unresolved != nil {
		return Commit{}, false, unresolved
	}
	// A merge the merge queue left in progress (BringBase's conflicts,
	// resolved by the agent) is concluded even when the resolution kept the
	// branch's files as they were.
	_, statErr := os.Stat(filepath.Join(admin, "MERGE_HEAD"))
	merging := statErr == nil
	if _, err := r.git.run(ctx, invocation{dir: wt.Path, args: []string{"add", "--all"}}); err != nil {
		return Commit{}, false, fmt.Errorf("staging changes in %s: %w", wt.Path, err)
	}
	_, err = r.git.run(ctx, invocation{dir: wt.Path, args: []string{"diff", "--cached", "--quiet", "--no-ext-diff"}})
	switch {
	case err == nil && !merging:
		return Commit{}, false, nil // nothing to commit
	case err == nil:
	case exitCode(err) != 1:
		return Commit{}, false, fmt.Errorf("checking staged changes in %s: %w", wt.Path, err)
	}

	args, err := r.identityArgs(ctx, wt.Path)
	if err != nil {
		return Commit{}, false, err
	}
	// The message goes on stdin, so no text of it can be read as an option.
	args = append(args, "commit", "--no-verify", "--quiet", "--file=-")
	if _, err := r.git.run(ctx, invocation{dir: wt.Path, stdin: []byte(message), args: args}); err != nil {
		return Commit{}, false, fmt.Errorf("committing in %s: %w", wt.Path, err)
	}
	out, err := r.git.run(ctx, invocation{dir: wt.Path, readOnly: true,
		args: []string{"-c", "log.showSignature=false", "log", "-1", "--no-color", "--format=%H %s", "HEAD", "--"}})
	if err != nil {
		return Commit{}, false, fmt.Errorf("reading the checkpoint in %s: %w", wt.Path, err)
	}
	sha, subject, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	return Commit{SHA: sha, Subject: subject}, true, nil
}

// identityArgs returns -c options supplying the fallback identity for
// whichever of user.name and user.email no config file sets. An identity in
// the environment (GIT_AUTHOR_NAME…) still wins over these, as over any
// config.
func (r *Repo) identityArgs(ctx context.Context, dir string) ([]string, error) {
	out, err := r.git.run(ctx, invocation{dir: dir, readOnly: true,
		args: []string{"config", "-z", "--get-regexp", `^user\.(name|email)$`}})
	if err != nil && exitCode(err) != 1 { // 1: neither is set
		return nil, fmt.Errorf("reading the committer identity: %w", err)
	}
	set := map[string]bool{}
	for _, rec := range splitNUL(out) {
		key, value, _ := strings.Cut(rec, "\n")
		set[key] = set[key] || value != ""
	}
	var args []string
	if !set["user.name"] {
		args = append(args, "-c", "user.name="+fallbackName)
	}
	if !set["user.email"] {
		args = append(args, "-c", "user.email="+fallbackEmail)
	}
	return args, nil
}

// checkWorktree refuses a Worktree that is not a linked worktree of this
// repository, or (if needBase) has no well-formed base commit, and returns
// its administrative directory.
func (r *Repo) checkWorktree(wt Worktree, needBase bool) (string, error) {
	if needBase && !isHash(wt.BaseCommit) {
		return "", fmt.Errorf("%w: base commit %q is not a full commit hash", ErrInvalid, wt.BaseCommit)
	}
	return r.adminDir(wt.Path)
}
