//go:build linux

package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync makes f's data durable as bbolt does on Linux (fdatasync(2)),
// so the journal's one sync and bbolt's two are the same kind of flush.
func datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
