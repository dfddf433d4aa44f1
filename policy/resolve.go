package policy

import (
	"os"
	"path/filepath"
	"strings"
)

// maxLinks is how many symbolic links ResolveSymlinks follows, as Linux's
// MAXSYMLINKS.
const maxLinks = 40

// ResolveSymlinks is a Dirs.Resolve that reads the file system: it follows
// the symbolic links of the absolute path p one component at a time, a
// dangling link too (writing through it creates its target), and keeps the
// part that does not exist as written (a file about to be made). It returns
// "" when p is not absolute or has too many links.
func ResolveSymlinks(p string) string {
	if !filepath.IsAbs(p) {
		return ""
	}
	done := "/"
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, c)
		fi, err := os.Lstat(next)
		if err != nil {
			// Nothing more exists: the rest is as written.
			return filepath.Join(append([]string{next}, rest...)...)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxLinks {
			return ""
		}
		target, err := os.Readlink(next)
		if err != nil {
			return ""
		}
		if filepath.IsAbs(target) {
			done = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return done
}
