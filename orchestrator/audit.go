package orchestrator

import (
	"context"
	"encoding/json"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
)

// AuditList is audit/list: newest first, filtered, cursor-paged. Entries
// were masked when they were written.
func (o *Orchestrator) AuditList(ctx context.Context, p *protocol.AuditListParams) (*protocol.AuditListResult, error) {
	entries, next, err := o.cfg.Store.Audit(store.AuditFilter{
		TaskID: p.TaskID, Action: p.Action, Since: p.Since.Time, Until: p.Until.Time,
		Limit: p.EffectiveLimit(), Cursor: p.Cursor,
	})
	if err != nil {
		return nil, mapError(err, "read audit log", "cursor")
	}
	res := &protocol.AuditListResult{NextCursor: next}
	for _, e := range entries {
		res.Entries = append(res.Entries, protocol.AuditEntry{
			Seq: int64(e.Seq), At: e.At, TaskID: e.TaskID, Action: e.Action, Actor: e.Actor, Data: e.Data,
		})
	}
	return res, nil
}

// audit appends an entry to the audit log, in order with the notifications
// (the publisher writes both). Entries are never dropped silently: failures
// are logged.
func (o *Orchestrator) audit(taskID, action, actor string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		o.logger.Error("encode audit entry", "action", action, "err", err)
		return
	}
	o.pub.appendAudit(store.AuditEntry{At: o.clk.Now().UTC(), TaskID: taskID, Action: action, Actor: actor, Data: o.mask(b)})
}

// mask hides secrets in JSON familiar records but did not write itself.
func (o *Orchestrator) mask(b json.RawMessage) json.RawMessage { return o.masker.JSON(b) }

// maskString hides secrets in text familiar records but did not write.
func (o *Orchestrator) maskString(s string) string { return o.masker.String(s) }
