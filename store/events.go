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
// See submit for what ctx cancellation means.
func (s *Store) AppendEvent(ctx context.Context, taskID, kind string, data json.RawMessage) (uint64, error) {
	if len(taskID) > maxIDLen {
		return 0, fmt.Errorf("store: append event: %w: task id is %d bytes", ErrInvalid, len(taskID))
	}
	if kind == "" {
		return 0, fmt.Errorf("store: append event for %q: %w: empty kind", taskID, ErrInvalid)
	}
	if err := validJSON("event data", data); err != nil {
		return 0, fmt.Errorf("store: append event %s for %q: %w", kind, taskID, err)
	}
	// Encode everything but the fields the writer assigns here, in the
	// caller's goroutine: encoding validates and compacts data, which is
	// linear in its size, and the writer is shared by everyone.
	tail, err := json.Marshal(struct {
		TaskID string          `json:"taskId,omitempty"`
		Kind   string          `json:"kind"`
		Data   json.RawMessage `json:"data,omitempty"`
	}{taskID, kind, data})
	if err != nil {
		return 0, fmt.Errorf("store: append event %s for %q: %w", kind, taskID, err)
	}
	tail = tail[1:] // drop '{': the writer prepends its own fields

	var seq uint64
	err = s.submit(ctx, func(tx *bolt.Tx) error {
		events := tx.Bucket(bucketEvents)
		n, err := events.NextSequence()
		if err != nil {
			return err
		}
		var taskSeq uint64
		if taskID != "" {
			tb, err := tx.Bucket(bucketEventsByTask).CreateBucketIfNotExists([]byte(taskID))
			if err != nil {
				return err
			}
			if taskSeq, err = tb.NextSequence(); err != nil {
				return err
			}
			if err := tb.Put(u64(n), []byte{}); err != nil {
				return err
			}
		}
		// Stamped here, not at the call, so that At never goes backwards as
		// seq goes forward (with a monotonic clock).
		at := s.clock.Now().UTC()
		v := make([]byte, 0, 64+len(tail))
		v = append(v, `{"taskSeq":`...)
		v = strconv.AppendUint(v, taskSeq, 10)
		v = append(v, `,"at":"`...)
		v = at.AppendFormat(v, time.RFC3339Nano)
		v = append(v, `",`...)
		v = append(v, tail...)
		if err := events.Put(u64(n), v); err != nil {
			return err
		}
		seq = n
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: append event %s for %q: %w", kind, taskID, err)
	}
	return seq, nil
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
	var (
		out     []Event
		lastSeq uint64
	)
	err := s.view(func(tx *bolt.Tx) error {
		events := tx.Bucket(bucketEvents)
		lastSeq = events.Sequence()
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
		for ; k != nil; k, _ = c.Next() {
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
