//go:build darwin

package proctable

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// local asks the kernel with sysctl; the bytes it returns are parsed by
// kinfo.go, which the tests exercise on Linux.
type local struct{}

func (local) Stat(pid int) (Proc, error) {
	b, err := unix.SysctlRaw("kern.proc.pid", pid)
	if err != nil {
		return Proc{}, fmt.Errorf("proctable: sysctl kern.proc.pid.%d: %w", pid, err)
	}
	if len(b) == 0 { // no such process: the kernel returns no record, not an error
		return Proc{}, errNoProcess(pid)
	}
	ps, err := ParseKinfoProcs(b)
	if err != nil {
		return Proc{}, err
	}
	p := ps[0]
	if sid, err := unix.Getsid(pid); err == nil {
		p.SID = sid
	}
	return p, nil
}

// tries bounds the reads of a sysctl that changed between its sizing and
// its read (the table grew; a process exec'd): each retry is one more
// sysctl, and a table that grows every time is a fork storm to report, not
// to spin on.
const tries = 8

func (local) All() ([]Proc, error) {
	for try := 1; ; try++ {
		b, err := unix.SysctlRaw("kern.proc.all")
		if errors.Is(err, unix.ENOMEM) && try < tries {
			continue // the table grew between sizing and reading
		}
		if err != nil {
			return nil, fmt.Errorf("proctable: sysctl kern.proc.all (%d tries): %w", try, err)
		}
		return ParseKinfoProcs(b)
	}
}

func (local) EnvironHas(pid int, token string) bool {
	for try := 1; ; try++ {
		b, err := unix.SysctlRaw("kern.procargs2", pid)
		if err != nil {
			return false // another user's, a zombie's, or gone
		}
		_, env, err := ParseProcArgs2(b)
		if errors.Is(err, ErrTruncated) && try < tries {
			continue // it exec'd between the sizing and the read
		}
		return slices.ContainsFunc(env, func(kv string) bool { return strings.Contains(kv, token) })
	}
}

var bootID = sync.OnceValues(func() (string, error) {
	if id, err := unix.Sysctl("kern.bootsessionuuid"); err == nil && id != "" {
		return id, nil
	}
	// Older kernels: the boot time itself tells boots apart.
	b, err := unix.SysctlRaw("kern.boottime")
	if err != nil {
		return "", fmt.Errorf("proctable: read boot id: %w", err)
	}
	return "boottime-" + hex.EncodeToString(b), nil
})

func (local) BootID() (string, error) { return bootID() }

// Written is not counted on macOS: proc_pid_rusage counts bytes written to
// disk only, not to pipes or terminals, so it would miss what a command
// prints. DescendantProgress falls back to the processes starting and ending.
func (local) Written(int) uint64 { return 0 }

// fastChildren: macOS keeps no children list to read; Children scans All.
func fastChildren() ([]int, bool) { return nil, false }
