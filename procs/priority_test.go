package procs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// niceOf reads a thread's or process's niceness from its stat file.
func niceOf(t *testing.T, statPath string) int {
	t.Helper()
	b, err := os.ReadFile(statPath)
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command, which ends at the last ')': state is field
	// 3, nice field 19.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	n, err := strconv.Atoi(f[19-3])
	if err != nil {
		t.Fatalf("%s: nice %q: %v", statPath, f[19-3], err)
	}
	return n
}

func TestNiceCoversTheTreeAndTheSession(t *testing.T) {
	for _, pipes := range []bool{false, true} {
		t.Run(map[bool]string{false: "pty", true: "pipes"}[pipes], func(t *testing.T) {
			checkLeaks(t)
			p := startHelper(t, Config{Nice: 7, Pipes: pipes}, "spawn")
			pid := p.Identity().PID
			// Every thread the child's runtime had started by then.
			threads, _ := filepath.Glob("/proc/" + itoa(pid) + "/task/*/stat")
			if len(threads) == 0 {
				t.Fatal("no threads listed")
			}
			for _, th := range threads {
				if n := niceOf(t, th); n != 7 {
					t.Errorf("%s: nice %d, want 7", th, n)
				}
			}
			// A process it starts later inherits it.
			if _, err := p.Write([]byte("go\n")); err != nil {
				t.Fatal(err)
			}
			m := waitOutputMatch(t, p, regexp.MustCompile(`spawned (\d+)`))
			if n := niceOf(t, "/proc/"+m[1]+"/stat"); n != 7 {
				t.Errorf("spawned child: nice %d, want 7", n)
			}
			// Under a PTY the child leads a session: its autogroup (where the
			// kernel has them) is lowered too; with pipes it stays in
			// familiar's own, which must not change.
			ag := "/proc/" + itoa(pid) + "/autogroup"
			if _, err := os.Stat(ag); err != nil {
				t.Logf("no autogroup here (%v): only the processes' niceness is checked", err)
				return
			}
			// With pipes the child shares familiar's autogroup, which must read
			// the same as before. That may be empty: a process that never left
			// the kernel's default group (as in some containers) shows nothing.
			matches := func(got string) bool { return strings.HasSuffix(got, "nice 7") }
			want := "to end with \"nice 7\""
			if pipes {
				own, err := os.ReadFile("/proc/self/autogroup")
				if err != nil {
					t.Fatal(err)
				}
				ownGroup := strings.TrimSpace(string(own))
				matches = func(got string) bool { return got == ownGroup }
				want = fmt.Sprintf("familiar's own %q", ownGroup)
			}
			if !testenv.Eventually(10*time.Second, func() bool {
				b, _ := os.ReadFile(ag)
				return matches(strings.TrimSpace(string(b)))
			}) {
				b, _ := os.ReadFile(ag)
				t.Errorf("%s = %q, want %s", ag, strings.TrimSpace(string(b)), want)
			}
		})
	}
}

func TestNoNiceKeepsThePriority(t *testing.T) {
	checkLeaks(t)
	p := startHelper(t, Config{}, "spawn")
	if n := niceOf(t, "/proc/"+itoa(p.Identity().PID)+"/stat"); n != niceOf(t, "/proc/self/stat") {
		t.Errorf("nice %d without Config.Nice, familiar's is %d", n, niceOf(t, "/proc/self/stat"))
	}
}

// waitOutputMatch waits for re in the child's output and returns its submatches.
func waitOutputMatch(t *testing.T, p *Process, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	if !testenv.Eventually(10*time.Second, func() bool {
		m = re.FindStringSubmatch(string(p.Output().Tail().Data))
		return m != nil
	}) {
		t.Fatalf("output never matched %s; tail: %q", re, p.Output().Tail().Data)
	}
	return m
}

// Linux lets an unprivileged user change one autogroup per 100 ms: a refused
// write is tried again on the clock until it succeeds, and the retries stop
// when the child exits.
func TestAutogroupRetriesWhileRateLimited(t *testing.T) {
	checkLeaks(t)
	var tries atomic.Int32
	limited := make(chan struct{}) // closed: the next write succeeds
	writeAutogroup = func(f *os.File, nice int) (bool, error) {
		tries.Add(1)
		select {
		case <-limited:
			return false, nil
		default:
			return true, syscall.EAGAIN
		}
	}
	t.Cleanup(func() { writeAutogroup = setAutogroupNice })

	run := func(stop func(p *Process, clk *clock.Fake)) int32 {
		tries.Store(0)
		clk := clock.NewFake(time.Unix(0, 0))
		f, err := os.CreateTemp(t.TempDir(), "autogroup")
		if err != nil {
			t.Fatal(err)
		}
		p := &Process{clk: clk, done: make(chan struct{}), logger: slog.New(slog.DiscardHandler), autogroupNice: make(chan int, 1)}
		p.autogroupNice <- 7
		p.wg.Add(1)
		go p.niceAutogroup(f)
		for i := range 4 { // four refusals, each followed by a timer
			if !clk.WaitForTimers(1, 10*time.Second) {
				t.Fatal("no retry timer after a refused write")
			}
			if i < 3 {
				clk.Advance(autogroupRetry)
			}
		}
		stop(p, clk)
		p.wg.Wait()
		return tries.Load()
	}
	// The limit lifts: the fifth write succeeds, and no other follows
	// until the child exits.
	if n := run(func(p *Process, clk *clock.Fake) {
		close(limited)
		clk.Advance(autogroupRetry)
		testenv.Eventually(10*time.Second, func() bool { return tries.Load() == 5 })
		close(p.done)
	}); n != 5 {
		t.Errorf("%d writes, want 5 (four refused, then one that succeeds)", n)
	}
	// The child exits while limited: the retries stop.
	limited = make(chan struct{})
	if n := run(func(p *Process, clk *clock.Fake) { close(p.done) }); n != 4 {
		t.Errorf("%d writes, want 4 (none after the child exited)", n)
	}
}

// The daemon's own group follows the latest value asked for, retrying while
// rate-limited, without making the caller wait.
func TestOwnSessionFollowsTheLatestNice(t *testing.T) {
	checkLeaks(t)
	if _, err := os.Stat("/proc/self/autogroup"); err != nil {
		t.Skip("no autogroups on this kernel")
	}
	var mu sync.Mutex
	var written []int
	refusals := 2
	writeAutogroup = func(f *os.File, nice int) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		written = append(written, nice)
		if refusals > 0 {
			refusals--
			return true, syscall.EAGAIN
		}
		return false, nil
	}
	leadsOwnSession = func() bool { return true }
	t.Cleanup(func() {
		writeAutogroup = setAutogroupNice
		leadsOwnSession = func() bool { sid, err := unix.Getsid(0); return err == nil && sid == os.Getpid() }
	})
	clk := clock.NewFake(time.Unix(0, 0))
	o := NewOwnSession(clk, nil)
	defer o.Close()
	o.SetNice(7)                                    // refused, retried on the clock
	testenv.AdvanceArmed(t, clk, 1, autogroupRetry) // the retry, refused again
	if !clk.WaitForTimers(1, 10*time.Second) {
		t.Fatal("no second retry")
	}
	o.SetNice(3) // a newer value replaces the one being retried
	if !testenv.Eventually(10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(written) == 3
	}) {
		t.Fatalf("written %v", written)
	}
	o.SetNice(3) // already in place: no write
	o.Close()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(written, []int{7, 7, 3}) {
		t.Errorf("written %v, want [7 7 3]", written)
	}
}

// A child started at the default priority is lowered later, its threads
// and what it starts after (a prepared claude when its task takes it).
func TestLowerPriorityLater(t *testing.T) {
	checkLeaks(t)
	p := startHelper(t, Config{Pipes: true}, "spawn")
	pid := p.Identity().PID
	if err := p.LowerPriority(7); err != nil {
		t.Fatal(err)
	}
	threads, _ := filepath.Glob("/proc/" + itoa(pid) + "/task/*/stat")
	if len(threads) == 0 {
		t.Fatal("no threads listed")
	}
	for _, th := range threads {
		if n := niceOf(t, th); n != 7 {
			t.Errorf("%s: nice %d, want 7", th, n)
		}
	}
	if _, err := p.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	m := waitOutputMatch(t, p, regexp.MustCompile(`spawned (\d+)`))
	if n := niceOf(t, "/proc/"+m[1]+"/stat"); n != 7 {
		t.Errorf("spawned child: nice %d, want 7", n)
	}
}

// A pipes child started with OwnSession leads a session of its own: on
// Linux with autogroups a scheduling group of its own, at niceness 0
// whatever familiar's is, which LowerPriority lowers with the processes.
func TestOwnSessionPipesLowerLater(t *testing.T) {
	checkLeaks(t)
	p := startHelper(t, Config{Pipes: true, OwnSession: true}, "spawn")
	pid := p.Identity().PID
	if sid, err := unix.Getsid(pid); err != nil || sid != pid {
		t.Fatalf("session of the child %d: %d (%v), want its own", pid, sid, err)
	}
	ag := "/proc/" + itoa(pid) + "/autogroup"
	read := func() string { b, _ := os.ReadFile(ag); return strings.TrimSpace(string(b)) }
	hasAutogroups := read() != ""
	if hasAutogroups {
		own, _ := os.ReadFile("/proc/self/autogroup")
		if got := read(); got == strings.TrimSpace(string(own)) || !strings.HasSuffix(got, "nice 0") {
			t.Errorf("%s = %q, want a group of its own at nice 0 (familiar's is %q)", ag, got, strings.TrimSpace(string(own)))
		}
	} else {
		t.Log("no autogroup here: only the processes' niceness is checked")
	}
	if err := p.LowerPriority(7); err != nil {
		t.Fatal(err)
	}
	if n := niceOf(t, "/proc/"+itoa(pid)+"/stat"); n != 7 {
		t.Errorf("nice %d, want 7", n)
	}
	if hasAutogroups && !testenv.Eventually(10*time.Second, func() bool { return strings.HasSuffix(read(), "nice 7") }) {
		t.Errorf("%s = %q, want it lowered to nice 7", ag, read())
	}
	// Input and output still go through the pipes.
	if _, err := p.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	waitOutputMatch(t, p, regexp.MustCompile(`spawned (\d+)`))
}

// A child being stopped gets its session's share back: Terminate sets its
// own autogroup to nice 0 before SIGTERM, so its exit is not starved
// under load (issue 40: closed means closed); its processes keep their
// niceness.
func TestTerminateGivesTheShareBack(t *testing.T) {
	checkLeaks(t)
	if _, err := os.Stat("/proc/self/autogroup"); err != nil {
		t.Skip("no autogroups on this kernel")
	}
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"pty", Config{Nice: 7}}, {"pipes, own session", Config{Nice: 7, Pipes: true, OwnSession: true}}} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Grace = time.Minute // ended below, once seen
			p := startHelper(t, c.cfg, "ignore-term")
			waitOutput(t, p.Output(), "ready")
			ag := "/proc/" + itoa(p.Identity().PID) + "/autogroup"
			read := func() string { b, _ := os.ReadFile(ag); return strings.TrimSpace(string(b)) }
			if !testenv.Eventually(10*time.Second, func() bool { return strings.HasSuffix(read(), "nice 7") }) {
				t.Fatalf("%s = %q, want nice 7 before it is stopped", ag, read())
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Terminate(ctx) }()
			waitOutput(t, p.Output(), "got SIGTERM")
			if !testenv.Eventually(10*time.Second, func() bool { return strings.HasSuffix(read(), "nice 0") }) {
				t.Errorf("%s = %q while it stops, want nice 0", ag, read())
			}
			if n := niceOf(t, "/proc/"+itoa(p.Identity().PID)+"/stat"); n != 7 {
				t.Errorf("its nice %d while it stops, want 7 still", n)
			}
			cancel() // SIGKILL now
			if err := <-done; err != nil {
				t.Logf("terminate: %v", err)
			}
		})
	}
}
