package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// AuditEntry is one record of the audit log: who decided what, when.
type AuditEntry struct {
	Seq    uint64    // assigned by AppendAudit; ignored on input
	At     time.Time // zero on AppendAudit means now
	TaskID string    // "" for entries not about one task
	Action string    // e.g. "permission.decided"; required
	Actor  string    // e.g. "user", "policy", "timeout"
	// Data is stored as given: mask secrets before appending.
	Data json.RawMessage
}

// auditValue is an entry as stored in the audit bucket (seq is the key).
type auditValue struct {
	At     time.Time       `json:"at"`
	TaskID string          `json:"taskId,omitempty"`
	Action string          `json:"action"`
	Actor  string          `json:"actor,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
}

// AppendAudit appends e to the audit log and returns its audit seq (a
// sequence of its own, unrelated to event seqs) once it is durable. If ctx
// ends first, see Cancellation in the package doc.
func (s *Store) AppendAudit(ctx context.Context, e AuditEntry) (uint64, error) {
	v, err := s.encodeAudit(e)
	if err != nil {
		return 0, err
	}
	var seq uint64
	err = s.submitOp(ctx, &writeOp{journaled: true, apply: func(w wtx) error {
		n, err := appendAuditTx(w, e.TaskID, v)
		seq = n
		return err
	}})
	if err != nil {
		return 0, fmt.Errorf("store: append audit %s: %w", e.Action, err)
	}
	return seq, nil
}

// encodeAudit validates an entry and encodes its value, in the caller's
// goroutine (the writer is shared).
func (s *Store) encodeAudit(e AuditEntry) ([]byte, error) {
	if e.Action == "" {
		return nil, fmt.Errorf("store: append audit: %w: empty action", ErrInvalid)
	}
	if len(e.TaskID) > maxIDLen {
		return nil, fmt.Errorf("store: append audit %s: %w: task id is %d bytes", e.Action, ErrInvalid, len(e.TaskID))
	}
	if err := validJSON("audit data", e.Data); err != nil {
		return nil, fmt.Errorf("store: append audit %s: %w", e.Action, err)
	}
	if e.At.IsZero() {
		e.At = s.clock.Now()
	}
	v, err := json.Marshal(auditValue{At: e.At.UTC(), TaskID: e.TaskID, Action: e.Action, Actor: e.Actor, Data: e.Data})
	if err != nil {
		return nil, fmt.Errorf("store: append audit %s: %w", e.Action, err)
	}
	return v, nil
}

func appendAuditTx(w wtx, taskID string, v []byte) (uint64, error) {
	n, err := w.nextSequence([][]byte{bucketAudit})
	if err != nil {
		return 0, err
	}
	if err := w.put([][]byte{bucketAudit}, u64(n), v); err != nil {
		return 0, err
	}
	if taskID != "" {
		if err := w.put([][]byte{bucketAuditByTask, []byte(taskID)}, u64(n), []byte{}); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// AuditFilter selects audit entries. Zero fields select everything.
type AuditFilter struct {
	TaskID string
	Action string
	Since  time.Time // At >= Since
	Until  time.Time // At < Until
	Limit  int       // page size; <= 0 means DefaultLimit
	Cursor string    // nextCursor of the previous page; "" starts at the newest
}

const auditCursorPrefix = "a1."

// Audit returns one page of the entries matching f, newest first, and the
// cursor of the next page ("" on the last page). Time bounds are checked
// entry by entry (At is the caller's and need not follow seq order), so a
// narrow time window over a long log reads the whole log.
func (s *Store) Audit(f AuditFilter) ([]AuditEntry, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	var before uint64 // the page holds seqs below this; 0 means no bound
	if f.Cursor != "" {
		raw, ok := strings.CutPrefix(f.Cursor, auditCursorPrefix)
		n, err := strconv.ParseUint(raw, 10, 64)
		if !ok || err != nil || n == 0 {
			return nil, "", fmt.Errorf("store: audit: %w: malformed cursor", ErrInvalid)
		}
		before = n
	}

	var (
		page []AuditEntry
		next string
	)
	err := s.view(func(tx *bolt.Tx) error {
		audit := tx.Bucket(bucketAudit)
		// With a task, walk its index; without, the log. Keys are seqs.
		var c *bolt.Cursor
		if f.TaskID == "" {
			c = audit.Cursor()
		} else if tb := tx.Bucket(bucketAuditByTask).Bucket([]byte(f.TaskID)); tb != nil {
			c = tb.Cursor()
		} else {
			return nil
		}
		var k []byte
		if before == 0 {
			k, _ = c.Last()
		} else if k, _ = c.Seek(u64(before)); k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil; k, _ = c.Prev() {
			v := audit.Get(k)
			if v == nil {
				return fmt.Errorf("task %q index names audit entry %x, which is missing", f.TaskID, k)
			}
			var av auditValue
			if err := json.Unmarshal(v, &av); err != nil {
				return fmt.Errorf("stored audit entry %x is corrupt: %w", k, err)
			}
			if f.Action != "" && av.Action != f.Action ||
				!f.Since.IsZero() && av.At.Before(f.Since) ||
				!f.Until.IsZero() && !av.At.Before(f.Until) {
				continue
			}
			if len(page) == limit {
				// Another match exists, so there is a next page.
				next = auditCursorPrefix + strconv.FormatUint(page[len(page)-1].Seq, 10)
				return nil
			}
			page = append(page, AuditEntry{
				Seq:    decodeU64(k),
				At:     av.At.UTC(),
				TaskID: av.TaskID,
				Action: av.Action,
				Actor:  av.Actor,
				Data:   av.Data,
			})
		}
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("store: audit: %w", err)
	}
	return page, next, nil
}
