package store

import (
	"errors"
	"fmt"
	"runtime/debug"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Failure kinds of a store that cannot write, beside the error kinds in
// store.go. A write that fails with one was not stored; the caller must not
// acknowledge it. They are meant for JSON-RPC's -32603 with data saying which.
var (
	// ErrStoreFull: the disk holding the database is full (or the user's
	// quota is). Writes succeed again once space returns.
	ErrStoreFull = errors.New("store is full: no space left on the disk")
	// ErrUnavailable: the database could not be written or read for another
	// reason (an I/O error, a damaged page that made bbolt panic).
	ErrUnavailable = errors.New("store is unavailable")
)

// DefaultProbeEvery is how often a degraded store tries a small write to
// learn that space has returned, when no write of a caller does.
const DefaultProbeEvery = 5 * time.Second

// Health is whether the store can write. Options.OnHealth is told every
// change; Store.Health returns the current one.
type Health struct {
	OK bool
	// Err says why not (wraps ErrStoreFull or ErrUnavailable); nil when OK.
	Err error
	// Since is when this state began.
	Since time.Time
	// Failed counts the writes refused since the store became degraded; when
	// it recovers, the last Health before OK carries the total.
	Failed int
}

// classify wraps err, a failure of bbolt to commit or read, with the kind a
// caller can act on.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrStoreFull), errors.Is(err, ErrUnavailable):
		return err
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EFBIG):
		return fmt.Errorf("%w: %w", ErrStoreFull, err)
	default:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
}

// guard runs fn, turning a panic (bbolt panics on some damaged pages, and a
// fault on a mapped page it reads becomes one here) into an error that
// matches ErrUnavailable.
func guard(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %w: %v", ErrUnavailable, ErrDamaged, r)
		}
	}()
	return fn()
}

// Health returns whether the store can write now.
func (s *Store) Health() Health {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	return s.health
}

// setHealth records the outcome of a commit; it runs in the writer goroutine
// only, so OnHealth calls come in order.
func (s *Store) setHealth(err error, writes int) {
	s.healthMu.Lock()
	h := s.health
	var changed bool
	switch {
	case err == nil && !h.OK:
		s.log.Info("store: writes succeed again", "after", s.clock.Now().Sub(h.Since).String(), "refusedWrites", h.Failed)
		h = Health{OK: true, Since: s.clock.Now()}
		changed = true
	case err != nil && h.OK:
		h = Health{OK: false, Err: err, Since: s.clock.Now(), Failed: writes}
		changed = true
	case err != nil:
		h.Failed += writes
		// A different kind (full, then an I/O error) is news.
		changed = errors.Is(err, ErrStoreFull) != errors.Is(h.Err, ErrStoreFull)
		h.Err = err
	}
	s.health = h
	s.healthMu.Unlock()
	if changed {
		if !h.OK {
			s.log.Error("store: cannot write; refusing writes until it can", "err", err)
		}
		if s.onHealth != nil {
			s.onHealth(h)
		}
	}
}

// probe tries a small write while the store is degraded, so that it learns
// that space has returned even when no caller writes.
func (s *Store) probe() {
	err := guard(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			meta := tx.Bucket(bucketMeta)
			if meta == nil {
				return nil
			}
			return meta.Put([]byte("probe"), []byte(s.clock.Now().UTC().Format(time.RFC3339Nano)))
		})
	})
	err = classify(err)
	if err != nil {
		s.log.Debug("store: probe write failed", "err", err)
	}
	s.setHealth(err, 0)
}
