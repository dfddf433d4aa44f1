package orchestrator

import (
	"slices"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

func secs(from time.Time, ts []time.Time) []int {
	out := make([]int, len(ts))
	for i, t := range ts {
		out[i] = int(t.Sub(from).Seconds())
	}
	return out
}

func TestEstimateQueueCountsDown(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	minute := time.Minute
	// Three slots, all taken by tasks that started 40 s ago and usually take
	// a minute; three queued tasks of a minute each. The old estimate was a
	// whole minute for each (300 s before any task had finished).
	running := []liveRun{{t0, minute}, {t0.Add(5 * time.Second), minute}, {t0.Add(10 * time.Second), minute}}
	queued := []time.Duration{minute, minute, minute, minute}
	now := t0.Add(40 * time.Second)
	ends, starts := estimateQueue(now, 3, running, queued)
	if got, want := secs(now, ends), []int{30, 30, 30}; !equalInts(got, want) {
		// 20, 25 and 30 s left, but nothing ends sooner than overrunGrace.
		t.Errorf("ends = %v, want %v", got, want)
	}
	_, starts = estimateQueue(t0.Add(10*time.Second), 3, running, queued)
	now = t0.Add(10 * time.Second)
	if got, want := secs(now, starts), []int{50, 55, 60, 110}; !equalInts(got, want) {
		t.Errorf("starts = %v, want %v", got, want)
	}
	// Twenty seconds later nothing changed but the clock: each estimate is
	// twenty seconds shorter (the same absolute times).
	later := now.Add(20 * time.Second)
	_, starts2 := estimateQueue(later, 3, running, queued)
	if got, want := secs(later, starts2), []int{30, 35, 40, 90}; !equalInts(got, want) {
		t.Errorf("starts later = %v, want %v", got, want)
	}
	// A free slot starts the head at once; the rest wait for ends.
	_, starts = estimateQueue(now, 3, running[:2], queued)
	if got, want := secs(now, starts), []int{0, 50, 55, 60}; !equalInts(got, want) {
		t.Errorf("with a free slot = %v, want %v", got, want)
	}
	// More live tasks than slots (maxConcurrent lowered): the first end
	// only brings the count down to the limit.
	_, starts = estimateQueue(now, 1, running, queued[:2])
	if got, want := secs(now, starts), []int{60, 120}; !equalInts(got, want) {
		t.Errorf("over the limit = %v, want %v", got, want)
	}
	// A task past its expected length ends "soon", and keeps doing so.
	over := t0.Add(10 * minute)
	ends, starts = estimateQueue(over, 1, running[:1], queued[:1])
	if got := secs(over, ends); got[0] != int(overrunGrace.Seconds()) {
		t.Errorf("overrun end = %v", got)
	}
	if got := secs(over, starts); got[0] != int(overrunGrace.Seconds()) {
		t.Errorf("after an overrun = %v", got)
	}
}

// A task with no history to go by has no estimate, and neither has any task
// that would wait for its slot; a slot that frees at a known time still gives
// the next task its start.
func TestEstimateQueueWithoutHistory(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Second)
	// One slot held by a task of unknown length: no end, no start for any.
	ends, starts := estimateQueue(now, 1, []liveRun{{t0, 0}}, []time.Duration{time.Minute, time.Minute})
	if !ends[0].IsZero() || !starts[0].IsZero() || !starts[1].IsZero() {
		t.Errorf("unknown running: ends %v starts %v", ends, starts)
	}
	// Two slots, one held for an unknown time, one ending in 50 s: the head
	// starts then; a head of unknown length leaves the next one unknown.
	ends, starts = estimateQueue(now, 2, []liveRun{{t0, 0}, {t0, time.Minute}}, []time.Duration{0, time.Minute})
	if !ends[0].IsZero() || secs(now, ends[1:])[0] != 50 {
		t.Errorf("ends = %v", ends)
	}
	if secs(now, starts[:1])[0] != 50 || !starts[1].IsZero() {
		t.Errorf("starts = %v", starts)
	}
	// A free slot is not a guess: the head starts now even with no history.
	_, starts = estimateQueue(now, 2, []liveRun{{t0, 0}}, []time.Duration{0, 0})
	if !starts[0].Equal(now) || !starts[1].IsZero() {
		t.Errorf("free slot: starts = %v", starts)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDurationHistoryMedianBySpecificity(t *testing.T) {
	var h durationHistory
	// No history: no estimate (it was a 180 s guess).
	if got := h.expected("default", protocol.TaskTypeFix); got != 0 {
		t.Errorf("empty = %v", got)
	}
	// Fewer than minHistory runs anywhere: still none.
	h.add("default", protocol.TaskTypeFix, 60*time.Second)
	h.add("default", protocol.TaskTypeFix, 70*time.Second)
	if got := h.expected("default", protocol.TaskTypeFix); got != 0 {
		t.Errorf("two runs = %v", got)
	}
	h.add("default", protocol.TaskTypeFix, 65*time.Second)
	if got := h.expected("default", protocol.TaskTypeFix); got != 65*time.Second {
		t.Errorf("three runs = %v", got)
	}
	// One run that waited on a person for an hour moves the median little.
	h.add("default", protocol.TaskTypeFix, time.Hour)
	if got := h.expected("default", protocol.TaskTypeFix); got != 67500*time.Millisecond {
		t.Errorf("fix = %v", got)
	}
	// One run of the profile and type is not enough: a less specific level
	// with enough runs is used (here any task's: 20, 60, 65, 70, 3600).
	h.add("reviewer", protocol.TaskTypeTest, 20*time.Second)
	if got := h.expected("reviewer", protocol.TaskTypeTest); got != 65*time.Second {
		t.Errorf("reviewer test, one run = %v", got)
	}
	h.add("reviewer", protocol.TaskTypeTest, 20*time.Second)
	h.add("reviewer", protocol.TaskTypeTest, 20*time.Second)
	if got := h.expected("reviewer", protocol.TaskTypeTest); got != 20*time.Second {
		t.Errorf("reviewer test = %v", got)
	}
	// No run of the profile and type: the profile's, then the type's, then any.
	if got := h.expected("reviewer", protocol.TaskTypeFix); got != 20*time.Second {
		t.Errorf("reviewer fix = %v", got)
	}
	if got := h.expected("other", protocol.TaskTypeFix); got != 67500*time.Millisecond {
		t.Errorf("other fix = %v", got)
	}
	if got := h.expected("other", protocol.TaskTypeRefactor); got != 60*time.Second {
		t.Errorf("any = %v", got) // median of 20, 20, 20, 60, 65, 70, 3600
	}
	for range historyKeep + 5 {
		h.add("x", protocol.TaskTypeCustom, time.Second)
	}
	if n := len(h.byKey["p\x00x"]); n != historyKeep {
		t.Errorf("kept %d", n)
	}
	// A zero run (one that never started) is no evidence.
	h.add("y", protocol.TaskTypeCustom, 0)
	if _, ok := h.byKey["p\x00y"]; ok {
		t.Error("kept a zero run")
	}
}

// The archive as a transition: only a task that is not queued or live, and a
// task that works again leaves it.
func TestArchiveTransitions(t *testing.T) {
	at := testEnv.now
	for _, status := range []protocol.Status{protocol.StatusQueued, protocol.StatusStarting, protocol.StatusRunning, protocol.StatusWaiting} {
		if _, _, err := step(mk(status, agentNone), cmdArchive{at: at}, testEnv); err == nil {
			t.Errorf("archived a %s task", status)
		}
	}
	s, effs, err := step(mk(protocol.StatusBlocked, agentNone, withBlocked(protocol.BlockedTimeout)), cmdArchive{at: at}, testEnv)
	if err != nil || !s.T.ArchivedAt.Equal(at) || !slices.Contains(names(effs), "updated") {
		t.Fatalf("archive blocked = %v, %v, %v", s.T.ArchivedAt, names(effs), err)
	}
	// Archiving twice changes nothing.
	if _, effs, _ := step(s, cmdArchive{at: at.Add(time.Hour)}, testEnv); len(effs) != 0 {
		t.Errorf("archive again = %v", names(effs))
	}
	// Resumed: it works again, so it leaves the archive.
	s, _, err = step(s, cmdResume{}, testEnv)
	if err != nil || !s.T.ArchivedAt.IsZero() {
		t.Errorf("resumed: %s archived at %v, %v", s.T.Status, s.T.ArchivedAt, err)
	}
}

// undoableUntil is set exactly while task/undo would be accepted.
func TestUndoableUntil(t *testing.T) {
	now := testEnv.now
	window := 5 * time.Minute
	wt := &protocol.Worktree{Path: "/wt", Branch: "familiar/t1"}
	finished := protocol.Task{Status: protocol.StatusMerging, FinishedAt: now.Add(-time.Minute), Worktree: wt}
	if got := undoableUntil(finished, nil, window, now); !got.Equal(now.Add(4 * time.Minute)) {
		t.Errorf("merging = %v", got)
	}
	// No worktree (never started, or removed): task/undo refuses it.
	for _, s := range []protocol.Status{protocol.StatusMerging, protocol.StatusCancelled, protocol.StatusBlocked} {
		noWT := finished
		noWT.Status, noWT.Worktree = s, nil
		if got := undoableUntil(noWT, nil, window, now); !got.IsZero() {
			t.Errorf("%s without a worktree = %v", s, got)
		}
	}
	// A merge is undone in the base, worktree or not; its window runs from
	// the merge.
	merged := protocol.Task{Status: protocol.StatusMerged, FinishedAt: now.Add(-time.Hour)}
	if got := undoableUntil(merged, &mergeRecord{At: now.Add(-2 * time.Minute)}, window, now); !got.Equal(now.Add(3 * time.Minute)) {
		t.Errorf("merged = %v", got)
	}
	if got := undoableUntil(merged, nil, window, now); !got.IsZero() {
		t.Errorf("merged without a record = %v", got)
	}
	// Past the window, with undo disabled, and while running: none.
	if got := undoableUntil(finished, nil, window, now.Add(10*time.Minute)); !got.IsZero() {
		t.Errorf("past the window = %v", got)
	}
	if got := undoableUntil(finished, nil, 0, now); !got.IsZero() {
		t.Errorf("undo disabled = %v", got)
	}
	running := finished
	running.Status = protocol.StatusRunning
	if got := undoableUntil(running, nil, window, now); !got.IsZero() {
		t.Errorf("running = %v", got)
	}
	// task/undo's refusal is the same function's: each zero says why.
	noWT := finished
	noWT.Worktree = nil
	for _, c := range []struct {
		t     protocol.Task
		merge *mergeRecord
		win   time.Duration
		at    time.Time
		why   string
	}{
		{finished, nil, window, now, ""},
		{merged, nil, window, now, "familiar has no record of this merge"},
		{noWT, nil, window, now, "the task has no worktree"},
		{running, nil, window, now, "the task is working: only a finished task's work can be undone"},
		{finished, nil, 0, now, "undo is turned off (undoWindowSec is 0)"},
		{finished, nil, window, now.Add(10 * time.Minute), "the undo window has passed"},
	} {
		until, why := undoWindow(c.t, c.merge, c.win, c.at)
		if why != c.why || until.IsZero() != (why != "") {
			t.Errorf("undoWindow(%s, window %v) = %v, %q; want why %q", c.t.Status, c.win, until, why, c.why)
		}
	}
}

// The history is read back from the store's tasks: only successful runs,
// the latest kept (a new familiar, such as a background one that idled out,
// no longer starts from the default).
func TestHistoryOfStoredTasks(t *testing.T) {
	t0 := testEnv.now
	run := func(st protocol.Status, profile string, start, secs int) protocol.Task {
		s := t0.Add(time.Duration(start) * time.Second)
		return protocol.Task{Status: st, Profile: profile, Type: protocol.TaskTypeFix, StartedAt: s, FinishedAt: s.Add(time.Duration(secs) * time.Second)}
	}
	var tasks []protocol.Task
	// historyKeep+2 runs of 40 s after two old ones of 500 s: the old fall out.
	tasks = append(tasks, run(protocol.StatusMerged, "default", 0, 500), run(protocol.StatusMerging, "default", 1, 500))
	for i := range historyKeep + 2 {
		tasks = append(tasks, run(protocol.StatusMerged, "default", 1000+i, 40))
	}
	// Not successes: a timeout, a cancel, a task still running.
	tasks = append(tasks, run(protocol.StatusBlocked, "slow", 0, 900), run(protocol.StatusCancelled, "slow", 0, 900),
		protocol.Task{Status: protocol.StatusRunning, Profile: "slow", StartedAt: t0})
	h := historyOf(tasks)
	if got := h.expected("default", protocol.TaskTypeFix); got != 40*time.Second {
		t.Errorf("default = %v", got)
	}
	if got := h.expected("slow", protocol.TaskTypeImplement); got != 40*time.Second {
		t.Errorf("slow (no success of its own: any task's) = %v", got)
	}
}
