//go:build !linux

package main

import "testing"

// mountTmpfs: only Linux lets a test mount a tmpfs to fill up.
func mountTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	t.Skip("a full disk is simulated with a Linux tmpfs")
}

func remountReadOnly(t *testing.T, dir string) {
	t.Helper()
	t.Skip("a read-only disk is simulated with a Linux tmpfs")
}
