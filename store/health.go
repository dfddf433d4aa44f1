package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/familiar-dev/familiar/errkind"
)

// Failure kinds of a store that cannot write, beside the error kinds in
// store.go. A write that fails with one was not stored; the caller must not
// acknowledge it. They are meant for JSON-RPC's -32603 with data saying which.
var (
	// ErrStoreFull: the disk holding the database is full (or the user's
	// quota is). Writes succeed again once space returns.
	ErrStoreFull error = errkind.NewReason(errkind.NotSaved, "store is full: no space left on the disk", "full")
	// ErrUnavailable: the database could not be written or read for another
	// reason (an I/O error, a damaged page that made bbolt panic).
	ErrUnavailable error = errkind.NewReason(errkind.NotSaved, "store is unavailable", "unavailable")
)

// DefaultProbeEvery is how often a degraded store probes whether space has
// returned.
const DefaultProbeEvery = 5 * time.Second

// DefaultProbeBytes is how much free space a degraded store's probe asks
// for before it calls the store healthy again: more than any single write
// familiar makes (a task with its 30 KB texts, a batch of events), so that
// a disk with room for small writes only is still full.
const DefaultProbeBytes = 1 << 20

// Health is whether the store can write. Options.OnHealth is told every
// change; Store.Health returns the current one.
type Health struct {
	OK bool
	// Err says why not (wraps ErrStoreFull or ErrUnavailable); nil when OK.
	Err error
	// Since is when this state began.
	Since time.Time
	// Failed counts the writes refused since the store became degraded; the
	// Health that reports the recovery (OK) carries the total of the
	// degraded spell, so that it can be said then.
	Failed int
	// lastRefused is when a write was last refused (degraded only).
	lastRefused time.Time
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
//
// A degraded store does not become healthy because one write succeeded: on
// a full disk small writes still fit where large ones do not, and taking
// each success for an all-clear made the warnings flap (error, can save
// again, error…) and end in a false all-clear with the disk still full.
// Only the probe says healthy again (recover), once it found room and no
// write was refused for a probe period.
func (s *Store) setHealth(err error, writes int) {
	if err == nil {
		return
	}
	s.healthMu.Lock()
	h := s.health
	var changed bool
	now := s.clock.Now()
	if h.OK {
		h = Health{OK: false, Err: err, Since: now, Failed: writes, lastRefused: now}
		changed = true
	} else {
		h.Failed += writes
		h.lastRefused = now
		// A different kind (full, then an I/O error) is news.
		changed = errors.Is(err, ErrStoreFull) != errors.Is(h.Err, ErrStoreFull)
		h.Err = err
	}
	s.health = h
	s.healthMu.Unlock()
	if changed {
		s.log.Error("store: cannot write; refusing writes until it can", "err", err)
		if s.onHealth != nil {
			s.onHealth(h)
		}
	}
}

// recover marks a degraded store healthy when the probe succeeded and no
// write was refused for a probe period; the OK Health carries the number of
// writes refused meanwhile.
func (s *Store) recover() {
	s.healthMu.Lock()
	h := s.health
	now := s.clock.Now()
	if h.OK || now.Sub(h.lastRefused) < s.probeEvery {
		s.healthMu.Unlock()
		return
	}
	s.log.Info("store: writes succeed again", "after", now.Sub(h.Since).String(), "refusedWrites", h.Failed)
	h = Health{OK: true, Since: now, Failed: h.Failed}
	s.health = h
	s.healthMu.Unlock()
	if s.onHealth != nil {
		s.onHealth(h)
	}
}

// probe checks, while the store is degraded, whether it can write again:
// that the data dir has room for probeBytes (a scratch file written,
// synced and removed; this also meets a quota) and that the database takes
// a small write (an I/O error would not show in the scratch file).
func (s *Store) probe() {
	err := s.probeSpace()
	if err == nil {
		err = guard(func() error {
			return s.db.Update(func(tx *bolt.Tx) error {
				meta := tx.Bucket(bucketMeta)
				if meta == nil {
					return nil
				}
				return meta.Put([]byte("probe"), []byte(s.clock.Now().UTC().Format(time.RFC3339Nano)))
			})
		})
	}
	if err = classify(err); err != nil {
		s.log.Debug("store: probe failed", "err", err)
		return
	}
	s.recover()
}

// probeFreeSpace writes a scratch file of n bytes beside the database,
// syncs it and removes it. The bytes are not zeros, so that a compressing
// file system still has to find the room.
func probeFreeSpace(dbPath string, n int) error {
	name := dbPath + ".probe"
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(name)
	buf := make([]byte, 64<<10)
	rng := rand.NewChaCha8([32]byte{'f', 'a', 'm', 'i', 'l', 'i', 'a', 'r'})
	for n > 0 {
		chunk := buf[:min(n, len(buf))]
		_, _ = rng.Read(chunk)
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			return err
		}
		n -= len(chunk)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
