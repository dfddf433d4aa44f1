package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/familiar-dev/familiar/dirs"
)

// DefaultBranchPrefix starts the names of the branches familiar makes.
const DefaultBranchPrefix = "familiar/"

// Options configure a Repo. The zero value is usable.
type Options struct {
	// Root is the directory under which worktrees are made, one
	// subdirectory per repository. It must be outside the repository.
	// Default: $XDG_DATA_HOME/familiar/worktrees, where XDG_DATA_HOME
	// defaults to ~/.local/share.
	Root string
	// BranchPrefix starts the name of every branch Create makes; Remove
	// deletes no branch without it. Default: DefaultBranchPrefix.
	BranchPrefix string
	// Git is the git binary. Default: "git" found in PATH.
	Git string
	// Logger gets a debug record for every git run. Default: discarded.
	Logger *slog.Logger
}

// Repo is one git repository whose worktrees familiar manages. It is safe
// for concurrent use; operations that change the repository (create, remove,
// prune, checkpoint) are serialised with every other Repo on the same
// repository in this process, and read-only ones run alongside each other.
type Repo struct {
	root      string // real path of the working tree familiar was opened on
	commonDir string // real path of the repository's shared git dir
	dir       string // Root/<repo-name>-<short-hash>: this repository's worktrees
	prefix    string
	git       runner
	log       *slog.Logger
	mu        *sync.RWMutex // shared per commonDir; see lockFor
	known     *commitCache  // what Forecast learnt about commits, which never change
}

// repoLocks holds one lock per repository, keyed by the real path of its
// common git dir, so two Repos opened on the same repository (or on two of
// its worktrees) never run mutating git commands at the same time: git's own
// locks would make one of them fail rather than wait.
var repoLocks struct {
	mu    sync.Mutex
	locks map[string]*sync.RWMutex // guarded by mu
}

func lockFor(commonDir string) *sync.RWMutex {
	repoLocks.mu.Lock()
	defer repoLocks.mu.Unlock()
	if repoLocks.locks == nil {
		repoLocks.locks = make(map[string]*sync.RWMutex)
	}
	l, ok := repoLocks.locks[commonDir]
	if !ok {
		l = new(sync.RWMutex)
		repoLocks.locks[commonDir] = l
	}
	return l
}

// Open returns the Repo whose working tree contains dir.
func Open(ctx context.Context, dir string, opts Options) (*Repo, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	bin := opts.Git
	if bin == "" {
		bin = "git"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("%w: git: %w", ErrUnavailable, err)
	}
	r := &Repo{git: runner{git: path, log: log}, log: log, known: newCommitCache()}

	out, err := r.git.run(ctx, invocation{dir: dir, readOnly: true,
		args: []string{"rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir"}})
	if err != nil {
		if errors.Is(err, ErrNotFound) || exitCode(err) == 128 {
			return nil, fmt.Errorf("%w: no git working tree at %s: %w", ErrNotFound, dir, err)
		}
		return nil, fmt.Errorf("opening repository at %s: %w", dir, err)
	}
	lines := strings.Split(string(bytes.TrimRight(out, "\n")), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("opening repository at %s: unexpected rev-parse output %q", dir, out)
	}
	if r.root, err = filepath.EvalSymlinks(lines[0]); err != nil {
		return nil, fmt.Errorf("opening repository at %s: %w", dir, err)
	}
	if r.commonDir, err = filepath.EvalSymlinks(lines[1]); err != nil {
		return nil, fmt.Errorf("opening repository at %s: %w", dir, err)
	}
	r.mu = lockFor(r.commonDir)

	root := opts.Root
	if root == "" {
		if root, err = defaultRoot(); err != nil {
			return nil, err
		}
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, fmt.Errorf("%w: worktree root %q: %w", ErrInvalid, opts.Root, err)
	}
	// A worktree inside the repository would show up in its status as
	// untracked files and be swept up by `git add -A` there.
	if within(realish(root), r.root) {
		return nil, fmt.Errorf("%w: worktree root %s is inside the repository %s", ErrInvalid, root, r.root)
	}
	// git records worktrees under their real paths; so does r.dir, so
	// that List can tell which are under it.
	r.dir = filepath.Join(realish(root), dirName(r.root))

	r.prefix = opts.BranchPrefix
	if r.prefix == "" {
		r.prefix = DefaultBranchPrefix
	}
	if err := validRef("branch prefix", r.prefix+"x"); err != nil {
		return nil, err
	}
	return r, nil
}

// Root returns the top level of the working tree the Repo was opened on.
// Files named by .worktreeinclude are copied from there.
func (r *Repo) Root() string { return r.root }

// WorktreesDir returns the directory under which this repository's
// worktrees are made.
func (r *Repo) WorktreesDir() string { return r.dir }

// BranchPrefix returns the prefix of the branches familiar makes.
func (r *Repo) BranchPrefix() string { return r.prefix }

// defaultRoot is worktrees in familiar's data directory (dirs.Data:
// $XDG_DATA_HOME/familiar, else ~/.local/share/familiar on Linux and
// ~/Library/Application Support/familiar on macOS).
func defaultRoot() (string, error) {
	d, err := dirs.Get()
	if d.Data == "" {
		return "", fmt.Errorf("%w: no worktree root: set XDG_DATA_HOME or HOME: %w", ErrFailedPrecondition, err)
	}
	return filepath.Join(d.Data, "worktrees"), nil
}

// dirName is the per-repository directory under the root: readable, and
// unique per repository path (two clones named "app" do not share it).
func dirName(repoRoot string) string {
	name := slugify(filepath.Base(repoRoot))
	if name == "" {
		name = "repo"
	}
	return name + "-" + shortHash(repoRoot)
}

// realish resolves symlinks in the longest existing prefix of path, so a
// path that does not exist yet compares correctly with real paths.
func realish(path string) string {
	var rest []string
	for p := path; ; {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return path
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// within reports whether path is dir or inside it; both must be clean.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
