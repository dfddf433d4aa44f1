package procs

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/familiar-dev/familiar/clock"
)

// autogroupRetry is the wait between attempts to set a session's autogroup
// niceness: Linux lets an unprivileged user change one autogroup per 100 ms
// machine-wide (EAGAIN otherwise), and agents often start together.
const autogroupRetry = 100 * time.Millisecond

// autogroupTries bounds the attempts (a minute at autogroupRetry): with
// dozens of agents starting at once, each waits its turn at the limit.
const autogroupTries = 600

// lowerPriority gives the child's process group the niceness nice. It runs
// right after the exec, before the child can have started anything, so every
// process the agent starts later inherits it; PRIO_PGRP covers the threads the
// runtime may already have started.
//
// Under a PTY the child leads a session of its own, and on Linux with
// autogroup scheduling (the default on desktops) a new session is a new
// scheduling group that competes with the user's whole desktop as an equal,
// whatever its processes' niceness: thirty agents would get thirty shares to
// the editor's one. So the session's group gets the niceness too, through
// the file returned (still open: later writes cannot reach a reused pid).
func lowerPriority(pid, nice int, session bool) (*os.File, error) {
	if err := unix.Setpriority(unix.PRIO_PGRP, pid, nice); err != nil {
		return nil, fmt.Errorf("setpriority %d: %w", nice, err)
	}
	if !session {
		return nil, nil
	}
	f, err := openAutogroup(strconv.Itoa(pid))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // not Linux, or a kernel without autogroup
	}
	if err != nil {
		return nil, fmt.Errorf("open autogroup: %w", err)
	}
	return f, nil
}

// writeAutogroup is setAutogroupNice; tests replace it to see the retries.
var writeAutogroup = setAutogroupNice

// leadsOwnSession reports whether familiar leads its session; tests
// replace it, since a test binary does not.
var leadsOwnSession = func() bool {
	sid, err := unix.Getsid(0)
	return err == nil && sid == os.Getpid()
}

// setAutogroupNice writes nice to an open /proc/PID/autogroup. again is true
// when the kernel's rate limit refused it and a later try may succeed.
func setAutogroupNice(f *os.File, nice int) (again bool, err error) {
	_, err = f.Write([]byte(strconv.Itoa(nice))) // not pwrite: the file is not seekable
	if errors.Is(err, syscall.EAGAIN) {
		return true, err
	}
	return false, err
}

// niceAutogroup holds the child's own session's autogroup, opened at its
// start, and writes each niceness asked for on autogroupNice, retrying
// while the kernel rate-limits it (a newer value replaces one not written
// yet), until the child exits. It closes f.
func (p *Process) niceAutogroup(f *os.File) {
	defer p.wg.Done()
	defer f.Close()
	for {
		select {
		case <-p.done:
			return
		case nice := <-p.autogroupNice:
			_, stopped, err := whileLimited(p.clk, p.done, p.autogroupNice, nice, func(n int) (bool, error) { return writeAutogroup(f, n) })
			// ESRCH: the child is gone already, nothing to set.
			if stopped || errors.Is(err, syscall.ESRCH) {
				return
			}
			if err != nil {
				p.logger.Warn("procs: the agent's session keeps its scheduling share", "pid", p.id.PID, "nice", nice, "err", err)
			}
		}
	}
}

// whileLimited calls write(nice) until it succeeds, fails for another
// reason than the kernel's rate limit (again false), autogroupTries run out
// or stop is closed, waiting autogroupRetry between tries. A value received
// from newer (nil: none) replaces nice and starts the tries afresh. It
// returns the value last tried, whether stop ended it, and write's last error.
func whileLimited(clk clock.Clock, stop <-chan struct{}, newer <-chan int, nice int, write func(int) (again bool, err error)) (tried int, stopped bool, err error) {
	for try := 1; ; try++ {
		again, err := write(nice)
		if err == nil || !again || try == autogroupTries {
			return nice, false, err
		}
		t := clk.NewTimer(autogroupRetry)
		select {
		case <-stop:
			t.Stop()
			return nice, true, err
		case n := <-newer:
			t.Stop()
			nice, try = n, 0
		case <-t.C():
		}
	}
}

// ErrNotSessionLeader is returned by SetOwnSessionNice in a process that
// shares its session (and so, under autogroup, its scheduling group) with
// whoever started it.
var ErrNotSessionLeader = errors.New("familiar does not lead its own session")

// ErrNoAutogroup is returned by SetOwnSessionNice where the kernel has no
// autogroups (macOS; Linux without CONFIG_SCHED_AUTOGROUP): familiar's own
// priority is left as it is, since a process's niceness cannot go back up
// without privilege; its agents still run at their lowered niceness.
var ErrNoAutogroup = errors.New("no autogroups here: familiar's own priority is left as it is")

// SetOwnSessionNice gives the autogroup of familiar's own session the
// niceness nice, so that the background familiar's work on its agents'
// output (masking, logging, reading their screens) yields to the editor as
// the agents do. Only a session leader may: otherwise the group is the
// editor's or the shell's. Unlike a process's niceness, an autogroup's can
// go back up to 0 without privilege, so the setting can change at run time.
// Where the kernel has no autogroups it does nothing and says so
// (ErrNoAutogroup). again reports a
// refusal by the kernel's rate limit, which a later try may not meet.
func SetOwnSessionNice(nice int) (again bool, err error) {
	if !leadsOwnSession() {
		return false, ErrNotSessionLeader
	}
	f, err := openAutogroup("self")
	if errors.Is(err, os.ErrNotExist) {
		return false, ErrNoAutogroup
	}
	if err != nil {
		return false, fmt.Errorf("open autogroup: %w", err)
	}
	defer f.Close()
	if again, err := writeAutogroup(f, nice); err != nil {
		return again, fmt.Errorf("set autogroup niceness %d: %w", nice, err)
	}
	return false, nil
}

// OwnSession keeps familiar's own session group at the niceness last asked
// for (SetOwnSessionNice), from a goroutine of its own that tries again while
// the kernel rate-limits the change: a client's settings must not wait on it.
type OwnSession struct {
	clk    clock.Clock
	logger *slog.Logger
	want   chan int // capacity 1: the latest value replaces an unread one
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// NewOwnSession starts the goroutine; Close stops it.
func NewOwnSession(clk clock.Clock, logger *slog.Logger) *OwnSession {
	if clk == nil {
		clk = clock.Real
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	o := &OwnSession{clk: clk, logger: logger, want: make(chan int, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go o.run()
	return o
}

// SetNice asks for niceness nice; it does not block.
func (o *OwnSession) SetNice(nice int) {
	for {
		select {
		case o.want <- nice:
			return
		default:
		}
		select { // replace the value not yet taken
		case <-o.want:
		default:
		}
	}
}

// Close stops the goroutine and waits for it; it may be called again.
func (o *OwnSession) Close() {
	o.once.Do(func() { close(o.stop) })
	<-o.done
}

func (o *OwnSession) run() {
	defer close(o.done)
	current := -1
	for {
		var nice int
		select {
		case <-o.stop:
			return
		case nice = <-o.want:
		}
		if nice == current {
			continue
		}
		tried, stopped, err := whileLimited(o.clk, o.stop, o.want, nice, SetOwnSessionNice)
		switch {
		case stopped:
			return
		case errors.Is(err, ErrNoAutogroup):
			current = tried
			o.logger.Info("the background familiar keeps its priority (no autogroups here); its agents run at their own lowered niceness", "nice", tried)
		case err != nil:
			o.logger.Warn("the background familiar keeps its scheduling share", "nice", tried, "err", err)
		default:
			current = tried
			o.logger.Info("the background familiar yields to the editor", "nice", tried)
		}
	}
}
