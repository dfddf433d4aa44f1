//go:build linux

package proctable

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/familiar-dev/familiar/procs/procfs"
)

// local reads /proc.
type local struct{}

func fromProcfs(s procfs.Stat) Proc {
	return Proc{PID: s.PID, PPID: s.PPID, PGID: s.PGID, SID: s.SID, State: s.State, Start: s.StartTime}
}

func (local) Stat(pid int) (Proc, error) {
	s, err := procfs.ReadStat(pid)
	if err != nil {
		return Proc{}, err
	}
	return fromProcfs(s), nil
}

func (local) All() ([]Proc, error) {
	all, err := procfs.ReadAllStats()
	if err != nil {
		return nil, err
	}
	out := make([]Proc, len(all))
	for i, s := range all {
		out[i] = fromProcfs(s)
	}
	return out, nil
}

func (local) EnvironHas(pid int, token string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && bytes.Contains(b, []byte(token))
}

var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("proctable: read boot id: %w", err)
	}
	return string(bytes.TrimSpace(b)), nil
})

func (local) BootID() (string, error) { return bootID() }

// Written is wchar of /proc/PID/io; 0 when unreadable (it just ended, or
// belongs to someone else).
func (local) Written(pid int) uint64 {
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

// fastChildren reads the kernel's children lists, where it keeps them.
func fastChildren() ([]int, bool) { return procfs.Children() }
