package procs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/familiar-dev/familiar/clock"
)

const (
	// killTimeout bounds the wait for the tree to vanish after SIGKILL; only
	// a process stuck in the kernel (state D) takes long.
	killTimeout = 5 * time.Second
	// pollInterval is how often the process table is looked at while
	// waiting for the tree to exit. Non-children cannot be waited for, so
	// this is polling; the deadlines are the clock's.
	pollInterval = 10 * time.Millisecond
)

// TreeOptions configure TerminateTree.
type TreeOptions struct {
	// Grace between SIGTERM and SIGKILL; zero means DefaultGrace.
	Grace time.Duration
	// Clock drives the grace and kill deadlines; nil means the wall clock.
	Clock clock.Clock
	// Logger; nil discards.
	Logger *slog.Logger
}

// TerminateTree stops a process tree that is not (or no longer) a Process of
// this familiar — one named by an Identity saved before a restart — with the
// same sequence as Process.Terminate. If id is no longer alive, the
// descendants it left behind (found by id.Tree) are still stopped; on another
// boot there is nothing to do.
func TerminateTree(ctx context.Context, id Identity, opts TreeOptions) error {
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	t := &terminator{root: id, grace: opts.Grace, clk: opts.Clock, logger: opts.Logger, lin: newLineage()}
	t.lin.followRootGroup(id)
	if err := t.run(ctx); err != nil {
		return fmt.Errorf("procs: terminate tree of %d: %w", id.PID, err)
	}
	return nil
}

// member is one process of the tree being terminated.
type member struct {
	procStat
	pidfd int // -1 when none; see pidfdOpen
}

// terminator runs one termination of one tree.
type terminator struct {
	root Identity
	// exited is closed once the root has been reaped by its waiter (a
	// Process). nil when the root is not our child: then it is watched in the process table.
	exited <-chan struct{}
	grace  time.Duration
	clk    clock.Clock
	logger *slog.Logger

	members map[int]*member // by pid; the tree as seen so far, dead or alive
	// lin is what was seen of the tree before (a Process's record while it
	// ran; empty for TerminateTree) and takes in what scan finds.
	lin *lineage
}

func (t *terminator) run(ctx context.Context) error {
	t.members = make(map[int]*member)
	defer t.release()
	if _, err := t.scan(); err != nil {
		return err
	}
	if t.gone() {
		return nil
	}
	t.logger.Info("procs: terminating", "pid", t.root.PID, "processes", len(t.live()), "grace", t.grace)
	grace := t.clk.NewTimer(t.grace)
	defer grace.Stop()
	if t.until(ctx.Done(), grace.C(), unix.SIGTERM) {
		return nil
	}
	if _, err := t.scan(); err != nil {
		return err
	}
	t.logger.Warn("procs: killing", "pid", t.root.PID, "processes", pids(t.live()))
	deadline := t.clk.NewTimer(killTimeout)
	defer deadline.Stop()
	if t.until(nil, deadline.C(), unix.SIGKILL) {
		return nil
	}
	left := pids(t.live())
	t.logger.Error("procs: processes survived SIGKILL", "pid", t.root.PID, "survivors", left)
	return fmt.Errorf("%d processes survived SIGKILL for %v: %v", len(left), killTimeout, left)
}

// until sends sig to the tree and polls until it is gone (true), or stop or
// deadline fires (false). Processes found on the way get sig too.
func (t *terminator) until(stop <-chan struct{}, deadline <-chan time.Time, sig unix.Signal) bool {
	t.signal(sig)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	exited := t.exited
	for {
		if t.gone() {
			// Look again for anything forked since the last scan.
			added, err := t.scan()
			if err != nil {
				t.logger.Warn("procs: rescan", "err", err)
			}
			if added == 0 && t.gone() {
				return true
			}
			t.signal(sig)
		}
		select {
		case <-exited:
			exited = nil // closed: stop selecting on it
		case <-tick.C:
		case <-deadline:
			return false
		case <-stop:
			return false
		}
	}
}

// scan walks the process table and adds to members the root, every
// process whose environment carries the tree token, every process the
// lineage follows (seen before, or in a session or group of a member), and
// all descendants (by parent link) of those and of known live members. A
// member found may bring its session or group in, so it looks again until
// nothing is added. It returns how many live processes it added.
func (t *terminator) scan() (int, error) {
	tb, err := readTable()
	if err != nil {
		return 0, err
	}
	self := ownIDs()
	boot, _ := bootID()
	seen := make(map[int]bool)
	added := 0
	for round := 0; ; round++ {
		var queue []procStat
		for _, s := range tb.all {
			if seen[s.pid] || s.dead() || s.pid == self.pid || s.pid <= 1 {
				continue
			}
			known, ok := t.members[s.pid]
			switch {
			case ok && known.start == s.start:
				queue = append(queue, s)
			case s.pid == t.root.PID && s.start == t.root.StartTime && boot == t.root.BootID:
				queue = append(queue, s)
			case t.lin.follows(tb, s, self):
				queue = append(queue, s)
			case round == 0 && t.root.Tree != "" && environHas(s.pid, t.root.Tree):
				queue = append(queue, s)
			}
		}
		n := 0
		for len(queue) > 0 {
			s := queue[0]
			queue = queue[1:]
			if seen[s.pid] || s.pid == self.pid || s.pid <= 1 {
				continue
			}
			seen[s.pid] = true
			t.lin.note(tb, s, self)
			if m, ok := t.members[s.pid]; !ok || m.start != s.start {
				if ok {
					pidfdClose(m.pidfd) // the old one is gone; its pid was reused inside the tree
				}
				t.members[s.pid] = &member{procStat: s, pidfd: pidfdOpen(s)}
				n++
			}
			for _, c := range tb.children[s.pid] {
				if !c.dead() {
					queue = append(queue, c)
				}
			}
		}
		added += n
		if n == 0 || round >= 8 {
			return added, nil
		}
	}
}

// live returns the members still running, with their current process group.
func (t *terminator) live() []*member {
	var out []*member
	for _, m := range t.members {
		s, err := readStat(m.pid)
		if err != nil || s.start != m.start || s.dead() {
			continue
		}
		m.pgid = s.pgid // setpgid/setsid after exec moves it
		out = append(out, m)
	}
	return out
}

func (t *terminator) rootExited() bool {
	if t.exited != nil {
		select {
		case <-t.exited:
			return true
		default:
			return false
		}
	}
	m, ok := t.members[t.root.PID]
	if !ok || m.start != t.root.StartTime {
		return true
	}
	s, err := readStat(m.pid)
	return err != nil || s.start != m.start || s.dead()
}

// gone reports whether the root has exited (and, for a Process, been reaped)
// and no known member is running.
func (t *terminator) gone() bool { return t.rootExited() && len(t.live()) == 0 }

// signal sends sig to every live member and to each of their process groups
// (which also reaches anything forked into a group since the last scan).
// Groups are signalled only while a known member is in them, so a group id
// is never one that was freed and reused. SIGTERM is followed by SIGCONT:
// a stopped process would otherwise not act on it until the SIGKILL.
func (t *terminator) signal(sig unix.Signal) {
	if sig == unix.SIGTERM {
		defer t.signal(unix.SIGCONT)
	}
	selfGroup := unix.Getpgrp()
	groups := make(map[int]bool)
	if !t.rootExited() && t.root.PGID > 1 {
		groups[t.root.PGID] = true
	}
	for _, m := range t.live() {
		if err := signalMember(m, sig); err != nil && !errors.Is(err, unix.ESRCH) {
			t.logger.Warn("procs: signal", "pid", m.pid, "signal", sig, "err", err)
		}
		groups[m.pgid] = true
	}
	for g := range groups {
		if g <= 1 || g == selfGroup {
			continue
		}
		if err := unix.Kill(-g, sig); err != nil && !errors.Is(err, unix.ESRCH) {
			t.logger.Warn("procs: signal group", "pgid", g, "signal", sig, "err", err)
		}
	}
}

// release reaps the members that were orphaned to us and closes pidfds. The
// root of a Process is left to its waiter.
func (t *terminator) release() {
	defer func() {
		for _, m := range t.members {
			pidfdClose(m.pidfd)
		}
	}()
	pending := make(map[int]*member, len(t.members))
	for pid, m := range t.members {
		if !(t.exited != nil && pid == t.root.PID) {
			pending[pid] = m
		}
	}
	deadline := t.clk.NewTimer(killTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		for pid, m := range pending {
			if !t.reapable(m) {
				delete(pending, pid)
				continue
			}
			if reapZombie(m) {
				delete(pending, pid)
			}
		}
		if len(pending) == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C():
			t.logger.Warn("procs: could not reap", "pids", pids(slices.Collect(maps.Values(pending))))
			return
		}
	}
}

// reapable reports whether m is, or is about to be, a zombie for us to reap:
// it has exited, and its parent is us or another member of the tree (which
// hands its children to us as it finishes exiting). The zombie of a
// multi-threaded program shows in the process table before its last thread is gone, and
// only then can it be reaped and its children reparented.
func (t *terminator) reapable(m *member) bool {
	s, err := readStat(m.pid)
	if err != nil || s.start != m.start || !s.dead() {
		return false
	}
	if s.ppid == os.Getpid() {
		return true
	}
	_, ok := t.members[s.ppid]
	return ok
}

// signalByPID sends sig to m by pid, after checking that the pid is still m
// (same start time).
func signalByPID(m *member, sig unix.Signal) error {
	if now, err := readStat(m.pid); err != nil || now.start != m.start {
		return unix.ESRCH
	}
	return unix.Kill(m.pid, sig)
}

func pids(ms []*member) []int {
	out := make([]int, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.pid)
	}
	slices.Sort(out)
	return out
}
