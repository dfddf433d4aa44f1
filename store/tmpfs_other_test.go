//go:build !linux

package store

import "testing"

// mountTmpfs: only Linux lets a test mount a tmpfs to fill up.
func mountTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	t.Skip("a full disk is simulated with a Linux tmpfs")
}
