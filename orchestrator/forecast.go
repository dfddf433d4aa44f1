package orchestrator

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// forecastRepo is what the conflict forecast needs of the repository
// (*worktree.Repo); a Repository without it has no forecast.
type forecastRepo interface {
	Snapshot(ctx context.Context, wt worktree.Worktree) (string, error)
	Forecast(ctx context.Context, base, head string) (worktree.Forecast, error)
	ResolveCommit(ctx context.Context, rev string) (string, error)
}

// forecastPoll is how often the forecaster looks whether a base branch
// moved by other means than familiar's merges (a commit of the person's):
// one rev-parse per base.
const forecastPoll = 2 * time.Second

// forecaster computes the conflict forecast of live and ready tasks on one
// goroutine of its own, off the actors': tasks ask for a recomputation
// (dirty), the forecaster takes every request made since its last round in
// one round (a burst of edits is one computation), and posts each task's
// result to its actor as an input of step.
type forecaster struct {
	o    *Orchestrator
	repo forecastRepo
	wake chan struct{} // 1-buffered

	mu    sync.Mutex
	dirty map[string]bool // guarded by mu: tasks whose files may have changed
	all   bool            // guarded by mu: every task (a base moved)

	// Owned by the loop's goroutine.
	snaps map[string]string         // task id → its latest snapshot commit
	bases map[string]string         // base branch → its commit at the last round
	pairs map[[2]string]pairOutcome // commits → forecast; commits never change
	// rounds counts computations (tests and benchmarks).
	rounds int
}

type pairOutcome struct {
	f   worktree.Forecast
	err error
}

type forecastResult struct{ conflicts, overlaps []protocol.TaskConflict }

func newForecaster(o *Orchestrator) *forecaster {
	r, ok := o.cfg.Repo.(forecastRepo)
	if !ok {
		return nil
	}
	return &forecaster{o: o, repo: r, wake: make(chan struct{}, 1), dirty: map[string]bool{},
		snaps: map[string]string{}, bases: map[string]string{}, pairs: map[[2]string]pairOutcome{}}
}

// touch asks for a task's forecast to be recomputed (its files changed).
func (f *forecaster) touch(id string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.dirty[id] = true
	f.mu.Unlock()
	f.poke()
}

// touchAll asks for every forecast (a base branch moved).
func (f *forecaster) touchAll() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.all = true
	f.mu.Unlock()
	f.poke()
}

func (f *forecaster) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// loop runs until familiar closes. The poll timer is the orchestrator's
// clock's, so tests on a fake clock drive it.
func (f *forecaster) loop() {
	defer f.o.wg.Done()
	poll := f.o.clk.NewTimer(forecastPoll)
	defer poll.Stop()
	for {
		select {
		case <-f.o.closing:
			return
		case <-f.wake:
		case <-poll.C():
			poll.Reset(forecastPoll)
		}
		f.mu.Lock()
		dirty, all := f.dirty, f.all
		f.dirty, f.all = map[string]bool{}, false
		f.mu.Unlock()
		f.round(f.o.startCtx, dirty, all)
	}
}

// candidate is a task the forecast covers.
type candidate struct {
	a    *actor
	v    *taskView
	wt   worktree.Worktree
	snap string
}

// round recomputes: snapshots of the tasks asked for (and of tasks new to
// the forecast, or all when a base moved), then every task against its
// base and every pair of tasks of one base. Pairs whose two snapshots did
// not change are answered from the cache, so a round costs about the
// snapshots and the pairs of the tasks that changed.
func (f *forecaster) round(ctx context.Context, dirty map[string]bool, all bool) {
	o := f.o
	actors := o.actors()
	byBase := map[string][]*candidate{}
	seen := map[string]bool{}
	for _, a := range actors {
		v := a.view()
		if v == nil || !forecastable(v.T.Status) || v.op != opNone {
			continue
		}
		wt, ok := o.worktreeOfView(v)
		if !ok || wt.Path == "" || wt.BaseRef == "" || wt.BaseRef == "HEAD" {
			continue
		}
		seen[a.id] = true
		byBase[wt.BaseRef] = append(byBase[wt.BaseRef], &candidate{a: a, v: v, wt: wt})
	}
	if len(byBase) > 0 {
		f.rounds++
	}
	used := map[[2]string]bool{}
	for base, cands := range byBase {
		head, err := f.repo.ResolveCommit(ctx, "refs/heads/"+base)
		if err != nil {
			o.logger.Debug("forecast: base", "base", base, "err", err)
			continue
		}
		moved := f.bases[base] != head
		f.bases[base] = head
		for _, c := range cands {
			snap, ok := f.snaps[c.a.id]
			if !ok || dirty[c.a.id] || all || moved {
				s, err := f.repo.Snapshot(ctx, c.wt)
				if err != nil {
					o.logger.Debug("forecast: snapshot", "task", c.a.id, "err", err)
					continue
				}
				snap = s
				f.snaps[c.a.id] = s
			}
			c.snap = snap
		}
		sort.Slice(cands, func(i, j int) bool { return cands[i].a.id < cands[j].a.id })
		results := map[string]*forecastResult{}
		for _, c := range cands {
			results[c.a.id] = &forecastResult{}
		}
		add := func(id, with string, fc worktree.Forecast) {
			r := results[id]
			if len(fc.Conflicts) > 0 {
				r.conflicts = append(r.conflicts, protocol.TaskConflict{With: with, Files: slices.Clone(fc.Conflicts)})
			}
			if len(fc.Overlaps) > 0 {
				r.overlaps = append(r.overlaps, protocol.TaskConflict{With: with, Files: slices.Clone(fc.Overlaps)})
			}
		}
		for i, c := range cands {
			if c.snap == "" {
				continue
			}
			if fc, ok := f.pair(ctx, head, c.snap, used); ok {
				add(c.a.id, "base", fc)
			}
			for _, d := range cands[i+1:] {
				if d.snap == "" {
					continue
				}
				if fc, ok := f.pair(ctx, c.snap, d.snap, used); ok {
					add(c.a.id, d.a.id, fc)
					add(d.a.id, c.a.id, fc)
				}
			}
		}
		for _, c := range cands {
			r := *results[c.a.id]
			sortConflicts(r.conflicts)
			sortConflicts(r.overlaps)
			// Compared with what the task shows now (its state machine
			// clears the forecast when the task leaves live or ready work).
			if conflictsEqual(c.v.T.Conflicts, r.conflicts) && conflictsEqual(c.v.T.Overlaps, r.overlaps) {
				continue
			}
			c.a.post(envelope{in: inForecast{conflicts: r.conflicts, overlaps: r.overlaps}})
		}
	}
	// What left the forecast: its state machine cleared it; forget it.
	for id := range f.snaps {
		if !seen[id] {
			delete(f.snaps, id)
		}
	}
	for k := range f.pairs {
		if !used[k] {
			delete(f.pairs, k)
		}
	}
}

// pair is the forecast of merging b into a, from the cache when both were
// forecast before.
func (f *forecaster) pair(ctx context.Context, a, b string, used map[[2]string]bool) (worktree.Forecast, bool) {
	k := [2]string{a, b}
	used[k] = true
	out, ok := f.pairs[k]
	if !ok {
		fc, err := f.repo.Forecast(ctx, a, b)
		out = pairOutcome{f: fc, err: err}
		if err != nil && ctx.Err() == nil {
			f.o.logger.Debug("forecast", "base", a, "head", b, "err", err)
		}
		if ctx.Err() == nil {
			f.pairs[k] = out
		}
	}
	return out.f, out.err == nil
}

func sortConflicts(l []protocol.TaskConflict) {
	// "base" first, then task ids.
	sort.Slice(l, func(i, j int) bool {
		if (l[i].With == "base") != (l[j].With == "base") {
			return l[i].With == "base"
		}
		return l[i].With < l[j].With
	})
}
