package store

import "github.com/familiar-dev/familiar/procs/proctable"

// procStartTime returns when pid started, in the process table's unit
// (proctable.Proc.Start). Together with the pid it identifies a process,
// since pids are reused.
func procStartTime(pid int) (uint64, bool) {
	p, err := proctable.Stat(pid)
	if err != nil {
		return 0, false
	}
	return p.Start, true
}
