package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxFileText bounds each side FileTexts returns: an editor shows a diff of
// source files, not of a data dump.
const MaxFileText = 256 << 10

// FileTexts returns one changed file's text in wt.BaseCommit (old; "" for
// an added file) and in the worktree now (new; "" for a deleted one), for
// an editor that shows the change as a diff. ok is false when either side
// is binary, not valid UTF-8, over MaxFileText, or not a regular file (a
// symlink's target or a submodule's inner file is not read): the caller
// shows such a change without its text.
func (r *Repo) FileTexts(ctx context.Context, wt Worktree, c FileChange) (oldText, newText string, ok bool, err error) {
	if c.Binary {
		return "", "", false, nil
	}
	for _, p := range []string{c.Path, c.OldPath} {
		if p != "" && (!filepath.IsLocal(filepath.FromSlash(p)) || strings.ContainsRune(p, 0)) {
			return "", "", false, fmt.Errorf("%w: path %q is not inside the worktree", ErrInvalid, p)
		}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if _, err := r.checkWorktree(wt, true); err != nil {
		return "", "", false, err
	}
	if c.Status != Added {
		old := c.OldPath
		if old == "" {
			old = c.Path
		}
		b, found, err := r.blobAtBase(ctx, wt, old)
		if err != nil || !found {
			return "", "", false, err
		}
		if !isText(b) {
			return "", "", false, nil
		}
		oldText = string(b)
	}
	if c.Status != Deleted {
		b, found, err := readRegular(filepath.Join(wt.Path, filepath.FromSlash(c.Path)))
		if err != nil || !found || !isText(b) {
			return "", "", false, err
		}
		newText = string(b)
	}
	return oldText, newText, true, nil
}

// blobAtBase reads path's blob in the base commit; found is false when it
// is no blob there (a submodule's inner file) or over MaxFileText.
func (r *Repo) blobAtBase(ctx context.Context, wt Worktree, path string) ([]byte, bool, error) {
	obj := wt.BaseCommit + ":" + path
	// The type and size first: a gitlink or a large file is not read.
	out, err := r.git.run(ctx, invocation{dir: wt.Path, readOnly: true, args: []string{"cat-file", "--batch-check"},
		stdin: []byte(obj + "\n")})
	if err != nil {
		return nil, false, fmt.Errorf("reading %s at the base commit: %w", path, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 3 || f[1] != "blob" {
		return nil, false, nil // "<obj> missing", or a tree or commit
	}
	if n, err := strconv.Atoi(f[2]); err != nil || n > MaxFileText {
		return nil, false, nil
	}
	b, err := r.git.run(ctx, invocation{dir: wt.Path, readOnly: true, args: []string{"cat-file", "blob", f[0]}})
	if err != nil {
		return nil, false, fmt.Errorf("reading %s at the base commit: %w", path, err)
	}
	return b, true, nil
}

// readRegular reads a regular file of at most MaxFileText bytes; found is
// false for anything else (gone, a symlink, a directory, too big).
func readRegular(path string) ([]byte, bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > MaxFileText {
		return nil, false, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > MaxFileText {
		return nil, false, nil // grew since the stat
	}
	return b, true, nil
}

func isText(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }
