package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/familiar-dev/familiar/protocol"
)

// The merge queue (issues 25 and 34): the ready tasks merged into their
// base one after the other, each checked first, so the base never gets a
// merge nobody ran the checks on. As merge queues teams trust do it (GitHub's
// merge queue, bors, Zuul), what is checked is the merge, not the branch:
// candidate k is the base with tasks 1..k merged, built as commits beside
// everything (worktree.Candidate), each verified in a scratch worktree of
// its own, up to queueParallel at once; the base fast-forwards to the
// longest passing prefix, and a failing candidate's task goes back to its
// agent while those behind it are rebuilt without it. A task's own branch
// is never rewritten by the queue: only a conflict with the base is handed
// to the agent as a merge in progress in its worktree, whose resolution is
// the agent's own commit (and queue/undo takes that back too). One queue
// per repository, run by one goroutine of the orchestrator's; each task it
// works on is owned by the queue's operation (opMerge) meanwhile, as
// task/merge owns it.

// maxQueueAttempts: a task that fails the queue this often is set aside
// (blocked{merge}).
const maxQueueAttempts = 2

// verifyShown is how much of a verify command's output the queue shows and
// hands back (its end: where test runners say what failed).
const verifyShown = 4000

// hunkLines bounds the conflicting hunks a hand-back prompt carries.
const hunkLines = 120

// mergeQueue is the repository's queue: the running one, or the last.
type mergeQueue struct {
	mu      sync.Mutex
	q       *protocol.Queue // guarded by mu
	running bool            // guarded by mu
	cancel  bool            // guarded by mu
	// merged are the queue's merges in order, for queue/undo.
	merged []string // guarded by mu: task ids
	// moved are the task branches the queue caused to move (a conflict
	// handed to the agent, resolved by a commit of its own), with where
	// each was before: queue/undo puts them back.
	moved map[string]string // guarded by mu
	// verify is the running queue's verify command as written (Queue.Verify
	// is what is shown of it: masked).
	verify string // guarded by mu
	// wake: a task handed back may be ready again.
	wake chan struct{}
	// handedBack counts tasks working on a hand-back (actors poke wake
	// only then).
	handedBack int // guarded by mu
	// told: a queue familiar stopped has been said (queue_store.go);
	// notice is that, for the first client to initialize.
	told   bool   // guarded by mu
	notice string // guarded by mu
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
	o.queueSaveLocked()
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
	repo := o.cfg.Repo
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
	// What is shown and kept of the command is masked; the queue runs it
	// as written.
	shownVerify := o.maskString(verify)
	q := &protocol.Queue{ID: newQueueID(), State: protocol.QueueRunning, Strategy: strategy, Verify: shownVerify,
		BaseRef: entries[0].base, StartedAt: o.clk.Now().UTC(), Items: []protocol.QueueItem{}, Parallel: o.queueParallel()}
	for _, e := range entries {
		q.Items = append(q.Items, protocol.QueueItem{TaskID: e.id, Title: e.title, State: protocol.QueueItemWaiting})
	}
	o.mq.q, o.mq.running, o.mq.cancel, o.mq.merged, o.mq.handedBack, o.mq.moved = q, true, false, nil, 0, map[string]string{}
	o.mq.verify = verify
	o.mq.mu.Unlock()
	o.audit("", "queue.started", "user", map[string]any{"queueId": q.ID, "ids": ids, "strategy": strategy, "verify": shownVerify})
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
	moved := maps.Clone(o.mq.moved)
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
	// The branches the queue moved (a conflict handed to the agent, and
	// its resolution) go back too: each task's change is its own again.
	var restoreErrs []string
	for _, id := range slices.Sorted(maps.Keys(moved)) {
		if err := o.restoreBranch(ctx, id, moved[id]); err != nil {
			restoreErrs = append(restoreErrs, fmt.Sprintf("%s: %s", id, errorWords(err)))
			continue
		}
		o.mq.mu.Lock()
		delete(o.mq.moved, id)
		o.mq.mu.Unlock()
	}
	snap := o.queueUpdate(func(q *protocol.Queue) { q.State = protocol.QueueUndone })
	if len(restoreErrs) > 0 {
		return nil, protocol.FailedPrecondition("the queue's merges are undone, but these task branches could not be put back where they were before the queue: "+strings.Join(restoreErrs, "; "), "")
	}
	if len(merged) > 0 {
		// One warning for the queue: one per task (task/undo's) buried the
		// editor in as many notifications saying the same.
		o.pub.publish("", protocol.ServerMessageNotification{Level: protocol.LevelWarning,
			Text: fmt.Sprintf("Undid the merge queue's %s into %s, but %s Each task's undone work is kept under refs/familiar/undo/.",
				map[bool]string{true: "merge", false: fmt.Sprintf("%d merges", len(merged))}[len(merged) == 1], snap.BaseRef, notUndoable)})
	}
	return snap, nil
}

// restoreBranch puts the task's branch back at commit (where it was before
// the queue handed it a conflict), keeping what it undid under the task's
// undo refs, and refreshes the task's changes.
func (o *Orchestrator) restoreBranch(ctx context.Context, id, commit string) error {
	op, err := o.claim(ctx, id, opUndo)
	if err != nil {
		return err
	}
	defer op.release()
	wt, ok := o.worktreeOfView(op.v)
	if !ok || wt.Branch == "" {
		return nil
	}
	if b := op.v.T.Blocked; op.v.T.Status == protocol.StatusBlocked && b != nil && b.Reason == protocol.BlockedConflict {
		// Its agent left the conflict the queue gave it unresolved
		// (nothing of it was committed): the merge of the base the
		// queue started in its worktree goes, as the base's work does.
		if err := o.cfg.Repo.AbortBringBase(ctx, wt); err != nil {
			return err
		}
	}
	if err := o.cfg.Repo.RestoreBranch(ctx, wt, commit); err != nil {
		return err
	}
	files, commits, err := o.changes(ctx, wt)
	if err != nil {
		o.logger.Warn("refresh result", "task", id, "err", err)
	}
	return op.finish(cmdEndOp{ok: true, result: &protocol.TaskResult{ChangedFiles: files, Commits: commits},
		audit: map[string]any{"branchAt": commit, "reason": "queue/undo", "keptAt": o.lastUndoRef(ctx, id)}})
}
