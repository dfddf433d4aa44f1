package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. It
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuTime returns the CPU time (user + system) process pid has used; 0 means
// this process (/proc/self).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are plain.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("unreadable %s", procPath(pid, "stat"))
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short %s", procPath(pid, "stat"))
	}
	// f[0] is field 3 (state): utime and stime are fields 14 and 15.
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unreadable %s", procPath(pid, "stat"))
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// memory is what /proc/<pid>/status says of a process's memory, in bytes.
type memory struct {
	RSS, HWM int64 // resident now, and at most so far
}

func memoryOf(pid int) (memory, error) {
	f, err := os.Open(procPath(pid, "status"))
	if err != nil {
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
		return 0
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
		return ""
	}
	return strings.TrimSpace(string(b))
}

func mib(b int64) float64 { return round(float64(b) / (1 << 20)) }
