package orchestrator

import (
	"context"
	"sync"
)

// opHandle is a task claimed for a git operation (merge, undo, remove):
// the operation ends exactly once, with finish (what it did) or release
// (nothing), so no caller sends its end twice or forgets it:
//
//	op, err := o.claim(ctx, id, opMerge)
//	if err != nil { … }
//	defer op.release()
//	… op.finish(cmdEndOp{op: opMerge, ok: true, …})
type opHandle struct {
	o    *Orchestrator
	a    *actor
	v    *taskView // the task as the claim found it
	kind opKind
	ctx  context.Context

	once sync.Once
}

// claim begins an operation of kind on the task (single flight: a second
// one while it runs is refused).
func (o *Orchestrator) claim(ctx context.Context, id string, kind opKind) (*opHandle, error) {
	a, v, err := o.beginOp(ctx, id, kind)
	if err != nil {
		return nil, err
	}
	return &opHandle{o: o, a: a, v: v, kind: kind, ctx: context.WithoutCancel(ctx)}, nil
}

// finish ends the operation with what it did; later calls (and release)
// do nothing.
func (h *opHandle) finish(end cmdEndOp) error {
	var err error
	h.once.Do(func() {
		end.op = h.kind
		_, err = h.a.call(h.ctx, end)
	})
	return err
}

// release ends the operation having done nothing, unless it has ended.
func (h *opHandle) release() {
	if err := h.finish(cmdEndOp{}); err != nil {
		h.o.logger.Warn("end operation", "task", h.a.id, "op", h.kind, "err", err)
	}
}
