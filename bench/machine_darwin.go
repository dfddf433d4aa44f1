//go:build darwin

package bench

import "golang.org/x/sys/unix"

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
