//go:build !linux || portableprocs

package procs

import "golang.org/x/sys/unix"

// The portable implementation, on what every Unix has: process groups,
// kill, wait4 and a process table (proctable). It is what macOS runs, and
// what Linux runs when built with the portableprocs tag so that the tests
// exercise it here. There is no subreaper: a tool that daemonizes (setsid,
// a double fork) is reparented to init (launchd), out of familiar's sight
// as a descendant, and Terminate finds it by the token in its environment
// (TreeEnv) instead. Signals go by pid after a check of the start time, with
// no pidfd to pin the process: a pid freed and reused between the check and
// the kill is the (small) risk every Unix tool but Linux's takes.

// subreaper says whether this build makes familiar a child subreaper.
const subreaper = false

// ptyBlockingReads: the PTY master is read in blocking mode by its reader
// goroutine, as creack/pty does on macOS, not through Go's poller (kqueue
// there, which reports a PTY master readable when it is not: a reader spun
// at 100 % CPU, creack/pty#174). Output.runBlocking says how deadlines are
// done without it. Built with portableprocs, Linux reads that way too, so
// the tests exercise macOS's read path.
const ptyBlockingReads = true

// EnableSubreaper does nothing in this build: there is no child subreaper
// outside Linux. Orphans of a task are found by TreeEnv, and init reaps them.
func EnableSubreaper() error { return nil }

func pidfdOpen(procStat) int { return -1 }

func pidfdClose(int) {}

func signalMember(m *member, sig unix.Signal) error { return signalByPID(m, sig) }

// reapOrphan reaps the zombie child s: a child's pid is not reused before
// it is reaped, and readStat matched its start time.
func reapOrphan(s procStat) bool {
	var ws unix.WaitStatus
	pid, err := unix.Wait4(s.pid, &ws, unix.WNOHANG, nil)
	return err == nil && pid == s.pid
}
