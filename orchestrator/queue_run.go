package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// queueParallel is how many candidates the queue verifies at once.
func (o *Orchestrator) queueParallel() int {
	s := o.settingsNow()
	if s.QueueParallel > 0 {
		return s.QueueParallel
	}
	return max(s.MaxConcurrent, 1)
}

// mergeCandidate is one task of a batch: its merge built on the candidate
// before it (or the base's tip).
type mergeCandidate struct {
	op     *opHandle
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
func (o *Orchestrator) runQueue(repo Integration, ids []string) {
	defer o.wg.Done()
	ctx := o.startCtx
	pending := slices.Clone(ids)
	back := map[string]bool{}
	for {
		o.mq.mu.Lock()
		cancelled := o.mq.cancel
		o.mq.mu.Unlock()
		if cancelled || ctx.Err() != nil {
			break
		}
		pending = append(pending, o.queueRejoin(back)...)
		if len(pending) == 0 {
			if len(back) == 0 {
				break
			}
			select {
			case <-o.closing:
			case <-o.mq.wake:
			}
			continue
		}
		n := min(o.queueParallel(), len(pending))
		batch := pending[:n]
		pending = slices.Clone(pending[n:])
		again, handedBack := o.queueBatch(ctx, repo, batch)
		for _, id := range handedBack {
			back[id] = true
		}
		pending = append(again, pending...)
	}
	o.queueEnd(ctx)
}

// queueRejoin takes the tasks handed back that are ready again (or gone)
// out of back, and returns the ready ones.
func (o *Orchestrator) queueRejoin(back map[string]bool) []string {
	var ready []string
	for id := range back {
		ok, gone := o.queueReturned(id)
		switch {
		case ok:
			delete(back, id)
			ready = append(ready, id)
			o.queueSetBack(-1)
			o.queueUpdate(func(q *protocol.Queue) {
				if it := itemOf(q, id); it != nil {
					it.State = protocol.QueueItemWaiting
				}
			})
		case gone != nil:
			delete(back, id)
			o.queueSetBack(-1)
			o.queueUpdate(func(q *protocol.Queue) {
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

// queueReturned says whether a task handed back is ready again, or (gone)
// why it will not come back: its agent ended without resolving the
// conflict, it was cancelled...
func (o *Orchestrator) queueReturned(id string) (ready bool, gone *queueGone) {
	a, err := o.get(id)
	if err != nil {
		return false, &queueGone{state: protocol.QueueItemCancelled, reason: "error", detail: "the task is gone"}
	}
	v := a.view()
	switch s := v.T.Status; {
	case s == protocol.StatusMerging && v.op == opNone:
		// A warm claude (warmAgentSec) may still be up: the queue's
		// operation lets it go first, as task/merge's does.
		return true, nil
	case s.HoldsWorktree() || s == protocol.StatusMerging:
		return false, nil
	case s == protocol.StatusBlocked && v.T.Blocked != nil && v.T.Blocked.Reason == protocol.BlockedConflict:
		return false, &queueGone{state: protocol.QueueItemBlocked, reason: "conflict", detail: v.T.Blocked.Detail}
	default:
		return false, &queueGone{state: protocol.QueueItemCancelled, reason: "error",
			detail: fmt.Sprintf("the task is %s, not ready to merge", s.Words())}
	}
}

// queueBatch builds the batch's candidates, verifies them at once, and
// moves the base along the longest passing prefix. It returns the tasks to
// try again (in order: behind a failed candidate, or built on one) and
// those handed back to their agents.
func (o *Orchestrator) queueBatch(ctx context.Context, repo Integration, ids []string) (again, handedBack []string) {
	o.mq.mu.Lock()
	verify, strategy, base := o.mq.verify, worktree.Strategy(o.mq.q.Strategy), o.mq.q.BaseRef
	o.mq.mu.Unlock()

	tip, err := repo.Tip(ctx, base)
	if err != nil {
		for _, id := range ids {
			o.queueSet(id, func(it *protocol.QueueItem) {
				it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", "reading "+base+": "+err.Error()
			})
		}
		return nil, nil
	}
	parent := tip
	var chain []*mergeCandidate
	for _, id := range ids {
		c, outcome := o.queueCandidate(ctx, repo, id, base, parent, parent == tip, strategy)
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
	later := o.queueVerifyAndAdvance(ctx, repo, chain, base, verify, strategy, &handedBack)
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

// queueCandidate claims the task and builds its candidate on parent.
// onTip: parent is the base's tip (no other candidate below it), so a
// conflict is the task's with the base, to hand back; on a candidate it
// waits for the ones below to land.
func (o *Orchestrator) queueCandidate(ctx context.Context, repo Integration, id, base, parent string, onTip bool, strategy worktree.Strategy) (*mergeCandidate, candidateOutcome) {
	op, err := o.claim(ctx, id, opMerge)
	if err != nil {
		o.queueSet(id, func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", errorWords(err)
		})
		return nil, candidateSkipped
	}
	v := op.v
	wt, _ := o.worktreeOfView(v)
	if wt.BaseRef != base {
		op.release()
		o.queueSet(id, func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error",
				fmt.Sprintf("its base is %s, not the queue's %s; queue it on its own", wt.BaseRef, base)
		})
		return nil, candidateSkipped
	}
	var attempts int
	o.queueSet(id, func(it *protocol.QueueItem) {
		it.Attempts++
		attempts = it.Attempts
		it.State, it.Reason, it.Detail, it.Files, it.Output, it.OutputRef = protocol.QueueItemUpdating, "", "", nil, "", ""
	})
	summary := ""
	if r := v.T.Result; r != nil {
		summary = r.Summary
	}
	commit, err := repo.Candidate(ctx, parent, wt, strategy, mergeMessage(v.T.Title, summary, id))
	var ce *worktree.ConflictError
	switch {
	case errors.As(err, &ce) && !onTip:
		// It may only conflict with a task below it that has not landed
		// yet: built again once those have.
		op.release()
		o.queueUndoAttempt(id)
		return nil, candidateLater
	case errors.As(err, &ce):
		if o.queueHandBackConflict(ctx, repo, op, wt, base, ce.Files, attempts) {
			return nil, candidateHandedBack
		}
		return nil, candidateSkipped
	case err != nil:
		op.release()
		o.queueSet(id, func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", "building its merge: "+errorWords(err)
		})
		return nil, candidateSkipped
	case commit == parent:
		// Already in the base (merged by hand): nothing to merge, nothing
		// familiar could undo.
		op.release()
		o.queueSet(id, func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error",
				base+" already holds this task's work (merged outside familiar?); nothing to merge"
		})
		return nil, candidateSkipped
	}
	// Leftover conflict markers are never merged, whatever the verify
	// command says of them.
	if markers, err := repo.LeftoverMarkers(ctx, parent, commit); err != nil {
		op.release()
		o.queueSet(id, func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", errorWords(err)
		})
		return nil, candidateSkipped
	} else if len(markers) > 0 {
		ue := &worktree.UnresolvedError{Markers: markers}
		detail := "its change has leftover conflict markers: " + ue.Words()
		prompt := fmt.Sprintf("familiar's merge queue: your change still has conflict markers (<<<<<<<, =======, >>>>>>>) in %s. Resolve each one (keep what both sides need, remove the markers), run the tests, then finish with a short summary.", ue.Words())
		if o.queueFail(ctx, op, "conflict", detail, prompt, ue.Paths(), "", "", attempts) {
			return nil, candidateHandedBack
		}
		return nil, candidateSkipped
	}
	return &mergeCandidate{op: op, id: id, title: v.T.Title, wt: wt, parent: parent, commit: commit}, candidateBuilt
}

// queueVerifyAndAdvance verifies the chain's candidates at once and moves
// the base along it while they pass. The first that fails goes back to its
// agent; the ones above it (built on it) are stopped and returned to try
// again.
func (o *Orchestrator) queueVerifyAndAdvance(ctx context.Context, repo Integration, chain []*mergeCandidate, base, verify string, strategy worktree.Strategy, handedBack *[]string) (again []string) {
	if verify != "" {
		for _, c := range chain {
			vctx, stop := context.WithCancel(ctx)
			c.verify, c.stop = make(chan verifyResult, 1), stop
			o.queueSet(c.id, func(it *protocol.QueueItem) { it.State = protocol.QueueItemVerifying })
			o.wg.Add(1)
			go func() {
				defer o.wg.Done()
				c.verify <- o.verifyCandidate(vctx, repo, c.commit, verify)
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
		if i > 0 && o.queueCancelled() {
			// queue/cancel: the merge in progress (the chain's first)
			// finishes its step; nothing after it lands.
			failed = true
		}
		if failed || ctx.Err() != nil {
			if c.stop != nil {
				c.stop() // it holds the candidate that did not land
			}
			c.op.release()
			o.queueUndoAttempt(c.id)
			o.queueSet(c.id, func(it *protocol.QueueItem) { it.State = protocol.QueueItemWaiting })
			again = append(again, c.id)
			continue
		}
		if c.verify != nil {
			res := <-c.verify
			c.verify <- res // for the deferred wait
			if ctx.Err() != nil {
				failed = true
				c.op.release()
				o.queueSet(c.id, func(it *protocol.QueueItem) { it.State = protocol.QueueItemWaiting })
				again = append(again, c.id)
				continue
			}
			if !res.ok {
				failed = true
				if o.queueVerifyFailed(ctx, c, verify, base, res) {
					*handedBack = append(*handedBack, c.id)
				}
				continue
			}
		}
		if !o.queueLand(ctx, repo, c, base, strategy) {
			failed = true
			again = append(again, c.id)
		}
	}
	return again
}

// queueLand moves the base to the candidate, its intent recorded first so
// that a crash between the two is settled on start. It reports false when
// the base moved under the queue (the candidate is built again).
func (o *Orchestrator) queueLand(ctx context.Context, repo Integration, c *mergeCandidate, base string, strategy worktree.Strategy) bool {
	o.mq.mu.Lock()
	qid := o.mq.q.ID
	o.mq.mu.Unlock()
	o.queueSet(c.id, func(it *protocol.QueueItem) { it.State = protocol.QueueItemMerging })
	res, err := o.landMerge(ctx, repo, c.op, base, c.parent, c.commit, string(strategy), qid)
	if err != nil {
		var dirty *worktree.DirtyError
		if errors.As(err, &dirty) {
			// The person's checkout of the base changed meanwhile: the
			// queue stops here rather than refuse every task after.
			o.mq.mu.Lock()
			o.mq.cancel = true
			o.mq.mu.Unlock()
			o.queueSet(c.id, func(it *protocol.QueueItem) {
				it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", errorWords(err)
			})
			return true
		}
		o.queueUndoAttempt(c.id)
		o.queueSet(c.id, func(it *protocol.QueueItem) { it.State = protocol.QueueItemWaiting })
		return false
	}
	o.mq.mu.Lock()
	o.mq.merged = append(o.mq.merged, c.id)
	o.mq.mu.Unlock()
	o.queueSet(c.id, func(it *protocol.QueueItem) {
		it.State = protocol.QueueItemMerged
		it.Merge = &protocol.QueueMerge{Before: res.Before, After: res.After}
	})
	// As task/merge does: the worktree and branch go once merged (queue/undo
	// still works: it needs the merge record and the base, not the worktree).
	if o.settingsNow().RemoveWorktreeAfterMerge {
		if err := o.removeWorktree(context.WithoutCancel(ctx), &protocol.TaskRemoveParams{ID: c.id, DeleteBranch: true}); err != nil {
			o.logger.Warn("remove after queue merge", "task", c.id, "err", err)
		}
	}
	return true
}

// landMerge is the one merge step task/merge and the queue share: the
// intent recorded (durably), the base moved from before to the candidate
// by compare-and-swap, the task merged. On an error nothing moved and the
// operation is released.
func (o *Orchestrator) landMerge(ctx context.Context, repo Integration, op *opHandle, base, before, after, strategy, queueID string) (worktree.MergeResult, error) {
	at := o.clk.Now().UTC()
	intent := mergeIntent{Base: base, Before: before, After: after, Strategy: strategy, QueueID: queueID, At: at}
	if _, err := op.a.call(context.WithoutCancel(ctx), cmdMergeIntent{intent: intent}); err != nil {
		op.release()
		return worktree.MergeResult{}, err
	}
	res, err := repo.Advance(ctx, base, before, after)
	if err != nil {
		op.release()
		return worktree.MergeResult{}, err
	}
	audit := map[string]any{"base": res.Base, "before": res.Before, "after": res.After, "strategy": strategy}
	if queueID != "" {
		audit["queueId"] = queueID
	}
	err = op.finish(cmdEndOp{op: opMerge, ok: true, merge: &mergeRecord{MergeResult: res, At: at, Strategy: strategy}, audit: audit})
	return res, err
}

// queueVerifyFailed hands the task back with the verify command's output
// (or sets it aside at its last attempt).
func (o *Orchestrator) queueVerifyFailed(ctx context.Context, c *mergeCandidate, verify, base string, res verifyResult) bool {
	o.mq.mu.Lock()
	qid := o.mq.q.ID
	var attempts int
	if it := itemOf(o.mq.q, c.id); it != nil {
		attempts = it.Attempts
	}
	o.mq.mu.Unlock()
	shown, ref := o.verifyOutput(c.id, res.output)
	verify = o.maskString(verify)
	what := fmt.Sprintf("failed (exit %d)", res.code)
	if res.timedOut {
		what = fmt.Sprintf("did not finish within %d s (commandTimeoutSec) and was stopped", res.timeoutSec)
	}
	o.audit(c.id, "queue.verifyFailed", "familiar", map[string]any{"queueId": qid, "exitCode": res.code, "timedOut": res.timedOut})
	more := ""
	if ref != "" {
		more = " (its end; the whole output: task/text " + ref + ")"
	}
	prompt := fmt.Sprintf("familiar's merge queue: with your change merged into %s, the verify command `%s` %s. Its output%s:\n```\n%s\n```\nFix what it reports in your branch (it is checked again merged with %s as it is then), run `%s` until it passes, then finish with a short summary.",
		base, verify, what, more, shown, base, verify)
	return o.queueFail(ctx, c.op, "verify", fmt.Sprintf("`%s` %s", verify, what), prompt, nil, shown, ref, attempts)
}

// queueHandBackConflict gives the task's agent its conflict with the base:
// the base merged into its branch in its worktree, the merge left in
// progress, the conflicting hunks of both sides and the tasks that changed
// those files in the prompt. Where the branch was is kept for queue/undo.
func (o *Orchestrator) queueHandBackConflict(ctx context.Context, repo Integration, op *opHandle, wt worktree.Worktree, base string, files []string, attempts int) bool {
	id := op.v.T.ID
	if attempts >= maxQueueAttempts {
		detail := fmt.Sprintf("it conflicts with %s in %s", base, strings.Join(files, ", "))
		return o.queueFail(ctx, op, "conflict", detail, "", files, "", "", attempts)
	}
	o.mq.mu.Lock()
	strategy := worktree.Strategy(o.mq.q.Strategy)
	o.mq.mu.Unlock()
	tip, tipErr := repo.BranchTip(ctx, wt)
	err := repo.BringBase(ctx, wt, base, strategy)
	var ce *worktree.ConflictError
	if err != nil && !errors.As(err, &ce) {
		op.release()
		o.queueSet(id, func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", "bringing "+base+" into its branch: "+errorWords(err)
		})
		return false
	}
	if tipErr == nil {
		o.mq.mu.Lock()
		if _, ok := o.mq.moved[id]; !ok {
			o.mq.moved[id] = tip
		}
		o.mq.mu.Unlock()
	}
	if ce != nil {
		files = ce.Files
	}
	var hunks string
	if strategy != worktree.Rebase {
		hunks = o.maskString(repo.ConflictHunks(wt, files, hunkLines))
	}
	others := o.queueWhoChanged(files, id)
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
	return o.queueFail(ctx, op, "conflict", detail, b.String(), files, "", "", attempts)
}

// queueWhoChanged names the tasks this queue merged that changed any of
// files, with their summaries' first lines: "B (Rewrote the parser)".
func (o *Orchestrator) queueWhoChanged(files []string, except string) string {
	o.mq.mu.Lock()
	merged := slices.Clone(o.mq.merged)
	o.mq.mu.Unlock()
	var names []string
	for _, id := range merged {
		if id == except {
			continue
		}
		a, err := o.get(id)
		if err != nil {
			continue
		}
		v := a.view()
		r := v.T.Result
		if r == nil {
			continue
		}
		touched := false
		for _, f := range r.ChangedFiles {
			if slices.Contains(files, f.Path) {
				touched = true
			}
		}
		if !touched {
			continue
		}
		name := "the task \"" + v.T.Title + "\""
		if first, _, _ := strings.Cut(strings.TrimSpace(r.Summary), "\n"); first != "" {
			name += " (" + clipRunes(plainLine(first), 160) + ")"
		}
		names = append(names, name)
	}
	return o.maskString(strings.Join(names, "; "))
}

// queueFail hands the task back to its agent with prompt, or sets it aside
// at its last attempt (or when prompt is ""). It reports whether the task
// went back (and so rejoins the queue when ready).
func (o *Orchestrator) queueFail(ctx context.Context, op *opHandle, reason, detail, prompt string, files []string, output, ref string, attempts int) bool {
	id := op.v.T.ID
	o.mq.mu.Lock()
	qid := o.mq.q.ID
	o.mq.mu.Unlock()
	detail = o.maskString(detail)
	last := attempts >= maxQueueAttempts || prompt == ""
	end := cmdEndOp{op: opMerge}
	if last {
		end.block = &protocol.Blocked{Reason: protocol.BlockedMerge,
			Detail: fmt.Sprintf("The merge queue set the task aside after %d attempts: %s", attempts, detail)}
	}
	if err := op.finish(end); err != nil {
		o.logger.Warn("end queue merge", "task", id, "err", err)
	}
	state := protocol.QueueItemBlocked
	if !last {
		if err := o.sendFollowUp(context.WithoutCancel(ctx), id, o.maskString(prompt)); err != nil {
			detail += "; it could not be handed back to its agent: " + errorWords(err)
		} else {
			state = protocol.QueueItemHandedBack
			o.queueSetBack(1)
			o.audit(id, "queue.handedBack", "familiar", map[string]any{"queueId": qid, "reason": reason, "files": nonNil(files), "detail": detail})
		}
	}
	if state == protocol.QueueItemBlocked {
		o.audit(id, "queue.setAside", "familiar", map[string]any{"queueId": qid, "reason": reason, "files": nonNil(files), "detail": detail})
	}
	o.queueSet(id, func(it *protocol.QueueItem) {
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

// queueSet changes the task's item and announces the queue.
func (o *Orchestrator) queueSet(id string, change func(it *protocol.QueueItem)) {
	o.queueUpdate(func(q *protocol.Queue) {
		if it := itemOf(q, id); it != nil {
			change(it)
			q.Current = id
		}
	})
}

// queueUndoAttempt takes back an attempt that was not the task's doing (it
// waited for a candidate below it, or the base moved).
func (o *Orchestrator) queueUndoAttempt(id string) {
	o.queueSet(id, func(it *protocol.QueueItem) {
		if it.Attempts > 0 {
			it.Attempts--
		}
	})
}

// errorWords is an error's message for a person: a protocol error's own
// message, else the error's text.
func errorWords(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}

func (o *Orchestrator) queueSetBack(d int) {
	o.mq.mu.Lock()
	o.mq.handedBack += d
	o.mq.mu.Unlock()
}

// queueEnd settles the queue: done, or cancelled with what it did not get to.
func (o *Orchestrator) queueEnd(ctx context.Context) {
	var merged, notMerged []string
	snap := o.queueUpdate(func(q *protocol.Queue) {
		q.State = protocol.QueueDone
		if o.mq.cancel || ctx.Err() != nil {
			q.State = protocol.QueueCancelled
		}
		q.Current, q.EndedAt = "", o.clk.Now().UTC()
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
		o.mq.running, o.mq.handedBack = false, 0
	})
	o.audit("", "queue.ended", "familiar", map[string]any{"queueId": snap.ID, "state": snap.State, "merged": nonNil(merged), "notMerged": nonNil(notMerged)})
}

func (o *Orchestrator) queueCancelled() bool {
	o.mq.mu.Lock()
	defer o.mq.mu.Unlock()
	return o.mq.cancel
}
