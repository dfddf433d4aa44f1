package mergequeue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// parallel is how many candidates the queue verifies at once.
func (m *Queue) parallel() int {
	s := m.host.Settings()
	if s.QueueParallel > 0 {
		return s.QueueParallel
	}
	return max(s.MaxConcurrent, 1)
}

// mergeCandidate is one task of a batch: its merge built on the candidate
// before it (or the base's tip).
type mergeCandidate struct {
	op     Op
	id     string
	title  string
	wt     worktree.Worktree
	parent string // the commit it was built on
	commit string // the base with it merged
	verify chan verifyResult
	stop   context.CancelFunc
}

// runQueue works through the queue: a batch of up to queueParallel tasks
// at a time, each verified as the base with it and the ones before it
// merged; a task handed back to its agent rejoins as soon as it is ready.
func (m *Queue) run(ids []string) {
	defer m.wg.Done()
	ctx := m.ctx
	pending := slices.Clone(ids)
	back := map[string]bool{}
	for {
		m.mu.Lock()
		cancelled := m.cancel
		m.mu.Unlock()
		if cancelled || ctx.Err() != nil {
			break
		}
		pending = append(pending, m.rejoin(back)...)
		pending = append(pending, m.takeAdded()...)
		if len(pending) == 0 {
			if len(back) == 0 {
				if m.finishing() {
					break
				}
				continue
			}
			select {
			case <-m.closing:
			case <-m.wake:
			}
			continue
		}
		n := min(m.parallel(), len(pending))
		batch := pending[:n]
		pending = slices.Clone(pending[n:])
		again, handedBack := m.batch(ctx, batch)
		for _, id := range handedBack {
			back[id] = true
		}
		pending = append(again, pending...)
	}
	m.end(ctx)
}

// rejoin takes the tasks handed back that are ready again (or gone)
// out of back, and returns the ready ones.
func (m *Queue) rejoin(back map[string]bool) []string {
	var ready []string
	for id := range back {
		ok, gone := m.returned(id)
		switch {
		case ok:
			delete(back, id)
			ready = append(ready, id)
			m.setBack(-1)
			m.update(func(q *protocol.Queue) {
				if it := itemOf(q, id); it != nil {
					it.State = protocol.QueueItemWaiting
				}
			})
		case gone != nil:
			delete(back, id)
			m.setBack(-1)
			m.update(func(q *protocol.Queue) {
				if it := itemOf(q, id); it != nil {
					it.State, it.Reason, it.Detail, it.Files = gone.state, gone.reason, gone.detail, gone.files
				}
			})
		}
	}
	slices.Sort(ready)
	return ready
}

// queueGone is why a task handed back will not come back.
type queueGone struct {
	state  protocol.QueueItemState
	reason string
	detail string
	files  []string
}

// returned says whether a task handed back is ready again, or (gone)
// why it will not come back: its agent ended without resolving the
// conflict, it was cancelled...
func (m *Queue) returned(id string) (ready bool, gone *queueGone) {
	v, ok := m.host.Task(id)
	if !ok {
		return false, &queueGone{state: protocol.QueueItemCancelled, reason: "error", detail: "the task is gone"}
	}
	switch s := v.Status; {
	case s == protocol.StatusMerging && !v.Busy:
		// A warm claude (warmAgentSec) may still be up: the queue's
		// operation lets it go first, as task/merge's does.
		return true, nil
	case s.HoldsWorktree() || s == protocol.StatusMerging:
		return false, nil
	case s == protocol.StatusBlocked && v.Blocked != nil && v.Blocked.Reason == protocol.BlockedConflict:
		return false, &queueGone{state: protocol.QueueItemBlocked, reason: "conflict", detail: v.Blocked.Detail}
	default:
		return false, &queueGone{state: protocol.QueueItemCancelled, reason: "error",
			detail: fmt.Sprintf("the task is %s, not ready to merge", s.Words())}
	}
}

// batch builds the batch's candidates, verifies them at once, and
// moves the base along the longest passing prefix. It returns the tasks to
// try again (in order: behind a failed candidate, or built on one) and
// those handed back to their agents.
func (m *Queue) batch(ctx context.Context, ids []string) (again, handedBack []string) {
	m.mu.Lock()
	verify, strategy, base := m.verify, worktree.Strategy(m.q.Strategy), m.q.BaseRef
	m.mu.Unlock()

	tip, err := m.repo.Tip(ctx, base)
	if err != nil {
		for _, id := range ids {
			m.set(id, func(it *protocol.QueueItem) {
				it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", "reading "+base+": "+err.Error()
			})
		}
		return nil, nil
	}
	parent := tip
	var chain []*mergeCandidate
	for _, id := range ids {
		c, outcome := m.candidate(ctx, id, base, parent, parent == tip, strategy)
		switch outcome {
		case candidateBuilt:
			chain = append(chain, c)
			parent = c.commit
		case candidateLater:
			again = append(again, id)
		case candidateHandedBack:
			handedBack = append(handedBack, id)
		}
	}
	if len(chain) == 0 {
		return again, handedBack
	}
	later := m.verifyAndAdvance(ctx, chain, base, verify, strategy, &handedBack)
	// What was built on a candidate that did not land comes back first.
	return append(later, again...), handedBack
}

type candidateOutcome int

const (
	candidateBuilt candidateOutcome = iota
	candidateSkipped
	candidateLater
	candidateHandedBack
)

// candidate claims the task and builds its candidate on parent.
// onTip: parent is the base's tip (no other candidate below it), so a
// conflict is the task's with the base, to hand back; on a candidate it
// waits for the ones below to land.
func (m *Queue) candidate(ctx context.Context, id, base, parent string, onTip bool, strategy worktree.Strategy) (*mergeCandidate, candidateOutcome) {
	op, err := m.host.Claim(ctx, id)
	if err != nil {
		m.set(id, func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", errorWords(err)
		})
		return nil, candidateSkipped
	}
	v := op.Task()
	wt := v.Worktree
	if wt.BaseRef != base {
		op.Release()
		m.set(id, func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error",
				fmt.Sprintf("its base is %s, not the queue's %s; queue it on its own", wt.BaseRef, base)
		})
		return nil, candidateSkipped
	}
	var attempts int
	m.set(id, func(it *protocol.QueueItem) {
		it.Attempts++
		attempts = it.Attempts
		it.State, it.Reason, it.Detail, it.Files, it.Output, it.OutputRef = protocol.QueueItemUpdating, "", "", nil, "", ""
	})
	commit, err := m.repo.Candidate(ctx, parent, wt, strategy, MergeMessage(v.Title, v.Summary, id))
	var ce *worktree.ConflictError
	switch {
	case errors.As(err, &ce) && !onTip:
		// It may only conflict with a task below it that has not landed
		// yet: built again once those have.
		op.Release()
		m.undoAttempt(id)
		return nil, candidateLater
	case errors.As(err, &ce):
		if m.handBackConflict(ctx, op, wt, base, ce.Files, attempts) {
			return nil, candidateHandedBack
		}
		return nil, candidateSkipped
	case err != nil:
		op.Release()
		m.set(id, func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", "building its merge: "+errorWords(err)
		})
		return nil, candidateSkipped
	case commit == parent:
		// Already in the base (merged by hand): nothing to merge, nothing
		// familiar could undo.
		op.Release()
		m.set(id, func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error",
				base+" already holds this task's work (merged outside familiar?); nothing to merge"
		})
		return nil, candidateSkipped
	}
	// Leftover conflict markers are never merged, whatever the verify
	// command says of them.
	if markers, err := m.repo.LeftoverMarkers(ctx, parent, commit); err != nil {
		op.Release()
		m.set(id, func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", errorWords(err)
		})
		return nil, candidateSkipped
	} else if len(markers) > 0 {
		ue := &worktree.UnresolvedError{Markers: markers}
		detail := "its change has leftover conflict markers: " + ue.Words()
		prompt := fmt.Sprintf("familiar's merge queue: your change still has conflict markers (<<<<<<<, =======, >>>>>>>) in %s. Resolve each one (keep what both sides need, remove the markers), run the tests, then finish with a short summary.", ue.Words())
		if m.fail(ctx, op, "conflict", detail, prompt, ue.Paths(), "", "", attempts) {
			return nil, candidateHandedBack
		}
		return nil, candidateSkipped
	}
	return &mergeCandidate{op: op, id: id, title: v.Title, wt: wt, parent: parent, commit: commit}, candidateBuilt
}

// verifyAndAdvance verifies the chain's candidates at once and moves
// the base along it while they pass. The first that fails goes back to its
// agent; the ones above it (built on it) are stopped and returned to try
// again.
func (m *Queue) verifyAndAdvance(ctx context.Context, chain []*mergeCandidate, base, verify string, strategy worktree.Strategy, handedBack *[]string) (again []string) {
	if verify != "" {
		for slot, c := range chain {
			vctx, stop := context.WithCancel(ctx)
			c.verify, c.stop = make(chan verifyResult, 1), stop
			m.set(c.id, func(it *protocol.QueueItem) { it.State = protocol.QueueItemVerifying })
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				c.verify <- m.verifyCandidate(vctx, slot, c.commit, verify)
			}()
		}
	}
	defer func() {
		for _, c := range chain {
			if c.stop != nil {
				c.stop()
				<-c.verify // its tree has ended
			}
		}
	}()
	failed := false
	for i, c := range chain {
		if i > 0 && m.cancelled() {
			// queue/cancel: the merge in progress (the chain's first)
			// finishes its step; nothing after it lands.
			failed = true
		}
		if failed || ctx.Err() != nil {
			if c.stop != nil {
				c.stop() // it holds the candidate that did not land
			}
			c.op.Release()
			m.undoAttempt(c.id)
			m.set(c.id, func(it *protocol.QueueItem) { it.State = protocol.QueueItemWaiting })
			again = append(again, c.id)
			continue
		}
		if c.verify != nil {
			res := <-c.verify
			c.verify <- res // for the deferred wait
			if ctx.Err() != nil {
				failed = true
				c.op.Release()
				m.set(c.id, func(it *protocol.QueueItem) { it.State = protocol.QueueItemWaiting })
				again = append(again, c.id)
				continue
			}
			if !res.ok {
				failed = true
				if m.verifyFailed(ctx, c, verify, base, res) {
					*handedBack = append(*handedBack, c.id)
				}
				continue
			}
		}
		if !m.land(ctx, c, base, strategy) {
			failed = true
			again = append(again, c.id)
		}
	}
	return again
}

// land moves the base to the candidate, its intent recorded first so
// that a crash between the two is settled on start. It reports false when
// the base moved under the queue (the candidate is built again).
func (m *Queue) land(ctx context.Context, c *mergeCandidate, base string, strategy worktree.Strategy) bool {
	m.mu.Lock()
	qid := m.q.ID
	m.mu.Unlock()
	m.set(c.id, func(it *protocol.QueueItem) { it.State = protocol.QueueItemMerging })
	res, err := c.op.Land(ctx, base, c.parent, c.commit, string(strategy), qid)
	if err != nil {
		var dirty *worktree.DirtyError
		if errors.As(err, &dirty) {
			// The person's checkout of the base changed meanwhile: the
			// queue stops here rather than refuse every task after.
			m.mu.Lock()
			m.cancel = true
			m.mu.Unlock()
			m.set(c.id, func(it *protocol.QueueItem) {
				it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", errorWords(err)
			})
			return true
		}
		m.undoAttempt(c.id)
		m.set(c.id, func(it *protocol.QueueItem) { it.State = protocol.QueueItemWaiting })
		return false
	}
	m.mu.Lock()
	m.merged = append(m.merged, c.id)
	m.mu.Unlock()
	m.set(c.id, func(it *protocol.QueueItem) {
		it.State = protocol.QueueItemMerged
		it.Merge = &protocol.QueueMerge{Before: res.Before, After: res.After}
	})
	// As task/merge does: the worktree and branch go once merged (queue/undo
	// still works: it needs the merge record and the base, not the worktree).
	if m.host.Settings().RemoveWorktreeAfterMerge {
		if err := m.host.RemoveWorktree(context.WithoutCancel(ctx), c.id); err != nil {
			m.logger.Warn("remove after queue merge", "task", c.id, "err", err)
		}
	}
	return true
}

// verifyFailed hands the task back with the verify command's output
// (or sets it aside at its last attempt).
func (m *Queue) verifyFailed(ctx context.Context, c *mergeCandidate, verify, base string, res verifyResult) bool {
	m.mu.Lock()
	qid := m.q.ID
	var attempts int
	if it := itemOf(m.q, c.id); it != nil {
		attempts = it.Attempts
	}
	m.mu.Unlock()
	shown, ref := m.verifyOutput(c.id, res.output)
	verify = m.host.Mask(verify)
	what := fmt.Sprintf("failed (exit %d)", res.code)
	if res.timedOut {
		what = fmt.Sprintf("did not finish within %d s (commandTimeoutSec) and was stopped", res.timeoutSec)
	}
	m.host.Audit(c.id, "queue.verifyFailed", "familiar", map[string]any{"queueId": qid, "exitCode": res.code, "timedOut": res.timedOut})
	more := ""
	if ref != "" {
		more = " (its end; the whole output: task/text " + ref + ")"
	}
	prompt := fmt.Sprintf("familiar's merge queue: with your change merged into %s, the verify command `%s` %s. Its output%s:\n```\n%s\n```\nFix what it reports in your branch (it is checked again merged with %s as it is then), run `%s` until it passes, then finish with a short summary.",
		base, verify, what, more, shown, base, verify)
	return m.fail(ctx, c.op, "verify", fmt.Sprintf("`%s` %s", verify, what), prompt, nil, shown, ref, attempts)
}

// handBackConflict gives the task's agent its conflict with the base:
// the base merged into its branch in its worktree, the merge left in
// progress, the conflicting hunks of both sides and the tasks that changed
// those files in the prompt. Where the branch was is kept for queue/undo.
func (m *Queue) handBackConflict(ctx context.Context, op Op, wt worktree.Worktree, base string, files []string, attempts int) bool {
	id := op.Task().ID
	if attempts >= maxQueueAttempts {
		detail := fmt.Sprintf("it conflicts with %s in %s", base, strings.Join(files, ", "))
		return m.fail(ctx, op, "conflict", detail, "", files, "", "", attempts)
	}
	m.mu.Lock()
	strategy := worktree.Strategy(m.q.Strategy)
	m.mu.Unlock()
	tip, tipErr := m.repo.BranchTip(ctx, wt)
	err := m.repo.BringBase(ctx, wt, base, strategy)
	var ce *worktree.ConflictError
	if err != nil && !errors.As(err, &ce) {
		op.Release()
		m.set(id, func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", "bringing "+base+" into its branch: "+errorWords(err)
		})
		return false
	}
	if tipErr == nil {
		m.mu.Lock()
		if _, ok := m.moved[id]; !ok {
			m.moved[id] = tip
		}
		m.mu.Unlock()
	}
	if ce != nil {
		files = ce.Files
	}
	var hunks string
	if strategy != worktree.Rebase {
		hunks = m.host.Mask(m.repo.ConflictHunks(wt, files, hunkLines))
	}
	others := m.whoChanged(files, id)
	var b strings.Builder
	fmt.Fprintf(&b, "familiar's merge queue: %s has moved since you finished, and your change conflicts with it in %s.", base, strings.Join(files, ", "))
	if others != "" {
		fmt.Fprintf(&b, " What changed there on %s: %s.", base, others)
	}
	if strategy == worktree.Rebase {
		fmt.Fprintf(&b, " Run `git rebase %s` in your worktree, resolve the conflicts, `git rebase --continue`, run the tests, then finish with a short summary.", base)
	} else {
		fmt.Fprintf(&b, " familiar merged %s into your branch; the merge is in progress in your worktree. Resolve each conflict in those files (keep what both sides need and remove every conflict marker), run the tests, then finish with a short summary. familiar commits the resolution when you finish; it commits nothing while a conflict marker is left.", base)
		if hunks != "" {
			fmt.Fprintf(&b, "\nThe conflicts (yours above =======, %s's below):\n```\n%s```", base, hunks)
		}
	}
	detail := fmt.Sprintf("it conflicts with %s in %s", base, strings.Join(files, ", "))
	return m.fail(ctx, op, "conflict", detail, b.String(), files, "", "", attempts)
}

// whoChanged names the tasks this queue merged that changed any of
// files, with their summaries' first lines: "B (Rewrote the parser)".
func (m *Queue) whoChanged(files []string, except string) string {
	m.mu.Lock()
	merged := slices.Clone(m.merged)
	m.mu.Unlock()
	var names []string
	for _, id := range merged {
		if id == except {
			continue
		}
		v, ok := m.host.Task(id)
		if !ok {
			continue
		}
		touched := false
		for _, f := range v.Changed {
			if slices.Contains(files, f) {
				touched = true
			}
		}
		if !touched {
			continue
		}
		name := "the task \"" + v.Title + "\""
		if first, _, _ := strings.Cut(strings.TrimSpace(v.Summary), "\n"); first != "" {
			name += " (" + clipRunes(plainLine(first), 160) + ")"
		}
		names = append(names, name)
	}
	return m.host.Mask(strings.Join(names, "; "))
}

// fail hands the task back to its agent with prompt, or sets it aside
// at its last attempt (or when prompt is ""). It reports whether the task
// went back (and so rejoins the queue when ready).
func (m *Queue) fail(ctx context.Context, op Op, reason, detail, prompt string, files []string, output, ref string, attempts int) bool {
	id := op.Task().ID
	m.mu.Lock()
	qid := m.q.ID
	m.mu.Unlock()
	detail = m.host.Mask(detail)
	last := attempts >= maxQueueAttempts || prompt == ""
	var block *protocol.Blocked
	if last {
		block = &protocol.Blocked{Reason: protocol.BlockedMerge,
			Detail: fmt.Sprintf("The merge queue set the task aside after %d attempts: %s", attempts, detail)}
	}
	if err := op.SetAside(block); err != nil {
		m.logger.Warn("end queue merge", "task", id, "err", err)
	}
	state := protocol.QueueItemBlocked
	if !last {
		if err := m.host.SendFollowUp(context.WithoutCancel(ctx), id, m.host.Mask(prompt)); err != nil {
			detail += "; it could not be handed back to its agent: " + errorWords(err)
		} else {
			state = protocol.QueueItemHandedBack
			m.setBack(1)
			m.host.Audit(id, "queue.handedBack", "familiar", map[string]any{"queueId": qid, "reason": reason, "files": nonNil(files), "detail": detail})
		}
	}
	if state == protocol.QueueItemBlocked {
		m.host.Audit(id, "queue.setAside", "familiar", map[string]any{"queueId": qid, "reason": reason, "files": nonNil(files), "detail": detail})
	}
	m.set(id, func(it *protocol.QueueItem) {
		it.State, it.Reason, it.Detail, it.Files, it.Output, it.OutputRef = state, reason, detail, files, output, ref
		if state == protocol.QueueItemHandedBack {
			it.HandBacks = append(it.HandBacks, protocol.QueueHandBack{Reason: reason, Detail: detail, Files: files})
		}
	})
	return state == protocol.QueueItemHandedBack
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// set changes the task's item and announces the queue.
func (m *Queue) set(id string, change func(it *protocol.QueueItem)) {
	m.update(func(q *protocol.Queue) {
		if it := itemOf(q, id); it != nil {
			change(it)
			q.Current = id
		}
	})
}

// undoAttempt takes back an attempt that was not the task's doing (it
// waited for a candidate below it, or the base moved).
func (m *Queue) undoAttempt(id string) {
	m.set(id, func(it *protocol.QueueItem) {
		if it.Attempts > 0 {
			it.Attempts--
		}
	})
}

func (m *Queue) setBack(d int) {
	m.mu.Lock()
	m.handedBack += d
	m.mu.Unlock()
}

// end settles the queue: done, or cancelled with what it did not get to.
func (m *Queue) end(ctx context.Context) {
	// The scratch worktrees served this queue's candidates; the next queue
	// starts from its own base.
	if err := m.repo.RemoveScratch(context.WithoutCancel(ctx)); err != nil {
		m.logger.Warn("remove the queue's scratch worktrees", "err", err)
	}
	var merged, notMerged []string
	m.update(func(q *protocol.Queue) {
		q.State = protocol.QueueDone
		if m.cancel || ctx.Err() != nil {
			q.State = protocol.QueueCancelled
		}
		q.Current, q.EndedAt = "", m.clk.Now().UTC()
		if ctx.Err() != nil {
			// familiar is shutting down: the next one says so.
			q.Interrupted = "familiar was stopped while this queue ran"
		}
		for i := range q.Items {
			it := &q.Items[i]
			switch it.State {
			case protocol.QueueItemMerged:
				merged = append(merged, it.TaskID)
				continue
			case protocol.QueueItemWaiting, protocol.QueueItemUpdating, protocol.QueueItemVerifying, protocol.QueueItemMerging:
				it.State = protocol.QueueItemCancelled
			}
			notMerged = append(notMerged, it.TaskID)
		}
		m.running, m.handedBack = false, 0
		// Audited before the end is announced (the host's audit and its
		// notifications go out in the order given): a client that reads
		// the audit when it sees the queue done finds the end there (read
		// after, it was missing once at load 18).
		m.host.Audit("", "queue.ended", "familiar", map[string]any{"queueId": q.ID, "state": q.State, "merged": nonNil(merged), "notMerged": nonNil(notMerged)})
	})
}

func (m *Queue) cancelled() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cancel
}
