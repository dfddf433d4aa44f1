package worktree

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Paths a client names (hints.files, task/diff's path) are checked before
// anything uses them: nothing outside the repository, nothing in .git.
func TestCheckPathKeepsPathsInsideTheRepository(t *testing.T) {
	r := openRepo(t, newRepo(t, map[string]string{"README.md": "hi\n"}))
	for _, p := range []string{
		"", "../../etc/passwd", "/etc/passwd", "//etc/passwd", `\etc\passwd`, "..", "../", "a/../../x",
		"a/b/../../../x", ".git", ".git/config", "./.git/config", ".git/hooks/pre-commit", "sub/../.git/HEAD",
		"a\x00b", "a\nb", "README.md\r",
	} {
		if err := r.CheckPath(p); err == nil {
			t.Errorf("CheckPath(%q) = nil, want an error", p)
		} else {
			wantKind(t, err, ErrInvalid)
		}
	}
	for _, p := range []string{"README.md", "a/b.go", "a/../b", "./x", ".gitignore", ".github/workflows/ci.yml", "..x", "x.."} {
		if err := r.CheckPath(p); err != nil {
			t.Errorf("CheckPath(%q) = %v, want nil", p, err)
		}
	}
}

// Diff has its own guard, and git never follows a symlink out of the
// worktree: a path through one shows no outside content.
func TestDiffStaysInsideTheWorktree(t *testing.T) {
	r := openRepo(t, newRepo(t, map[string]string{"README.md": "hi\n"}))
	wt := create(t, r, "t1", "diff paths")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOPSECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(wt.Path, "out")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, p := range []string{"../../etc/passwd", "/etc/passwd", "..", "a/../../x"} {
		_, err := r.Diff(ctx, wt, p)
		wantKind(t, err, ErrInvalid)
	}
	for _, p := range []string{"out/secret.txt", "out", ""} {
		patch, err := r.Diff(ctx, wt, p)
		if strings.Contains(patch, "TOPSECRET") {
			t.Errorf("Diff(%q) shows a file outside the worktree (err %v):\n%s", p, err, patch)
		}
	}
}

// Titles end up in branch and directory names only as slugs: no option, no
// shell syntax, no path, and nothing runs.
func TestHostileTitlesBecomeSlugs(t *testing.T) {
	repo := newRepo(t, map[string]string{"README.md": "hi\n"})
	r := openRepo(t, repo)
	slug := regexp.MustCompile(`^t[a-g]-[a-z0-9]+(-[a-z0-9]+)*$`)
	for i, title := range []string{
		"--upload-pack=touch x", "$(rm -rf ~)", "`touch x`; touch x", "-b x ../../x", "refs/heads/main", "@{-1}", "x.lock",
	} {
		wt := create(t, r, "t"+string(rune('a'+i)), title)
		if base := filepath.Base(wt.Path); !slug.MatchString(base) || filepath.Dir(wt.Path) != r.WorktreesDir() {
			t.Errorf("%q: worktree %s", title, wt.Path)
		}
		if !strings.HasPrefix(wt.Branch, DefaultBranchPrefix) || !slug.MatchString(strings.TrimPrefix(wt.Branch, DefaultBranchPrefix)) {
			t.Errorf("%q: branch %q", title, wt.Branch)
		}
	}
	cwd, _ := os.Getwd()
	for _, root := range []string{repo, r.WorktreesDir(), cwd} {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "x" {
				t.Errorf("a title ran a command: %s exists", path)
			}
			return nil
		})
	}
}
