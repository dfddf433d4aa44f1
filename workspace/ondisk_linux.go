//go:build linux

package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/sys/unix"
)

// kernelPath is dir as the kernel names the directory it opens (the link
// /proc/self/fd/N), symbolic links resolved. On a case-insensitive file
// system (ext4 or tmpfs with casefold, vfat) that is the spelling of the
// first lookup, not necessarily the one on disk: fixSpelling sees to that.
func kernelPath(dir string) (string, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !filepath.IsAbs(p) || strings.HasSuffix(p, " (deleted)") {
		return "", fmt.Errorf("the kernel's path of %s: %q, %v", dir, p, err)
	}
	return p, nil
}

// fixSpelling spells each name of the absolute path p as its directory
// lists it, where the file system finds it under another case too (a
// case-insensitive one). A name with no letters, or on a case-sensitive
// file system (one failed stat per name), is kept.
func fixSpelling(p string) string { return spell(p, osNames{}) }

// names is what spell asks of a file system.
type names interface {
	// Same reports whether a and b both exist and are the same file.
	Same(a, b string) bool
	// List is dir's entries as the directory spells them.
	List(dir string) []string
}

type osNames struct{}

func (osNames) Same(a, b string) bool {
	fa, err := os.Lstat(a)
	if err != nil {
		return false
	}
	fb, err := os.Lstat(b)
	return err == nil && os.SameFile(fa, fb)
}

func (osNames) List(dir string) []string {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	ns, _ := f.Readdirnames(-1)
	return ns
}

func spell(p string, fsys names) string {
	out := "/"
	for _, name := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if name == "" {
			continue
		}
		out = filepath.Join(out, onDiskName(fsys, out, name))
	}
	return out
}

// onDiskName is name as dir lists it, if the file system folds case there.
func onDiskName(fsys names, dir, name string) string {
	typed := filepath.Join(dir, name)
	if other := swapCase(name); other == name || !fsys.Same(typed, filepath.Join(dir, other)) {
		return name // no letters, or case-sensitive here
	}
	listed := fsys.List(dir)
	for _, n := range listed {
		if n == name {
			return name
		}
	}
	for _, n := range listed {
		if strings.EqualFold(n, name) && fsys.Same(typed, filepath.Join(dir, n)) {
			return n
		}
	}
	return name
}

func swapCase(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsUpper(r) {
			return unicode.ToLower(r)
		}
		return unicode.ToUpper(r)
	}, s)
}
