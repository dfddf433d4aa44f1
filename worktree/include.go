package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// includeFile lists, in gitignore syntax, the ignored files (.env, local
// config) a new worktree needs from the main one; the name and meaning follow
// Claude Code's own worktree support.
const includeFile = ".worktreeinclude"

// copyIncluded copies into the worktree at dst every file under the Repo's
// root that .worktreeinclude matches and git ignores. Matching is git's own:
// `ls-files --others --ignored --exclude-from` lists the untracked files the
// include patterns match, and `check-ignore` keeps those .gitignore ignores,
// so negations, "**" and directory patterns mean what they mean to git.
func (r *Repo) copyIncluded(ctx context.Context, dst string) error {
	list := filepath.Join(r.root, includeFile)
	fi, err := os.Lstat(list)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the common case costs one stat and no git run
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", list, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrInvalid, list)
	}
	matched, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true,
		args: []string{"ls-files", "-z", "--others", "--ignored", "--exclude-from=" + list}})
	if err != nil {
		return fmt.Errorf("listing files %s names: %w", includeFile, err)
	}
	if len(matched) == 0 {
		return nil
	}
	ignored, err := r.git.run(ctx, invocation{dir: r.root, readOnly: true, stdin: matched,
		args: []string{"check-ignore", "-z", "--stdin"}})
	if err != nil && exitCode(err) != 1 { // 1: none of them is ignored
		return fmt.Errorf("checking which files %s names are ignored: %w", includeFile, err)
	}
	for _, rel := range splitNUL(ignored) {
		if err := r.copyOne(dst, rel); err != nil {
			return fmt.Errorf("copying %s into %s: %w", rel, dst, err)
		}
	}
	return nil
}

// copyOne copies the file at rel under the Repo's root to the same place
// under dst, preserving its permission bits. It never reads or writes outside
// the two trees: rel must be local, and no symlink on either side may lead
// out (the new worktree may have a symlink where the main one has a
// directory, if the base commit differs from what is checked out).
func (r *Repo) copyOne(dst, rel string) error {
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("%w: path %q leaves the repository", ErrInvalid, rel)
	}
	src := filepath.Join(r.root, rel)
	if dir, err := filepath.EvalSymlinks(filepath.Dir(src)); err != nil || !within(dir, r.root) {
		return fmt.Errorf("%w: %s is reached through a symlink out of the repository", ErrInvalid, src)
	}
	target := filepath.Join(dst, rel)

	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		// A link is recreated, not followed, and only if it points inside
		// the repository: a link to ~/secrets would hand the agent a way out.
		link, err := os.Readlink(src)
		if err != nil {
			return err
		}
		to := link
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(src), to)
		}
		if !within(filepath.Clean(to), r.root) {
			r.log.Warn("not copying a symlink that points out of the repository", "path", rel, "target", link)
			return nil
		}
		if err := mkdirIn(dst, filepath.Dir(rel)); err != nil {
			return err
		}
		return skipExisting(r, rel, os.Symlink(link, target))
	case !fi.Mode().IsRegular():
		r.log.Warn("not copying a file that is not regular", "path", rel, "mode", fi.Mode().String())
		return nil
	}

	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := mkdirIn(dst, filepath.Dir(rel)); err != nil {
		return err
	}
	// O_EXCL: a file the checkout already has is the base commit's, and
	// wins over the main worktree's ignored copy.
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, fi.Mode().Perm())
	if err != nil {
		return skipExisting(r, rel, err)
	}
	_, err = io.Copy(out, in)
	if err == nil {
		// The umask applied at creation; the mode is the source's.
		err = out.Chmod(fi.Mode().Perm())
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirIn makes the directory rel under root one component at a time,
// refusing to pass through a symlink or a non-directory: MkdirAll would
// follow a checked-out link such as conf -> /etc and create directories
// outside the worktree before any check could see it.
func mkdirIn(root, rel string) error {
	if rel == "." {
		return nil
	}
	p := root
	for _, c := range strings.Split(filepath.ToSlash(rel), "/") {
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() { // a symlink's Lstat mode is not a directory
			return fmt.Errorf("%w: %s is a symlink or file in the new worktree; not copying through it", ErrInvalid, p)
		}
	}
	return nil
}

func skipExisting(r *Repo, rel string, err error) error {
	if errors.Is(err, fs.ErrExist) {
		r.log.Info("not copying over a file the new worktree already has", "path", rel)
		return nil
	}
	return err
}

// splitNUL splits -z output into its records.
func splitNUL(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil
	}
	parts := bytes.Split(b, []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
}
