package procs

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// recordEvery is how often a Process records its descendants where there
// is no subreaper to bring orphans back (macOS, portableprocs). One read of
// the process table (kern.proc.all: one sysctl) a second per agent; on
// macOS a fork in the tree also records it at once (forkWatch). With the
// portableprocs tag on Linux, a command that lives less than a second and
// leaves an orphan in a session of its own is found by TreeEnv alone.
const recordEvery = time.Second

// lineage is what familiar saw of a process tree while it ran: every
// descendant (by pid and start time) and the sessions and process groups
// they were in, so that Terminate finds the processes that left the tree
// (reparented to init or launchd when their parent died) without reading
// their environments. macOS does not show the environment of Apple's own
// binaries (/bin/sh, zsh, sleep, most of /usr/bin) through kern.procargs2,
// not even to their user, so TreeEnv cannot be the only way.
//
// A session or group id names the same session as long as a process is in
// it: neither Linux nor XNU gives a new process a pid that is still some
// group's or session's id. What could go wrong is an id whose members all
// ended and that was given out again to a new leader; following one is
// therefore refused when a process with the id as its pid now runs with
// another start time than its leader had when recorded (or runs at all,
// when the leader had already gone).
type lineage struct {
	mu       sync.Mutex
	procs    map[int]procStat // guarded by mu: every descendant seen, by pid
	sessions map[int]uint64   // guarded by mu: session id → its leader's start when recorded (0: gone then)
	groups   map[int]uint64   // guarded by mu: process group id → the same
	since    uint64           // guarded by mu: the root's start (proctable.Proc.Start)
}

func newLineage() *lineage {
	return &lineage{procs: map[int]procStat{}, sessions: map[int]uint64{}, groups: map[int]uint64{}}
}

// followRootGroup notes when root started (what started before it cannot
// have left its tree) and follows root's own process group (Start makes the child
// its leader): what is left in it after the root died — claude killed with
// the familiar that started it, its children reparented to init — is the
// task's, and a restarted familiar's TerminateTree finds it there. Not its
// session: a child started with pipes shares familiar's.
func (l *lineage) followRootGroup(root Identity) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.since = root.StartTime
	if root.PGID != root.PID || root.PGID <= 1 || root.StartTime == 0 {
		return
	}
	if _, ok := l.groups[root.PGID]; !ok {
		l.groups[root.PGID] = root.StartTime
	}
}

// selfIDs are familiar's own session and group: never followed (a task started
// with pipes is in familiar's session).
type selfIDs struct{ pid, sid, pgid int }

func ownIDs() selfIDs {
	sid, _ := unix.Getsid(0)
	return selfIDs{pid: unix.Getpid(), sid: sid, pgid: unix.Getpgrp()}
}

// table is a read of the process table, indexed.
type table struct {
	all      []procStat
	byPID    map[int]procStat
	children map[int][]procStat
}

func readTable() (table, error) {
	all, err := readAllStats()
	if err != nil {
		return table{}, err
	}
	t := table{all: all, byPID: make(map[int]procStat, len(all)), children: make(map[int][]procStat)}
	for _, s := range all {
		t.byPID[s.pid] = s
		t.children[s.ppid] = append(t.children[s.ppid], s)
	}
	return t, nil
}

// sessionOf is s's session id; kern.proc.all lists none on macOS, so it is
// asked for there (0 when the process is gone).
func sessionOf(s procStat) int {
	if s.sid != 0 {
		return s.sid
	}
	sid, err := unix.Getsid(s.pid)
	if err != nil {
		return 0
	}
	return sid
}

// leaderStart is the start time of the process whose pid is id, 0 if none.
func (tb table) leaderStart(id int) uint64 {
	if s, ok := tb.byPID[id]; ok && !s.dead() {
		return s.start
	}
	return 0
}

// note records s as a member of the tree: itself, its session and group.
func (l *lineage) note(tb table, s procStat, self selfIDs) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.noteLocked(tb, s, self)
}

func (l *lineage) noteLocked(tb table, s procStat, self selfIDs) {
	l.procs[s.pid] = s
	if sid := sessionOf(s); sid > 1 && sid != self.sid {
		if _, ok := l.sessions[sid]; !ok {
			l.sessions[sid] = tb.leaderStart(sid)
		}
	}
	if s.pgid > 1 && s.pgid != self.pgid {
		if _, ok := l.groups[s.pgid]; !ok {
			l.groups[s.pgid] = tb.leaderStart(s.pgid)
		}
	}
}

// follows reports whether s belongs to the tree by what was recorded: it is
// a descendant seen before (same start time), or in a session or group of
// one, which has not been given out again since.
func (l *lineage) follows(tb table, s procStat, self selfIDs) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if known, ok := l.procs[s.pid]; ok && known.start == s.start {
		return true
	}
	same := func(id int, leader uint64) bool {
		now := tb.leaderStart(id)
		return now == leader || (now == 0 && leader != 0)
	}
	if leader, ok := l.groups[s.pgid]; ok && s.pgid != self.pgid && same(s.pgid, leader) {
		return true
	}
	if len(l.sessions) == 0 {
		return false
	}
	sid := s.sid
	if sid == 0 {
		// macOS lists no session: getsid is asked only of what can have
		// left the tree, launchd's children (macOS has no subreapers) that
		// started after the tree's root, not of the machine's every process.
		if s.ppid != 1 || s.start < l.since {
			return false
		}
		sid = sessionOf(s)
	}
	leader, ok := l.sessions[sid]
	return ok && sid != self.sid && same(sid, leader)
}

// record reads the process table and notes the tree of root as it is now:
// root, what follows from the lineage, and all their descendants by parent
// links. It is what a Process does every recordEvery.
func (l *lineage) record(root Identity) error {
	tb, err := readTable()
	if err != nil {
		return err
	}
	self := ownIDs()
	l.followRootGroup(root)
	var queue []procStat
	for _, s := range tb.all {
		if s.dead() || s.pid == self.pid || s.pid <= 1 {
			continue
		}
		if (s.pid == root.PID && s.start == root.StartTime) || l.follows(tb, s, self) {
			queue = append(queue, s)
		}
	}
	seen := make(map[int]bool)
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if seen[s.pid] || s.pid == self.pid || s.pid <= 1 {
			continue
		}
		seen[s.pid] = true
		l.note(tb, s, self)
		for _, c := range tb.children[s.pid] {
			if !c.dead() {
				queue = append(queue, c)
			}
		}
	}
	l.prune(tb)
	return nil
}

// prune forgets the descendants that have ended (their sessions and groups
// stay while they are safe to follow), so a long task's record stays small.
func (l *lineage) prune(tb table) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for pid, s := range l.procs {
		if now, ok := tb.byPID[pid]; !ok || now.start != s.start || now.dead() {
			delete(l.procs, pid)
		}
	}
}

// recordLoop records root's tree every recordEvery, and on macOS also as
// soon as a process of it forks (forkWatch), until stop is closed.
func (l *lineage) recordLoop(root Identity, stop <-chan struct{}, onErr func(error)) {
	forks := newForkWatch(stop)
	defer forks.close()
	for {
		if err := l.record(root); err != nil {
			onErr(err)
		}
		forks.watch(l.livePIDs())
		if !forks.wait(stop, recordEvery) {
			return
		}
	}
}

// livePIDs are the descendants recorded and still running at the last record.
func (l *lineage) livePIDs() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	pids := make([]int, 0, len(l.procs))
	for pid := range l.procs {
		pids = append(pids, pid)
	}
	return pids
}

// waitTick returns after d (true), or when stop is closed (false).
func waitTick(stop <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
		return false
	case <-t.C:
		return true
	}
}
