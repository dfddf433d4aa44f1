package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/familiar-dev/familiar/mergequeue"
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

// TaskMerge merges a finished task's branch into its base ref, by the merge
// step the merge queue uses too (landMerge): the merge built as a candidate
// commit beside everything, refused when it holds leftover conflict
// markers, its intent recorded, then the base moved by compare-and-swap.
// One merge, undo or remove of a task runs at a time: a second request
// while one runs is refused (FailedPrecondition naming the state).
func (o *Orchestrator) TaskMerge(ctx context.Context, p *protocol.TaskMergeParams) (*protocol.Task, error) {
	op, err := o.claim(ctx, p.ID, opMerge)
	if err != nil {
		return nil, err
	}
	defer op.release()
	v := op.v
	status := v.T.Status
	wt, _ := o.worktreeOfView(v)
	if r := v.T.Result; r != nil && r.NoChanges && wt.Path != "" {
		// Nothing to merge: no commit on the base, and the task stays as it
		// is (a follow-up can still continue it). Unless commits were made
		// in its worktree by hand since: those are merged as usual.
		if commits, err := o.cfg.Repo.Commits(ctx, wt); err == nil && len(commits) == 0 {
			return o.viewOf(v), nil
		}
	}
	if wt.Path == "" || wt.BaseRef == "" || wt.BaseRef == "HEAD" {
		return nil, protocol.FailedPrecondition("the task's base is not a branch; merge its branch by hand", status)
	}
	strategy := worktree.Strategy(p.Strategy)
	if strategy == "" {
		strategy = worktree.Merge
	}
	msg := p.Message
	if msg == "" {
		summary := ""
		if r := v.T.Result; r != nil {
			summary = r.Summary
		}
		msg = mergequeue.MergeMessage(v.T.Title, summary, p.ID)
	}
	repo := o.cfg.Repo
	if err := repo.CheckBaseClean(ctx, wt.BaseRef); err != nil {
		return nil, mapError(err, "merge", "strategy")
	}
	before, err := repo.Tip(ctx, wt.BaseRef)
	if err != nil {
		return nil, mapError(err, "merge", "strategy")
	}
	after, err := repo.Candidate(ctx, before, wt, strategy, msg)
	if err != nil {
		what := "merge"
		if errors.As(err, new(*worktree.ConflictError)) {
			what = "the merge conflicts; nothing was changed"
		}
		return nil, mapError(err, what, "strategy")
	}
	if p.Paths != nil {
		if after, err = o.keepOnly(ctx, v, wt, before, after, p.Paths, msg); err != nil {
			return nil, err
		}
	}
	if after == before {
		// A merge that changes nothing is no merge: nothing is recorded,
		// so no undo can claim to take it back.
		return nil, protocol.FailedPrecondition(fmt.Sprintf("%s already holds this task's work (merged outside familiar?): nothing was merged, and there is nothing for familiar to undo", wt.BaseRef), status)
	}
	if markers, err := repo.LeftoverMarkers(ctx, before, after); err != nil {
		return nil, mapError(err, "merge", "strategy")
	} else if len(markers) > 0 {
		ue := &worktree.UnresolvedError{Markers: markers}
		return nil, protocol.FailedPrecondition("the task's change has leftover conflict markers: "+ue.Words()+"; nothing was merged", status)
	}
	if _, err := o.landMerge(ctx, op, wt.BaseRef, before, after, string(strategy), ""); err != nil {
		return nil, mapError(err, "merge", "strategy")
	}
	if o.settingsNow().RemoveWorktreeAfterMerge {
		if err := o.removeWorktree(ctx, &protocol.TaskRemoveParams{ID: p.ID, DeleteBranch: true}); err != nil {
			o.logger.Warn("remove after merge", "task", p.ID, "err", err)
		}
	}
	return o.taskNow(p.ID)
}

// keepOnly narrows the merge candidate after (made on before) to the
// task's changed files named in paths (task/merge paths): a commit on
// before with those files as the candidate has them. A renamed file keeps
// its old path's removal with it. The task's branch is not touched, so the
// files left out stay in it for a later merge. When paths covers every
// changed file the candidate is the whole merge, kept as it is.
func (o *Orchestrator) keepOnly(ctx context.Context, v *taskView, wt worktree.Worktree, before, after string, paths []string, msg string) (string, error) {
	var files []protocol.ChangedFile
	if r := v.T.Result; r != nil && len(r.ChangedFiles) > 0 {
		files = r.ChangedFiles
	} else if fs, _, err := o.changes(ctx, wt); err == nil {
		files = fs
	} else {
		return "", mapError(err, "merge", "paths")
	}
	byPath := make(map[string]protocol.ChangedFile, len(files))
	for _, f := range files {
		byPath[f.Path] = f
	}
	kept := map[string]bool{}
	var keep []string
	for _, p := range paths {
		f, ok := byPath[p]
		if !ok {
			return "", protocol.InvalidParams("paths", fmt.Sprintf("%q is not one of the task's changed files; nothing was merged.", p))
		}
		for _, q := range []string{f.Path, f.OldPath} {
			if q != "" && !kept[q] {
				kept[q] = true
				keep = append(keep, q)
			}
		}
	}
	whole := true
	for _, f := range files {
		if !kept[f.Path] {
			whole = false
		}
	}
	if whole {
		return after, nil
	}
	c, err := o.cfg.Repo.KeepOnly(ctx, before, after, keep, msg)
	if err != nil {
		return "", mapError(err, "merge", "paths")
	}
	return c, nil
}

// TaskUndo reverts, within undoWindowSec, a merge (the base goes back to its
// pre-merge commit if nobody moved it) or, before a merge, the task's last
// checkpoint. The undone commit stays at refs/familiar/undo/<id>. What it
// reports is checked: after a merge's undo the base is at its pre-merge
// commit.
func (o *Orchestrator) TaskUndo(ctx context.Context, p *protocol.TaskIDParams) (*protocol.Task, error) {
	return o.undo(ctx, p, true)
}

// undo is task/undo; warn says where the undone work is kept (queue/undo
// says it once for all its tasks instead of a warning per task).
func (o *Orchestrator) undo(ctx context.Context, p *protocol.TaskIDParams, warn bool) (*protocol.Task, error) {
	op, err := o.claim(ctx, p.ID, opUndo)
	if err != nil {
		return nil, err
	}
	defer op.release()
	v := op.v
	done := cmdEndOp{op: opUndo}
	status := v.T.Status
	merge := v.merge
	// The task's undoableUntil says the same, so a client that offers Undo
	// while it holds is never refused.
	if _, why := undoWindow(v.T, merge, time.Duration(o.settingsNow().UndoWindowSec)*time.Second, o.clk.Now()); why != "" {
		return nil, protocol.FailedPrecondition(why, status)
	}
	wt, hasWT := o.worktreeOfView(v)
	if status == protocol.StatusMerged {
		if merge.Before == merge.After {
			return nil, protocol.FailedPrecondition("familiar's merge of this task changed nothing on "+merge.Base+" (it already held the work), so there is nothing to undo", status)
		}
		if err := o.cfg.Repo.UndoMerge(ctx, p.ID, merge.MergeResult); err != nil {
			return nil, mapError(err, "undo", "id")
		}
		if err := o.cfg.Repo.CheckRefAt(ctx, merge.Base, merge.Before); err != nil {
			return nil, mapError(err, "undo", "id")
		}
		done.ok, done.undone = true, true
		done.audit = map[string]any{"merge": merge, "keptAt": o.lastUndoRef(ctx, p.ID)}
	} else {
		if !hasWT {
			return nil, protocol.FailedPrecondition("the task has no worktree", status)
		}
		// A branch its base already holds (merged outside familiar):
		// stepping it back would take nothing out of the base, so no undo
		// claims to.
		if tip, err := o.cfg.Repo.BranchTip(ctx, wt); err == nil && tip != wt.BaseCommit && wt.BaseRef != "" {
			if in, err := o.cfg.Repo.Contains(ctx, wt.BaseRef, tip); err == nil && in {
				return nil, protocol.FailedPrecondition(fmt.Sprintf("%s already holds this task's work (merged outside familiar), and familiar did not merge it, so it cannot undo it: revert it on %s by hand", wt.BaseRef, wt.BaseRef), status)
			}
		}
		at, err := o.cfg.Repo.StepBack(ctx, wt)
		if err != nil {
			return nil, mapError(err, "undo", "id")
		}
		files, commits, err := o.changes(ctx, wt)
		if err != nil {
			o.logger.Warn("refresh result", "task", p.ID, "err", err)
		}
		done.ok = true
		done.result = &protocol.TaskResult{ChangedFiles: files, Commits: commits}
		done.audit = map[string]any{"branchAt": at, "keptAt": o.lastUndoRef(ctx, p.ID)}
	}
	if err := op.finish(done); err != nil {
		return nil, err
	}
	// A warning, not news: what the undo did not take back (a push) is
	// what a person must act on, and clients show warnings (the VS Code
	// extension leaves info in its log).
	// What was not taken back comes first: a notification shows its first
	// line when others stack on it, and the refs are for later.
	if warn {
		o.pub.publish(p.ID, protocol.ServerMessageNotification{Level: protocol.LevelWarning,
			Text: "Undone, but " + notUndoable + " The undone commit stays at " + o.lastUndoRef(ctx, p.ID) + " (every undo of the task is kept under " + worktree.UndoRef(p.ID) + "/)."})
	}
	return o.taskNow(p.ID)
}

// lastUndoRef is the ref the task's latest undo kept its work at.
func (o *Orchestrator) lastUndoRef(ctx context.Context, id string) string {
	kept, err := o.cfg.Repo.UndoRefs(ctx, id)
	if err != nil || len(kept) == 0 {
		return worktree.UndoRef(id) + "/"
	}
	return kept[len(kept)-1].Ref
}

// undoableUntil is when task/undo stops being accepted for t, zero when it
// is not (or no longer) accepted.
func undoableUntil(t protocol.Task, merge *mergeRecord, window time.Duration, now time.Time) time.Time {
	until, _ := undoWindow(t, merge, window, now)
	return until
}

// undoWindow is task/undo's check and the task's undoableUntil, one
// function so the two cannot disagree: when the undo stops being accepted,
// or (zero time) why it is not.
func undoWindow(t protocol.Task, merge *mergeRecord, window time.Duration, now time.Time) (time.Time, string) {
	var since time.Time
	switch {
	case t.Status == protocol.StatusMerged:
		// A merge is undone in the base, worktree or not; its window runs
		// from the merge.
		if merge == nil {
			return time.Time{}, "familiar has no record of this merge"
		}
		since = merge.At
	case t.Status.Undoable():
		// Before a merge an undo steps the task's branch back in its
		// worktree: none (never started, or removed) is nothing to undo.
		if t.Worktree == nil {
			return time.Time{}, "the task has no worktree"
		}
		since = t.FinishedAt
	default:
		return time.Time{}, "the task is " + t.Status.Words() + ": only a finished task's work can be undone"
	}
	switch {
	case window <= 0:
		return time.Time{}, "undo is turned off (undoWindowSec is 0)"
	case since.IsZero() || now.Sub(since) > window:
		return time.Time{}, "the undo window has passed"
	}
	return since.Add(window).UTC(), ""
}

func (o *Orchestrator) worktreeOfView(v *taskView) (worktree.Worktree, bool) {
	return o.worktreeOf(&persisted{T: v.T})
}

// mergeResultOf is the merge an intent describes, as if it had been
// recorded: whether the base's checkout moved with it is not known, and
// undo needs only the base and the two commits.
func mergeResultOf(i mergeIntent) worktree.MergeResult {
	return worktree.MergeResult{Base: i.Base, Before: i.Before, After: i.After}
}
