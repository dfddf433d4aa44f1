package orchestrator

import (
	"context"
	"errors"
	"time"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// mergeRecord is what a merge did, kept for undo.
type mergeRecord struct {
	worktree.MergeResult
	At       time.Time `json:"at"`
	Strategy string    `json:"strategy"`
}

// notUndoable is said with every undo: what familiar cannot take back.
const notUndoable = "familiar cannot undo pushes, nor changes made outside the worktree (other files, services, databases)."

// TaskMerge merges a finished task's branch into its base ref.
func (o *Orchestrator) TaskMerge(ctx context.Context, p *protocol.TaskMergeParams) (*protocol.Task, error) {
	t, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	if err := o.waitStopped(ctx, t); err != nil {
		return nil, err
	}
	o.mu.Lock()
	status := t.T.Status
	if status != protocol.StatusMerging {
		o.mu.Unlock()
		return nil, errTransition("merge", status)
	}
	wt := o.worktreeOf(t)
	o.mu.Unlock()
	if wt.Path == "" || wt.BaseRef == "" || wt.BaseRef == "HEAD" {
		return nil, protocol.FailedPrecondition("the task's base is not a branch; merge its branch by hand", status)
	}
	strategy := worktree.Strategy(p.Strategy)
	if strategy == "" {
		strategy = worktree.Merge
	}
	msg := p.Message
	if msg == "" {
		msg = "familiar: " + t.T.Title
	}
	res, err := o.cfg.Repo.Merge(ctx, wt, wt.BaseRef, strategy, msg)
	if err != nil {
		var ce *worktree.ConflictError
		if errors.As(err, &ce) {
			return nil, protocol.Conflict("the merge conflicts; nothing was changed: "+ce.Error(), ce.Files)
		}
		if errors.Is(err, worktree.ErrFailedPrecondition) {
			return nil, protocol.FailedPrecondition(err.Error(), status)
		}
		return nil, mapError(err, "merge")
	}
	o.mu.Lock()
	if err := o.setStatusLocked(t, protocol.StatusMerged); err != nil {
		o.mu.Unlock()
		return nil, err
	}
	t.Merge = &mergeRecord{MergeResult: res, At: o.clk.Now().UTC(), Strategy: string(strategy)}
	o.audit(t.T.ID, "task.merged", "user", map[string]any{"base": res.Base, "before": res.Before, "after": res.After, "strategy": strategy})
	o.touchLocked(t)
	remove := o.settings.RemoveWorktreeAfterMerge
	o.mu.Unlock()
	if remove {
		if err := o.TaskRemove(ctx, &protocol.TaskRemoveParams{ID: t.T.ID, DeleteBranch: true}); err != nil {
			o.logger.Warn("remove after merge", "task", t.T.ID, "err", err)
		}
	}
	return o.view(t), nil
}

// TaskUndo reverts, within undoWindowSec, a merge (the base goes back to its
// pre-merge commit if nobody moved it) or, before a merge, the task's last
// checkpoint. The undone commit stays at refs/familiar/undo/<id>.
func (o *Orchestrator) TaskUndo(ctx context.Context, p *protocol.TaskIDParams) (*protocol.Task, error) {
	t, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	if err := o.waitStopped(ctx, t); err != nil {
		return nil, err
	}
	o.mu.Lock()
	status := t.T.Status
	window := time.Duration(o.settings.UndoWindowSec) * time.Second
	since := t.T.FinishedAt
	if t.Merge != nil && status == protocol.StatusMerged {
		since = t.Merge.At
	}
	wt := o.worktreeOf(t)
	merge := t.Merge
	o.mu.Unlock()
	switch {
	case status != protocol.StatusMerged && status != protocol.StatusMerging && status != protocol.StatusBlocked && status != protocol.StatusCancelled:
		return nil, errTransition("undo", status)
	case window <= 0 || since.IsZero() || o.clk.Now().Sub(since) > window:
		return nil, protocol.FailedPrecondition("the undo window has passed", status)
	}
	if status == protocol.StatusMerged {
		if err := o.cfg.Repo.UndoMerge(ctx, t.T.ID, merge.MergeResult); err != nil {
			if errors.Is(err, worktree.ErrFailedPrecondition) {
				return nil, protocol.FailedPrecondition(err.Error(), status)
			}
			return nil, mapError(err, "undo")
		}
		o.mu.Lock()
		_ = o.setStatusLocked(t, protocol.StatusMerging)
		t.Merge = nil
		o.audit(t.T.ID, "task.undone", "user", map[string]any{"merge": merge, "keptAt": worktree.UndoRef(t.T.ID)})
		o.touchLocked(t)
		o.mu.Unlock()
	} else {
		if wt.Path == "" {
			return nil, protocol.FailedPrecondition("the task has no worktree", status)
		}
		at, err := o.cfg.Repo.StepBack(ctx, wt)
		if err != nil {
			if errors.Is(err, worktree.ErrFailedPrecondition) {
				return nil, protocol.FailedPrecondition(err.Error(), status)
			}
			return nil, mapError(err, "undo")
		}
		o.refreshResult(ctx, t)
		o.mu.Lock()
		o.audit(t.T.ID, "task.undone", "user", map[string]any{"branchAt": at, "keptAt": worktree.UndoRef(t.T.ID)})
		o.touchLocked(t)
		o.mu.Unlock()
	}
	o.pub.publish(t.T.ID, protocol.ServerMessageNotification{Level: protocol.LevelInfo,
		Text: "Undone; the undone commit stays at " + worktree.UndoRef(t.T.ID) + ". " + notUndoable})
	return o.view(t), nil
}

// refreshResult recomputes a finished task's changed files and commits.
func (o *Orchestrator) refreshResult(ctx context.Context, t *task) {
	o.mu.Lock()
	wt := o.worktreeOf(t)
	o.mu.Unlock()
	files, err1 := o.cfg.Repo.ChangedFiles(ctx, wt)
	commits, err2 := o.cfg.Repo.Commits(ctx, wt)
	if err := errors.Join(err1, err2); err != nil {
		o.logger.Warn("refresh result", "task", t.T.ID, "err", err)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if t.T.Result == nil {
		return
	}
	t.T.Result.ChangedFiles, t.T.Result.Commits = nil, nil
	for _, f := range files {
		t.T.Result.ChangedFiles = append(t.T.Result.ChangedFiles, protocol.ChangedFile{Path: f.Path, Status: protocol.FileStatus(f.Status), OldPath: f.OldPath})
	}
	for _, c := range commits {
		t.T.Result.Commits = append(t.T.Result.Commits, protocol.Commit{SHA: c.SHA, Subject: c.Subject})
	}
}

// waitStopped waits until a finished task's agent has exited (it is stopped
// right after completion), so git never races an agent still writing.
func (o *Orchestrator) waitStopped(ctx context.Context, t *task) error {
	o.mu.Lock()
	sess := t.sess
	stopping := t.stopping
	o.mu.Unlock()
	if sess == nil || !stopping {
		return nil
	}
	select {
	case <-sess.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
