//go:build linux && !portableprocs

package procs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// The Linux implementation: pidfds, so a recycled pid is never signalled or
// waited for, and the child-subreaper flag, so orphans of a task stay
// familiar's descendants. The portable one (portable.go) is what macOS runs,
// and what Linux runs when built with the portableprocs tag, to test it.

// subreaper says whether this build makes familiar a child subreaper.
const subreaper = true

// ptyBlockingReads: Linux reads the PTY master through epoll, with read
// deadlines (see portable.go for macOS).
const ptyBlockingReads = false

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
	return signalByPID(m, sig)
}

// reapOrphan waits for the zombie s through a pidfd that is known to be s.
func reapOrphan(s procStat) bool {
	fd := pidfdOpen(s)
	if fd < 0 {
		return false
	}
	defer pidfdClose(fd)
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil)
	return err == nil
}
