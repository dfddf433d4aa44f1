package orchestrator

import (
	"context"

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
