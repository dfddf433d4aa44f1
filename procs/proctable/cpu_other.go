//go:build !darwin

package proctable

import (
	"os"
	"strconv"
	"strings"
)

// CPUTime is not read outside macOS: Linux counts the bytes a process
// writes (Written), which tells a command's progress.
func CPUTime(int) uint64 { return 0 }

// Resident is the process's resident memory in bytes, from
// /proc/PID/statm (its second field, in pages); 0 where there is no /proc
// or no such process.
func Resident(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
