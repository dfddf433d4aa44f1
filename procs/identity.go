package procs

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// TreeEnv is the environment variable through which a Process marks its whole
// tree. Start sets it to a random token in the child's environment (appending
// to any value it already has, so a familiar run under another familiar stays
// findable by both); descendants inherit it even when they start their own
// session or are reparented, which is how Terminate finds them. Callers that
// scrub a child's environment must keep it.
const TreeEnv = "FAMILIAR_PROCS_TREE"

// Identity names one process across familiar restarts. A pid alone can be
// reused by an unrelated process; pid + start time + boot cannot.
// The store records it so a restarted familiar can tell whether a task's
// agent is still running (Alive) and stop its tree (TerminateTree).
type Identity struct {
	PID  int `json:"pid"`
	PGID int `json:"pgid"`
	// StartTime is when it started (proctable.Proc.Start): on Linux field
	// 22 of /proc/PID/stat, clock ticks after boot; on macOS p_starttime in
	// microseconds since the epoch.
	StartTime uint64 `json:"startTime"`
	// BootID names the boot (Linux's /proc/sys/kernel/random/boot_id,
	// macOS's kern.bootsessionuuid); StartTime means nothing across a reboot.
	BootID string `json:"bootId"`
	// Tree is the token Start put in TreeEnv; it finds descendants that
	// left the process group or were reparented.
	Tree string `json:"tree"`
}

// Alive reports whether id still names the same live process: same boot,
// the pid exists with the same start time, and it is not a zombie.
// The error is set only when the process table could not be read for
// another reason.
func (id Identity) Alive() (bool, error) { return id.alive() }

// newTreeToken returns a token unique enough that finding it in a process's
// environment proves the process descends from the one that got it.
func newTreeToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on Linux or macOS (crypto/rand docs)
	return "fpt" + hex.EncodeToString(b[:])
}

// withTreeToken returns env with token added to TreeEnv.
func withTreeToken(env []string, token string) []string {
	out := make([]string, 0, len(env)+1)
	value := token
	for _, kv := range env {
		if old, ok := strings.CutPrefix(kv, TreeEnv+"="); ok {
			if old != "" {
				value = old + "," + token
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, TreeEnv+"="+value)
}
