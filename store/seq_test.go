package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Transient events (raw output) take seqs in order with stored ones, are
// not stored, and their seqs are never handed out again after a restart.
func TestTransientEventsNumberedNotStored(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, FileName), Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	for i := range 50 {
		batch := []NewEvent{{TaskID: "a", Kind: "task/output", Transient: true}, {TaskID: "a", Kind: "task/output", Transient: true}}
		if i%5 == 0 {
			batch = append(batch, NewEvent{TaskID: "a", Kind: "task/updated", Data: []byte(`{}`)})
		}
		seqs, err := s.AppendEvents(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, seqs...)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			t.Fatalf("seq %d after %d: not strictly increasing", seen[i], seen[i-1])
		}
	}
	evs, last, err := s.Events("a", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 10 || last != seen[len(seen)-1] {
		t.Fatalf("stored %d events (want 10), lastSeq %d (want %d)", len(evs), last, seen[len(seen)-1])
	}
	commits := s.commits.Load()
	if commits > 12 {
		t.Errorf("%d commits for 10 stored batches: transient-only batches must not commit", commits)
	}
	// Close without anything else: the transient seqs must still be above
	// the restart's first seq.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, nil)
	seqs, err := s.AppendEvents(ctx, []NewEvent{{TaskID: "a", Kind: "task/output", Transient: true}})
	if err != nil {
		t.Fatal(err)
	}
	if seqs[0] <= seen[len(seen)-1] {
		t.Fatalf("after restart seq %d reuses one handed out before (last %d)", seqs[0], seen[len(seen)-1])
	}
}

// BenchmarkTenWriters: ten goroutines append events as fast as the store
// takes them (as ten busy tasks' actors would), for a sustained rate under
// group commit; events/s is reported.
func BenchmarkTenWriters(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	data := []byte(`{"task":{"id":"t-0123456789","status":"running","activity":"writing","updatedAt":"2026-03-01T12:00:00Z"}}`)
	const writers = 10
	per := max(b.N/writers, 1)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task := fmt.Sprintf("t%d", w)
			for range per {
				if _, err := s.AppendEvent(ctx, task, "task/updated", data); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.ReportMetric(float64(per*writers)/el.Seconds(), "events/s")
	b.ReportMetric(float64(s.commits.Load()), "commits")
}
