package store

import "github.com/familiar-dev/familiar/procs/procfs"

// procStartTime returns pid's start time in clock ticks since boot, field 22
// of /proc/<pid>/stat. Together with the pid it identifies a process, since
// pids are reused.
func procStartTime(pid int) (uint64, bool) {
	s, err := procfs.ReadStat(pid)
	if err != nil {
		return 0, false
	}
	return s.StartTime, true
}
