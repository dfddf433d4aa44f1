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
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/procs/proctable"
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
	marker := markRun()
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
	if err := waitMarked(marker, ChildTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "leakcheck:", err)
		code = 1
	}
	return code
}

// RunEnv marks every process a test binary starts: Run puts it in the test
// process's own environment, so children that inherit it (and their
// descendants, even those that start a session of their own or are
// reparented to init) carry it, and the check finds them in the process
// table once the tests are done. Without a child subreaper (macOS, and the
// portableprocs build) an escaped process is nobody's child, and only this
// finds it.
const RunEnv = "FAMILIAR_LEAKCHECK_RUN"

// markRun sets RunEnv to a value unique to this run and returns the entry.
func markRun() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	v := hex.EncodeToString(b[:])
	_ = os.Setenv(RunEnv, v)
	return RunEnv + "=" + v
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

// Children returns the pids of this process's child processes (zombies not
// yet reaped included).
func Children() []int { return proctable.Children() }

// Marked returns the live processes other than this one whose environment
// holds entry.
func Marked(entry string) []int {
	all, _ := proctable.All()
	var out []int
	for _, p := range all {
		if p.PID != os.Getpid() && !p.Dead() && proctable.EnvironHas(p.PID, entry) {
			out = append(out, p.PID)
		}
	}
	return out
}

// waitMarked waits for the processes carrying this run's marker to end;
// those left at the deadline are killed and named.
func waitMarked(entry string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		left := Marked(entry)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			desc := describe(left)
			return fmt.Errorf("%d process(es) started by the tests outlived them (killed now): %s", len(left), desc)
		}
		<-tick.C
	}
}

// describe names each process by its command line and kills it.
func describe(pids []int) string {
	var desc []string
	for _, pid := range pids {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		desc = append(desc, fmt.Sprintf("%d %q", pid, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return strings.Join(desc, "; ")
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
			return fmt.Errorf("%d child process(es) outlived the tests (killed now): %s", len(left), describe(left))
		}
		<-tick.C
	}
}
