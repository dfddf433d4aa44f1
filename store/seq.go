package store

import (
	"context"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// seqReserve is how far ahead of the seqs handed out the events bucket's
// sequence (the durable high-water mark) is kept. Events that are numbered
// but not stored — raw terminal output, which lives in the task's log file —
// take their seqs below it without a commit; a restart continues above it,
// so no seq a client saw is ever handed out again.
const seqReserve = 1 << 16

// seqs numbers events: stored ones in the writer's transaction, transient
// ones at once.
type seqs struct {
	mu      sync.Mutex
	last    uint64 // the last seq handed out
	ceiling uint64 // durable: no seq above it is handed out
	visible uint64 // every event up to here is committed or was transient
}

// initSeqs reads the durable high-water mark at open.
func (s *Store) initSeqs() error {
	return s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEvents)
		if b == nil {
			return fmt.Errorf("no events bucket")
		}
		n := b.Sequence()
		s.seq.last, s.seq.ceiling, s.seq.visible = n, n, n
		return nil
	})
}

// numberTransient hands out n consecutive seqs for events that are not
// stored, raising the durable ceiling first when they would pass it.
func (s *Store) numberTransient(ctx context.Context, n int) ([]uint64, error) {
	s.seq.mu.Lock()
	need := s.seq.last + uint64(n)
	ceiling := s.seq.ceiling
	s.seq.mu.Unlock()
	if need > ceiling {
		target := need + seqReserve
		err := s.submit(ctx, func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketEvents)
			if b.Sequence() < target {
				return b.SetSequence(target)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("store: reserve seqs: %w", err)
		}
		s.seq.mu.Lock()
		s.seq.ceiling = max(s.seq.ceiling, target)
		s.seq.mu.Unlock()
	}
	s.seq.mu.Lock()
	defer s.seq.mu.Unlock()
	if s.seq.last+uint64(n) > s.seq.ceiling {
		// Stored events took the reserve meanwhile: try again.
		s.seq.mu.Unlock()
		out, err := s.numberTransient(ctx, n)
		s.seq.mu.Lock()
		return out, err
	}
	out := make([]uint64, n)
	for i := range out {
		s.seq.last++
		out[i] = s.seq.last
	}
	s.seq.visible = max(s.seq.visible, s.seq.last)
	return out, nil
}

// nextSeqTx numbers one event in the writer's transaction and keeps the
// durable ceiling above it. It may run again if the batch is replayed:
// the seqs of a replayed batch are fresh ones (gaps are allowed; reuse is
// not).
func (s *Store) nextSeqTx(w wtx) (uint64, error) {
	s.seq.mu.Lock()
	defer s.seq.mu.Unlock()
	s.seq.last++
	n := s.seq.last
	if w.tx.Bucket(bucketEvents).Sequence() < n {
		if err := w.raiseSequence([][]byte{bucketEvents}, n+seqReserve); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// committed records that events up to seq are durable.
func (s *Store) committed(last uint64, ceiling uint64) {
	s.seq.mu.Lock()
	s.seq.visible = max(s.seq.visible, last)
	s.seq.ceiling = max(s.seq.ceiling, ceiling)
	s.seq.mu.Unlock()
}

// visibleSeq is the last seq a reader may report: every event up to it is
// committed or was transient.
func (s *Store) visibleSeq() uint64 {
	s.seq.mu.Lock()
	defer s.seq.mu.Unlock()
	return s.seq.visible
}
