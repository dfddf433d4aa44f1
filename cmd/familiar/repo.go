package main

import (
	"net"
	"os"
	"path/filepath"
	"time"
)

// isGitDir reports whether dir is inside a git working tree, by looking for
// .git upwards (no git run: the worktree package does that when it opens it).
func isGitDir(dir string) bool { return repoTop(dir) != "" }

// repoTop returns the nearest ancestor of dir (itself included) holding .git.
func repoTop(dir string) string {
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// socketLive reports whether a familiar accepts connections on path.
func socketLive(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
