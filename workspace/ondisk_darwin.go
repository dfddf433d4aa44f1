//go:build darwin

package workspace

import (
	"bytes"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelPath is dir as the kernel names the directory it opens:
// fcntl(F_GETPATH) gives the path with each name spelled as it is on disk
// (APFS and HFS+ are case-insensitive by default: ~/code/app opens
// ~/Code/App) and symbolic links resolved.
func kernelPath(dir string) (string, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	buf := new([unix.PathMax]byte)
	// x/sys has no F_GETPATH wrapper; FcntlFstore passes a pointer through
	// fcntl as it is, and buf (MAXPATHLEN bytes, what F_GETPATH writes at
	// most) is larger than the Fstore_t it is typed as.
	if err := unix.FcntlFstore(uintptr(fd), unix.F_GETPATH, (*unix.Fstore_t)(unsafe.Pointer(buf))); err != nil {
		return "", fmt.Errorf("fcntl F_GETPATH %s: %w", dir, err)
	}
	n := bytes.IndexByte(buf[:], 0)
	if n <= 0 {
		return "", fmt.Errorf("fcntl F_GETPATH %s: no path", dir)
	}
	return string(buf[:n]), nil
}

// fixSpelling: F_GETPATH already spells the path as it is on disk.
func fixSpelling(p string) string { return p }
