//go:build unix

package store

import (
	"errors"
	"syscall"
)

// processAlive reports whether pid exists. Signal 0 checks without
// delivering anything; EPERM means it exists but belongs to someone else.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
