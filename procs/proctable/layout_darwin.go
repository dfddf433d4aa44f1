//go:build darwin

package proctable

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The offsets kinfo.go reads are checked against x/sys/unix's KinfoProc (made
// by cgo -godefs from the SDK's headers): each line indexes a one-element
// array with the difference, a compile error unless it is 0.
var (
	kinfoLayout unix.KinfoProc
	_           = [1]struct{}{}[unsafe.Sizeof(kinfoLayout)-kinfoSize]
	_           = [1]struct{}{}[unsafe.Offsetof(kinfoLayout.Proc)+unsafe.Offsetof(kinfoLayout.Proc.P_starttime)-kpStartSec]
	_           = [1]struct{}{}[unsafe.Offsetof(kinfoLayout.Proc.P_starttime)+unsafe.Offsetof(kinfoLayout.Proc.P_starttime.Usec)-kpStartUsec]
	_           = [1]struct{}{}[unsafe.Offsetof(kinfoLayout.Proc.P_stat)-kpStat]
	_           = [1]struct{}{}[unsafe.Offsetof(kinfoLayout.Proc.P_pid)-kpPID]
	_           = [1]struct{}{}[unsafe.Offsetof(kinfoLayout.Proc.P_comm)-kpComm]
	_           = [1]struct{}{}[unsafe.Offsetof(kinfoLayout.Eproc)+unsafe.Offsetof(kinfoLayout.Eproc.Ppid)-kpPPID]
	_           = [1]struct{}{}[unsafe.Offsetof(kinfoLayout.Eproc)+unsafe.Offsetof(kinfoLayout.Eproc.Pgid)-kpPGID]
	_           = [1]struct{}{}[len(kinfoLayout.Proc.P_comm)-commLen]
)
