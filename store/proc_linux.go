package store

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// procStartTime returns pid's start time in clock ticks since boot, field 22
// of /proc/<pid>/stat. Together with the pid it identifies a process, since
// pids are reused.
func procStartTime(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may itself contain
	// spaces and parentheses, so count fields after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(b[i+1:])
	const startTimeField = 22 - 3 // fields[0] is field 3 (state)
	if len(fields) <= startTimeField {
		return 0, false
	}
	n, err := strconv.ParseUint(string(fields[startTimeField]), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
