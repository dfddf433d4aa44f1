//go:build darwin

package proctable

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// procInfoCallPIDRusage is PROC_INFO_CALL_PIDRUSAGE of the proc_info
// system call, which libproc's proc_pid_rusage makes:
// __proc_info(PROC_INFO_CALL_PIDRUSAGE, pid, flavor, 0, buffer, 0).
const (
	procInfoCallPIDRusage = 9
	rusageInfoV0          = 0
)

// CPUTime is the CPU time pid has used (user and system), in Mach absolute
// time units, 0 when it cannot be read (another user's, or gone). macOS
// counts no bytes written per process (Written), so a command's progress is
// told by its CPU time too.
func CPUTime(pid int) uint64 { return parseRusageInfo(rusage(pid)) }

// Resident is how many bytes of pid are resident, 0 when it cannot be read.
func Resident(pid int) uint64 { return parseRusageResident(rusage(pid)) }

// rusage is pid's rusage_info_v0 (proc_pid_rusage), nil when it cannot be
// read.
func rusage(pid int) []byte {
	buf := new([512]byte) // larger than any rusage_info version the kernel might write
	_, _, errno := unix.Syscall6(unix.SYS_PROC_INFO, procInfoCallPIDRusage, uintptr(pid), rusageInfoV0, 0, uintptr(unsafe.Pointer(buf)), 0)
	if errno != 0 {
		return nil
	}
	return buf[:]
}
