//go:build linux

package procs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
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
// Orphans that exit on their own while their Process still runs stay zombies
// until that Process's Terminate or Close reaps them: nothing here calls
// wait(-1), which would steal exit statuses from os/exec in other packages.
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
