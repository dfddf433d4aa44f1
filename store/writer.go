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
	apply func(w wtx) error
	// journaled: apply makes every change through w (puts and sequences
	// only), so the journal can carry it (see journal.go).
	journaled bool
	// onCommit, if set, runs in the writer once the write is in bbolt,
	// before it is answered or, when it was answered from the journal,
	// after.
	onCommit func()
	done     chan error // capacity 1, so the writer never waits on a caller that gave up

	answered bool  // wait: done has been received
	err      error // its answer
}

// submit queues apply for the writer and waits until it is durable, or
// until ctx is done (see Cancellation in the package doc: the write stays
// queued and may still be committed).
func (s *Store) submit(ctx context.Context, apply func(tx *bolt.Tx) error) error {
	return s.submitOp(ctx, &writeOp{apply: func(w wtx) error { return apply(w.tx) }})
}

// submitOp is submit for a write that may be journaled.
func (s *Store) submitOp(ctx context.Context, op *writeOp) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enqueueOp(op); err != nil {
		return err
	}
	return op.wait(ctx)
}

// enqueueOp queues op for the writer without waiting.
func (s *Store) enqueueOp(op *writeOp) error {
	op.done = make(chan error, 1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.pending = append(s.pending, op)
	s.mu.Unlock()
	s.signalWriter()
	return nil
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
				// Nothing queued behind the batch: answer it from the
				// journal after one flush, if it can carry every write.
				s.commit(batch, !more && s.jnl != nil && allJournaled(batch))
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

func allJournaled(batch []*writeOp) bool {
	for _, op := range batch {
		if !op.journaled {
			return false
		}
	}
	return true
}

// owedWrite is a journaled transaction's changes, answered but not yet in
// bbolt because its commit failed: every later transaction applies them
// first, until one commits.
type owedWrite struct {
	ops      []jop
	onCommit []func()
}

// commit applies batch in one transaction and answers every op in it; with
// journal, as soon as the journal holds the transaction's changes.
func (s *Store) commit(batch []*writeOp, journal bool) {
	for len(batch) > 0 {
		if s.beforeCommit != nil {
			s.beforeCommit()
		}
		failed := -1
		var failErr error
		early := false
		err := guard(func() error {
			if s.failCommit != nil {
				if err := s.failCommit(); err != nil {
					return err
				}
			}
			tx, err := s.db.Begin(true)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback() }() // after Commit: ErrTxClosed, ignored
			if err := s.redoOwed(tx); err != nil {
				return err
			}
			w := wtx{tx: tx}
			if journal {
				w.log = new([]jop)
			}
			for i, op := range batch {
				if err := op.apply(w); err != nil {
					failed, failErr = i, err
					return err
				}
			}
			if w.log != nil && len(*w.log) > 0 {
				if err := s.jnl.append(tx.ID(), *w.log); err != nil {
					s.log.Warn("store: cannot write the journal; answering after the commit", "err", err)
				} else {
					early = true
					hold := s.afterJournal // read before the answers: a test sets it after one
					s.setInflight(make(chan struct{}))
					ow := owedWrite{ops: *w.log}
					for _, op := range batch {
						if op.onCommit != nil {
							ow.onCommit = append(ow.onCommit, op.onCommit)
						}
						op.done <- nil
					}
					s.owed = append(s.owed, ow)
					if hold != nil {
						if err := hold(); err != nil {
							return err
						}
					}
				}
			}
			return tx.Commit()
		})
		if failed >= 0 && err == failErr {
			// Only this op is at fault: answer it and replay the others
			// without it in a fresh transaction.
			batch[failed].done <- failErr
			batch = slices.Delete(batch, failed, failed+1)
			continue
		}
		n := s.commits.Add(1)
		if err == nil {
			for _, ow := range s.owed {
				for _, f := range ow.onCommit {
					f()
				}
			}
			s.owed = nil
			if s.jnl != nil {
				s.jnl.committed()
			}
		}
		if early {
			// Before OnHealth: a reader there must not wait for us.
			s.setInflight(nil)
		}
		if err != nil {
			// Nothing of the batch is stored: every caller not answered from
			// the journal hears so, with a kind it can act on (full disk or
			// unavailable).
			err = fmt.Errorf("store: commit %d writes: %w", len(batch), classify(err))
			s.log.Debug("store: commit failed", "writes", len(batch), "answeredFromJournal", early, "owed", len(s.owed), "err", err)
			refused := len(batch)
			if early {
				refused = 0
			}
			s.setHealth(err, refused)
		} else if len(batch) > 1 {
			s.log.Debug("store: group commit", "writes", len(batch), "commits", n, "journaled", early)
		}
		if !early {
			for _, op := range batch {
				if err == nil && op.onCommit != nil {
					op.onCommit()
				}
				op.done <- err
			}
		}
		return
	}
}

// setInflight marks a transaction answered from the journal as being
// committed (c) or done (nil, closing the previous one).
func (s *Store) setInflight(c chan struct{}) {
	s.inflightMu.Lock()
	if c == nil && s.inflight != nil {
		close(s.inflight)
	}
	s.inflight = c
	s.inflightMu.Unlock()
}

// awaitCommitted waits until a transaction answered from the journal has
// been committed (or has failed), so that a read sees every write answered
// before it: reads are of bbolt, and a caller that wrote and then reads
// must find what it wrote. A reader waits at most one commit; the writes
// that were answered early are what a person waits for (a notification),
// not the reads.
func (s *Store) awaitCommitted() {
	s.inflightMu.Lock()
	c := s.inflight
	s.inflightMu.Unlock()
	if c != nil {
		<-c
	}
}

// redoOwed applies the changes of transactions answered from the journal
// whose commit failed.
func (s *Store) redoOwed(tx *bolt.Tx) error {
	w := wtx{tx: tx}
	for _, ow := range s.owed {
		for _, op := range ow.ops {
			if err := w.redo(op); err != nil {
				return err
			}
		}
	}
	return nil
}
