package worktree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Worktree is one task's worktree: what a caller keeps to find it again and
// to ask what changed in it.
type Worktree struct {
	// Path is the worktree's top level (a real, absolute path).
	Path string
	// Branch is the short name of the branch made for it, e.g.
	// "familiar/1a2b3c4d-fix-login".
	Branch string
	// BaseRef is what the worktree was made from: the ref given to Create,
	// or the branch checked out in RepoRoot ("HEAD" if detached).
	BaseRef string
	// BaseCommit is the full hash BaseRef resolved to at creation; changes
	// and commits are reported against it.
	BaseCommit string
	// RepoRoot is the working tree the Repo was opened on.
	RepoRoot string
	// TaskID is the task that owns the worktree.
	TaskID string

	// Listing is what Create found in the worktree it made, from the one
	// listing it makes anyway for the submodules; nil when nothing was
	// listed (only Create lists). A pointer keeps Worktree comparable.
	Listing *Listing
}

// Listing is a worktree's tree as Create checked it out: the paths git
// tracks (at most maxTracked, as ListTracked) and the submodules with their
// problems (as Submodules). A task's start uses it instead of listing the
// tree twice more before claude can start.
type Listing struct {
	Tracked    []string
	Submodules []Submodule
}

// CreateOptions say what worktree Create makes.
type CreateOptions struct {
	// TaskID identifies the owning task; required.
	TaskID string
	// Title names the branch and directory, reduced to [a-z0-9-]; it
	// must have at least one ASCII letter or digit.
	Title string
	// BaseRef is the commit to start from: a branch, tag or hash. Default:
	// HEAD of the branch checked out in the Repo's root.
	BaseRef string
}

// metaFile is written into the worktree's administrative directory
// ($GIT_COMMON_DIR/worktrees/<name>), which git creates with the worktree and
// deletes with it, so the task id and base survive a restart of familiar
// without a file in the user's working tree.
const metaFile = "familiar.json"

type meta struct {
	TaskID     string `json:"taskId"`
	Branch     string `json:"branch"`
	BaseRef    string `json:"baseRef"`
	BaseCommit string `json:"baseCommit"`
}

// Create makes a worktree for a task on a new branch
// <prefix><short-id>-<slug> at WorktreesDir()/<short-id>-<slug>, from
// opts.BaseRef, and copies into it the ignored files that .worktreeinclude
// names. It fails with ErrConflict if the branch or directory exists.
//
// Create runs two git commands (resolve the base, add the worktree), plus
// two when the repository has a .worktreeinclude.
func (r *Repo) Create(ctx context.Context, opts CreateOptions) (Worktree, error) {
	if err := validTaskID(opts.TaskID); err != nil {
		return Worktree{}, err
	}
	slug := slugify(opts.Title)
	if slug == "" {
		return Worktree{}, fmt.Errorf("%w: title %q has no ASCII letter or digit to name a branch after", ErrInvalid, opts.Title)
	}
	if opts.BaseRef != "" {
		if err := validRef("base ref", opts.BaseRef); err != nil {
			return Worktree{}, err
		}
	}
	name := shortID(opts.TaskID) + "-" + slug
	wt := Worktree{
		Path:     filepath.Join(r.dir, name),
		Branch:   r.prefix + name,
		RepoRoot: r.root,
		TaskID:   opts.TaskID,
	}

	r.mu.Lock()
	defer r.mu.Unlock()

	var err error
	if wt.BaseRef, wt.BaseCommit, err = r.resolveBase(ctx, opts.BaseRef); err != nil {
		return Worktree{}, err
	}
	if _, err := os.Lstat(wt.Path); err == nil {
		return Worktree{}, fmt.Errorf("%w: %s already exists", ErrConflict, wt.Path)
	}
	// The branch is made at the resolved hash, not at BaseRef, so the
	// worktree starts exactly at BaseCommit even if the ref moves meanwhile.
	_, err = r.git.run(ctx, invocation{dir: r.root,
		args: []string{"worktree", "add", "-b", wt.Branch, "--", wt.Path, wt.BaseCommit}})
	if err != nil {
		return Worktree{}, r.explainAddFailure(ctx, wt, err)
	}
	// git records the worktree under its real path; report the same one.
	if real, err := filepath.EvalSymlinks(wt.Path); err == nil {
		wt.Path = real
	}
	if err := r.finishCreate(ctx, wt); err != nil {
		r.rollback(ctx, wt)
		return Worktree{}, err
	}
	// Submodules are checked out from the main checkout's copies; one that
	// cannot be is not fatal: Submodules reports it, for the task to say.
	if subs, paths, err := r.initSubmodules(ctx, wt.Path); err != nil {
		r.log.Warn("cannot list the worktree's submodules", "worktree", wt.Path, "err", err)
	} else {
		wt.Listing = &Listing{Tracked: paths, Submodules: subs}
	}
	return wt, nil
}

// finishCreate records the task's metadata and copies included files.
func (r *Repo) finishCreate(ctx context.Context, wt Worktree) error {
	admin, err := r.adminDir(wt.Path)
	if err != nil {
		return err
	}
	m := meta{TaskID: wt.TaskID, Branch: wt.Branch, BaseRef: wt.BaseRef, BaseCommit: wt.BaseCommit}
	if err := writeMeta(admin, m); err != nil {
		return err
	}
	return r.copyIncluded(ctx, wt.Path)
}

// rollback undoes a worktree Create just made but could not finish, so a
// retry does not hit ErrConflict. Both are fresh: nothing of a user's is lost.
func (r *Repo) rollback(ctx context.Context, wt Worktree) {
	if _, err := r.git.run(ctx, invocation{dir: r.root,
		args: []string{"worktree", "remove", "--force", "--force", "--", wt.Path}}); err != nil {
		r.log.Warn("rolling back a failed create: removing the worktree", "path", wt.Path, "err", err)
	}
	if _, err := r.git.run(ctx, invocation{dir: r.root,
		args: []string{"update-ref", "-d", "refs/heads/" + wt.Branch, wt.BaseCommit}}); err != nil {
		r.log.Warn("rolling back a failed create: deleting the branch", "branch", wt.Branch, "err", err)
	}
}

// resolveBase returns the ref to record and the commit hash it names. With
// no ref it takes HEAD and records the name of the branch HEAD is on.
func (r *Repo) resolveBase(ctx context.Context, ref string) (name, commit string, err error) {
	if ref == "" {
		// One rev-parse gives both the commit and the symbolic name:
		// --symbolic-full-name applies to the arguments after it only.
		out, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true,
			args: []string{"rev-parse", "HEAD^{commit}", "--symbolic-full-name", "HEAD"}})
		if err != nil {
			if exitCode(err) == 128 {
				return "", "", fmt.Errorf("%w: HEAD of %s has no commit yet: %w", ErrFailedPrecondition, r.root, err)
			}
			return "", "", fmt.Errorf("resolving HEAD: %w", err)
		}
		lines := strings.Fields(string(out))
		if len(lines) != 2 || !isHash(lines[0]) {
			return "", "", fmt.Errorf("resolving HEAD: unexpected rev-parse output %q", out)
		}
		return strings.TrimPrefix(lines[1], "refs/heads/"), lines[0], nil
	}
	out, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true,
		args: []string{"rev-parse", "--verify", "--quiet", "--end-of-options", ref + "^{commit}"}})
	if err != nil {
		if exitCode(err) == 1 {
			return "", "", fmt.Errorf("%w: base ref %q names no commit in %s", ErrNotFound, ref, r.root)
		}
		return "", "", fmt.Errorf("resolving base ref %q: %w", ref, err)
	}
	commit = strings.TrimSpace(string(out))
	if !isHash(commit) {
		return "", "", fmt.Errorf("resolving base ref %q: unexpected rev-parse output %q", ref, out)
	}
	return ref, commit, nil
}

// explainAddFailure gives a failed `git worktree add` its kind. It costs a
// git run, but only on the failure path.
func (r *Repo) explainAddFailure(ctx context.Context, wt Worktree, err error) error {
	if ctx.Err() == nil {
		_, serr := r.git.run(ctx, invocation{dir: r.root, readOnly: true,
			args: []string{"show-ref", "--verify", "--quiet", "refs/heads/" + wt.Branch}})
		if serr == nil {
			return fmt.Errorf("%w: branch %s already exists: %w", ErrConflict, wt.Branch, err)
		}
		if _, serr := os.Lstat(wt.Path); serr == nil {
			return fmt.Errorf("%w: %s already exists: %w", ErrConflict, wt.Path, err)
		}
	}
	return fmt.Errorf("creating worktree %s: %w", wt.Path, err)
}

// adminDir returns the administrative directory of the linked worktree at
// path, refusing a path that is not a linked worktree of this repository:
// git would otherwise run on whatever repository path happens to hold.
func (r *Repo) adminDir(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%w: worktree path %q is not absolute", ErrInvalid, path)
	}
	b, err := os.ReadFile(filepath.Join(path, ".git"))
	switch {
	case errors.Is(err, syscall.EISDIR):
		return "", fmt.Errorf("%w: %s is a main working tree, not a linked worktree", ErrInvalid, path)
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%w: no worktree at %s", ErrNotFound, path)
	case err != nil:
		return "", fmt.Errorf("reading worktree %s: %w", path, err)
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("%w: %s/.git is not a gitdir link", ErrInvalid, path)
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(path, gitdir)
	}
	admin, err := filepath.EvalSymlinks(gitdir)
	if err != nil || filepath.Dir(admin) != filepath.Join(r.commonDir, "worktrees") {
		return "", fmt.Errorf("%w: %s is not a worktree of %s", ErrNotFound, path, r.root)
	}
	// The admin dir names its worktree back; a copied or forged .git file
	// in another directory fails this.
	back, err := os.ReadFile(filepath.Join(admin, "gitdir"))
	if err != nil || !samePath(filepath.Dir(strings.TrimSpace(string(back))), path) {
		return "", fmt.Errorf("%w: %s is not the worktree git has registered at %s", ErrNotFound, path, admin)
	}
	return admin, nil
}

// writeMeta writes the metadata file whole or not at all: a crash must not
// leave half a file that later reads as a task with no id.
func writeMeta(admin string, m meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding worktree metadata: %w", err)
	}
	f, err := os.CreateTemp(admin, metaFile+".*")
	if err != nil {
		return fmt.Errorf("writing worktree metadata: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(admin, metaFile))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing worktree metadata: %w", err)
	}
	return nil
}

// readMeta reads what Create recorded; ok is false for worktrees familiar
// did not make (or whose file is unreadable), which callers treat as unowned
// rather than guessing.
func readMeta(admin string) (m meta, ok bool) {
	b, err := os.ReadFile(filepath.Join(admin, metaFile))
	if err != nil || json.Unmarshal(b, &m) != nil || m.TaskID == "" {
		return meta{}, false
	}
	return m, true
}

// samePath reports whether a and b name the same directory, resolving
// symlinks when both exist.
func samePath(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	if a == b {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// isHash reports whether s is a full SHA-1 or SHA-256 object name.
func isHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f')
	})
}

// CurrentBranch is the branch checked out in the repository (a plan that
// names no base starts from it and merges into it); a detached HEAD is
// ErrFailedPrecondition.
func (r *Repo) CurrentBranch(ctx context.Context) (string, error) {
	name, _, err := r.resolveBase(ctx, "")
	if err != nil {
		return "", err
	}
	if name == "HEAD" || name == "" {
		return "", fmt.Errorf("%w: %s has a detached HEAD: name the branch to start from and merge into", ErrFailedPrecondition, r.root)
	}
	return name, nil
}
