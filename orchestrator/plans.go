package orchestrator

import (
	"context"
	"fmt"
	"strings"

	"github.com/familiar-dev/familiar/plan"
	"github.com/familiar-dev/familiar/protocol"
)

// Plans are package plan's; here is what the orchestrator gives it
// (planHost: tasks created, cancelled and read, the merge queue started,
// merges undone) and the protocol methods that reach it.

func (o *Orchestrator) PlanCreate(ctx context.Context, p *protocol.PlanCreateParams) (*protocol.Plan, error) {
	if o.cfg.CLIErr != nil {
		return nil, protocol.Unavailable("claude is not available: " + o.cfg.CLIErr.Error())
	}
	if p.BaseRef != "" {
		if err := o.cfg.Repo.CheckRef(ctx, p.BaseRef); err != nil {
			return nil, protocol.InvalidParams("baseRef", err.Error())
		}
	}
	return o.plans.Create(ctx, p)
}

func (o *Orchestrator) PlanGet(ctx context.Context, p *protocol.PlanIDParams) (*protocol.Plan, error) {
	return o.plans.Get(p.ID)
}

func (o *Orchestrator) PlanList(ctx context.Context, p *protocol.PlanListParams) (*protocol.PlanListResult, error) {
	return o.plans.List(), nil
}

func (o *Orchestrator) PlanUpdate(ctx context.Context, p *protocol.PlanUpdateParams) (*protocol.Plan, error) {
	return o.plans.Update(ctx, p)
}

func (o *Orchestrator) PlanRun(ctx context.Context, p *protocol.PlanIDParams) (*protocol.Plan, error) {
	return o.plans.Run(ctx, p.ID)
}

func (o *Orchestrator) PlanCancel(ctx context.Context, p *protocol.PlanIDParams) (*protocol.Plan, error) {
	return o.plans.Cancel(ctx, p.ID)
}

func (o *Orchestrator) PlanUndo(ctx context.Context, p *protocol.PlanIDParams) (*protocol.Plan, error) {
	return o.plans.Undo(ctx, p.ID)
}

func (o *Orchestrator) PlanRetry(ctx context.Context, p *protocol.PlanStepParams) (*protocol.Plan, error) {
	return o.plans.Retry(ctx, p)
}

func (o *Orchestrator) PlanSkip(ctx context.Context, p *protocol.PlanStepParams) (*protocol.Plan, error) {
	return o.plans.Skip(ctx, p)
}

// planHost is the orchestrator as the planner sees it.
type planHost struct{ o *Orchestrator }

func (h planHost) CreateTask(ctx context.Context, p *protocol.TaskCreateParams) (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	t, err := h.o.newTask(ctx, p)
	if err != nil {
		return "", err
	}
	snap, err := h.o.enqueue(t)
	if err != nil {
		return "", err
	}
	return snap.ID, nil
}

func (h planHost) CancelTask(ctx context.Context, id string) error {
	_, err := h.o.cancelTask(ctx, &protocol.TaskIDParams{ID: id}, "its plan no longer wants it")
	return err
}

func (h planHost) ResumeTask(ctx context.Context, id string) error {
	_, err := h.o.resume(ctx, id)
	return err
}

func (h planHost) Task(id string) (plan.Task, bool) {
	a, err := h.o.get(id)
	if err != nil {
		return plan.Task{}, false
	}
	v := a.view()
	t := plan.Task{Status: v.T.Status, Blocked: v.T.Blocked, StartedAt: v.T.StartedAt, FinishedAt: v.T.FinishedAt,
		Queue: h.o.mq.ItemState(id)}
	if r := v.T.Result; r != nil {
		t.NoChanges = r.NoChanges
		t.LastWords, _ = clipAt(r.Summary, 400)
	}
	if u := v.T.Usage; u != nil {
		t.Tokens = u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
		t.CostUSD = u.CostUSD
	}
	if t.CostUSD == 0 && v.T.Result != nil && v.T.Result.CostUSD != nil {
		t.CostUSD = *v.T.Result.CostUSD
	}
	if m := v.merge; m != nil && v.T.Status == protocol.StatusMerged {
		t.Merge, t.MergedAt = &protocol.QueueMerge{Before: m.Before, After: m.After}, m.At
	}
	return t, true
}

func (h planHost) FinalText(ctx context.Context, id string) (string, error) {
	a, err := h.o.get(id)
	if err != nil {
		return "", err
	}
	r := a.view().T.Result
	if r == nil {
		return "", nil
	}
	if !r.Truncated || r.SummaryRef == "" {
		return r.Summary, nil
	}
	var b strings.Builder
	for offset := int64(0); ; {
		page, err := h.o.texts(id).Read(r.SummaryRef, offset, 1<<20)
		if err != nil {
			return "", fmt.Errorf("read the architect's plan: %w", err)
		}
		b.WriteString(page.Data)
		if !page.More || page.NextOffset <= offset {
			return b.String(), nil
		}
		offset = page.NextOffset
	}
}

func (h planHost) QueueRunning() bool { return h.o.mq.Running() }

func (h planHost) Integrate(ctx context.Context, ids []string, verify *string) error {
	p := &protocol.QueueMergeParams{IDs: ids, Verify: verify}
	// Ready while the queue runs (another step's merge): join it rather
	// than wait for its end.
	if joined, err := h.o.joinMergeQueue(ctx, p); joined || err != nil {
		return err
	}
	st, err := h.o.mergeQueueStart(ctx, p)
	if err != nil {
		return err
	}
	_, err = h.o.mq.Run(st)
	return err
}

func (h planHost) CancelQueue() error {
	_, err := h.o.mq.Cancel()
	return err
}

func (h planHost) MovedBranches() map[string]string { return h.o.mq.MovedBranches() }

func (h planHost) UndoMerge(ctx context.Context, id string) error {
	_, err := h.o.undo(ctx, &protocol.TaskIDParams{ID: id}, false)
	return err
}

func (h planHost) RestoreBranch(ctx context.Context, id, commit string) error {
	return h.o.restoreBranch(ctx, id, commit)
}

func (h planHost) DefaultBase(ctx context.Context) (string, error) {
	b, err := h.o.cfg.Repo.CurrentBranch(ctx)
	if err != nil {
		return "", mapError(err, "plan", "baseRef")
	}
	return b, nil
}

func (h planHost) Audit(taskID, action, actor string, data any) {
	h.o.audit(taskID, action, actor, data)
}
func (h planHost) Publish(n protocol.Notification) { h.o.pub.publish("", n) }
func (h planHost) Mask(s string) string            { return h.o.maskString(s) }
