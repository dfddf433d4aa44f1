package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Event is one entry of the event log: what a notification carried, kept so
// that task/events can replay it.
type Event struct {
	Seq     uint64 // global, strictly increasing, never reused
	TaskID  string // "" for server-wide events
	TaskSeq uint64 // 1, 2, … per task; 0 when TaskID is ""
	Kind    string // e.g. the notification method; opaque to the store
	At      time.Time
	Data    json.RawMessage
}

// eventValue is an event as stored in the events bucket (seq is the key).
type eventValue struct {
	TaskSeq uint64          `json:"taskSeq"`
	At      time.Time       `json:"at"`
	TaskID  string          `json:"taskId,omitempty"`
	Kind    string          `json:"kind"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// AppendEvent appends an event for taskID ("" for a server-wide event) and
// returns its global seq once it is durable. The task need not exist.
//
// Seqs increase in commit order. Calls from different goroutines may return
// in any order, so a caller that must publish events in seq order has to
// serialize its appends and publishes (one goroutine, or a lock) itself.
// If ctx ends first, see Cancellation in the package doc.
func (s *Store) AppendEvent(ctx context.Context, taskID, kind string, data json.RawMessage) (uint64, error) {
	seqs, err := s.AppendEvents(ctx, []NewEvent{{TaskID: taskID, Kind: kind, Data: data}})
	if err != nil {
		return 0, err
	}
	return seqs[0], nil
}

// NewEvent is one event to append.
type NewEvent struct {
	TaskID string
	Kind   string
	Data   json.RawMessage
	// Transient events take a seq in order with the rest but are not
	// stored: raw terminal output, which the task's log file already holds.
	// They never cost a commit of their own.
	Transient bool
}

// AppendEvents appends evs in one write, with consecutive seqs in the order
// given, and returns their seqs once they are durable. A publisher that must
// send events in seq order uses it to persist everything it has queued with
// one commit instead of one commit per event.
func (s *Store) AppendEvents(ctx context.Context, evs []NewEvent) ([]uint64, error) {
	stored := 0
	for _, e := range evs {
		if !e.Transient {
			stored++
		}
	}
	if stored == 0 {
		return s.numberTransient(ctx, len(evs))
	}
	seqs, err := s.appendWrite(ctx, nil, nil, evs)
	if err != nil {
		return nil, fmt.Errorf("store: append %d events: %w", len(evs), err)
	}
	return seqs, nil
}

// AppendBatch appends audit entries and events in one transaction (one
// commit, one fsync) and returns the events' seqs as AppendEvents does. A
// publisher whose batch holds both — a status change is audited, then
// announced with the question that caused it — waits for one commit
// instead of one per audit entry and one for the events (issue 29: the
// question's detect tail).
func (s *Store) AppendBatch(ctx context.Context, audits []AuditEntry, evs []NewEvent) ([]uint64, error) {
	if len(audits) == 0 {
		return s.AppendEvents(ctx, evs)
	}
	vals := make([][]byte, len(audits))
	for i, a := range audits {
		v, err := s.encodeAudit(a)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	seqs, err := s.appendWrite(ctx, audits, vals, evs)
	if err != nil {
		return nil, fmt.Errorf("store: append %d audit entries and %d events: %w", len(audits), len(evs), err)
	}
	return seqs, nil
}

// appendWrite writes audit entries (their encoded values in vals) and
// events in one journaled write and returns the events' seqs once durable.
func (s *Store) appendWrite(ctx context.Context, audits []AuditEntry, vals [][]byte, evs []NewEvent) ([]uint64, error) {
	tails := make([][]byte, len(evs))
	for i, e := range evs {
		if e.Transient {
			continue
		}
		tail, err := encodeEventTail(e.TaskID, e.Kind, e.Data)
		if err != nil {
			return nil, err
		}
		tails[i] = tail
	}
	seqs := make([]uint64, len(evs))
	var ceiling uint64
	op := &writeOp{
		journaled: true,
		apply: func(w wtx) error {
			for i, a := range audits {
				if _, err := appendAuditTx(w, a.TaskID, vals[i]); err != nil {
					return err
				}
			}
			for i, e := range evs {
				n, err := s.nextSeqTx(w)
				if err != nil {
					return err
				}
				seqs[i] = n
				if e.Transient {
					continue
				}
				if err := appendEventTx(w, n, s.clock.Now().UTC(), e.TaskID, tails[i]); err != nil {
					return err
				}
			}
			ceiling = w.tx.Bucket(bucketEvents).Sequence()
			return nil
		},
	}
	if len(seqs) > 0 {
		op.onCommit = func() { s.committed(seqs[len(seqs)-1], ceiling) }
	}
	if err := s.submitOp(ctx, op); err != nil {
		return nil, err
	}
	return seqs, nil
}

// encodeEventTail validates an event and encodes everything but the fields
// the writer assigns, in the caller's goroutine: encoding validates and
// compacts data, which is linear in its size, and the writer is shared by
// everyone.
func encodeEventTail(taskID, kind string, data json.RawMessage) ([]byte, error) {
	if len(taskID) > maxIDLen {
		return nil, fmt.Errorf("store: append event: %w: task id is %d bytes", ErrInvalid, len(taskID))
	}
	if kind == "" {
		return nil, fmt.Errorf("store: append event for %q: %w: empty kind", taskID, ErrInvalid)
	}
	if err := validJSON("event data", data); err != nil {
		return nil, fmt.Errorf("store: append event %s for %q: %w", kind, taskID, err)
	}
	tail, err := json.Marshal(struct {
		TaskID string          `json:"taskId,omitempty"`
		Kind   string          `json:"kind"`
		Data   json.RawMessage `json:"data,omitempty"`
	}{taskID, kind, data})
	if err != nil {
		return nil, fmt.Errorf("store: append event %s for %q: %w", kind, taskID, err)
	}
	return tail[1:], nil // drop '{': the writer prepends its own fields
}

// appendEventTx writes one event in the writer's transaction. at is stamped
// here, not at the call, so that At never goes backwards as seq goes forward
// (with a monotonic clock).
func appendEventTx(w wtx, n uint64, at time.Time, taskID string, tail []byte) error {
	var taskSeq uint64
	if taskID != "" {
		path := [][]byte{bucketEventsByTask, []byte(taskID)}
		var err error
		if taskSeq, err = w.nextSequence(path); err != nil {
			return err
		}
		if err := w.put(path, u64(n), []byte{}); err != nil {
			return err
		}
	}
	v := make([]byte, 0, 64+len(tail))
	v = append(v, `{"taskSeq":`...)
	v = strconv.AppendUint(v, taskSeq, 10)
	v = append(v, `,"at":"`...)
	v = at.AppendFormat(v, time.RFC3339Nano)
	v = append(v, `",`...)
	v = append(v, tail...)
	return w.put([][]byte{bucketEvents}, u64(n), v)
}

// Events returns up to limit (<= 0 means DefaultLimit) events with seq >
// sinceSeq, oldest first: all events if taskID is "", else that task's.
//
// lastSeq is what to pass as sinceSeq next time. When the page was cut short
// by limit it is the last returned event's seq; otherwise it is the last seq
// assigned at the time of the read, so a client that then drops
// notifications with seq <= lastSeq neither misses nor repeats an event.
func (s *Store) Events(taskID string, sinceSeq uint64, limit int) ([]Event, uint64, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	var out []Event
	// Read before the transaction: every event up to it is committed (or
	// was transient), so the page stops there and a client that drops
	// notifications up to lastSeq misses none. Events answered from the
	// journal are waited for first, so a caller reads what it appended.
	s.awaitCommitted()
	lastSeq := s.visibleSeq()
	visible := lastSeq
	err := s.view(func(tx *bolt.Tx) error {
		events := tx.Bucket(bucketEvents)
		if sinceSeq == math.MaxUint64 {
			return nil
		}
		// Walk the task's index, or the log itself; either way keys are seqs.
		var c *bolt.Cursor
		if taskID == "" {
			c = events.Cursor()
		} else if tb := tx.Bucket(bucketEventsByTask).Bucket([]byte(taskID)); tb != nil {
			c = tb.Cursor()
		} else {
			return nil
		}
		k, _ := c.Seek(u64(sinceSeq + 1))
		for ; k != nil && decodeU64(k) <= visible; k, _ = c.Next() {
			if len(out) == limit {
				lastSeq = out[len(out)-1].Seq
				return nil
			}
			v := events.Get(k)
			if v == nil {
				return fmt.Errorf("task %q index names event %x, which is missing", taskID, k)
			}
			var ev eventValue
			if err := json.Unmarshal(v, &ev); err != nil {
				return fmt.Errorf("stored event %x is corrupt: %w", k, err)
			}
			out = append(out, Event{
				Seq:     decodeU64(k),
				TaskID:  ev.TaskID,
				TaskSeq: ev.TaskSeq,
				Kind:    ev.Kind,
				At:      ev.At.UTC(),
				Data:    ev.Data,
			})
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("store: events of %q since %d: %w", taskID, sinceSeq, err)
	}
	return out, lastSeq, nil
}
