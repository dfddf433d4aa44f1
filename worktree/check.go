package worktree

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// CheckRef tells whether ref is safe to hand to git and names a commit, so a
// bad baseRef is refused when the task is created rather than when it starts.
func (r *Repo) CheckRef(ctx context.Context, ref string) error {
	if err := validRef("base ref", ref); err != nil {
		return err
	}
	if _, _, err := r.resolveBase(ctx, ref); err != nil {
		return err
	}
	return nil
}

// CheckPath tells whether rel is a path inside the repository: relative,
// slash-separated, not escaping with "..", not inside .git, no control
// characters. It does not require the file to exist.
func (r *Repo) CheckPath(rel string) error {
	switch {
	case rel == "":
		return fmt.Errorf("%w: empty path", ErrInvalid)
	case strings.ContainsFunc(rel, isControl):
		return fmt.Errorf("%w: path %q has control characters", ErrInvalid, rel)
	case path.IsAbs(rel) || strings.HasPrefix(rel, "\\"):
		return fmt.Errorf("%w: path %q must be relative to the repository", ErrInvalid, rel)
	}
	clean := path.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("%w: path %q is outside the repository", ErrInvalid, rel)
	}
	if clean == ".git" || strings.HasPrefix(clean, ".git/") {
		return fmt.Errorf("%w: path %q is inside .git", ErrInvalid, rel)
	}
	return nil
}

// GitVersion returns `git --version`'s version number.
func (r *Repo) GitVersion(ctx context.Context) (string, error) {
	out, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true, args: []string{"--version"}})
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "git version "), nil
}

// InitRepo makes a new repository in dir with the given files committed on
// branch main (for familiar demo's throwaway repository).
func InitRepo(ctx context.Context, dir string, files map[string]string, message string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("init repository: %w", err)
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("init repository: %w", err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return fmt.Errorf("init repository: %w", err)
		}
	}
	g := runner{git: "git", log: slog.New(slog.DiscardHandler)}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=familiar", "-c", "user.email=familiar@localhost", "commit", "-q", "-m", message},
	} {
		if _, err := g.run(ctx, invocation{dir: dir, args: args}); err != nil {
			return fmt.Errorf("init repository: %w", err)
		}
	}
	return nil
}

// Version returns the version of the git on PATH, without a repository
// (familiar doctor).
func Version(ctx context.Context) (string, error) {
	g := runner{git: "git", log: slog.New(slog.DiscardHandler)}
	out, err := g.run(ctx, invocation{readOnly: true, args: []string{"--version"}})
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "git version "), nil
}

// MinVersion is the oldest git whose merge familiar can do without a
// checkout: `git merge-tree --write-tree` (merge, squash, the conflict
// forecast) came in 2.38.
const MinVersion = "2.38"

// VersionAtLeast reports whether the version Version returned ("2.39.5",
// "2.39.5 (Apple Git-154)", "2.45.windows.1") is min or newer.
func VersionAtLeast(version, min string) bool {
	num := func(s string) []int {
		s, _, _ = strings.Cut(strings.TrimSpace(s), " ")
		var out []int
		for _, f := range strings.Split(s, ".") {
			n, err := strconv.Atoi(f)
			if err != nil {
				break
			}
			out = append(out, n)
		}
		return out
	}
	v, m := num(version), num(min)
	for i := range m {
		if i >= len(v) {
			return false
		}
		if v[i] != m[i] {
			return v[i] > m[i]
		}
	}
	return true
}

// maxTracked bounds ListTracked: hints need a sample of paths, not a huge
// monorepo's every file.
const maxTracked = 50000

// ListTracked returns the paths git tracks in the worktree (git ls-files),
// at most maxTracked of them, for deriving repository hints.
func (r *Repo) ListTracked(ctx context.Context, dir string) ([]string, error) {
	out, err := r.git.run(ctx, invocation{dir: dir, readOnly: true, args: []string{"ls-files", "-z"}})
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
		if len(paths) >= maxTracked {
			break
		}
	}
	return paths, nil
}
