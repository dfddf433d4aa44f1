package orchestrator

import (
	"slices"
	"sort"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// The queue's estimates (issue 26). The first estimate was about three times
// too long in a newcomer's run, for three reasons fixed here: it assumed 300 s
// per task until this familiar had seen one finish (and a background familiar
// exits after idleExitSec, forgetting what it had seen), it averaged every
// end — a task blocked by the 900 s no-progress timeout weighed as much as a
// success —, and it charged each queued task a whole average per wave, as if
// the running tasks had only just started. Now the expected length of a task
// is the median of the successful runs of its profile and type (kept in the
// store, read back at start), a running task is expected to end at its start
// plus that, and the queue is simulated slot by slot from there. Estimates are
// absolute times, so they count down between updates.
//
// Before there is history there is no estimate: the 180 s that stood in for
// one said "starts in about 6 min" for tasks of seconds, and a guess shown as
// an estimate is worse than none. A task whose length (or the length of one
// ahead of it in its slot) is unknown gets no estimate fields.

// minHistory is how many successful runs a level of the fallback chain needs
// before its median is used: one or two runs are one task's accident (a
// first run that installed dependencies, a one-line fix).
const minHistory = 3

// overrunGrace is how far ahead a task past its expected length is expected
// to end: soon, but not "now" forever.
const overrunGrace = 30 * time.Second

// historyKeep is how many recent successful runs are kept per key.
const historyKeep = 20

// durationHistory holds recent successful run lengths by profile and type.
type durationHistory struct {
	byKey map[string][]time.Duration
}

func historyKeys(profile string, typ protocol.TaskType) []string {
	return []string{"p\x00" + profile + "\x00" + string(typ), "p\x00" + profile, "t\x00" + string(typ), ""}
}

func (h *durationHistory) add(profile string, typ protocol.TaskType, d time.Duration) {
	if d <= 0 {
		return
	}
	if h.byKey == nil {
		h.byKey = map[string][]time.Duration{}
	}
	for _, k := range historyKeys(profile, typ) {
		s := append(h.byKey[k], d)
		if len(s) > historyKeep {
			s = s[len(s)-historyKeep:]
		}
		h.byKey[k] = s
	}
}

// expected is the median of the most specific history that has minHistory
// runs: the profile and type, the profile, the type, any task; else 0, no
// estimate. A median, because one run that waited on a person overnight must
// not move every estimate.
func (h *durationHistory) expected(profile string, typ protocol.TaskType) time.Duration {
	for _, k := range historyKeys(profile, typ) {
		if s := h.byKey[k]; len(s) >= minHistory {
			return median(s)
		}
	}
	return 0
}

// historyOf is the history of the tasks read back from the store: each
// successful run (merging or merged, with its start and end), oldest end
// first, so the latest runs are the ones kept.
func historyOf(tasks []protocol.Task) durationHistory {
	var done []protocol.Task
	for _, t := range tasks {
		if (t.Status == protocol.StatusMerging || t.Status == protocol.StatusMerged) && !t.StartedAt.IsZero() && t.FinishedAt.After(t.StartedAt) {
			done = append(done, t)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].FinishedAt.Before(done[j].FinishedAt) })
	var h durationHistory
	for _, t := range done {
		h.add(t.Profile, t.Type, t.FinishedAt.Sub(t.StartedAt))
	}
	return h
}

func median(s []time.Duration) time.Duration {
	c := slices.Clone(s)
	slices.Sort(c)
	n := len(c)
	if n%2 == 1 {
		return c[n/2]
	}
	return (c[n/2-1] + c[n/2]) / 2
}

// liveRun is a task holding a slot, for the estimate.
type liveRun struct {
	startedAt time.Time
	expected  time.Duration // 0: unknown (no history)
}

// estimateQueue is when each live task is expected to end and each queued
// task (in start order) to start, given slots slots. A live task is expected
// to end at its start plus its expected length, and never sooner than
// overrunGrace from now (one past its length ends "soon", not "now" forever);
// a slot frees when the number of live tasks drops below slots, and the next
// queued task takes it for its expected length. An expected length of 0 is
// unknown: that task's end is the zero time, as is the start of every task
// that would wait for it (a slot held for an unknown time frees last, never).
func estimateQueue(now time.Time, slots int, running []liveRun, queued []time.Duration) (ends, starts []time.Time) {
	slots = max(slots, 1)
	ends = make([]time.Time, len(running))
	for i, r := range running {
		if r.expected <= 0 {
			continue
		}
		end := r.startedAt.Add(r.expected)
		if r.startedAt.IsZero() {
			end = now.Add(r.expected)
		}
		if soon := now.Add(overrunGrace); end.Before(soon) {
			end = soon
		}
		ends[i] = end
	}
	// free are the times slots become free for the queue, earliest first:
	// the first len(running)-slots ends only bring the count down to slots.
	// An unknown end (zero) sorts last.
	free := slices.Clone(ends)
	sortFree(free)
	if extra := len(free) - slots; extra > 0 {
		free = free[extra:]
	}
	for len(free) < slots {
		free = append([]time.Time{now}, free...)
	}
	starts = make([]time.Time, len(queued))
	for i, d := range queued {
		at := free[0]
		if at.IsZero() {
			// Every slot is held for an unknown time: neither this task's
			// start nor any later one's is known.
			break
		}
		if at.Before(now) {
			at = now
		}
		starts[i] = at
		free[0] = time.Time{}
		if d > 0 {
			free[0] = at.Add(d)
		}
		sortFree(free)
	}
	return ends, starts
}

// sortFree sorts slot-free times earliest first, unknown (zero) last.
func sortFree(free []time.Time) {
	slices.SortFunc(free, func(a, b time.Time) int {
		switch {
		case a.IsZero() && b.IsZero():
			return 0
		case a.IsZero():
			return 1
		case b.IsZero():
			return -1
		}
		return a.Compare(b)
	})
}
