//go:build !darwin

package proctable

// CPUTime is not read outside macOS: Linux counts the bytes a process
// writes (Written), which tells a command's progress.
func CPUTime(int) uint64 { return 0 }

// Resident is read from /proc outside macOS.
func Resident(int) uint64 { return 0 }
