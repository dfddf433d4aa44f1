// Package proctable is familiar's view of the machine's process table, one
// backend per platform: Linux reads /proc (through procfs), macOS asks the
// kernel with sysctl (kern.proc.pid, kern.proc.all, kern.procargs2). procs
// builds its process-tree work on it; the store, the daemon and the tests'
// leak check use it to see whether a process is still the one they knew.
//
// It is a leaf: it imports nothing of familiar but procfs, so packages that
// must not import procs (store, leakcheck) can use it.
//
// The darwin parsers (kinfo.go) carry no build constraint: they take bytes
// as the kernel returns them, so their tests run on Linux against records in
// the real struct layout.
package proctable

import (
	"errors"
	"fmt"
	"os"
	"slices"
)

// Proc is the part of one process-table entry that familiar uses.
type Proc struct {
	PID, PPID, PGID int
	// SID is the session; Stat fills it on both platforms, All on Linux
	// only (macOS lists no session in kinfo_proc, and one getsid per
	// process is not worth it for a field only Stat's callers need).
	SID int
	// State is Linux's letter: R, S, D, Z (zombie), T (stopped), X (dead).
	// macOS's p_stat is mapped onto it (SRUN R, SSLEEP S, SSTOP T, SZOMB Z).
	State byte
	// Start is when the process started, in a platform's own unit: on
	// Linux clock ticks after boot (field 22 of /proc/PID/stat), on macOS
	// microseconds since the epoch (p_starttime). With the pid and BootID it
	// names one process, as pids are reused; compare it only with values
	// read on the same machine.
	Start uint64
}

// Dead reports whether the process has finished running: a zombie holds its
// pid until reaped, but it runs nothing and holds no files.
func (p Proc) Dead() bool { return p.State == 'Z' || p.State == 'X' || p.State == 'x' }

// Stopped reports whether the process is stopped by a signal (SIGSTOP,
// SIGTSTP) or a tracer: it cannot run until it is continued.
func (p Proc) Stopped() bool { return p.State == 'T' || p.State == 't' }

// Table is a platform's process table. Local is this machine's.
type Table interface {
	// Stat reads one process. A process that does not exist is an error
	// wrapping os.ErrNotExist.
	Stat(pid int) (Proc, error)
	// All lists every process visible, zombies included.
	All() ([]Proc, error)
	// EnvironHas reports whether the environment pid started with has an
	// entry containing token. Environments it cannot read (another user's,
	// a zombie's, a process that just ended) do not.
	EnvironHas(pid int, token string) bool
	// BootID names the current boot: a Start means nothing across a reboot.
	BootID() (string, error)
	// Written is how many bytes pid has written to anything (files, pipes,
	// terminals), or 0 where the platform does not count it (macOS).
	Written(pid int) uint64
}

// Local is the process table of the machine familiar runs on.
var Local Table = local{}

// Stat is Local.Stat.
func Stat(pid int) (Proc, error) { return Local.Stat(pid) }

// All is Local.All.
func All() ([]Proc, error) { return Local.All() }

// EnvironHas is Local.EnvironHas.
func EnvironHas(pid int, token string) bool { return Local.EnvironHas(pid, token) }

// BootID is Local.BootID.
func BootID() (string, error) { return Local.BootID() }

// Written is Local.Written.
func Written(pid int) uint64 { return Local.Written(pid) }

// Children returns the pids of this process's children, zombies included.
func Children() []int {
	if pids, ok := fastChildren(); ok {
		return pids
	}
	all, _ := All()
	self := os.Getpid()
	var pids []int
	for _, p := range all {
		if p.PPID == self && !slices.Contains(pids, p.PID) {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// Running reports whether pid is a live process (not a zombie) that started
// at start; start 0 accepts any.
func Running(pid int, start uint64) bool {
	p, err := Stat(pid)
	return err == nil && !p.Dead() && (start == 0 || p.Start == start)
}

// errNoProcess says pid is not in the table, as an os.ErrNotExist.
func errNoProcess(pid int) error {
	return fmt.Errorf("proctable: no process %d: %w", pid, os.ErrNotExist)
}

// IsNotExist reports whether err says the process does not exist.
func IsNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
