package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/familiar-dev/familiar/clock"
)

// writeOp is one queued write. apply runs in the writer goroutine inside the
// group transaction; it may run more than once (when another write in the
// same batch fails, the batch is rolled back and replayed), so it must only
// touch tx and variables it owns, and it must set every result afresh.
type writeOp struct {
	apply func(tx *bolt.Tx) error
	done  chan error // capacity 1, so the writer never waits on a caller that gave up

	answered bool  // wait: done has been received
	err      error // its answer
}

// submit queues apply for the writer and waits until it is durable, or
// until ctx is done (see Cancellation in the package doc: the write stays
// queued and may still be committed).
func (s *Store) submit(ctx context.Context, apply func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op, err := s.enqueue(apply)
	if err != nil {
		return err
	}
	return op.wait(ctx)
}

// enqueue queues apply for the writer without waiting.
func (s *Store) enqueue(apply func(tx *bolt.Tx) error) (*writeOp, error) {
	op := &writeOp{apply: apply, done: make(chan error, 1)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.pending = append(s.pending, op)
	s.mu.Unlock()
	s.signalWriter()
	return op, nil
}

// wait waits until op is durable, or until ctx is done. It may be called
// again (after ctx ended, or to read the answer), but by one goroutine at a
// time.
func (op *writeOp) wait(ctx context.Context) error {
	if op.answered {
		return op.err
	}
	select {
	case op.err = <-op.done:
		op.answered = true
		return op.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) signalWriter() {
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is already pending; the writer will see our op
	}
}

// writer is the only goroutine that writes to the database. It takes all
// pending writes (up to maxBatch), applies them in one transaction, answers
// them, and repeats; it returns once Close has been called and everything
// queued before it is answered. While the store is degraded it also probes
// every probeEvery, so that it learns when space has returned.
func (s *Store) writer() {
	defer close(s.writerDone)
	var probe clock.Timer
	var probeC <-chan time.Time
	defer func() {
		if probe != nil {
			probe.Stop()
		}
	}()
	for {
		select {
		case <-s.wake:
		case <-probeC:
			probe, probeC = nil, nil
			s.probe()
		}
		for {
			s.mu.Lock()
			batch := s.pending
			if len(batch) > maxBatch {
				batch, s.pending = batch[:maxBatch:maxBatch], slices.Clone(batch[maxBatch:])
			} else {
				s.pending = nil
			}
			closed := s.closed
			more := len(s.pending) > 0
			s.mu.Unlock()

			if len(batch) > 0 {
				s.commit(batch)
			}
			if more {
				continue
			}
			// closed was read together with the queue, and submit refuses to
			// queue once closed is set, so nothing can arrive after this.
			if closed {
				return
			}
			break
		}
		switch healthy := s.Health().OK; {
		case !healthy && probe == nil:
			probe = s.clock.NewTimer(s.probeEvery)
			probeC = probe.C()
		case healthy && probe != nil:
			probe.Stop()
			probe, probeC = nil, nil
		}
	}
}

// commit applies batch in one transaction and answers every op in it.
func (s *Store) commit(batch []*writeOp) {
	for len(batch) > 0 {
		if s.beforeCommit != nil {
			s.beforeCommit()
		}
		failed := -1
		var failErr error
		err := guard(func() error {
			if s.failCommit != nil {
				if err := s.failCommit(); err != nil {
					return err
				}
			}
			return s.db.Update(func(tx *bolt.Tx) error {
				for i, op := range batch {
					if err := op.apply(tx); err != nil {
						failed, failErr = i, err
						return err
					}
				}
				return nil
			})
		})
		if failed >= 0 && err == failErr {
			// Only this op is at fault: answer it and replay the others
			// without it in a fresh transaction.
			batch[failed].done <- failErr
			batch = slices.Delete(batch, failed, failed+1)
			continue
		}
		n := s.commits.Add(1)
		if err != nil {
			// Nothing of the batch is stored: every caller hears so, with a
			// kind it can act on (full disk or unavailable).
			err = fmt.Errorf("store: commit %d writes: %w", len(batch), classify(err))
			s.log.Debug("store: commit failed", "writes", len(batch), "err", err)
		} else if len(batch) > 1 {
			s.log.Debug("store: group commit", "writes", len(batch), "commits", n)
		}
		s.setHealth(err, len(batch))
		for _, op := range batch {
			op.done <- err
		}
		return
	}
}
