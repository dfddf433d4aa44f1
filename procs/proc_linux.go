//go:build linux

package procs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/familiar-dev/familiar/procs/procfs"
)

// procStat is the part of /proc/PID/stat that process-tree work needs, as
// procfs reads it (the one parser of /proc/PID/stat in familiar).
type procStat struct {
	pid, ppid, pgid, sid int
	state                byte   // R, S, D, Z, T, X, …
	start                uint64 // field 22: start time in clock ticks after boot
}

func fromProcfs(s procfs.Stat) procStat {
	return procStat{pid: s.PID, ppid: s.PPID, pgid: s.PGID, sid: s.SID, state: s.State, start: s.StartTime}
}

// dead reports whether the process has finished running: a zombie holds its
// pid until reaped, but it runs nothing and holds no files.
func (s procStat) dead() bool { return procfs.Stat{State: s.state}.Dead() }

// readStat reads /proc/PID/stat.
func readStat(pid int) (procStat, error) {
	s, err := procfs.ReadStat(pid)
	if err != nil {
		return procStat{}, err
	}
	return fromProcfs(s), nil
}

// readAllStats returns the stat of every process visible in /proc.
func readAllStats() ([]procStat, error) {
	all, err := procfs.ReadAllStats()
	if err != nil {
		return nil, err
	}
	out := make([]procStat, len(all))
	for i, s := range all {
		out[i] = fromProcfs(s)
	}
	return out, nil
}

// environHas reports whether the initial environment of pid contains token.
// Unreadable environments (other users, zombies, vanished processes) do not.
func environHas(pid int, token string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && bytes.Contains(b, []byte(token))
}

var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("procs: read boot id: %w", err)
	}
	return string(bytes.TrimSpace(b)), nil
})

// lookupIdentity reads pid's identity from /proc. tree is recorded as given.
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

// EnableSubreaper marks the calling process a child subreaper
// (PR_SET_CHILD_SUBREAPER): processes orphaned below it — a Bash tool command
// whose claude was killed, a double-forked daemon — are reparented to it
// instead of to init, so they stay visible as its descendants and their exit
// status is reaped by Terminate rather than lost. The setting is process-wide.
// cmd/familiar calls it once at start; tests call it in TestMain.
//
// Orphans that exit on their own while their Process still runs are reaped
// by the Reaper (StartReaper), which never calls wait(-1): that would steal
// exit statuses from os/exec in other packages and from procs' own waiters.
func EnableSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("procs: enable child subreaper: %w", err)
	}
	return nil
}

// pidfdOpen returns a pidfd for s.pid that is known to refer to s (not to a
// later process that reused the pid), or -1 when that cannot be had.
func pidfdOpen(s procStat) int {
	fd, err := unix.PidfdOpen(s.pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return -1
	}
	// The pidfd pins whichever process has the pid now; check it is ours.
	if now, err := readStat(s.pid); err != nil || now.start != s.start {
		unix.Close(fd)
		return -1
	}
	return fd
}

func pidfdClose(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// signalMember sends sig to the process m, through its pidfd when there is one
// (immune to pid reuse), else by pid after checking its start time.
func signalMember(m *member, sig unix.Signal) error {
	if m.pidfd >= 0 {
		return unix.PidfdSendSignal(m.pidfd, sig, nil, 0)
	}
	if now, err := readStat(m.pid); err != nil || now.start != m.start {
		return unix.ESRCH
	}
	return unix.Kill(m.pid, sig)
}

// reapZombie collects the exit status of m if it is a zombie child of ours
// (an orphan reparented to us as subreaper). It reports whether m is taken
// care of: reaped, or not ours to reap. false means try again: m is ours
// but not yet reapable.
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
// or a file) or when one starts or ends. A command that prints progresses; a
// `sleep 1200` or a call hung on the network does not.
type TreeProgress struct {
	Procs   int    // live descendants
	Written uint64 // bytes they have written (wchar of /proc/PID/io)
	pids    uint64 // a sum over their (pid, start time), to see one replaced by another
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
		p.Written += readWchar(s.pid)
		queue = append(queue, children[s.pid]...)
	}
	return p, nil
}

// readWchar reads the bytes a process has written; 0 when unreadable (it
// just ended, or belongs to someone else).
func readWchar(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "wchar:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// Stopped reports whether pid is stopped by a signal (SIGSTOP, SIGTSTP: state
// T) — it cannot take input until it is continued.
func Stopped(pid int) bool {
	s, err := readStat(pid)
	return err == nil && (s.state == 'T' || s.state == 't')
}
