package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxIDLen bounds task ids and setting names; bbolt keys may be up to 32 KiB,
// but an id that long is a bug upstream, better reported than stored.
const maxIDLen = 1024

// TaskRecord is a task as the store sees it: the orchestrator's Task as an
// opaque JSON blob, plus the fields the store indexes.
type TaskRecord struct {
	ID        string
	Status    string    // kept beside Data for readers of the raw store; the store gives it no meaning
	CreatedAt time.Time // zero on PutTask keeps the stored one, or now
	UpdatedAt time.Time // zero on PutTask means now
	Data      json.RawMessage
}

// taskValue is a task as stored in the tasks bucket (the id is the key).
type taskValue struct {
	Status    string          `json:"status"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
	Data      json.RawMessage `json:"data,omitempty"`
}

func (v taskValue) record(id string) TaskRecord {
	return TaskRecord{ID: id, Status: v.Status, CreatedAt: v.CreatedAt.UTC(), UpdatedAt: v.UpdatedAt.UTC(), Data: v.Data}
}

func validID(what, id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty %s", ErrInvalid, what)
	}
	if len(id) > maxIDLen {
		return fmt.Errorf("%w: %s is %d bytes, at most %d allowed", ErrInvalid, what, len(id), maxIDLen)
	}
	return nil
}

func validJSON(what string, data json.RawMessage) error {
	if len(data) > 0 && !json.Valid(data) {
		return fmt.Errorf("%w: %s is not valid JSON", ErrInvalid, what)
	}
	return nil
}

// PutTask creates or replaces the task rec.ID. It returns once the task is
// durable (if ctx ends first, see Cancellation in the package doc).
func (s *Store) PutTask(ctx context.Context, rec TaskRecord) error {
	op, err := s.taskWrite(rec)
	if err != nil {
		return err
	}
	if err := s.submitOp(ctx, op); err != nil {
		return fmt.Errorf("store: put task %q: %w", rec.ID, err)
	}
	return nil
}

// QueueTask is PutTask without waiting for the commit: the write is queued
// and goes into the same commit as the writes queued after it, or an
// earlier one, so an event appended afterwards is never durable before it.
// Wait waits until it is durable and returns its error.
func (s *Store) QueueTask(rec TaskRecord) (wait func(context.Context) error) {
	op, err := s.taskWrite(rec)
	if err != nil {
		return func(context.Context) error { return err }
	}
	if err := s.enqueueOp(op); err != nil {
		return func(context.Context) error { return fmt.Errorf("store: put task %q: %w", rec.ID, err) }
	}
	return func(ctx context.Context) error {
		if err := op.wait(ctx); err != nil {
			return fmt.Errorf("store: put task %q: %w", rec.ID, err)
		}
		return nil
	}
}

// taskWrite checks rec and returns the write that puts it.
func (s *Store) taskWrite(rec TaskRecord) (*writeOp, error) {
	if err := validID("task id", rec.ID); err != nil {
		return nil, fmt.Errorf("store: put task: %w", err)
	}
	if rec.Status == "" {
		return nil, fmt.Errorf("store: put task %q: %w: empty status", rec.ID, ErrInvalid)
	}
	if err := validJSON("task data", rec.Data); err != nil {
		return nil, fmt.Errorf("store: put task %q: %w", rec.ID, err)
	}
	now := s.clock.Now().UTC()
	if rec.UpdatedAt.IsZero() {
		rec.UpdatedAt = now
	}
	for _, t := range []time.Time{rec.CreatedAt, rec.UpdatedAt} {
		if !t.IsZero() && !storableTime(t) {
			return nil, fmt.Errorf("store: put task %q: %w: time %v out of range", rec.ID, ErrInvalid, t)
		}
	}
	// The caller may reuse Data once we return, which on ctx cancellation
	// is before the writer has encoded it.
	rec.Data = bytes.Clone(rec.Data)
	id := []byte(rec.ID)
	return &writeOp{journaled: true, apply: func(w wtx) error {
		tasks := w.tx.Bucket(bucketTasks)
		created := rec.CreatedAt
		if old := tasks.Get(id); old != nil {
			var ov taskValue
			if err := json.Unmarshal(old, &ov); err != nil {
				return fmt.Errorf("stored task is corrupt: %w", err)
			}
			if created.IsZero() {
				created = ov.CreatedAt
			}
		}
		if created.IsZero() {
			created = now
		}
		v, err := json.Marshal(taskValue{Status: rec.Status, CreatedAt: created.UTC(), UpdatedAt: rec.UpdatedAt.UTC(), Data: rec.Data})
		if err != nil {
			return err
		}
		return w.put([][]byte{bucketTasks}, id, v)
	}}, nil
}

// GetTask returns the task id, or an error matching ErrNotFound.
func (s *Store) GetTask(id string) (TaskRecord, error) {
	var rec TaskRecord
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketTasks).Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		var tv taskValue
		if err := json.Unmarshal(v, &tv); err != nil {
			return fmt.Errorf("stored task is corrupt: %w", err)
		}
		rec = tv.record(id)
		return nil
	})
	if err != nil {
		return TaskRecord{}, fmt.Errorf("store: get task %q: %w", id, err)
	}
	return rec, nil
}

// DeleteTask removes the task id and its events (their global seqs are not
// reused). Its audit entries stay: the audit log is append-only. It returns
// an error matching ErrNotFound if there was neither a task nor events.
func (s *Store) DeleteTask(ctx context.Context, id string) error {
	if err := validID("task id", id); err != nil {
		return fmt.Errorf("store: delete task: %w", err)
	}
	key := []byte(id)
	err := s.submit(ctx, func(tx *bolt.Tx) error {
		found := false
		tasks := tx.Bucket(bucketTasks)
		if old := tasks.Get(key); old != nil {
			found = true
			if err := tasks.Delete(key); err != nil {
				return err
			}
		}
		byTask := tx.Bucket(bucketEventsByTask)
		if tb := byTask.Bucket(key); tb != nil {
			found = true
			events := tx.Bucket(bucketEvents)
			if err := tb.ForEach(func(seq, _ []byte) error { return events.Delete(seq) }); err != nil {
				return err
			}
			if err := byTask.DeleteBucket(key); err != nil {
				return err
			}
		}
		if !found {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: delete task %q: %w", id, err)
	}
	return nil
}
