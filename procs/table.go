package procs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/familiar-dev/familiar/procs/proctable"
)

// procStat is the part of a process-table entry that process-tree work
// needs, as proctable reads it on this platform.
type procStat struct {
	pid, ppid, pgid, sid int
	state                byte   // R, S, D, Z, T, X, … (see proctable.Proc)
	start                uint64 // proctable.Proc.Start: the unit is the platform's
}

func fromTable(p proctable.Proc) procStat {
	return procStat{pid: p.PID, ppid: p.PPID, pgid: p.PGID, sid: p.SID, state: p.State, start: p.Start}
}

// dead reports whether the process has finished running: a zombie holds its
// pid until reaped, but it runs nothing and holds no files.
func (s procStat) dead() bool { return proctable.Proc{State: s.state}.Dead() }

// readStat reads one process from the process table.
func readStat(pid int) (procStat, error) {
	p, err := proctable.Stat(pid)
	if err != nil {
		return procStat{}, err
	}
	return fromTable(p), nil
}

// readAllStats returns every process in the process table.
func readAllStats() ([]procStat, error) {
	all, err := proctable.All()
	if err != nil {
		return nil, err
	}
	out := make([]procStat, len(all))
	for i, p := range all {
		out[i] = fromTable(p)
	}
	return out, nil
}

// environHas reports whether the initial environment of pid contains token.
// Unreadable environments (other users, zombies, vanished processes, and on
// macOS Apple's own binaries) do not.
func environHas(pid int, token string) bool { return envTable.EnvironHas(pid, token) }

// envTable is where environHas reads environments: the machine's, or in a
// test one that hides them as macOS does (set only while no Process runs).
var envTable = proctable.Local

func bootID() (string, error) { return proctable.BootID() }

// lookupIdentity reads pid's identity from the process table. tree is
// recorded as given.
func lookupIdentity(pid int, tree string) (Identity, error) {
	s, err := readStat(pid)
	if err != nil {
		return Identity{}, fmt.Errorf("procs: identity of %d: %w", pid, err)
	}
	boot, err := bootID()
	if err != nil {
		return Identity{}, err
	}
	return Identity{PID: pid, PGID: s.pgid, StartTime: s.start, BootID: boot, Tree: tree}, nil
}

func (id Identity) alive() (bool, error) {
	if id.PID <= 0 {
		return false, nil
	}
	boot, err := bootID()
	if err != nil {
		return false, err
	}
	if boot != id.BootID {
		return false, nil
	}
	s, err := readStat(id.PID)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("procs: check %d: %w", id.PID, err)
	}
	return s.start == id.StartTime && !s.dead(), nil
}

// reapZombie collects the exit status of m if it is a zombie child of ours
// (with a subreaper, an orphan reparented to us). It reports whether m is
// taken care of: reaped, or not ours to reap. false means try again: m is
// ours but not yet reapable. A zombie child's pid cannot be reused before we
// reap it, so wait4 by pid is safe once its start time matched.
func reapZombie(m *member) bool {
	s, err := readStat(m.pid)
	if err != nil || s.start != m.start || s.ppid != os.Getpid() {
		return true
	}
	var ws unix.WaitStatus
	pid, err := unix.Wait4(m.pid, &ws, unix.WNOHANG, nil)
	return pid == m.pid || err != nil
}

// TreeProgress is a fingerprint of what the descendants of a process are
// doing: it changes when one of them writes anything (to a terminal, a pipe
// or a file; Linux only, see proctable.Table.Written), uses CPU (macOS
// only), or when one starts or ends. A command that prints progresses; a `sleep 1200` or a call hung on
// the network does not.
type TreeProgress struct {
	Procs   int    // live descendants
	Written uint64 // bytes they have written (wchar of /proc/PID/io; 0 on macOS)
	// CPU is the CPU time they have used, on macOS (proc_pid_rusage), which
	// counts no bytes written: one process that prints for an hour without
	// starting others progresses there too. 0 on Linux.
	CPU  uint64
	pids uint64 // a sum over their (pid, start time), to see one replaced by another
}

// DescendantProgress reads the TreeProgress of pid's descendants (pid itself
// is left out: claude repaints its spinner while a command runs).
func DescendantProgress(pid int) (TreeProgress, error) {
	all, err := readAllStats()
	if err != nil {
		return TreeProgress{}, err
	}
	children := make(map[int][]procStat)
	for _, s := range all {
		children[s.ppid] = append(children[s.ppid], s)
	}
	var p TreeProgress
	queue := append([]procStat(nil), children[pid]...)
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s.dead() {
			continue
		}
		p.Procs++
		p.pids += uint64(s.pid)*1_000_003 + s.start
		p.Written += proctable.Written(s.pid)
		p.CPU += proctable.CPUTime(s.pid)
		queue = append(queue, children[s.pid]...)
	}
	return p, nil
}

// Stopped reports whether pid is stopped by a signal (SIGSTOP, SIGTSTP: state
// T) — it cannot take input until it is continued.
func Stopped(pid int) bool {
	s, err := readStat(pid)
	return err == nil && proctable.Proc{State: s.state}.Stopped()
}
