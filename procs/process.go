package procs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/familiar-dev/familiar/clock"
)

// DefaultGrace is how long Terminate waits between SIGTERM and SIGKILL when
// Config.Grace is zero (PROTOCOL.md's termGraceSec default).
const DefaultGrace = 10 * time.Second

// drainTimeout bounds how long Close waits for output to end after the tree is
// gone: the stream ends when the last holder of the PTY slave or pipe exits,
// and a process outside the tree (one that scrubbed TreeEnv and left the
// session) could hold it forever.
const drainTimeout = 2 * time.Second

var (
	// ErrNotPTY is returned by Resize for a process started with pipes.
	ErrNotPTY = errors.New("not started under a PTY")
	// ErrNotPipes is returned by CloseInput for a process started under a PTY.
	ErrNotPipes = errors.New("not started with pipes")
)

// Size is a terminal size in character cells.
type Size struct {
	Rows, Cols uint16
}

// Config says what to start and how to supervise it.
type Config struct {
	// Argv is the program and its arguments. Argv[0] is looked up in PATH
	// when it contains no slash.
	Argv []string
	// Dir is the working directory; "" means familiar's own.
	Dir string
	// Env is the child's environment; nil means familiar's own. TreeEnv is
	// always added.
	Env []string

	// Pipes starts the child with stdin/stdout/stderr pipes in its own
	// process group (for the stream-json driver) instead of under a PTY in
	// its own session (the default).
	Pipes bool
	// OwnSession, with Pipes, makes the child lead a session of its own
	// (Setsid, no controlling terminal) rather than a group in familiar's.
	// On Linux with autogroups that is a scheduling group of its own,
	// starting at niceness 0 whatever familiar's is: a claude a person
	// waits for does not share the background familiar's lowered share
	// (issue 40). LowerPriority lowers that group too.
	OwnSession bool
	// Size is the initial PTY size; zero means 24×80.
	Size Size
	// Nice, when positive, lowers the scheduling priority of the child and
	// of everything it starts (and of its session's autogroup on Linux), so
	// the agents' work yields the CPU to the person's editor.
	Nice int

	// LogPath is the file that receives every byte of output (the PTY, or
	// stdout with Pipes). It is created with mode 0600 and must not exist:
	// a log is never overwritten. "" means no log.
	LogPath string
	// StderrLogPath is the same for stderr with Pipes.
	StderrLogPath string
	// LogFilter, if set, wraps each log file: the bytes of output go through
	// it on their way to the file (familiar masks secrets there, since the
	// log is read back by clients). Closing what it returns must flush it,
	// not close the file, which procs closes after it. Subscribers and the
	// tail still get the bytes as read.
	LogFilter func(io.Writer) io.WriteCloser
	// OnLogError is called once per stream, from its reader, with the first
	// error writing or closing its log. It must not block: the reader (and
	// so the child's output) waits for it.
	OnLogError func(error)
	// TailBytes is how much of the latest output each stream keeps in
	// memory; zero means DefaultTailBytes.
	TailBytes int

	// Grace is the wait between SIGTERM and SIGKILL in Terminate; zero means
	// DefaultGrace.
	Grace time.Duration
	// NoProgress, when positive, starts a Watchdog that calls OnNoProgress
	// after that long without output. OnNoProgress must not call Close.
	NoProgress   time.Duration
	OnNoProgress func()

	// Clock drives the grace period, the watchdog and the other timeouts;
	// nil means the wall clock.
	Clock clock.Clock
	// Logger receives what happens to the process; nil discards.
	Logger *slog.Logger

	carryFlush  time.Duration // tests only: see defaultCarryFlush
	blockingPTY bool          // tests only: read the PTY as macOS does (ptyBlockingReads) on any build
}

// ExitStatus is how a child ended.
type ExitStatus struct {
	// Code is the exit code, or -1 when the child was killed by a signal
	// (or its status could not be collected, which is logged).
	Code int
	// Signal is the signal that killed the child, 0 when it exited.
	Signal syscall.Signal
	// CoreDumped is set when the signal produced a core dump.
	CoreDumped bool
}

// Signaled reports whether the child was killed by a signal.
func (s ExitStatus) Signaled() bool { return s.Signal != 0 }

// Success reports whether the child exited with code 0.
func (s ExitStatus) Success() bool { return s.Code == 0 && s.Signal == 0 }

func (s ExitStatus) String() string {
	if s.Signaled() {
		return "killed by " + SignalName(s.Signal)
	}
	return fmt.Sprintf("exit code %d", s.Code)
}

// SignalName names a signal as people know it: "SIGKILL (killed)", not
// Go's bare description ("killed").
func SignalName(sig syscall.Signal) string {
	name := unix.SignalName(sig)
	if name == "" {
		return fmt.Sprintf("signal %d (%s)", int(sig), sig)
	}
	return name + " (" + sig.String() + ")"
}

// Process is one started child and everything familiar keeps about it.
//
// Lifetime: Start starts the child, one goroutine that waits for it and one
// reader per output stream. Done is closed when the child has exited and been
// reaped — its output may still be draining then (descendants can hold the
// PTY open); Output().Done() says when a stream has been read to its end.
// Close must be called once the Process is no longer needed (after
// Done, or to stop it): it terminates what is left of the tree, waits for the
// output to drain, and stops every goroutine of the Process.
type Process struct {
	id      Identity
	cmd     *exec.Cmd
	waitCmd func() error // cmd.Wait, registered with the reaper (StartCommand)
	clk     clock.Clock
	grace   time.Duration
	logger  *slog.Logger

	pty     *os.File   // PTY master; nil with pipes
	ptyName string     // the PTY's slave side, e.g. /dev/pts/3
	stdin   *os.File   // write end of stdin; nil under a PTY
	outputs []*Output  // the PTY, or stdout then stderr
	readers []*os.File // readers[i] is what outputs[i] reads
	wd      *Watchdog  // nil without NoProgress
	lin     *lineage   // the tree as seen while it ran; see lineage

	stopRecord chan struct{} // closed by close: ends the lineage recorder

	// autogroupNice takes the niceness for the autogroup of the child's
	// own session (niceAutogroup writes it): Nice, LowerPriority's, 0 as
	// Terminate stops it. nil when there is none. Buffered 1: the newest
	// value waits there (setAutogroupNice).
	autogroupNice chan int

	done   chan struct{}
	status ExitStatus // written once before done is closed

	wg sync.WaitGroup // the waiter and the readers

	termMu sync.Mutex // serializes Terminate calls: one walk of the tree at a time

	closeOnce sync.Once
	closeErr  error // set by closeOnce
}

// Start starts cfg.Argv and returns once it runs (exec succeeded).
func Start(cfg Config) (*Process, error) {
	if len(cfg.Argv) == 0 || cfg.Argv[0] == "" {
		return nil, errors.New("procs: start: empty command")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.TailBytes <= 0 {
		cfg.TailBytes = DefaultTailBytes
	}
	if cfg.Size == (Size{}) {
		cfg.Size = Size{Rows: 24, Cols: 80}
	}
	name := cfg.Argv[0]

	cmd := exec.Command(cfg.Argv[0], cfg.Argv[1:]...)
	if cmd.Err != nil {
		return nil, fmt.Errorf("procs: start %s: %w", name, cmd.Err)
	}
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	token := newTreeToken()
	cmd.Env = withTreeToken(env, token)
	cmd.Dir = cfg.Dir

	// closers are released if Start fails.
	var closers []*os.File
	fail := func(err error) (*Process, error) {
		for _, f := range closers {
			_ = f.Close()
		}
		return nil, fmt.Errorf("procs: start %s: %w", name, err)
	}
	openLog := func(path string) (*os.File, error) {
		if path == "" {
			return nil, nil
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("create output log: %w", err)
		}
		closers = append(closers, f)
		return f, nil
	}
	outLog, err := openLog(cfg.LogPath)
	if err != nil {
		return fail(err)
	}
	var errLog *os.File
	if cfg.Pipes {
		if errLog, err = openLog(cfg.StderrLogPath); err != nil {
			return fail(err)
		}
	}

	p := &Process{
		cmd:    cmd,
		clk:    cfg.Clock,
		grace:  cfg.Grace,
		logger: cfg.Logger,
		done:   make(chan struct{}),
		lin:    newLineage(),

		stopRecord: make(chan struct{}),
	}
	// childEnds are the child's side of the PTY or pipes: closed in the
	// parent after the child has them, so EOF is seen when the tree exits.
	var childEnds []*os.File
	var blocking bool // the PTY master is read in blocking mode (ptyBlockingReads)
	var ptyName string
	if cfg.Pipes {
		var ends [3][2]*os.File // [i][0] read end, [i][1] write end
		for i := range ends {
			r, w, err := os.Pipe()
			if err != nil {
				return fail(fmt.Errorf("pipe: %w", err))
			}
			ends[i] = [2]*os.File{r, w}
			closers = append(closers, r, w)
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ends[0][0], ends[1][1], ends[2][1]
		childEnds = []*os.File{ends[0][0], ends[1][1], ends[2][1]}
		p.stdin = ends[0][1]
		p.readers = []*os.File{ends[1][0], ends[2][0]}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !cfg.OwnSession, Setsid: cfg.OwnSession}
	} else {
		master, tty, err := pty.Open()
		if err != nil {
			return fail(fmt.Errorf("open pty: %w", err))
		}
		closers = append(closers, tty)
		if err := pty.Setsize(tty, &pty.Winsize{Rows: cfg.Size.Rows, Cols: cfg.Size.Cols}); err != nil {
			_ = master.Close()
			return fail(fmt.Errorf("set pty size: %w", err))
		}
		blocking = ptyBlockingReads || cfg.blockingPTY
		if !blocking {
			if master, err = pollable(master); err != nil {
				return fail(err)
			}
		}
		closers = append(closers, master)
		ptyName = tty.Name()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		childEnds = []*os.File{tty}
		p.pty = master
		p.readers = []*os.File{master}
		// Ctty is a child fd: 0 is the tty.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}

	// Registered before a reaper can look (see Reaper): the child runs in
	// its own group, so a sweep would otherwise take its exit status.
	if p.waitCmd, err = StartCommand(cmd); err != nil {
		return fail(err)
	}
	for _, f := range childEnds {
		_ = f.Close()
	}
	pid := cmd.Process.Pid
	// Read before the waiter can reap the child, so the pid is still ours.
	p.id, err = lookupIdentity(pid, token)
	if err != nil {
		p.logger.Warn("procs: no start time for the child; a restarted familiar cannot verify it", "pid", pid, "err", err)
		p.id = Identity{PID: pid, Tree: token}
	}
	p.id.PGID = pid // Setsid / Setpgid made it the leader of its own group
	// A child leading a session of its own (a PTY, or OwnSession) has an
	// autogroup of its own where the kernel has them: opened now, while
	// the pid is surely the child's, and held until it exits, to lower it
	// (Nice, LowerPriority) and to give it its share back as it is stopped.
	var autogroup *os.File
	session := !cfg.Pipes || cfg.OwnSession
	if cfg.Nice > 0 {
		// Before the waiter starts: the pid cannot have been reused yet.
		if autogroup, err = lowerPriority(pid, cfg.Nice, session); err != nil {
			p.logger.Warn("procs: the child's priority is not lowered fully", "pid", pid, "nice", cfg.Nice, "err", err)
		}
	} else if session {
		if autogroup, err = openAutogroup(strconv.Itoa(pid)); err != nil {
			autogroup = nil
			if !errors.Is(err, os.ErrNotExist) {
				p.logger.Warn("procs: the child's session cannot be lowered later", "pid", pid, "err", err)
			}
		}
	}

	if cfg.NoProgress > 0 {
		onStuck := cfg.OnNoProgress
		if onStuck == nil {
			onStuck = func() {}
		}
		p.wd = NewWatchdog(cfg.Clock, cfg.NoProgress, onStuck)
	}
	if cfg.Pipes {
		p.outputs = []*Output{
			newOutput("stdout", cfg.TailBytes, filterLog(outLog, cfg.LogFilter), cfg.LogPath, cfg.OnLogError, p.wd.Kick, cfg.Logger),
			newOutput("stderr", cfg.TailBytes, filterLog(errLog, cfg.LogFilter), cfg.StderrLogPath, cfg.OnLogError, p.wd.Kick, cfg.Logger),
		}
	} else {
		p.outputs = []*Output{newOutput("pty", cfg.TailBytes, filterLog(outLog, cfg.LogFilter), cfg.LogPath, cfg.OnLogError, p.wd.Kick, cfg.Logger)}
		p.ptyName = ptyName
		if blocking {
			p.outputs[0].blocking = true
			p.outputs[0].wake = func() error { return pokeTerminal(ptyName) }
		}
	}

	if cfg.carryFlush > 0 {
		for _, o := range p.outputs {
			o.carryFlush = cfg.carryFlush
		}
	}
	p.wg.Add(1 + len(p.outputs))
	go p.wait()
	if autogroup != nil {
		p.autogroupNice = make(chan int, 1)
		if cfg.Nice > 0 {
			p.autogroupNice <- cfg.Nice
		}
		p.wg.Add(1)
		go p.niceAutogroup(autogroup)
	}
	for i, o := range p.outputs {
		go func() {
			defer p.wg.Done()
			o.run(p.readers[i])
		}()
	}
	if !subreaper {
		// Nothing brings orphans back to familiar: remember who was in the
		// tree, for Terminate to find them after they left it.
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			var logged bool
			p.lin.recordLoop(p.id, p.stopRecord, func(err error) {
				if !logged {
					logged = true
					p.logger.Warn("procs: cannot read the process table to record the tree", "pid", pid, "err", err)
				}
			})
		}()
	}
	p.logger.Info("procs: started", "pid", pid, "cmd", name, "dir", cfg.Dir, "pipes", cfg.Pipes)
	return p, nil
}

// pokeTerminal writes one NUL byte to the terminal whose slave side is
// name: the master's blocking read returns with it.
func pokeTerminal(name string) error {
	fd, err := unix.Open(name, unix.O_WRONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte{0}); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// pollable returns f's descriptor as an *os.File in non-blocking mode, so
// reads can have deadlines and be interrupted. creack/pty hands the master
// out in blocking mode (it calls Fd), where a blocked Read can be neither.
func pollable(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	_ = f.Close()
	if err != nil {
		return nil, fmt.Errorf("dup pty master: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("pty master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// wait is the one goroutine that waits for the child.
func (p *Process) wait() {
	defer p.wg.Done()
	err := p.waitCmd()
	var ws syscall.WaitStatus
	ok := false
	if ps := p.cmd.ProcessState; ps != nil {
		ws, ok = ps.Sys().(syscall.WaitStatus)
	}
	switch {
	case !ok:
		p.logger.Error("procs: could not collect the exit status", "pid", p.id.PID, "err", err)
		p.status = ExitStatus{Code: -1}
	case ws.Signaled():
		p.status = ExitStatus{Code: -1, Signal: ws.Signal(), CoreDumped: ws.CoreDump()}
	default:
		p.status = ExitStatus{Code: ws.ExitStatus()}
	}
	p.wd.halt() // an exited child is not stuck; the orchestrator sees Done
	p.logger.Info("procs: exited", "pid", p.id.PID, "status", p.status.String())
	close(p.done)
}

// Identity returns the child's pid, process group, start time and tree token.
func (p *Process) Identity() Identity { return p.id }

// LowerPriority gives the child's process group the niceness nice, later
// than its start (a claude started for a prompt to come, at the priority of
// what the person waits for, then lowered as its work begins). Processes
// of the group get it at once and what they start inherits it; an
// unprivileged user may only lower a priority. A group that leads a
// session of its own under a PTY keeps its autogroup's niceness; one of
// pipes started with OwnSession has its autogroup lowered too, in the
// background while the kernel rate-limits it.
func (p *Process) LowerPriority(nice int) error {
	select {
	case <-p.Done():
		return nil // gone: the pid may be another's now
	default:
	}
	if err := unix.Setpriority(unix.PRIO_PGRP, p.id.PGID, nice); err != nil {
		return fmt.Errorf("setpriority %d of group %d: %w", nice, p.id.PGID, err)
	}
	p.setAutogroupNice(nice)
	return nil
}

// setAutogroupNice asks for the child's own autogroup's niceness; the
// newest value asked for wins. It does not block.
func (p *Process) setAutogroupNice(nice int) {
	if p.autogroupNice == nil {
		return
	}
	for {
		select {
		case p.autogroupNice <- nice:
			return
		case <-p.autogroupNice: // an older value not written yet
		}
	}
}

// Done is closed when the child has exited and its status was collected.
// Output may still be draining: see Output.Done.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitStatus returns how the child ended; ok is false until Done is closed.
func (p *Process) ExitStatus() (status ExitStatus, ok bool) {
	select {
	case <-p.done:
		return p.status, true
	default:
		return ExitStatus{}, false
	}
}

// Wait waits for the child to exit (not for its output to drain).
func (p *Process) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-p.done:
		return p.status, nil
	case <-ctx.Done():
		return ExitStatus{}, fmt.Errorf("procs: wait for %d: %w", p.id.PID, ctx.Err())
	}
}

// Output returns the PTY stream, or stdout with pipes.
func (p *Process) Output() *Output { return p.outputs[0] }

// Stderr returns the stderr stream with pipes, nil under a PTY (where stderr
// is the terminal).
func (p *Process) Stderr() *Output {
	if len(p.outputs) < 2 {
		return nil
	}
	return p.outputs[1]
}

// Watchdog returns the no-progress watchdog, nil without Config.NoProgress
// (a nil *Watchdog's methods do nothing).
func (p *Process) Watchdog() *Watchdog { return p.wd }

// Write writes input: keystrokes into the PTY, or bytes to stdin. It blocks
// while the child's input buffer is full; Close unblocks it.
func (p *Process) Write(b []byte) (int, error) {
	f := p.pty
	if f == nil {
		f = p.stdin
	}
	n, err := f.Write(b)
	if err != nil {
		return n, fmt.Errorf("procs: write input to %d: %w", p.id.PID, err)
	}
	return n, nil
}

// CloseInput closes stdin of a child started with pipes, so it reads EOF.
func (p *Process) CloseInput() error {
	if p.stdin == nil {
		return fmt.Errorf("procs: close input of %d: %w", p.id.PID, ErrNotPipes)
	}
	if err := p.stdin.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("procs: close input of %d: %w", p.id.PID, err)
	}
	return nil
}

// Resize sets the PTY size; the kernel sends SIGWINCH to the child's
// foreground process group.
func (p *Process) Resize(sz Size) error {
	if p.pty == nil {
		return fmt.Errorf("procs: resize %d: %w", p.id.PID, ErrNotPTY)
	}
	rc, err := p.pty.SyscallConn()
	if err != nil {
		return fmt.Errorf("procs: resize %d: %w", p.id.PID, err)
	}
	var ioctlErr error
	err = rc.Control(func(fd uintptr) {
		ioctlErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: sz.Rows, Col: sz.Cols})
	})
	if err = errors.Join(err, ioctlErr); err != nil {
		return fmt.Errorf("procs: resize %d to %dx%d: %w", p.id.PID, sz.Rows, sz.Cols, err)
	}
	return nil
}

// Terminate stops the child and every descendant: SIGTERM (and SIGCONT) to
// all of them and their process groups, up to the grace period for them to
// exit, then SIGKILL, then it checks (polling the process table until a deadline) that
// nothing is left. Descendants are found before the first signal and again
// after each round, by parent links and by TreeEnv, so those that started
// their own session or were reparented are included. A done ctx cuts the grace
// short (straight to SIGKILL); it does not leave the tree running.
// It returns once the child's status was collected and the tree is gone, or
// an error naming the survivors. Calling it after the child exited still
// stops descendants it left behind.
func (p *Process) Terminate(ctx context.Context) error {
	p.termMu.Lock()
	defer p.termMu.Unlock()
	// What it does as it stops (claude's exit, its SessionEnd hook) gets
	// the editor's share back: lowered, a warm claude at load 11-14 went
	// 1.2-1.6 s after session/close, where it goes in 0.1 s on a quiet
	// machine (issue 40 asks 2 s). Its process niceness stays: within its
	// own group alone that costs it nothing.
	p.setAutogroupNice(0)
	t := &terminator{
		root:   p.id,
		exited: p.done,
		grace:  p.grace,
		clk:    p.clk,
		logger: p.logger,
		lin:    p.lin,
	}
	p.lin.followRootGroup(p.id)
	if err := t.run(ctx); err != nil {
		return fmt.Errorf("procs: terminate %d: %w", p.id.PID, err)
	}
	return nil
}

// Close terminates what is left of the process tree (see Terminate; with the
// full grace), waits for the output to drain (at most drainTimeout once the
// tree is gone), closes the PTY or pipes and stops the watchdog. Every
// goroutine the Process started has returned when Close returns.
// It is safe to call more than once; later calls return the first result.
func (p *Process) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.close() })
	return p.closeErr
}

func (p *Process) close() error {
	err := p.Terminate(context.Background())
	close(p.stopRecord)
	timeout := p.clk.NewTimer(drainTimeout)
	defer timeout.Stop()
	for i, o := range p.outputs {
		select {
		case <-o.Done():
		case <-timeout.C():
			p.logger.Warn("procs: output still open after the tree exited; something outside it holds the terminal", "pid", p.id.PID, "stream", o.name)
			for j := i; j < len(p.outputs); j++ {
				p.outputs[j].stop(p.readers[j])
			}
		}
	}
	p.wg.Wait()
	p.wd.Stop()
	for _, f := range append(p.readers, p.stdin) {
		if f != nil {
			_ = f.Close()
		}
	}
	return err
}

// filterLog puts a log file behind cfg.LogFilter; nil stays nil.
func filterLog(f *os.File, filter func(io.Writer) io.WriteCloser) io.WriteCloser {
	switch {
	case f == nil:
		return nil
	case filter == nil:
		return f
	}
	return &filteredLog{w: filter(f), f: f}
}

// filteredLog writes through a filter to a file; Close flushes the filter,
// then closes the file.
type filteredLog struct {
	w io.WriteCloser
	f *os.File
}

func (l *filteredLog) Write(p []byte) (int, error) { return l.w.Write(p) }

func (l *filteredLog) Close() error {
	werr := l.w.Close()
	return errors.Join(werr, l.f.Close())
}
