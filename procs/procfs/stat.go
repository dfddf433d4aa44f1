// Package procfs is familiar's one reader of Linux's /proc/PID/stat: the
// process tree (procs), the identity of a store's lock holder (store), a
// session's liveness (orchestrator) and CPU time (bench) all parse it here.
//
// It is a leaf: it imports nothing of familiar, so packages that must not
// import procs itself (store) can use it. Outside Linux every read fails
// with an error wrapping os.ErrNotExist.
package procfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Stat is the part of /proc/PID/stat familiar uses.
type Stat struct {
	PID, PPID, PGID, SID int
	// State is field 3: R, S, D, Z (zombie), T, X (dead), …
	State byte
	// UTime and STime are fields 14 and 15: CPU time in clock ticks
	// (ClockTicks per second).
	UTime, STime uint64
	// StartTime is field 22: start time in clock ticks after boot. With the
	// pid (and the boot) it names one process, as pids are reused.
	StartTime uint64
}

// ClockTicks is USER_HZ, the unit of UTime, STime and StartTime: 100 on
// every Linux architecture Go supports.
const ClockTicks = 100

// Dead reports whether the process has finished running: a zombie holds its
// pid until reaped, but it runs nothing and holds no files.
func (s Stat) Dead() bool { return s.State == 'Z' || s.State == 'X' || s.State == 'x' }

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(b)
}

// ParseStat parses one /proc/PID/stat line. The command name (field 2) is
// in parentheses and may itself contain spaces and parentheses, so fields
// are counted from the last ')'.
func ParseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open || end+2 > len(b) {
		return Stat{}, fmt.Errorf("procfs: malformed stat line %q", b)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return Stat{}, fmt.Errorf("procfs: malformed stat pid: %w", err)
	}
	// rest[0] is field 3 (state); field n is rest[n-3].
	rest := strings.Fields(string(b[end+2:]))
	if len(rest) < 20 || rest[0] == "" {
		return Stat{}, fmt.Errorf("procfs: stat of %d has %d fields after the name, want ≥ 20", pid, len(rest))
	}
	s := Stat{PID: pid, State: rest[0][0]}
	for _, f := range []struct {
		dst *int
		i   int
	}{{&s.PPID, 4}, {&s.PGID, 5}, {&s.SID, 6}} {
		if *f.dst, err = strconv.Atoi(rest[f.i-3]); err != nil {
			return Stat{}, fmt.Errorf("procfs: stat of %d field %d: %w", pid, f.i, err)
		}
	}
	for _, f := range []struct {
		dst *uint64
		i   int
	}{{&s.UTime, 14}, {&s.STime, 15}, {&s.StartTime, 22}} {
		if *f.dst, err = strconv.ParseUint(rest[f.i-3], 10, 64); err != nil {
			return Stat{}, fmt.Errorf("procfs: stat of %d field %d: %w", pid, f.i, err)
		}
	}
	return s, nil
}

// ReadAllStats returns the stat of every process visible in /proc.
// Processes that vanish while the directory is read are skipped.
func ReadAllStats() ([]Stat, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("procfs: list processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("procfs: list processes: %w", err)
	}
	out := make([]Stat, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if s, err := ReadStat(pid); err == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// Children returns the pids of this process's children, zombies included,
// from each thread's /proc/self/task/<tid>/children list. ok is false where
// the kernel does not provide those lists (CONFIG_PROC_CHILDREN unset).
func Children() (pids []int, ok bool) {
	files, _ := filepath.Glob("/proc/self/task/*/children")
	if len(files) == 0 {
		return nil, false
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(field); err == nil && !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids, true
}
