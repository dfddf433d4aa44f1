//go:build darwin

package bench

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/familiar-dev/familiar/procs/proctable"
)

func sysLoadAvg() ([3]float64, bool) {
	b, err := unix.SysctlRaw("vm.loadavg")
	if err != nil {
		return [3]float64{}, false
	}
	return parseLoadavg(b)
}

func sysMemBytes() uint64 {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0
	}
	return n
}

func sysKernel() string {
	ostype, _ := unix.Sysctl("kern.ostype")
	release, err := unix.Sysctl("kern.osrelease")
	if err != nil {
		return ""
	}
	return ostype + " " + release
}

// sysCPU is the CPU time of pid (0: this process): getrusage for this
// process, else proc_pid_rusage's Mach time units over hw.tbfrequency.
func sysCPU(pid int) (time.Duration, bool) {
	if pid == 0 || pid == os.Getpid() {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			return 0, false
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
	}
	freq, err := unix.SysctlUint64("hw.tbfrequency")
	ticks := proctable.CPUTime(pid)
	if err != nil || freq == 0 || ticks == 0 {
		return 0, false
	}
	return time.Duration(float64(ticks) / float64(freq) * float64(time.Second)), true
}

// sysMemory is pid's resident memory (0: this process); its peak is known
// for this process only (getrusage's ru_maxrss, in bytes on macOS), and is
// the current one for others.
func sysMemory(pid int) (memory, bool) {
	self := pid == 0 || pid == os.Getpid()
	if self {
		pid = os.Getpid()
	}
	rss := int64(proctable.Resident(pid))
	if rss == 0 {
		return memory{}, false
	}
	m := memory{RSS: rss, HWM: rss}
	var ru unix.Rusage
	if self && unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		m.HWM = max(rss, ru.Maxrss)
	}
	return m, true
}
