package procs

import "strconv"

// Running reports whether pid runs and, when start is known (field 22 of
// /proc/PID/stat, in decimal), started at that clock tick, so a reused pid
// is not mistaken for the process it once was.
func Running(pid int, start string) bool {
	st, err := readStat(pid)
	if err != nil || st.dead() {
		return false
	}
	return start == "" || strconv.FormatUint(st.start, 10) == start
}
