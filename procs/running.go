package procs

import "strconv"

// Running reports whether pid runs and, when start is known (Identity's
// StartTime, in decimal), started then, so a reused pid is not mistaken for
// the process it once was.
func Running(pid int, start string) bool {
	st, err := readStat(pid)
	if err != nil || st.dead() {
		return false
	}
	return start == "" || strconv.FormatUint(st.start, 10) == start
}
