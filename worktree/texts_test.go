package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileTexts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, map[string]string{"modify.txt": "one\n", "delete.txt": "gone\n", "mv-old.txt": strings.Repeat("same line\n", 20)})
	r := openRepo(t, dir)
	wt := create(t, r, "texts", "texts")
	writeFiles(t, wt.Path, map[string]string{"modify.txt": "one\ntwo\n", "added.txt": "new\n"})
	must(t, os.Remove(filepath.Join(wt.Path, "delete.txt")))
	must(t, os.Rename(filepath.Join(wt.Path, "mv-old.txt"), filepath.Join(wt.Path, "mv-new.txt")))
	must(t, os.WriteFile(filepath.Join(wt.Path, "image.bin"), []byte{0, 1, 2}, 0o644))
	must(t, os.WriteFile(filepath.Join(wt.Path, "big.txt"), []byte(strings.Repeat("x", MaxFileText+1)), 0o644))
	changes, err := r.ChangedFiles(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	type texts struct {
		old, new string
		ok       bool
	}
	want := map[string]texts{
		"modify.txt": {"one\n", "one\ntwo\n", true},
		"added.txt":  {"", "new\n", true},
		"delete.txt": {"gone\n", "", true},
		"mv-new.txt": {strings.Repeat("same line\n", 20), strings.Repeat("same line\n", 20), true},
		"image.bin":  {"", "", false},
		"big.txt":    {"", "", false},
	}
	for _, c := range changes {
		old, nw, ok, err := r.FileTexts(ctx, wt, c)
		if err != nil {
			t.Errorf("%s: %v", c.Path, err)
			continue
		}
		if got := (texts{old, nw, ok}); got != want[c.Path] {
			t.Errorf("%s: FileTexts = %q, %q, %v; want %+v", c.Path, old, nw, ok, want[c.Path])
		}
		delete(want, c.Path)
	}
	if len(want) > 0 {
		t.Errorf("not among the changes: %v", want)
	}
	if _, _, _, err := r.FileTexts(ctx, wt, FileChange{Path: "../escape", Status: Modified}); err == nil {
		t.Error("a path outside the worktree was read")
	}
}
