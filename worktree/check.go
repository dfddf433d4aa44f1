package worktree

import (
	"context"
	"fmt"
	"path"
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
