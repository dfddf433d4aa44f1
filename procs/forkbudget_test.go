package procs

import (
	"testing"
	"time"
)

// Ten forks are recorded at once; a storm after them at twenty a second.
func TestForkBudget(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newForkBudget(now)
	for i := range forkBurst {
		if wait := b.take(now); wait != 0 {
			t.Fatalf("fork %d of the burst waits %v", i, wait)
		}
	}
	wait := b.take(now)
	if wait < 45*time.Millisecond || wait > 55*time.Millisecond {
		t.Fatalf("after the burst: wait %v, want 50ms", wait)
	}
	now = now.Add(wait)
	if w := b.take(now); w != 0 {
		t.Fatalf("after waiting: %v", w)
	}
	// A quiet second refills all of it, no more.
	now = now.Add(10 * time.Second)
	for i := range forkBurst {
		if w := b.take(now); w != 0 {
			t.Fatalf("after a quiet spell, fork %d waits %v", i, w)
		}
	}
	if w := b.take(now); w == 0 {
		t.Fatal("the budget grew past its burst")
	}
}
