// Package leakcheck is the goroutine and child-process leak check every
// package's tests run: a test binary passes only if, once its tests are
// done, no goroutine they started is still running and no child process
// they started is left (DESIGN.md: every goroutine owned and waited for; no
// child process outlives its test).
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
//
// or, when TestMain does more (helper children, setup and cleanup):
//
//	code := leakcheck.Run(m)
//	cleanup()
//	os.Exit(code)
//
// and, for one test that must not leak even while others run, Check(t) as
// its first line. Goroutines wind down just after the code that stopped them
// returns (connection readers, os/exec's copiers), so both poll with a
// deadline rather than look once.
//
// It is imported by tests only.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/procs/procfs"
)

// Deadlines of the checks: long enough for a loaded CI machine, short
// enough that a real leak fails the run promptly. Variables only so that
// leakcheck's own tests can shorten them.
var (
	GoroutineTimeout = 10 * time.Second
	ChildTimeout     = 10 * time.Second
)

// Main runs the tests, checks for leaks once they passed, and exits.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run runs the tests and returns the exit code: m.Run's, or 1 when they
// passed but left goroutines or child processes behind (which it reports on
// stderr; leftover children are killed so they outlive no test run).
func Run(m *testing.M) int {
	before := ids(snapshot())
	code := m.Run()
	if code != 0 {
		return code
	}
	if err := waitGoroutines(before, GoroutineTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "leakcheck:", err)
		code = 1
	}
	if err := waitChildren(ChildTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "leakcheck:", err)
		code = 1
	}
	return code
}

// Check fails t if a goroutine started while t ran is still running once t
// and its cleanups are done. Call it first, so its cleanup runs last. Not
// for parallel tests: it cannot tell whose goroutine it sees.
func Check(t testing.TB) {
	t.Helper()
	before := ids(snapshot())
	t.Cleanup(func() {
		if err := waitGoroutines(before, GoroutineTimeout); err != nil {
			t.Error(err)
		}
	})
}

// goroutine is one entry of a full stack dump.
type goroutine struct {
	id    int
	stack string
}

// snapshot returns every goroutine but the caller's.
func snapshot() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	// The first entry is the caller's own goroutine.
	for _, g := range strings.Split(string(buf), "\n\n")[1:] {
		head, _, _ := strings.Cut(g, " [")
		id, err := strconv.Atoi(strings.TrimPrefix(head, "goroutine "))
		if err != nil {
			continue
		}
		out = append(out, goroutine{id, g})
	}
	return out
}

func ids(gs []goroutine) map[int]bool {
	m := make(map[int]bool, len(gs))
	for _, g := range gs {
		m[g.id] = true
	}
	return m
}

// runtimeOwned are goroutines that belong to the runtime or the testing
// package and live as long as the process, whoever started them.
var runtimeOwned = []string{
	"os/signal.signal_recv", // signal.Notify's loop, never stopped
	"os/signal.loop",
	"runtime.ensureSigM",
	"testing.(*M).startAlarm", // -timeout's timer while it fires
	"testing.tRunner(",        // other tests (Check in a subtest's parent)
	"testing.runFuzzing",
	"runtime/pprof.",
}

// leaked returns the goroutines not in before and not runtimeOwned.
func leaked(before map[int]bool) []goroutine {
	var out []goroutine
	for _, g := range snapshot() {
		if before[g.id] || slices.ContainsFunc(runtimeOwned, func(s string) bool { return strings.Contains(g.stack, s) }) {
			continue
		}
		out = append(out, g)
	}
	return out
}

func waitGoroutines(before map[int]bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		left := leaked(before)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			stacks := make([]string, len(left))
			for i, g := range left {
				stacks[i] = g.stack
			}
			return fmt.Errorf("%d goroutine(s) outlived the tests:\n\n%s", len(left), strings.Join(stacks, "\n\n"))
		}
		<-tick.C
	}
}

// Children returns the pids of this process's live child processes
// (zombies not yet reaped included); nil where /proc does not list children.
func Children() []int {
	pids, _ := procfs.Children()
	return pids
}

func waitChildren(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		left := Children()
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var desc []string
			for _, pid := range left {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				desc = append(desc, fmt.Sprintf("%d %q", pid, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")))
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return fmt.Errorf("%d child process(es) outlived the tests (killed now): %s", len(left), strings.Join(desc, "; "))
		}
		<-tick.C
	}
}
