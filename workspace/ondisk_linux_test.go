//go:build linux

package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// caseInsensitiveDir is an empty directory on a file system that folds case,
// as macOS's APFS does by default: a tmpfs mounted with casefold (Linux
// 6.13+), else an ext4 image made with -O casefold on a loop device. It
// needs root and a kernel built with Unicode support; the test is skipped,
// saying why, where neither can be had.
func caseInsensitiveDir(t *testing.T) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("mounting a case-insensitive file system needs root")
	}
	var why []string
	try := func(mnt string, mount ...string) string {
		if out, err := exec.Command("mount", mount...).CombinedOutput(); err != nil {
			why = append(why, strings.Join(mount, " ")+": "+strings.TrimSpace(string(out)))
			return ""
		}
		t.Cleanup(func() { exec.Command("umount", mnt).Run() })
		dir := filepath.Join(mnt, "folded")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		exec.Command("chattr", "+F", dir).Run() // ext4 folds in directories marked so
		if err := os.Mkdir(filepath.Join(dir, "Probe"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "PROBE")); err != nil {
			why = append(why, strings.Join(mount, " ")+": mounted, but does not fold case")
			return ""
		}
		os.Remove(filepath.Join(dir, "Probe"))
		return dir
	}
	tmpfs := t.TempDir()
	if dir := try(tmpfs, "-t", "tmpfs", "-o", "casefold", "familiar-casefold", tmpfs); dir != "" {
		return dir
	}
	if mkfs, err := exec.LookPath("mkfs.ext4"); err == nil {
		img := filepath.Join(t.TempDir(), "casefold.img")
		if out, err := exec.Command(mkfs, "-q", "-F", "-O", "casefold", img, "8M").CombinedOutput(); err != nil {
			why = append(why, "mkfs.ext4 -O casefold: "+strings.TrimSpace(string(out)))
		} else {
			mnt := t.TempDir()
			if dir := try(mnt, "-o", "loop", img, mnt); dir != "" {
				return dir
			}
		}
	}
	t.Skipf("no case-insensitive file system can be mounted here (%s); macOS's is checked by docs/MACOS.md's list", strings.Join(why, "; "))
	return ""
}

// On a case-insensitive file system a repository named with other case
// (cd ~/code/app into ~/Code/App) is located with its on-disk spelling:
// one data dir, one background familiar.
func TestLocateCaseChangedPath(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	dir := caseInsensitiveDir(t)
	repo := filepath.Join(dir, "Code", "App")
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := Location{Root: repo, DataDir: DefaultDataDir(repo)}
	for _, typed := range []string{repo, filepath.Join(dir, "code", "app"), filepath.Join(dir, "CODE", "aPP", ".git", "..")} {
		if got, ok := Locate(typed); !ok || got != want {
			t.Errorf("Locate(%s) = %+v, %v; want %+v", typed, got, ok, want)
		}
		if got := DefaultDataDir(filepath.Clean(typed)); got != want.DataDir {
			t.Errorf("DefaultDataDir(%s) = %s, want %s", typed, got, want.DataDir)
		}
	}
}

// foldingFS is a case-insensitive file system in memory: paths are the
// on-disk spellings.
type foldingFS []string

func (f foldingFS) find(p string) (string, bool) {
	for _, q := range f {
		if strings.EqualFold(q, p) {
			return q, true
		}
	}
	return "", false
}

func (f foldingFS) Same(a, b string) bool {
	qa, ok := f.find(a)
	qb, ok2 := f.find(b)
	return ok && ok2 && qa == qb
}

func (f foldingFS) List(dir string) []string {
	var out []string
	for _, q := range f {
		if filepath.Dir(q) == dir {
			out = append(out, filepath.Base(q))
		}
	}
	return out
}

// Each name takes the spelling its directory lists, on a file system that
// folds case; names it does not know, or without letters, stay as typed.
func TestSpellOnDisk(t *testing.T) {
	fsys := foldingFS{"/", "/Users", "/Users/ann", "/Users/ann/Code", "/Users/ann/Code/App", "/Users/ann/Code/2024"}
	for typed, want := range map[string]string{
		"/users/ann/code/app":    "/Users/ann/Code/App",
		"/USERS/ANN/CODE/APP":    "/Users/ann/Code/App",
		"/Users/ann/Code/App":    "/Users/ann/Code/App",
		"/users/ann/code/2024":   "/Users/ann/Code/2024",
		"/users/ann/code/gone/x": "/Users/ann/Code/gone/x",
	} {
		if got := spell(typed, fsys); got != want {
			t.Errorf("spell(%s) = %s, want %s", typed, got, want)
		}
	}
	// A case-sensitive file system: nothing changes.
	if got := spell("/users/ann", foldingFS{"/", "/Users"}[:1]); got != "/users/ann" {
		t.Errorf("case-sensitive: %s", got)
	}
}
