package procs

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/familiar-dev/familiar/internal/leakcheck"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// The test binary re-executes itself as the children these tests supervise:
// helperEnv names the mode, runEnv marks every process of this test run (and
// is inherited by their descendants) so the leak check can find leftovers.
const (
	helperEnv = "FAMILIAR_PROCS_HELPER"
	runEnv    = "FAMILIAR_PROCS_TEST_RUN"
)

var runID string

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		runHelper(strings.Fields(mode))
		os.Exit(0)
	}
	// Orphans of the helpers reparent to the test process, as they would to
	// familiar, and Terminate must find and reap them there.
	if err := EnableSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	runID = hex.EncodeToString(b[:])
	code := leakcheck.Run(m)
	if left := helperProcs(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "helper processes outlived the tests: %v\n", left)
		for _, pid := range left {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		code = 1
	}
	os.Exit(code)
}

// helperConfig returns cfg set up to run this test binary in the given helper mode.
func helperConfig(cfg Config, mode ...string) Config {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	cfg.Argv = []string{self, "-test.run=^$"}
	cfg.Env = append(os.Environ(), helperEnv+"="+strings.Join(mode, " "), runEnv+"="+runID,
		// A race-enabled helper would otherwise linger a second at exit.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return cfg
}

// startHelper starts a helper child and closes it when the test ends.
func startHelper(t *testing.T, cfg Config, mode ...string) *Process {
	t.Helper()
	p, err := Start(helperConfig(cfg, mode...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// checkLeaks makes the test fail if, once it and its cleanups are done, a
// goroutine it started is still running, a helper process is alive, or an
// orphan was left unreaped. Call it first so its cleanup runs last.
func checkLeaks(t *testing.T) {
	t.Helper()
	leakcheck.Check(t) // registered first, so it runs after the checks below
	t.Cleanup(func() {
		if !testenv.Eventually(10*time.Second, func() bool { return len(helperProcs()) == 0 }) {
			left := helperProcs()
			t.Errorf("helper processes left: %v", left)
			for _, pid := range left {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		if z := zombieChildren(); len(z) > 0 {
			t.Errorf("unreaped children: %v", z)
		}
	})
}

// helperProcs returns the live processes of this test run other than itself.
func helperProcs() []int {
	all, err := readAllStats()
	if err != nil {
		panic(err)
	}
	var out []int
	for _, s := range all {
		if s.pid != os.Getpid() && !s.dead() && environHas(s.pid, runEnv+"="+runID) {
			out = append(out, s.pid)
		}
	}
	return out
}

func zombieChildren() []int {
	all, _ := readAllStats()
	var out []int
	for _, s := range all {
		if s.ppid == os.Getpid() && s.dead() {
			out = append(out, s.pid)
		}
	}
	return out
}

// waitOutput waits until the tail of p's output contains s.
func waitOutput(t testing.TB, o *Output, s string) {
	t.Helper()
	if !testenv.Eventually(10*time.Second, func() bool { return strings.Contains(string(o.Tail().Data), s) }) {
		t.Fatalf("output never contained %q; tail: %q", s, o.Tail().Data)
	}
}

// pattern is the deterministic byte stream the write helper produces: a
// pseudo-random block of prime length, repeated, so that no read or buffer
// boundary lines up with it. Doubled so any window of ≤ patternLen is contiguous.
const patternLen = 65521

var patternBlock = func() []byte {
	b := make([]byte, 2*patternLen)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range patternLen {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	copy(b[patternLen:], b[:patternLen])
	return b
}()

// writePattern writes the first n bytes of the pattern stream to w.
func writePattern(w interface{ Write([]byte) (int, error) }, n int64) error {
	for off := int64(0); off < n; {
		start := off % patternLen
		k := min(n-off, patternLen)
		if _, err := w.Write(patternBlock[start : start+k]); err != nil {
			return err
		}
		off += k
	}
	return nil
}

// patternAt returns bytes [from, to) of the pattern stream.
func patternAt(from, to int64) []byte {
	out := make([]byte, 0, to-from)
	for off := from; off < to; {
		start := off % patternLen
		k := min(to-off, patternLen-start)
		out = append(out, patternBlock[start:start+k]...)
		off += k
	}
	return out
}

// runHelper is the child side. It never returns from modes that block.
func runHelper(args []string) {
	mode, args := args[0], args[1:]
	arg := func(i int) int {
		n, err := strconv.Atoi(args[i])
		if err != nil {
			panic(err)
		}
		return n
	}
	switch mode {
	case "exit":
		os.Exit(arg(0))
	case "kill": // kill self with a signal
		_ = unix.Kill(os.Getpid(), syscall.Signal(arg(0)))
		blockForever()
	case "ignore-term": // catch SIGTERM, say so, keep running
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("ready")
		for range c {
			fmt.Println("got SIGTERM")
		}
	case "echo": // echo lines until EOF
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Printf("got:%s\n", sc.Text())
		}
	case "pipes":
		fmt.Fprint(os.Stdout, "to stdout\n")
		fmt.Fprint(os.Stderr, "to stderr\n")
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Printf("got:%s\n", sc.Text())
		}
		os.Exit(7)
	case "winch": // print the terminal size at start and on every SIGWINCH
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGWINCH)
		printSize := func() {
			ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
			if err != nil {
				panic(err)
			}
			fmt.Printf("size=%dx%d\n", ws.Row, ws.Col)
		}
		printSize()
		for range c {
			printSize()
		}
	case "write": // write n bytes of the pattern, raw, then exit
		makeRaw(0)
		w := bufio.NewWriterSize(os.Stdout, 64<<10)
		if err := writePattern(w, int64(arg(0))); err != nil {
			panic(err)
		}
		if err := w.Flush(); err != nil {
			panic(err)
		}
	case "utf8": // a character split across two writes, the second on request
		makeRaw(0)
		os.Stdout.Write([]byte("a\xe2\x82"))
		var b [1]byte
		os.Stdin.Read(b[:])
		os.Stdout.Write([]byte("\xacz"))
		os.Stdin.Read(b[:])
	case "tree":
		// Descendants that a kill of the group alone would miss.
		self, _ := os.Executable()
		start := func(setsid bool, mode string) *exec.Cmd {
			c := exec.Command(self, "-test.run=^$")
			c.Env = append(os.Environ(), helperEnv+"="+mode)
			c.Stdout, c.Stderr = os.Stdout, os.Stderr
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
			if err := c.Start(); err != nil {
				panic(err)
			}
			return c
		}
		start(false, "sleeper same-group")
		start(true, "sleeper own-session-ignoring-term ignore-term")
		if err := start(false, "orphaner").Wait(); err != nil {
			panic(err)
		}
		if path, err := exec.LookPath("setsid"); err == nil {
			c := exec.Command(path, "sleep", "600")
			if err := c.Start(); err != nil {
				panic(err)
			}
			fmt.Printf("sleeper setsid-sleep %d ready\n", c.Process.Pid)
		}
		fmt.Println("tree ready")
		blockForever()
	case "setsid-tree": // the tree of BenchmarkTerminateSetsidTree: all exit on SIGTERM
		self, _ := os.Executable()
		for _, setsid := range []bool{false, true} {
			c := exec.Command(self, "-test.run=^$")
			c.Env = append(os.Environ(), helperEnv+"=sleeper setsid-"+strconv.FormatBool(setsid))
			c.Stdout, c.Stderr = os.Stdout, os.Stderr
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
			if err := c.Start(); err != nil {
				panic(err)
			}
		}
		c := exec.Command(self, "-test.run=^$")
		c.Env = append(os.Environ(), helperEnv+"=orphaner")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if err := c.Run(); err != nil {
			panic(err)
		}
		fmt.Println("tree ready")
		blockForever()
	case "orphaner": // start a sleeper in its own session, then exit: it is orphaned
		self, _ := os.Executable()
		c := exec.Command(self, "-test.run=^$")
		c.Env = append(os.Environ(), helperEnv+"=sleeper orphan")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			panic(err)
		}
	case "orphan-exiter": // start a child in its own session that exits once orphaned, then exit
		self, _ := os.Executable()
		c := exec.Command(self, "-test.run=^$")
		c.Env = append(os.Environ(), helperEnv+"=exit-when-orphaned "+strconv.Itoa(os.Getpid()))
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := c.Start(); err != nil {
			panic(err)
		}
		fmt.Printf("orphan %d\n", c.Process.Pid)
	case "exit-when-orphaned": // parent-pid: exit as soon as reparented away from it
		for os.Getppid() == arg(0) {
			time.Sleep(time.Millisecond)
		}
	case "spawn": // on each line of input, start a sleeper in this group and print its pid
		self, _ := os.Executable()
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			c := exec.Command(self, "-test.run=^$")
			c.Env = append(os.Environ(), helperEnv+"=sleeper spawned")
			if err := c.Start(); err != nil {
				panic(err)
			}
			fmt.Printf("spawned %d\n", c.Process.Pid)
		}
	case "escapes": // the ways a process leaves the tree, for TestTerminateFindsEscapesWithoutEnvironments
		self, _ := os.Executable()
		start := func(setsid bool, mode string) *exec.Cmd {
			c := exec.Command(self, "-test.run=^$")
			c.Env = append(os.Environ(), helperEnv+"="+mode)
			c.Stdout, c.Stderr = os.Stdout, os.Stderr
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
			if err := c.Start(); err != nil {
				panic(err)
			}
			return c
		}
		// A background job whose shell ended: orphaned, still in the
		// agent's session and group.
		if err := start(false, "spawn-and-exit false sleeper kept-session").Wait(); err != nil {
			panic(err)
		}
		// A daemon: orphaned in a session of its own once its parent, seen
		// while it ran, has ended.
		// (Reaped as they exit: a zombie's pid would stay.)
		go start(false, "spawn-wait-exit true sleeper own-session").Wait()
		// A command in a session of its own (claude's Bash tool) that
		// starts a background job only after it was seen, then ends.
		go start(true, "wait-spawn-exit false sleeper session-job").Wait()
		fmt.Println("escapes ready")
		blockForever()
	case "spawn-and-exit", "spawn-wait-exit", "wait-spawn-exit": // setsid mode...: start mode, with a wait for SIGUSR1 before or after
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		if mode != "spawn-and-exit" {
			fmt.Printf("waiter %s %d ready\n", strings.Join(args[1:], "-"), os.Getpid())
		}
		if mode == "wait-spawn-exit" {
			<-usr1
		}
		self, _ := os.Executable()
		c := exec.Command(self, "-test.run=^$")
		c.Env = append(os.Environ(), helperEnv+"="+strings.Join(args[1:], " "))
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: args[0] == "true"}
		if err := c.Start(); err != nil {
			panic(err)
		}
		if mode == "spawn-wait-exit" {
			<-usr1
		}
	case "sleeper": // name [ignore-term]
		if len(args) > 1 && args[1] == "ignore-term" {
			signal.Ignore(syscall.SIGTERM)
		}
		fmt.Printf("sleeper %s %d ready\n", args[0], os.Getpid())
		blockForever()
	default:
		panic("unknown helper mode " + mode)
	}
}

// blockForever keeps a helper alive until it is signalled. (A bare select{}
// would trip the runtime's deadlock detector.)
func blockForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// makeRaw puts the terminal on fd in raw mode (cfmakeraw), if it is one, so
// that output bytes pass unchanged (no \n → \r\n) and input is not echoed.
func makeRaw(fd int) {
	t, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, t); err != nil {
		panic(err)
	}
}

var lookPath = exec.LookPath
