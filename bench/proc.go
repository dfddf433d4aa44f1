package bench

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/procs/procfs"
)

// cpuTime returns the CPU time (user + system) process pid has used; 0 means
// this process.
func cpuTime(pid int) (time.Duration, error) {
	if pid == 0 {
		pid = os.Getpid()
	}
	s, err := procfs.ReadStat(pid)
	if err != nil {
		if d, ok := sysCPU(pid); ok { // macOS: getrusage, proc_pid_rusage
			return d, nil
		}
		return 0, err
	}
	return time.Duration(s.UTime+s.STime) * time.Second / procfs.ClockTicks, nil
}

// memory is what /proc/<pid>/status says of a process's memory, in bytes.
type memory struct {
	RSS, HWM int64 // resident now, and at most so far
}

func memoryOf(pid int) (memory, error) {
	f, err := os.Open(procPath(pid, "status"))
	if err != nil {
		if m, ok := sysMemory(pid); ok { // macOS: proc_pid_rusage, getrusage
			return m, nil
		}
		return memory{}, err
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err == nil {
			*dst = kb << 10
		}
	}
	return m, sc.Err()
}

func procPath(pid int, name string) string {
	if pid == 0 {
		return "/proc/self/" + name
	}
	return fmt.Sprintf("/proc/%d/%s", pid, name)
}

// Machine describes where the figures were taken.
type Machine struct {
	CPUs    int        `json:"cpus"`
	MemGiB  float64    `json:"memGiB"`
	Kernel  string     `json:"kernel"`
	Go      string     `json:"go"`
	LoadAvg [3]float64 `json:"loadAvgAtStart"`
	LoadEnd [3]float64 `json:"loadAvgAtEnd"`
}

func loadAvg() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		l, _ = sysLoadAvg() // macOS: sysctl vm.loadavg
		return l
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

func memTotalGiB() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return round(float64(sysMemBytes()) / (1 << 30)) // macOS: sysctl hw.memsize
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return round(kb / (1 << 20))
		}
	}
	return 0
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return sysKernel() // macOS: sysctl kern.ostype and kern.osrelease
	}
	return strings.TrimSpace(string(b))
}

// parseLoadavg reads macOS's struct loadavg (sysctl vm.loadavg): three
// fixpt_t (uint32) averages, padding, and the long fscale they are scaled
// by.
func parseLoadavg(b []byte) ([3]float64, bool) {
	var l [3]float64
	if len(b) < 24 {
		return l, false
	}
	scale := float64(binary.LittleEndian.Uint64(b[16:]))
	if scale == 0 {
		return l, false
	}
	for i := range l {
		l[i] = math.Round(float64(binary.LittleEndian.Uint32(b[4*i:]))/scale*100) / 100
	}
	return l, true
}

func mib(b int64) float64 { return round(float64(b) / (1 << 20)) }
