package main

import (
	"strconv"
	"syscall"
	"testing"

	"github.com/familiar-dev/familiar/internal/testenv"
)

// mountTmpfs mounts a tmpfs of size bytes on dir until the test ends. It
// needs root (CI runs as root); elsewhere the test is skipped.
func mountTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV,
		"mode=0700,size="+strconv.Itoa(size)); err != nil {
		testenv.Missing(t, "simulating a full disk needs permission to mount a tmpfs (root): "+err.Error())
	}
	t.Cleanup(func() {
		// Lazy: a process of the test may still hold a file open in it.
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// remountReadOnly makes the tmpfs mountTmpfs mounted on dir read-only:
// nothing can be written in it, by root either (EROFS).
func remountReadOnly(t *testing.T, dir string) {
	t.Helper()
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
}
