//go:build unix

package jsonrpc

import (
	"fmt"
	"os"
	"syscall"
)

// privateDir makes dir (mode 0700) if it is missing, and refuses one that
// another user owns or others may write to: a socket path can be in a
// shared directory (workspace.SocketPath falls back to one under /tmp when
// there is no home), where someone else could have made it first to put
// their own socket in familiar's place.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil // not a Unix file system: nothing to check
	}
	if int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("socket directory %s is not private to this user (owner uid %d, mode %v); not listening there", dir, st.Uid, fi.Mode().Perm())
	}
	return nil
}
