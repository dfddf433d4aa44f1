package procs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/internal/testenv"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pipes bool
		mode  []string
		want  ExitStatus
	}{
		{"exit 0", false, []string{"exit", "0"}, ExitStatus{Code: 0}},
		{"exit 3", false, []string{"exit", "3"}, ExitStatus{Code: 3}},
		{"exit 3 pipes", true, []string{"exit", "3"}, ExitStatus{Code: 3}},
		{"SIGKILL", false, []string{"kill", "9"}, ExitStatus{Code: -1, Signal: syscall.SIGKILL}},
		{"SIGTERM", false, []string{"kill", "15"}, ExitStatus{Code: -1, Signal: syscall.SIGTERM}},
		{"SIGKILL pipes", true, []string{"kill", "9"}, ExitStatus{Code: -1, Signal: syscall.SIGKILL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			p := startHelper(t, Config{Pipes: tc.pipes}, tc.mode...)
			got, err := p.Wait(testContext(t))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("status = %+v (%v), want %+v", got, got, tc.want)
			}
			if st, ok := p.ExitStatus(); !ok || st != got {
				t.Errorf("ExitStatus() = %v, %v after Done", st, ok)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	checkLeaks(t)
	if _, err := Start(Config{}); err == nil {
		t.Error("Start with no command succeeded")
	}
	if _, err := Start(Config{Argv: []string{"/nonexistent/program"}}); err == nil {
		t.Error("Start of a missing program succeeded")
	}
	// A log is never overwritten.
	log := filepath.Join(t.TempDir(), "out.log")
	if err := os.WriteFile(log, []byte("earlier task"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(helperConfig(Config{LogPath: log}, "exit", "0")); err == nil {
		t.Error("Start over an existing log succeeded")
	}
	if b, _ := os.ReadFile(log); string(b) != "earlier task" {
		t.Errorf("existing log changed to %q", b)
	}
}

func TestInputAndEnv(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	p := startHelper(t, Config{Dir: dir}, "echo")
	if _, err := p.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, p.Output(), "got:hello")

	id := p.Identity()
	if id.PID <= 0 || id.PGID != id.PID || id.StartTime == 0 || id.BootID == "" || id.Tree == "" {
		t.Errorf("Identity = %+v", id)
	}
	if cwd, err := os.Readlink("/proc/" + itoa(id.PID) + "/cwd"); err != nil || cwd != dir {
		t.Errorf("child cwd = %q, %v; want %q", cwd, err, dir)
	}
	if !environHas(id.PID, TreeEnv+"="+id.Tree) {
		t.Errorf("child environment lacks %s=%s", TreeEnv, id.Tree)
	}
	s, err := readStat(id.PID)
	if err != nil || s.sid != id.PID || s.pgid != id.PID {
		t.Errorf("child stat = %+v, %v; want its own session and group", s, err)
	}
	if alive, err := id.Alive(); !alive || err != nil {
		t.Errorf("Alive() = %v, %v while running", alive, err)
	}
	reused := id
	reused.StartTime++
	if alive, _ := reused.Alive(); alive {
		t.Error("Alive() with another start time = true")
	}
	otherBoot := id
	otherBoot.BootID = "another-boot"
	if alive, _ := otherBoot.Alive(); alive {
		t.Error("Alive() on another boot = true")
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if alive, err := id.Alive(); alive || err != nil {
		t.Errorf("Alive() = %v, %v after Close", alive, err)
	}
	if _, err := p.Write([]byte("x")); err == nil {
		t.Error("Write after Close succeeded")
	}
}

func TestPipes(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	outLog, errLog := filepath.Join(dir, "out.log"), filepath.Join(dir, "err.log")
	p := startHelper(t, Config{Pipes: true, LogPath: outLog, StderrLogPath: errLog}, "pipes")
	if err := p.Resize(Size{Rows: 1, Cols: 1}); !errors.Is(err, ErrNotPTY) {
		t.Errorf("Resize with pipes = %v, want ErrNotPTY", err)
	}
	if _, err := p.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	if err := p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait(testContext(t))
	if err != nil || st.Code != 7 {
		t.Fatalf("Wait = %v, %v; want exit code 7", st, err)
	}
	for _, o := range []*Output{p.Output(), p.Stderr()} {
		<-o.Done()
	}
	if got, want := string(p.Output().Tail().Data), "to stdout\ngot:line\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := string(p.Stderr().Tail().Data), "to stderr\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	if b, _ := os.ReadFile(errLog); string(b) != "to stderr\n" {
		t.Errorf("stderr log = %q", b)
	}
	if _, err := readStat(p.Identity().PID); err == nil {
		t.Error("child still in /proc after Wait")
	}
}

func TestResize(t *testing.T) {
	checkLeaks(t)
	p := startHelper(t, Config{Size: Size{Rows: 24, Cols: 80}}, "winch")
	waitOutput(t, p.Output(), "size=24x80")
	if err := p.Resize(Size{Rows: 50, Cols: 132}); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, p.Output(), "size=50x132")
	if err := p.CloseInput(); !errors.Is(err, ErrNotPipes) {
		t.Errorf("CloseInput under a PTY = %v, want ErrNotPipes", err)
	}
}

// TestLargeOutput pushes 100 MB through the PTY and checks that the log is
// byte-identical to what the child wrote and that a subscriber's chunks and
// gaps account for every byte, in order.
func TestLargeOutput(t *testing.T) {
	checkLeaks(t)
	const n = 100 << 20
	log := filepath.Join(t.TempDir(), "out.log")
	p := startHelper(t, Config{LogPath: log}, "write", itoa(n))
	sub := p.Output().Subscribe(SubscribeOptions{Replay: true, MaxQueued: 256 << 10})
	defer sub.Close()
	// A subscriber that reads nothing until the end must not hold anything up.
	stalled := p.Output().Subscribe(SubscribeOptions{MaxQueued: 64 << 10})
	defer stalled.Close()

	ctx := testContext(t)
	var first, next, delivered, dropped int64 = -1, 0, 0, 0
	for {
		c, err := sub.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if first < 0 {
			first, next = c.Offset, c.Offset
		}
		if c.Offset != next+c.Dropped {
			t.Fatalf("chunk at %d after %d dropped; previous ended at %d", c.Offset, c.Dropped, next)
		}
		next = c.Offset + int64(len(c.Data))
		delivered += int64(len(c.Data))
		dropped += c.Dropped
	}
	if st, err := p.Wait(ctx); err != nil || !st.Success() {
		t.Fatalf("writer: %v, %v", st, err)
	}
	if got := p.Output().Size(); got != n {
		t.Fatalf("Size = %d, want %d", got, n)
	}
	if first+delivered+dropped != n || next != n {
		t.Errorf("subscriber: first offset %d + %d delivered + %d dropped, ended at %d; want %d", first, delivered, dropped, next, n)
	}
	if dropped != sub.Dropped() {
		t.Errorf("Dropped() = %d, chunks reported %d", sub.Dropped(), dropped)
	}
	t.Logf("subscriber got %d bytes, missed %d", delivered, dropped)

	c, err := stalled.Next(ctx)
	if err != nil || len(c.Data) == 0 || len(c.Data) > 64<<10+readBufSize || c.Dropped != 0 {
		t.Fatalf("stalled subscriber's first chunk: %d bytes at %d, %d dropped, %v", len(c.Data), c.Offset, c.Dropped, err)
	}
	if !bytes.Equal(c.Data, patternAt(c.Offset, c.Offset+int64(len(c.Data)))) {
		t.Error("stalled subscriber's chunk differs from the stream")
	}
	end := c.Offset + int64(len(c.Data))
	gap, err := stalled.Next(ctx)
	if err != nil || len(gap.Data) != 0 || gap.Offset != n || gap.Offset-gap.Dropped != end || stalled.Dropped() != gap.Dropped {
		t.Fatalf("stalled subscriber's gap = %d bytes at %d, %d dropped (total %d), %v; want the rest up to %d", len(gap.Data), gap.Offset, gap.Dropped, stalled.Dropped(), err, n)
	}
	if _, err := stalled.Next(ctx); err != io.EOF {
		t.Errorf("stalled subscriber at end: %v", err)
	}

	want := sha256.New()
	if err := writePattern(want, n); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := sha256.New()
	size, err := io.Copy(got, f)
	if err != nil {
		t.Fatal(err)
	}
	if size != n || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Errorf("log: %d bytes, sha256 %x; want %d bytes, %x", size, got.Sum(nil), n, want.Sum(nil))
	}
	if fi, err := os.Stat(log); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if err := p.Output().LogErr(); err != nil {
		t.Errorf("LogErr = %v", err)
	}
	tail := p.Output().Tail()
	if tail.Offset+int64(len(tail.Data)) != n || len(tail.Data) < DefaultTailBytes-3 {
		t.Errorf("tail: %d bytes at %d", len(tail.Data), tail.Offset)
	}
	if !bytes.Equal(tail.Data, patternAt(tail.Offset, n)) {
		t.Error("tail differs from the end of the stream")
	}
}

// TestSplitCharacter has the child write a character in two halves with a
// pause between them; the subscriber gets it whole.
func TestSplitCharacter(t *testing.T) {
	checkLeaks(t)
	cfg := helperConfig(Config{}, "utf8")
	cfg.carryFlush = time.Hour // the pause must not count as a stall here
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sub := p.Output().Subscribe(SubscribeOptions{Replay: true})
	defer sub.Close()
	ctx := testContext(t)

	if !testenv.Eventually(10*time.Second, func() bool { return p.Output().Size() == 3 }) {
		t.Fatalf("Size = %d, want the first 3 bytes read", p.Output().Size())
	}
	c, err := sub.Next(ctx)
	if err != nil || string(c.Data) != "a" || c.Offset != 0 {
		t.Fatalf("first chunk = %+v, %v; want \"a\" at 0", c, err)
	}
	if _, err := p.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	c, err = sub.Next(ctx)
	if err != nil || string(c.Data) != "€z" || c.Offset != 1 {
		t.Fatalf("second chunk = %+v %q, %v; want \"€z\" at 1", c, c.Data, err)
	}
	if _, err := p.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestIncompleteCharacterFlushed: bytes that never complete a character are
// delivered after a short wait, not held until more output comes.
func TestIncompleteCharacterFlushed(t *testing.T) {
	checkLeaks(t)
	p := startHelper(t, Config{}, "utf8")
	sub := p.Output().Subscribe(SubscribeOptions{Replay: true})
	defer sub.Close()
	ctx := testContext(t)
	var got []byte
	for string(got) != "a\xe2\x82" {
		c, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %q: %v", got, err)
		}
		got = append(got, c.Data...)
	}
	if _, err := p.Write([]byte("xx")); err != nil {
		t.Fatal(err)
	}
	c, err := sub.Next(ctx)
	if err != nil || string(c.Data) != "\xacz" {
		t.Fatalf("rest = %q, %v", c.Data, err)
	}
}

func TestLogWriteError(t *testing.T) {
	checkLeaks(t)
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	// The log must not exist before Start, so /dev/full cannot be it; swap
	// /dev/full in under the log's descriptor after Start instead.
	logErrs := make(chan error, 4)
	log := filepath.Join(t.TempDir(), "out.log")
	p := startHelper(t, Config{
		LogPath:    log,
		OnLogError: func(err error) { logErrs <- err },
	}, "echo")
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	// dup2 and then close-on-exec, as darwin has no dup3.
	logFD := fdOf(t, log)
	if err := unix.Dup2(int(full.Fd()), logFD); err != nil {
		t.Fatal(err)
	}
	unix.CloseOnExec(logFD)
	if _, err := p.Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, p.Output(), "got:one")
	select {
	case err := <-logErrs:
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("log error = %v, want ENOSPC", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnLogError not called")
	}
	if err := p.Output().LogErr(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("LogErr = %v", err)
	}
	// The child goes on; output still reaches the tail.
	if _, err := p.Write([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, p.Output(), "got:two")
	if len(logErrs) != 0 {
		t.Errorf("OnLogError called again: %v", <-logErrs)
	}
}

func TestWatchdogFollowsOutput(t *testing.T) {
	checkLeaks(t)
	clk := clock.NewFake(time.Unix(1000, 0))
	fired := make(chan struct{}, 8)
	p := startHelper(t, Config{
		Clock:        clk,
		NoProgress:   time.Minute,
		OnNoProgress: func() { fired <- struct{}{} },
	}, "echo")
	expectFire := func() {
		t.Helper()
		select {
		case <-fired:
		case <-time.After(10 * time.Second):
			t.Fatal("watchdog did not fire")
		}
	}
	testenv.AdvanceArmed(t, clk, 1, time.Minute)
	expectFire()

	// Output re-arms it.
	if _, err := p.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	if !clk.WaitForTimers(1, 5*time.Second) {
		t.Fatal("output did not re-arm the watchdog")
	}
	// All of that output must be in before the clock moves on, or it
	// would count as progress later.
	waitOutput(t, p.Output(), "got:x\r\n")
	// Waiting on a person: paused, nothing fires however long it takes.
	p.Watchdog().Pause()
	if n := clk.Pending(); n != 0 {
		t.Fatalf("%d timers pending while paused", n)
	}
	clk.Advance(time.Hour)
	p.Watchdog().Resume()
	clk.Advance(time.Minute - time.Second)
	testenv.AdvanceArmed(t, clk, 1, time.Second)
	expectFire()
	if len(fired) != 0 {
		t.Error("fired more than once per quiet period")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// fdOf returns the descriptor number this process has open on path.
func fdOf(t *testing.T, path string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); target == path {
			fd, _ := strconv.Atoi(e.Name())
			return fd
		}
	}
	t.Fatalf("%s is not open", path)
	return -1
}

// A process outside the tree holds the terminal open after the tree is gone:
// Close stops waiting for the output after drainTimeout and makes the reader
// return, whether it reads through the poller (a past deadline) or blocks in
// read(2) as on macOS (woken by a byte written to the terminal).
func TestCloseWithTerminalHeldOutsideTheTree(t *testing.T) {
	checkLeaks(t)
	for _, blocking := range []bool{false, true} {
		t.Run(map[bool]string{false: "poller", true: "blocking"}[blocking], func(t *testing.T) {
			p, err := Start(helperConfig(Config{blockingPTY: blocking}, "echo"))
			if err != nil {
				t.Fatal(err)
			}
			held, err := os.OpenFile(p.ptyName, os.O_RDWR|syscall.O_NOCTTY, 0)
			if err != nil {
				p.Close()
				t.Fatal(err)
			}
			defer held.Close()
			closed := make(chan error, 1)
			go func() { closed <- p.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("Close did not return while the terminal was held")
			}
			select {
			case <-p.Output().Done():
			default:
				t.Error("the output did not end")
			}
		})
	}
}

// The CPU this process spends reading an idle child's PTY (a measurement,
// not a check: run with FAMILIAR_MEASURE_IDLE_CPU=<seconds>), through the
// poller and in blocking mode as on macOS.
func TestMeasureIdlePTYReadCPU(t *testing.T) {
	secs, err := strconv.Atoi(os.Getenv("FAMILIAR_MEASURE_IDLE_CPU"))
	if err != nil || secs <= 0 {
		t.Skip("a measurement: set FAMILIAR_MEASURE_IDLE_CPU=<seconds>")
	}
	cpu := func() time.Duration {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, blocking := range []bool{false, true} {
		p := startHelper(t, Config{blockingPTY: blocking}, "ignore-term")
		waitOutput(t, p.Output(), "ready")
		before, start := cpu(), time.Now()
		time.Sleep(time.Duration(secs) * time.Second) // the measurement's window
		used, wall := cpu()-before, time.Since(start)
		t.Logf("blocking=%v: %v CPU in %v (%.3f %%)", blocking, used, wall.Round(time.Millisecond), 100*used.Seconds()/wall.Seconds())
		p.Close()
	}
}
