package procs

import (
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/familiar-dev/familiar/procs/proctable"
)

// Children that procs waits for itself. Start registers a child's pid
// before anything can reap it and the waiter unregisters it once
// cmd.Wait has collected its status; the reaper never touches them.
var owned = struct {
	// forking is held for reading by Start across fork and registration,
	// and for writing by a reaper's sweep, so a child that exits at once
	// is registered before a sweep can see its zombie.
	forking sync.RWMutex
	mu      sync.Mutex
	pids    map[int]struct{} // guarded by mu
}{pids: map[int]struct{}{}}

func own(pid int) {
	owned.mu.Lock()
	owned.pids[pid] = struct{}{}
	owned.mu.Unlock()
}

func disown(pid int) {
	owned.mu.Lock()
	delete(owned.pids, pid)
	owned.mu.Unlock()
}

func isOwned(pid int) bool {
	owned.mu.Lock()
	defer owned.mu.Unlock()
	_, ok := owned.pids[pid]
	return ok
}

// StartCommand starts cmd (cmd.Start) registered as a child that is waited
// for, so a Reaper leaves its exit status to its waiter. Use it for children
// started in a session or process group of their own; call the returned wait
// instead of cmd.Wait.
func StartCommand(cmd *exec.Cmd) (wait func() error, err error) {
	owned.forking.RLock()
	if err := cmd.Start(); err != nil {
		owned.forking.RUnlock()
		return nil, err
	}
	pid := cmd.Process.Pid
	own(pid)
	owned.forking.RUnlock()
	return func() error {
		err := cmd.Wait()
		disown(pid)
		return err
	}, nil
}

// Reaper collects the exit status of orphans as they exit. familiar is a
// child subreaper (EnableSubreaper), so tool processes that outlive their
// parent (a daemonized `sleep &`, git's and sh's helpers) are reparented to
// it; without a reaper each stays a zombie until its task is terminated.
//
// On every SIGCHLD it looks at this process's zombie children and reaps
// those that nobody else waits for: not a child procs started (registered
// while it waits), and not in familiar's own process group — children
// started with os/exec (git, claude --version) stay in it and are reaped by
// their cmd.Wait, while orphans come from agents' trees, which procs starts
// in their own session or group. Each is reaped through a pidfd checked
// against its start time, so a reused pid is never waited for by mistake.
//
// A child that familiar starts with os/exec in a session or group of its
// own (Setsid, Setpgid) looks like an orphan to this rule: start it with
// StartCommand, which registers it like procs' own children.
//
// An orphan that stays in familiar's process group (a grandchild of an
// os/exec child that daemonized) is left alone, as it cannot be told from
// an os/exec child; it is reaped when familiar exits.
type Reaper struct {
	log    *slog.Logger
	sig    chan os.Signal
	stop   chan struct{}
	done   chan struct{}
	reaped atomic.Int64
}

// StartReaper starts the reaper goroutine; Close stops it. One is enough
// per process; cmd/familiar starts it right after EnableSubreaper.
func StartReaper(log *slog.Logger) *Reaper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reaper{log: log, sig: make(chan os.Signal, 1), stop: make(chan struct{}), done: make(chan struct{})}
	signal.Notify(r.sig, syscall.SIGCHLD)
	go r.run()
	return r
}

// Close stops the reaper and waits for it. Safe to call once.
func (r *Reaper) Close() {
	signal.Stop(r.sig)
	close(r.stop)
	<-r.done
}

// Reaped is how many orphans the reaper has reaped.
func (r *Reaper) Reaped() int64 { return r.reaped.Load() }

func (r *Reaper) run() {
	defer close(r.done)
	r.sweep() // orphans that exited before the reaper started
	for {
		select {
		case <-r.sig:
			r.sweep()
		case <-r.stop:
			return
		}
	}
}

// sweep reaps every zombie child that is nobody else's to wait for.
func (r *Reaper) sweep() {
	owned.forking.Lock()
	defer owned.forking.Unlock()
	pgrp := unix.Getpgrp()
	for _, pid := range childPIDs() {
		if isOwned(pid) {
			continue
		}
		s, err := readStat(pid)
		if err != nil || !s.dead() || s.pgid == pgrp || s.ppid != os.Getpid() {
			continue
		}
		if reapOrphan(s) {
			r.reaped.Add(1)
			r.log.Debug("procs: reaped an orphan", "pid", pid)
		}
	}
}

// childPIDs lists this process's children, zombies included.
func childPIDs() []int { return proctable.Children() }
