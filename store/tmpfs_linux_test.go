package store

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

// mountTmpfs mounts a tmpfs of size bytes on dir until the test ends; it
// needs root (CI runs as root) and is skipped elsewhere.
func mountTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0700,size="+strconv.Itoa(size)); err != nil {
		if os.Getenv("CI") != "" && os.Geteuid() == 0 {
			t.Fatalf("mount tmpfs: %v", err)
		}
		t.Skipf("a full disk is simulated with a tmpfs, which needs root: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}
