package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"

	"github.com/familiar-dev/familiar/mailbox"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
)

// publisher gives every notification its global seq by appending it to the
// store, then sends it to the clients — in the order publish was called, and
// only once it is durable, so a client never sees a seq that a restart could
// lose. Its mailbox drains on one goroutine, so a slow commit never blocks
// the caller.
type publisher struct {
	st       *store.Store
	notifier Notifier
	logger   *slog.Logger
	box      *mailbox.Mailbox[pending]
}

type pending struct {
	taskID string
	n      protocol.Notification
	audit  *store.AuditEntry // instead of n: an audit entry, kept in order with the rest
	// unstored: numbered but not written, like output; for what must reach
	// the clients when the store cannot write (that it cannot).
	unstored bool
}

// maxOutputNotification bounds how much output one task/output carries when
// consecutive ones are merged while the store is busy.
const maxOutputNotification = 64 << 10

func newPublisher(st *store.Store, n Notifier, logger *slog.Logger) *publisher {
	p := &publisher{st: st, notifier: n, logger: logger}
	// Everything queued goes into one commit: a lone commit costs
	// milliseconds here, so per-notification commits would throttle several
	// busy agents.
	p.box = mailbox.New(mailbox.Options[pending]{Handle: p.send, Merge: mergeOutput})
	return p
}

// mergeOutput folds a task's output chunk into its chunk queued just before,
// and a chunk of streamed text or thinking into the one of the same message
// queued just before it: under the stream driver every delta is a stored
// event, and while the store is busy they go out as one.
func mergeOutput(last *pending, next pending) bool {
	if last.audit != nil || next.audit != nil || last.unstored != next.unstored || last.taskID != next.taskID {
		return false
	}
	if tr, ok := next.n.(protocol.TaskTranscriptNotification); ok {
		prev, ok := last.n.(protocol.TaskTranscriptNotification)
		if !ok || prev.ID != tr.ID || prev.Entry.Kind != tr.Entry.Kind || prev.Entry.MessageID != tr.Entry.MessageID ||
			(tr.Entry.Kind != "text" && tr.Entry.Kind != "thinking") || len(prev.Entry.Text)+len(tr.Entry.Text) > maxOutputNotification {
			return false
		}
		prev.Entry.Text += tr.Entry.Text
		last.n = prev
		return true
	}
	out, ok := next.n.(protocol.TaskOutputNotification)
	if !ok {
		return false
	}
	prev, ok := last.n.(protocol.TaskOutputNotification)
	if !ok || prev.ID != out.ID || len(prev.Data)+len(out.Data) > maxOutputNotification {
		return false
	}
	prev.Data += out.Data
	last.n = prev
	return true
}

// appendAudit queues an audit entry; entries are written in the order they
// were queued, after the notifications queued before them.
func (p *publisher) appendAudit(e store.AuditEntry) {
	p.box.Push(pending{taskID: e.TaskID, audit: &e})
}

func (p *publisher) publish(taskID string, n protocol.Notification) {
	p.box.Push(pending{taskID: taskID, n: n})
}

// publishUnstored sends n with a seq but without writing it: it still
// reaches the clients while the store cannot write.
func (p *publisher) publishUnstored(taskID string, n protocol.Notification) {
	p.box.Push(pending{taskID: taskID, n: n, unstored: true})
}

func (p *publisher) send(batch []pending) {
	if p.sendTogether(batch) {
		return
	}
	// Notifications up to each audit entry go first, so the log's order
	// follows what clients saw.
	start := 0
	for i, item := range batch {
		if item.audit == nil {
			continue
		}
		p.sendNotifications(batch[start:i])
		if _, err := p.st.AppendAudit(context.Background(), *item.audit); err != nil {
			p.logger.Error("audit", "action", item.audit.Action, "err", err)
		}
		start = i + 1
	}
	p.sendNotifications(batch[start:])
}

func (p *publisher) sendNotifications(batch []pending) {
	if len(batch) == 0 {
		return
	}
	evs := make([]store.NewEvent, 0, len(batch))
	kept := batch[:0]
	for _, item := range batch {
		data, err := json.Marshal(item.n)
		if err != nil {
			p.logger.Error("encode notification", "method", item.n.Method(), "err", err)
			continue
		}
		// Raw output is in the task's log file already: it takes a seq in
		// order with the rest but costs no write (and so never holds up a
		// question behind its commit).
		_, transient := item.n.(protocol.TaskOutputNotification)
		evs = append(evs, store.NewEvent{TaskID: item.taskID, Kind: item.n.Method(), Data: data, Transient: transient || item.unstored})
		kept = append(kept, item)
	}
	if len(evs) == 0 {
		return
	}
	seqs, err := p.st.AppendEvents(context.Background(), evs)
	if err != nil {
		// Not persisted means no seq a client could rely on: drop them and
		// say so; the tasks themselves are saved separately. What needs no
		// write (output, the store's own state) still goes out.
		p.logger.Error("persist notifications", "count", len(evs), "err", err)
		var tevs []store.NewEvent
		var titems []pending
		for i, e := range evs {
			if e.Transient {
				tevs, titems = append(tevs, e), append(titems, kept[i])
			}
		}
		if len(tevs) == 0 || len(tevs) == len(evs) {
			return
		}
		if seqs, err = p.st.AppendEvents(context.Background(), tevs); err != nil {
			return
		}
		evs, kept = tevs, titems
	}
	p.notify(kept, evs, seqs)
}

// sendTogether writes a batch's audit entries and notifications in one
// commit, then sends the notifications: a question announced after the
// status change it caused (audited) waited for two commits in turn, the
// audit's and its own, which was the stream driver's detect tail under load
// (issue 29). Every notification is still durable before a client sees it.
// It reports false, having sent nothing, for a batch without audit entries
// or when that commit fails (send then writes piece by piece, so what can
// be written still is).
func (p *publisher) sendTogether(batch []pending) bool {
	var audits []store.AuditEntry
	for _, item := range batch {
		if item.audit != nil {
			audits = append(audits, *item.audit)
		}
	}
	if len(audits) == 0 {
		return false
	}
	evs := make([]store.NewEvent, 0, len(batch))
	kept := make([]pending, 0, len(batch))
	for _, item := range batch {
		if item.audit != nil {
			continue
		}
		data, err := json.Marshal(item.n)
		if err != nil {
			p.logger.Error("encode notification", "method", item.n.Method(), "err", err)
			continue
		}
		_, transient := item.n.(protocol.TaskOutputNotification)
		evs = append(evs, store.NewEvent{TaskID: item.taskID, Kind: item.n.Method(), Data: data, Transient: transient || item.unstored})
		kept = append(kept, item)
	}
	seqs, err := p.st.AppendBatch(context.Background(), audits, evs)
	if err != nil {
		p.logger.Warn("persist a batch in one commit; writing it piece by piece", "audits", len(audits), "events", len(evs), "err", err)
		return false
	}
	p.notify(kept, evs, seqs)
	return true
}

// notify sends each kept notification with the seq the store gave it.
func (p *publisher) notify(kept []pending, evs []store.NewEvent, seqs []uint64) {
	if p.notifier == nil {
		return
	}
	for i, item := range kept {
		params, err := withSeq(evs[i].Data, int64(seqs[i]))
		if err != nil {
			p.logger.Error("encode notification", "method", item.n.Method(), "err", err)
			continue
		}
		p.notifier.Notify(item.n.Method(), params)
	}
}

// close sends what is queued, then stops.
func (p *publisher) close() { p.box.Close() }

// seqPlaceholder is how every notification's JSON begins: Seq is the first
// field of each, zero until the store assigns it (TestNotificationsStartWithSeq).
const seqPlaceholder = `{"seq":0,`

// withSeq sets "seq" in a notification's params: the store assigns it after
// the params were encoded. The common case splices the number in without
// decoding the params again.
func withSeq(params json.RawMessage, seq int64) (json.RawMessage, error) {
	if bytes.HasPrefix(params, []byte(seqPlaceholder)) {
		out := make([]byte, 0, len(params)+20)
		out = append(out, `{"seq":`...)
		out = strconv.AppendInt(out, seq, 10)
		out = append(out, params[len(seqPlaceholder)-1:]...)
		return out, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil {
		return nil, err
	}
	s, _ := json.Marshal(seq)
	m["seq"] = s
	return json.Marshal(m)
}
