package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// The merge queue (issue 25): the ready tasks merged one after the other,
// each brought up to date with the base and checked first, so the base
// never gets a merge nobody ran the checks on. One queue per repository,
// run by one goroutine of the orchestrator's; each task it works on is
// owned by the queue's operation (opMerge) meanwhile, as task/merge owns it.

// queueRepo is what the queue needs of the repository besides Repository
// (*worktree.Repo).
type queueRepo interface {
	CheckBaseClean(ctx context.Context, base string) error
	BringBase(ctx context.Context, wt worktree.Worktree, base string, strategy worktree.Strategy) error
	AbortBringBase(ctx context.Context, wt worktree.Worktree) error
}

// maxQueueAttempts: a task that fails the queue this often is set aside
// (blocked{merge}).
const maxQueueAttempts = 2

// verifyShown is how much of a verify command's output the queue shows and
// hands back (its end: where test runners say what failed).
const verifyShown = 4000

// mergeQueue is the repository's queue: the running one, or the last.
type mergeQueue struct {
	mu      sync.Mutex
	q       *protocol.Queue // guarded by mu
	running bool            // guarded by mu
	cancel  bool            // guarded by mu
	// merged are the queue's merges in order, for queue/undo.
	merged []string // guarded by mu: task ids
	// wake: a task handed back may be ready again.
	wake chan struct{}
	// handedBack counts tasks working on a hand-back (actors poke wake
	// only then).
	handedBack int // guarded by mu
}

func (m *mergeQueue) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// queueTaskChanged is told of every task/updated: a task handed back that
// is ready again (or ended otherwise) wakes the queue.
func (o *Orchestrator) queueTaskChanged() {
	o.mq.mu.Lock()
	n := o.mq.handedBack
	o.mq.mu.Unlock()
	if n > 0 {
		o.mq.poke()
	}
}

// snapshot copies the queue for a reply or a notification.
func (m *mergeQueue) snapshotLocked() *protocol.Queue {
	if m.q == nil {
		return nil
	}
	c := *m.q
	c.Items = slices.Clone(m.q.Items)
	for i := range c.Items {
		c.Items[i].Files = slices.Clone(c.Items[i].Files)
		c.Items[i].HandBacks = slices.Clone(c.Items[i].HandBacks)
	}
	return &c
}

// update changes the queue under its lock and announces it.
func (o *Orchestrator) queueUpdate(change func(q *protocol.Queue)) *protocol.Queue {
	o.mq.mu.Lock()
	if change != nil {
		change(o.mq.q)
	}
	snap := o.mq.snapshotLocked()
	o.mq.mu.Unlock()
	o.pub.publish("", protocol.QueueUpdatedNotification{Queue: *snap})
	return snap
}

func itemOf(q *protocol.Queue, id string) *protocol.QueueItem {
	for i := range q.Items {
		if q.Items[i].TaskID == id {
			return &q.Items[i]
		}
	}
	return nil
}

// QueueMerge is queue/merge.
func (o *Orchestrator) QueueMerge(ctx context.Context, p *protocol.QueueMergeParams) (*protocol.Queue, error) {
	repo, ok := o.cfg.Repo.(queueRepo)
	if !ok {
		return nil, protocol.Unavailable("this repository has no merge queue")
	}
	ids, err := o.queueTasks(p.IDs)
	if err != nil {
		return nil, err
	}
	type entry struct {
		id, title, base string
	}
	var entries []entry
	for _, id := range ids {
		a, err := o.get(id)
		if err != nil {
			return nil, protocol.InvalidParams("ids", fmt.Sprintf("no task %s", id))
		}
		v := a.view()
		if v.T.Status != protocol.StatusMerging {
			return nil, protocol.FailedPrecondition(fmt.Sprintf("task %s is %s, not ready to merge", id, v.T.Status), v.T.Status)
		}
		wt, _ := o.worktreeOfView(v)
		if wt.Path == "" || wt.BaseRef == "" || wt.BaseRef == "HEAD" {
			return nil, protocol.FailedPrecondition(fmt.Sprintf("task %s's base is not a branch; merge its branch by hand", id), v.T.Status)
		}
		entries = append(entries, entry{id: id, title: v.T.Title, base: wt.BaseRef})
	}
	// Refused before anything is merged: a dirty checkout of a base would
	// stop the queue half-way.
	bases := map[string]bool{}
	for _, e := range entries {
		if bases[e.base] {
			continue
		}
		bases[e.base] = true
		if err := repo.CheckBaseClean(ctx, e.base); err != nil {
			return nil, mapError(err, "merge queue", "ids")
		}
	}
	strategy := p.Strategy
	if strategy == "" {
		strategy = protocol.MergeMerge
	}
	verify, err := o.verifyCommand(p.Verify)
	if err != nil {
		return nil, err
	}
	o.mq.mu.Lock()
	if o.mq.running {
		o.mq.mu.Unlock()
		return nil, protocol.FailedPrecondition("a merge queue is running; queue/cancel stops it", "")
	}
	select {
	case <-o.closing:
		o.mq.mu.Unlock()
		return nil, protocol.Unavailable("familiar is shutting down")
	default:
	}
	q := &protocol.Queue{ID: newQueueID(), State: protocol.QueueRunning, Strategy: strategy, Verify: verify,
		BaseRef: entries[0].base, StartedAt: o.clk.Now().UTC(), Items: []protocol.QueueItem{}}
	for _, e := range entries {
		q.Items = append(q.Items, protocol.QueueItem{TaskID: e.id, Title: e.title, State: protocol.QueueItemWaiting})
	}
	o.mq.q, o.mq.running, o.mq.cancel, o.mq.merged, o.mq.handedBack = q, true, false, nil, 0
	o.mq.mu.Unlock()
	o.audit("", "queue.started", "user", map[string]any{"queueId": q.ID, "ids": ids, "strategy": strategy, "verify": verify})
	snap := o.queueUpdate(nil)
	o.wg.Add(1)
	go o.runQueue(repo, ids)
	return snap, nil
}

// queueTasks is the tasks a queue takes: those named, or every ready one
// with something to merge, by priority (highest first), then oldest first.
func (o *Orchestrator) queueTasks(named []string) ([]string, error) {
	if len(named) > 0 {
		return named, nil
	}
	actors := o.actors()
	var ready []*taskView
	for _, a := range actors {
		v := a.view()
		if v.T.Status == protocol.StatusMerging && v.op == opNone && (v.T.Result == nil || !v.T.Result.NoChanges) {
			ready = append(ready, v)
		}
	}
	if len(ready) == 0 {
		return nil, protocol.FailedPrecondition("no task is ready to merge", "")
	}
	sort.Slice(ready, func(i, j int) bool {
		if ready[i].T.Priority != ready[j].T.Priority {
			return ready[i].T.Priority > ready[j].T.Priority
		}
		if !ready[i].T.CreatedAt.Equal(ready[j].T.CreatedAt) {
			return ready[i].T.CreatedAt.Before(ready[j].T.CreatedAt)
		}
		return ready[i].T.ID < ready[j].T.ID
	})
	ids := make([]string, len(ready))
	for i, v := range ready {
		ids[i] = v.T.ID
	}
	return ids, nil
}

// verifyCommand is the request's verify command, else the settings', else
// the repository's .familiar/config.yaml `mergeVerify:`.
func (o *Orchestrator) verifyCommand(asked *string) (string, error) {
	if asked != nil {
		return *asked, nil
	}
	if v := o.settingsNow().MergeVerify; v != "" {
		return v, nil
	}
	cfg, err := o.readRepoConfig()
	if err != nil {
		return "", err
	}
	return cfg.MergeVerify, nil
}

func newQueueID() string {
	return "q" + newTaskID()[1:]
}

// runQueue works through the queue: each task in turn; a task handed back
// to its agent rejoins the end once it is ready again.
func (o *Orchestrator) runQueue(repo queueRepo, ids []string) {
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
		if len(pending) == 0 {
			if len(back) == 0 {
				break
			}
			select {
			case <-o.closing:
			case <-o.mq.wake:
			}
			for id := range back {
				if ready, gone := o.queueReturned(id); ready {
					delete(back, id)
					pending = append(pending, id)
					o.queueSetBack(-1)
					o.queueUpdate(func(q *protocol.Queue) {
						if it := itemOf(q, id); it != nil {
							it.State = protocol.QueueItemWaiting
						}
					})
				} else if gone != "" {
					delete(back, id)
					o.queueSetBack(-1)
					o.queueUpdate(func(q *protocol.Queue) {
						if it := itemOf(q, id); it != nil {
							it.State, it.Detail = protocol.QueueItemCancelled, gone
						}
					})
				}
			}
			continue
		}
		id := pending[0]
		pending = pending[1:]
		if o.queueOne(ctx, repo, id) {
			back[id] = true
		}
	}
	o.queueEnd(ctx)
}

func (o *Orchestrator) queueSetBack(d int) {
	o.mq.mu.Lock()
	o.mq.handedBack += d
	o.mq.mu.Unlock()
}

// queueReturned says whether a task handed back is ready again, or (gone)
// why it will not come back (it ended blocked, was cancelled…).
func (o *Orchestrator) queueReturned(id string) (ready bool, gone string) {
	a, err := o.get(id)
	if err != nil {
		return false, "the task is gone"
	}
	v := a.view()
	switch s := v.T.Status; {
	case s == protocol.StatusMerging && v.op == opNone:
		// A warm claude (warmAgentSec) may still be up: the queue's
		// operation lets it go first, as task/merge's does.
		return true, ""
	case s.HoldsWorktree() || s == protocol.StatusMerging:
		return false, ""
	default:
		return false, fmt.Sprintf("the task is %s, not ready to merge", s)
	}
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
	o.audit("", "queue.ended", "familiar", map[string]any{"queueId": snap.ID, "state": snap.State, "merged": merged, "notMerged": notMerged})
}

// queueOne runs one task through the queue: the base brought in, the
// verify command, the merge. It reports whether the task went back to its
// agent (and so rejoins the queue when ready).
func (o *Orchestrator) queueOne(ctx context.Context, repo queueRepo, id string) (handedBack bool) {
	o.mq.mu.Lock()
	q := o.mq.q
	verify, strategy, qid := q.Verify, worktree.Strategy(q.Strategy), q.ID
	o.mq.mu.Unlock()
	set := func(change func(it *protocol.QueueItem)) {
		o.queueUpdate(func(q *protocol.Queue) {
			if it := itemOf(q, id); it != nil {
				change(it)
				q.Current = id
			}
		})
	}
	a, v, err := o.beginOp(ctx, id, opMerge)
	if err != nil {
		set(func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", err.Error()
		})
		return false
	}
	done := cmdEndOp{op: opMerge}
	defer func() {
		if _, err := a.call(context.WithoutCancel(ctx), done); err != nil {
			o.logger.Warn("end queue merge", "task", id, "err", err)
		}
	}()
	var attempts int
	set(func(it *protocol.QueueItem) {
		it.Attempts++
		attempts = it.Attempts
		it.State, it.Reason, it.Detail, it.Files, it.Output, it.OutputRef = protocol.QueueItemUpdating, "", "", nil, "", ""
	})
	wt, _ := o.worktreeOfView(v)
	base := wt.BaseRef

	// fail hands the task back, or sets it aside at its last attempt.
	fail := func(reason, detail, followUp string, files []string, output, ref string) bool {
		last := attempts >= maxQueueAttempts
		if last {
			if reason == "conflict" {
				// Set aside as it was: no merge left half-done in its
				// worktree.
				if err := repo.AbortBringBase(context.WithoutCancel(ctx), wt); err != nil {
					o.logger.Warn("abort bringing the base in", "task", id, "err", err)
				}
			}
			done.block = &protocol.Blocked{Reason: protocol.BlockedMerge, Detail: "The merge queue set the task aside after " +
				fmt.Sprint(attempts) + " attempts: " + detail}
		}
		if _, err := a.call(context.WithoutCancel(ctx), done); err != nil {
			o.logger.Warn("end queue merge", "task", id, "err", err)
		}
		done = cmdEndOp{op: "settled"}
		state := protocol.QueueItemBlocked
		if !last {
			if _, err := o.TaskSend(context.WithoutCancel(ctx), &protocol.TaskSendParams{ID: id, Text: followUp}); err != nil {
				detail += "; it could not be handed back to its agent: " + err.Error()
				last = true
			} else {
				state = protocol.QueueItemHandedBack
				o.queueSetBack(1)
				o.audit(id, "queue.handedBack", "familiar", map[string]any{"queueId": qid, "reason": reason, "files": files})
			}
		}
		set(func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail, it.Files, it.Output, it.OutputRef = state, reason, detail, files, output, ref
			if state == protocol.QueueItemHandedBack {
				it.HandBacks = append(it.HandBacks, protocol.QueueHandBack{Reason: reason, Detail: detail, Files: files})
			}
		})
		return !last
	}

	err = repo.BringBase(ctx, wt, base, strategy)
	var ce *worktree.ConflictError
	switch {
	case errors.As(err, &ce):
		how := fmt.Sprintf("familiar merged %s into your branch and these files conflict: %s. The merge is in progress in your worktree: resolve the conflicts in those files (remove every conflict marker), run the tests, then finish with a short summary.",
			base, strings.Join(ce.Files, ", "))
		if strategy == worktree.Rebase {
			how = fmt.Sprintf("familiar could not rebase your branch onto %s: these files conflict: %s. Run `git rebase %s` in your worktree, resolve the conflicts, `git rebase --continue`, run the tests, then finish with a short summary.",
				base, strings.Join(ce.Files, ", "), base)
		}
		return fail("conflict", fmt.Sprintf("%s conflicts with the task in %s", base, strings.Join(ce.Files, ", ")),
			fmt.Sprintf("familiar's merge queue: %s has moved since you finished; %s", base, how), ce.Files, "", "")
	case err != nil:
		set(func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", "bringing "+base+" in: "+err.Error()
		})
		return false
	}

	if verify != "" {
		set(func(it *protocol.QueueItem) { it.State = protocol.QueueItemVerifying })
		res := o.runVerify(ctx, wt.Path, verify)
		if ctx.Err() != nil {
			return false
		}
		if !res.ok {
			shown, ref := o.verifyOutput(id, res.output)
			what := fmt.Sprintf("exited with %d", res.code)
			if res.timedOut {
				what = fmt.Sprintf("did not finish within %d s (commandTimeoutSec) and was stopped", res.timeoutSec)
			}
			o.audit(id, "queue.verifyFailed", "familiar", map[string]any{"queueId": qid, "exitCode": res.code, "timedOut": res.timedOut})
			more := ""
			if ref != "" {
				more = " (its end; the whole output: task/text " + ref + ")"
			}
			return fail("verify", fmt.Sprintf("the verify command `%s` %s", verify, what),
				fmt.Sprintf("familiar's merge queue: %s was merged into your branch, and the verify command `%s` %s. Its output%s:\n```\n%s\n```\nFix what it reports, run `%s` until it passes, then finish with a short summary.",
					base, verify, what, more, shown, verify), nil, shown, ref)
		}
	}

	set(func(it *protocol.QueueItem) { it.State = protocol.QueueItemMerging })
	res, err := o.cfg.Repo.Merge(ctx, wt, base, strategy, "familiar: "+v.T.Title)
	if errors.As(err, &ce) {
		// The base moved between our update and the merge (a commit of the
		// person's): back to the end of the queue's work, as a conflict.
		return fail("conflict", fmt.Sprintf("%s conflicts with the task in %s", base, strings.Join(ce.Files, ", ")),
			fmt.Sprintf("familiar's merge queue: %s has moved since you finished and these files conflict: %s. Merge %s into your branch, resolve them, run the tests, then finish with a short summary.",
				base, strings.Join(ce.Files, ", "), base), ce.Files, "", "")
	}
	if err != nil {
		var dirty *worktree.DirtyError
		if errors.As(err, &dirty) {
			// The person's checkout of the base changed meanwhile: the
			// queue stops here rather than refuse every task after.
			o.mq.mu.Lock()
			o.mq.cancel = true
			o.mq.mu.Unlock()
		}
		set(func(it *protocol.QueueItem) {
			it.State, it.Reason, it.Detail = protocol.QueueItemCancelled, "error", "merge: "+err.Error()
		})
		return false
	}
	done.ok = true
	done.merge = &mergeRecord{MergeResult: res, At: o.clk.Now().UTC(), Strategy: string(strategy)}
	done.audit = map[string]any{"base": res.Base, "before": res.Before, "after": res.After, "strategy": strategy, "queueId": qid}
	if _, err := a.call(context.WithoutCancel(ctx), done); err != nil {
		o.logger.Warn("end queue merge", "task", id, "err", err)
	}
	done = cmdEndOp{op: "settled"}
	o.mq.mu.Lock()
	o.mq.merged = append(o.mq.merged, id)
	o.mq.mu.Unlock()
	set(func(it *protocol.QueueItem) {
		it.State = protocol.QueueItemMerged
		it.Merge = &protocol.QueueMerge{Before: res.Before, After: res.After}
	})
	// As task/merge does: the worktree and branch go once merged (queue/undo
	// still works: it needs the merge record and the base, not the worktree).
	if o.settingsNow().RemoveWorktreeAfterMerge {
		if err := o.TaskRemove(context.WithoutCancel(ctx), &protocol.TaskRemoveParams{ID: id, DeleteBranch: true}); err != nil {
			o.logger.Warn("remove after queue merge", "task", id, "err", err)
		}
	}
	return false
}

// verifyOutput is what the queue shows of a verify command's output: masked,
// its end when long, with the reference of the whole.
func (o *Orchestrator) verifyOutput(id, out string) (shown, ref string) {
	out = o.maskString(strings.ToValidUTF8(out, "\uFFFD"))
	if len(out) <= verifyShown {
		return out, ""
	}
	_, ref = o.clipText(id, out)
	cut := len(out) - verifyShown
	for cut < len(out) && !utf8.RuneStart(out[cut]) {
		cut++
	}
	return "…" + out[cut:], ref
}

type verifyResult struct {
	ok         bool
	code       int
	timedOut   bool
	timeoutSec int
	output     string
}

// maxVerifyOutput bounds what familiar keeps of a verify command's output.
const maxVerifyOutput = 1 << 20

// runVerify runs the verify command with sh in dir, in a process group of
// its own, so a command that hangs is stopped whole (its children too)
// after commandTimeoutSec; that counts as failing.
func (o *Orchestrator) runVerify(ctx context.Context, dir, command string) verifyResult {
	timeoutSec := o.settingsNow().CommandTimeoutSec
	if timeoutSec <= 0 {
		timeoutSec = protocol.DefaultCommandTimeoutSec
	}
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FAMILIAR_MERGE_QUEUE=1")
	out := &cappedBuffer{max: maxVerifyOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child that keeps the output pipe open after the group is killed
	// (it left the group) does not hold Wait for ever.
	cmd.WaitDelay = 2 * time.Second
	wait, err := procs.StartCommand(cmd)
	if err != nil {
		return verifyResult{code: -1, output: "familiar could not start the verify command: " + err.Error()}
	}
	exited := make(chan error, 1)
	go func() { exited <- wait() }()
	timer := o.clk.NewTimer(time.Duration(timeoutSec) * time.Second)
	defer timer.Stop()
	res := verifyResult{timeoutSec: timeoutSec}
	select {
	case err = <-exited:
	case <-timer.C():
		res.timedOut = true
	case <-ctx.Done():
		res.timedOut = true
	}
	if res.timedOut {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-exited
	}
	res.output = out.String()
	var ee *exec.ExitError
	switch {
	case res.timedOut:
		res.code = -1
	case err == nil:
		res.ok = true
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	default:
		res.code = -1
		res.output += "\n" + err.Error()
	}
	// Whatever the command left behind in its group goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return res
}

// cappedBuffer keeps the first max bytes written and counts the rest.
type cappedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	dropped int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
	} else {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped > 0 {
		return c.buf.String() + fmt.Sprintf("\n[familiar: %d more bytes of output not kept]", c.dropped)
	}
	return c.buf.String()
}

// QueueStatus is queue/status.
func (o *Orchestrator) QueueStatus(ctx context.Context, p *protocol.QueueStatusParams) (*protocol.QueueStatusResult, error) {
	res := &protocol.QueueStatusResult{}
	if v, err := o.verifyCommand(nil); err == nil {
		res.DefaultVerify = v
	} else {
		// A broken config.yaml: queue/merge says so when it starts.
		o.logger.Warn("queue status: default verify", "err", err)
	}
	o.mq.mu.Lock()
	defer o.mq.mu.Unlock()
	res.Queue = o.mq.snapshotLocked()
	return res, nil
}

// QueueCancel is queue/cancel: the queue stops after its current step.
func (o *Orchestrator) QueueCancel(ctx context.Context, p *protocol.QueueCancelParams) (*protocol.Queue, error) {
	o.mq.mu.Lock()
	if !o.mq.running {
		o.mq.mu.Unlock()
		return nil, protocol.FailedPrecondition("no merge queue is running", "")
	}
	o.mq.cancel = true
	snap := o.mq.snapshotLocked()
	o.mq.mu.Unlock()
	o.mq.poke()
	return snap, nil
}

// QueueUndo is queue/undo: the last queue's merges undone in reverse
// order, each as task/undo does it.
func (o *Orchestrator) QueueUndo(ctx context.Context, p *protocol.QueueUndoParams) (*protocol.Queue, error) {
	o.mq.mu.Lock()
	if o.mq.running {
		o.mq.mu.Unlock()
		return nil, protocol.FailedPrecondition("the merge queue is running; queue/cancel stops it first", "")
	}
	if o.mq.q == nil {
		o.mq.mu.Unlock()
		return nil, protocol.FailedPrecondition("no merge queue has run since familiar started", "")
	}
	merged := slices.Clone(o.mq.merged)
	o.mq.mu.Unlock()
	for i := len(merged) - 1; i >= 0; i-- {
		id := merged[i]
		if _, err := o.undo(ctx, &protocol.TaskIDParams{ID: id}, false); err != nil {
			var pe *protocol.Error
			msg := err.Error()
			if errors.As(err, &pe) {
				msg = pe.Message
			}
			o.queueUpdate(nil)
			return nil, protocol.FailedPrecondition(fmt.Sprintf("undoing the queue's merge of %s: %s (the merges after it are undone)", id, msg), "")
		}
		o.mq.mu.Lock()
		o.mq.merged = o.mq.merged[:i]
		o.mq.mu.Unlock()
		o.queueUpdate(func(q *protocol.Queue) {
			if it := itemOf(q, id); it != nil {
				it.State = protocol.QueueItemUndone
			}
		})
	}
	snap := o.queueUpdate(func(q *protocol.Queue) { q.State = protocol.QueueUndone })
	if len(merged) > 0 {
		// One warning for the queue: one per task (task/undo's) buried the
		// editor in as many notifications saying the same.
		o.pub.publish("", protocol.ServerMessageNotification{Level: protocol.LevelWarning,
			Text: fmt.Sprintf("Undid the merge queue's %s into %s, but %s Each task's undone work is kept under refs/familiar/undo/.",
				map[bool]string{true: "merge", false: fmt.Sprintf("%d merges", len(merged))}[len(merged) == 1], snap.BaseRef, notUndoable)})
	}
	return snap, nil
}
