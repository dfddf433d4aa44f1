package mailbox

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/testenv"
)

func TestOrderAndOneAtATime(t *testing.T) {
	var (
		mu      sync.Mutex
		got     []int
		running atomic.Int32
		overlap atomic.Bool
	)
	m := New(Options[int]{Handle: func(b []int) {
		if running.Add(1) > 1 {
			overlap.Store(true)
		}
		mu.Lock()
		got = append(got, b...)
		mu.Unlock()
		running.Add(-1)
	}})
	var wg sync.WaitGroup
	// One producer keeps order; several producers only need every item.
	for i := range 1000 {
		m.Push(i)
	}
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 250 {
				m.Push(10000 + p*1000 + i)
			}
		}()
	}
	wg.Wait()
	m.Close()
	if overlap.Load() {
		t.Error("two batches were handled at once")
	}
	if len(got) != 2000 {
		t.Fatalf("handled %d items, want 2000", len(got))
	}
	for i := range 1000 {
		if got[i] != i {
			t.Fatalf("item %d is %d: out of order", i, got[i])
		}
	}
	if m.Push(1) {
		t.Error("a closed mailbox took an item")
	}
}

func TestMergeAndBatch(t *testing.T) {
	block := make(chan struct{})
	var batches [][]string
	m := New(Options[string]{
		MaxBatch: 2,
		Merge: func(last *string, next string) bool {
			if len(*last)+len(next) > 4 {
				return false
			}
			*last += next
			return true
		},
		Handle: func(b []string) {
			if b[0] == "wait" {
				<-block
			}
			batches = append(batches, append([]string(nil), b...))
		},
	})
	m.Push("wait")
	testenv.Await(t, 5*time.Second, "the first item to be taken", func() bool { return m.Len() == 0 })
	for _, s := range []string{"a", "b", "c", "d", "e", "f"} {
		m.Push(s)
	}
	close(block)
	m.Close()
	want := [][]string{{"wait"}, {"abcd", "ef"}}
	if len(batches) != len(want) || batches[1][0] != "abcd" || batches[1][1] != "ef" {
		t.Errorf("batches %q, want %q", batches, want)
	}
}

// No goroutine is left once a mailbox is idle.
func TestNoGoroutineWhenIdle(t *testing.T) {
	m := New(Options[int]{Handle: func([]int) {}})
	for i := range 100 {
		m.Push(i)
	}
	m.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running {
		t.Error("still running after Close")
	}
}
