//go:build linux

package sandbox

import (
	"context"
	"os/exec"
	"strings"
	"time"
)

// Check looks for what claude's sandbox needs on Linux: bubblewrap and
// socat on PATH, and a bubblewrap that can make a namespace here.
func Check(ctx context.Context) Availability {
	var missing []string
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		missing = append(missing, "bubblewrap")
	}
	if _, err := exec.LookPath("socat"); err != nil {
		missing = append(missing, "socat")
	}
	if len(missing) > 0 {
		return Availability{Why: strings.Join(missing, " and ") + " not installed (Debian, Ubuntu: apt-get install bubblewrap socat)"}
	}
	probe := func(args ...string) (string, bool) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bwrap, append(args, "true")...).CombinedOutput()
		return strings.TrimSpace(string(out)), err == nil
	}
	if _, ok := probe("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net"); ok {
		return Availability{OK: true}
	}
	if _, ok := probe("--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--unshare-net"); ok {
		return Availability{OK: true, Weaker: true, Why: "bubblewrap cannot mount a fresh /proc here, as in an unprivileged container: the host's /proc stays readable"}
	}
	out, _ := probe("--ro-bind", "/", "/", "--unshare-net")
	if out == "" {
		out = "it failed"
	}
	return Availability{Why: "bubblewrap cannot make a sandbox here (" + out + "; user namespaces may be disabled)"}
}
