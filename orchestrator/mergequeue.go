package orchestrator

import (
	"context"
	"fmt"
	"sort"

	"github.com/familiar-dev/familiar/mergequeue"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// The merge queue is package mergequeue's; here is what the orchestrator
// gives it (mergeQueueHost: its tasks driven through internal commands, never
// its protocol methods) and the protocol methods that reach it.

// QueueCancel is queue/cancel: the queue stops after its current step.
func (o *Orchestrator) QueueCancel(ctx context.Context, p *protocol.QueueCancelParams) (*protocol.Queue, error) {
	return o.mq.Cancel()
}

// QueueUndo is queue/undo: the last queue's merges undone in reverse
// order, each as task/undo does it, and the task branches it moved put
// back.
func (o *Orchestrator) QueueUndo(ctx context.Context, p *protocol.QueueUndoParams) (*protocol.Queue, error) {
	return o.mq.Undo(ctx)
}

// mergeQueueHost is the orchestrator as the merge queue sees it.
type mergeQueueHost struct{ o *Orchestrator }

func (h mergeQueueHost) Claim(ctx context.Context, id string) (mergequeue.Op, error) {
	op, err := h.o.claim(ctx, id, opMerge)
	if err != nil {
		return nil, err
	}
	return mergeQueueOp{op}, nil
}

func (h mergeQueueHost) Task(id string) (mergequeue.Task, bool) {
	a, err := h.o.get(id)
	if err != nil {
		return mergequeue.Task{}, false
	}
	return h.o.mergeQueueTask(a.view()), true
}

// mergeQueueTask is what the queue reads of a task's view.
func (o *Orchestrator) mergeQueueTask(v *taskView) mergequeue.Task {
	t := mergequeue.Task{ID: v.T.ID, Title: v.T.Title, Status: v.T.Status, Blocked: v.T.Blocked, Busy: v.op != opNone}
	t.Worktree, _ = o.worktreeOfView(v)
	if r := v.T.Result; r != nil {
		t.Summary = r.Summary
		for _, f := range r.ChangedFiles {
			t.Changed = append(t.Changed, f.Path)
		}
	}
	if m := v.merge; m != nil && v.T.Status == protocol.StatusMerged {
		t.MergedAt, t.MergedBefore, t.Merged = m.At, m.Before, m.After
	}
	return t
}

func (h mergeQueueHost) SendFollowUp(ctx context.Context, id, text string) error {
	return h.o.sendFollowUp(ctx, id, text)
}

func (h mergeQueueHost) RemoveWorktree(ctx context.Context, id string) error {
	return h.o.removeWorktree(ctx, &protocol.TaskRemoveParams{ID: id, DeleteBranch: true})
}

func (h mergeQueueHost) UndoMerge(ctx context.Context, id string) error {
	_, err := h.o.undo(ctx, &protocol.TaskIDParams{ID: id}, false)
	return err
}

func (h mergeQueueHost) RestoreBranch(ctx context.Context, id, commit string) error {
	return h.o.restoreBranch(ctx, id, commit)
}

func (h mergeQueueHost) Audit(taskID, action, actor string, data any) {
	h.o.audit(taskID, action, actor, data)
}
func (h mergeQueueHost) Publish(taskID string, n protocol.Notification) {
	h.o.pub.publish(taskID, n)
	if _, ok := n.(protocol.QueueUpdatedNotification); ok {
		// A plan's ready steps wait for the queue to end.
		h.o.plans.Poke()
	}
}
func (h mergeQueueHost) Mask(s string) string                   { return h.o.maskString(s) }
func (h mergeQueueHost) ClipText(id, s string) (string, string) { return h.o.clipText(id, s) }
func (h mergeQueueHost) Settings() protocol.Settings            { return h.o.settingsNow() }

// mergeQueueOp is a task claimed for the queue's merge.
type mergeQueueOp struct{ op *opHandle }

func (q mergeQueueOp) Task() mergequeue.Task { return q.op.o.mergeQueueTask(q.op.v) }

func (q mergeQueueOp) Land(ctx context.Context, base, before, after, strategy, queueID string) (worktree.MergeResult, error) {
	return q.op.o.landMerge(ctx, q.op, base, before, after, strategy, queueID)
}

func (q mergeQueueOp) SetAside(block *protocol.Blocked) error {
	return q.op.finish(cmdEndOp{block: block})
}

func (q mergeQueueOp) Release() { q.op.release() }

// QueueMerge is queue/merge.
func (o *Orchestrator) QueueMerge(ctx context.Context, p *protocol.QueueMergeParams) (*protocol.Queue, error) {
	st, err := o.mergeQueueStart(ctx, p)
	if err != nil {
		return nil, err
	}
	select {
	case <-o.closing:
		return nil, protocol.Unavailable("familiar is shutting down")
	default:
	}
	return o.mq.Run(st)
}

// joinMergeQueue adds ready tasks to the running merge queue when it merges
// into their base as p asks (mergequeue.Join); false when none runs or it
// is another's kind.
func (o *Orchestrator) joinMergeQueue(ctx context.Context, p *protocol.QueueMergeParams) (bool, error) {
	if !o.mq.Running() {
		return false, nil
	}
	st, err := o.mergeQueueStart(ctx, p)
	if err != nil {
		return false, err
	}
	return o.mq.Join(st.IDs, st.Titles, st.Base, st.Strategy, st.Verify), nil
}

// mergeQueueStart checks a queue/merge: each task ready and on a branch, their
// bases' checkouts clean, the verify command found.
func (o *Orchestrator) mergeQueueStart(ctx context.Context, p *protocol.QueueMergeParams) (mergequeue.Start, error) {
	ids, err := o.mergeQueueTasks(p.IDs)
	if err != nil {
		return mergequeue.Start{}, err
	}
	type entry struct {
		id, title, base string
	}
	var entries []entry
	for _, id := range ids {
		a, err := o.get(id)
		if err != nil {
			return mergequeue.Start{}, protocol.InvalidParams("ids", fmt.Sprintf("no task %s", id))
		}
		v := a.view()
		if v.T.Status != protocol.StatusMerging {
			return mergequeue.Start{}, protocol.FailedPrecondition(fmt.Sprintf("task %s is %s, not ready to merge", id, v.T.Status), v.T.Status)
		}
		wt, _ := o.worktreeOfView(v)
		if wt.Path == "" || wt.BaseRef == "" || wt.BaseRef == "HEAD" {
			return mergequeue.Start{}, protocol.FailedPrecondition(fmt.Sprintf("task %s's base is not a branch; merge its branch by hand", id), v.T.Status)
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
		if err := o.cfg.Repo.CheckBaseClean(ctx, e.base); err != nil {
			return mergequeue.Start{}, mapError(err, "merge queue", "ids")
		}
	}
	strategy := p.Strategy
	if strategy == "" {
		strategy = protocol.MergeMerge
	}
	verify, err := o.verifyCommand(p.Verify)
	if err != nil {
		return mergequeue.Start{}, err
	}
	titles := make([]string, len(entries))
	for i, e := range entries {
		titles[i] = e.title
	}
	return mergequeue.Start{ID: newMergeQueueID(), IDs: ids, Titles: titles, Base: entries[0].base, Strategy: strategy, Verify: verify}, nil
}

// mergeQueueTasks is the tasks a queue takes: those named, or every ready one
// with something to merge, by priority (highest first), then oldest first.
func (o *Orchestrator) mergeQueueTasks(named []string) ([]string, error) {
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
func newMergeQueueID() string {
	return "q" + newTaskID()[1:]
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

// QueueStatus is queue/status.
func (o *Orchestrator) QueueStatus(ctx context.Context, p *protocol.QueueStatusParams) (*protocol.QueueStatusResult, error) {
	res := &protocol.QueueStatusResult{}
	if v, err := o.verifyCommand(nil); err == nil {
		res.DefaultVerify = v
	} else {
		// A broken config.yaml: queue/merge says so when it starts.
		o.logger.Warn("queue status: default verify", "err", err)
	}
	res.Queue = o.mq.Status()
	return res, nil
}

// reconcileMerges settles, on start, every merge a previous familiar had
// begun (its intent recorded) but not recorded as done: the base holds the
// candidate (the ref moved before familiar stopped) → the task is merged,
// undoable as any merge; it does not → the task is as it was. Each is said
// in the log and to the clients.
func (o *Orchestrator) reconcileMerges() {
	for _, a := range o.actors() {
		intent := a.st.MergeIntent // read before the scheduler starts
		if intent == nil {
			continue
		}
		title := a.view().T.Title
		done, err := o.cfg.Repo.Contains(context.Background(), intent.Base, intent.After)
		if err != nil {
			o.logger.Warn("reconcile an interrupted merge", "task", a.id, "err", err)
		}
		in := inMergeSettled{done: done && err == nil}
		text := fmt.Sprintf("familiar stopped in the middle of merging %q into %s; %s does not have it, so the task is still ready to merge.", title, intent.Base, intent.Base)
		if in.done {
			res := mergeResultOf(*intent)
			in.merge = &mergeRecord{MergeResult: res, At: intent.At, Strategy: intent.Strategy}
			in.audit = map[string]any{"base": intent.Base, "before": intent.Before, "after": intent.After, "strategy": intent.Strategy, "recovered": true}
			if intent.QueueID != "" {
				in.audit["queueId"] = intent.QueueID
			}
			text = fmt.Sprintf("familiar stopped in the middle of merging %q into %s, after %s had moved: the task is merged (task/undo takes it back as usual).", title, intent.Base, intent.Base)
		}
		o.logger.Warn("interrupted merge settled", "task", a.id, "done", in.done)
		if _, err := a.call(context.Background(), in); err != nil {
			o.logger.Warn("reconcile an interrupted merge", "task", a.id, "err", err)
			continue
		}
		o.pub.publish(a.id, protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: text})
	}
}

// landMerge is the one merge step task/merge and the queue share: the
// intent recorded (durably), the base moved from before to the candidate
// by compare-and-swap, the task merged. On an error nothing moved and the
// operation is released.
func (o *Orchestrator) landMerge(ctx context.Context, op *opHandle, base, before, after, strategy, queueID string) (worktree.MergeResult, error) {
	at := o.clk.Now().UTC()
	intent := mergeIntent{Base: base, Before: before, After: after, Strategy: strategy, QueueID: queueID, At: at}
	if _, err := op.a.call(context.WithoutCancel(ctx), cmdMergeIntent{intent: intent}); err != nil {
		op.release()
		return worktree.MergeResult{}, err
	}
	res, err := o.cfg.Repo.Advance(ctx, base, before, after)
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
