//go:build !linux

package procs

import (
	"fmt"
	"os"
)

// openAutogroup: autogroups are Linux's; elsewhere a session is scheduled
// by its processes' niceness alone, which setpriority on the agent's process
// group already lowered.
func openAutogroup(pid string) (*os.File, error) {
	return nil, fmt.Errorf("no autogroup for %s outside Linux: %w", pid, os.ErrNotExist)
}
