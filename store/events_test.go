package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/clock"
)

// allEvents replays the whole log for taskID through pages of limit.
func allEvents(t testing.TB, s *Store, taskID string, limit int) []Event {
	t.Helper()
	var out []Event
	var since uint64
	for {
		evs, last, err := s.Events(taskID, since, limit)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, evs...)
		if len(evs) == 0 {
			return out
		}
		since = last
	}
}

func TestEventsRoundTrip(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openStore(t, t.TempDir(), clk)

	if seq, err := s.LastSeq(); err != nil || seq != 0 {
		t.Fatalf("LastSeq of a new store = %d, %v", seq, err)
	}
	appends := []struct {
		task, kind, data string
	}{
		{"a", "task/updated", `{"status":"queued"}`},
		{"b", "task/updated", `{"status":"queued"}`},
		{"a", "task/output", `{"data":"hello\u001b[0m"}`},
		{"", "server/message", `{"level":"info","text":"hi"}`},
		{"a", "task/completed", ``},
	}
	for i, a := range appends {
		clk.Advance(time.Second)
		seq, err := s.AppendEvent(ctx, a.task, a.kind, raw(a.data))
		if err != nil {
			t.Fatal(err)
		}
		if seq != uint64(i+1) {
			t.Errorf("append %d: seq = %d, want %d", i, seq, i+1)
		}
	}

	all, last, err := s.Events("", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 || last != 5 {
		t.Fatalf("Events(all) = %d events, lastSeq %d; want 5, 5", len(all), last)
	}
	wantTaskSeq := []uint64{1, 1, 2, 0, 3}
	for i, e := range all {
		a := appends[i]
		if e.Seq != uint64(i+1) || e.TaskID != a.task || e.Kind != a.kind || e.TaskSeq != wantTaskSeq[i] ||
			!e.At.Equal(t0.Add(time.Duration(i+1)*time.Second)) || !sameJSON(e.Data, raw(a.data)) {
			t.Errorf("event %d = %+v (data %s), want %+v", i, e, e.Data, a)
		}
	}

	tests := []struct {
		task     string
		since    uint64
		limit    int
		wantSeqs []uint64
		wantLast uint64
	}{
		{"a", 0, 0, []uint64{1, 3, 5}, 5},
		{"a", 1, 0, []uint64{3, 5}, 5},
		{"a", 0, 2, []uint64{1, 3}, 3},  // cut short: resume after 3
		{"a", 3, 1, []uint64{5}, 5},     // exactly the rest: lastSeq is the global one
		{"b", 2, 0, nil, 5},             // nothing new for b up to 5
		{"", 2, 2, []uint64{3, 4}, 4},   // cut short
		{"", 5, 10, nil, 5},             // up to date
		{"missing", 0, 0, nil, 5},       // unknown task: nothing, up to date
		{"", math.MaxUint64, 0, nil, 5}, // no overflow to 0
	}
	for _, tt := range tests {
		evs, last, err := s.Events(tt.task, tt.since, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for _, e := range evs {
			seqs = append(seqs, e.Seq)
		}
		if fmt.Sprint(seqs) != fmt.Sprint(tt.wantSeqs) || last != tt.wantLast {
			t.Errorf("Events(%q, %d, %d) = %v, %d; want %v, %d", tt.task, tt.since, tt.limit, seqs, last, tt.wantSeqs, tt.wantLast)
		}
	}

	for _, bad := range []struct{ kind, data string }{{"", `{}`}, {"k", `{"x":`}} {
		if _, err := s.AppendEvent(ctx, "a", bad.kind, raw(bad.data)); !errors.Is(err, ErrInvalid) {
			t.Errorf("AppendEvent(kind %q, data %q): err = %v, want ErrInvalid", bad.kind, bad.data, err)
		}
	}
}

// TestAppendEventConcurrent: 50 goroutines × 200 events, each on its own
// task. Every seq is unique, each goroutine sees its seqs increase, the log
// replays in seq order with each task's events in the order they were
// appended, and the writer really grouped them.
func TestAppendEventConcurrent(t *testing.T) {
	checkLeaks(t)
	const goroutines, perG = 50, 200
	ctx := context.Background()
	s := openStore(t, t.TempDir(), nil)

	seqs := make([][]uint64, goroutines)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			<-start
			task := fmt.Sprintf("task-%02d", g)
			for i := range perG {
				seq, err := s.AppendEvent(ctx, task, "tick", raw(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)))
				if err != nil {
					t.Error(err)
					return
				}
				seqs[g] = append(seqs[g], seq)
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}

	seen := make(map[uint64]bool, goroutines*perG)
	for g, ss := range seqs {
		for i, seq := range ss {
			if seen[seq] {
				t.Fatalf("seq %d assigned twice", seq)
			}
			seen[seq] = true
			if i > 0 && seq <= ss[i-1] {
				t.Fatalf("goroutine %d: seq %d after %d", g, seq, ss[i-1])
			}
		}
	}

	all := allEvents(t, s, "", 1000)
	if len(all) != goroutines*perG {
		t.Fatalf("replayed %d events, want %d", len(all), goroutines*perG)
	}
	next := make([]int, goroutines) // next i expected per goroutine
	for k, e := range all {
		if k > 0 && e.Seq <= all[k-1].Seq {
			t.Fatalf("replay out of order: seq %d after %d", e.Seq, all[k-1].Seq)
		}
		var d struct{ G, I int }
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.I != next[d.G] || e.TaskSeq != uint64(d.I+1) || e.Seq != seqs[d.G][d.I] {
			t.Fatalf("event %+v (g %d i %d): want i %d, taskSeq %d, seq %d", e, d.G, d.I, next[d.G], d.I+1, seqs[d.G][d.I])
		}
		next[d.G]++
	}
	for g := range goroutines {
		evs := allEvents(t, s, fmt.Sprintf("task-%02d", g), 64)
		if len(evs) != perG {
			t.Fatalf("task-%02d has %d events, want %d", g, len(evs), perG)
		}
		for i, e := range evs {
			if e.Seq != seqs[g][i] || e.TaskSeq != uint64(i+1) {
				t.Fatalf("task-%02d event %d = seq %d taskSeq %d, want %d, %d", g, i, e.Seq, e.TaskSeq, seqs[g][i], i+1)
			}
		}
	}
	commits := s.commits.Load()
	t.Logf("%d events in %d commits (%.1f per commit)", goroutines*perG, commits, float64(goroutines*perG)/float64(commits))
	if commits >= goroutines*perG {
		t.Errorf("%d commits for %d events: writes were not grouped", commits, goroutines*perG)
	}
}

// TestRestartKeepsSeq: seqs continue after a restart and are never reused,
// even for events that were deleted with their task.
func TestRestartKeepsSeq(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, FileName), Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := s.AppendEvent(ctx, "a", "tick", nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteTask(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Seqs are reserved ahead on disk (transient events take them without a
	// commit), so a restart continues above everything ever handed out:
	// strictly increasing, gaps allowed, never reused.
	prev := uint64(10)
	var firsts []uint64
	for restart := 1; restart <= 2; restart++ {
		s = openStore(t, dir, nil)
		if last, err := s.LastSeq(); err != nil || last < prev {
			t.Fatalf("restart %d: LastSeq = %d, %v; want >= %d", restart, last, err, prev)
		}
		seq, err := s.AppendEvent(ctx, "a", "tick", nil)
		if err != nil {
			t.Fatal(err)
		}
		if seq <= prev {
			t.Errorf("restart %d: first seq = %d, want > %d", restart, seq, prev)
		}
		prev = seq
		firsts = append(firsts, seq)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s = openStore(t, dir, nil)
	evs, _, err := s.Events("a", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The deleted task's per-task numbering started over: 1, 2.
	if len(evs) != 2 || evs[0].Seq != firsts[0] || evs[0].TaskSeq != 1 || evs[1].Seq != firsts[1] || evs[1].TaskSeq != 2 {
		t.Errorf("events of a = %+v", evs)
	}
}

func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// benchData is about the size of a task/updated notification's payload.
var benchData = json.RawMessage(`{"task":{"id":"t-0123456789","status":"running","activity":"writing","updatedAt":"2026-03-01T12:00:00Z"}}`)

// BenchmarkAppendEventGroupCommit appends from many goroutines at once, so
// the writer commits many events per fsync.
func BenchmarkAppendEventGroupCommit(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	var task atomic.Int64
	b.SetParallelism(32) // 32 × GOMAXPROCS appenders
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := fmt.Sprintf("task-%d", task.Add(1)%16)
		for pb.Next() {
			if _, err := s.AppendEvent(ctx, id, "task/updated", benchData); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/event")
	b.ReportMetric(float64(b.N)/float64(s.commits.Load()), "events/commit")
}

// BenchmarkAppendEventLoneCommit appends one event at a time, so every event
// pays a whole transaction and fsync.
func BenchmarkAppendEventLoneCommit(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.AppendEvent(ctx, "task-0", "task/updated", benchData); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/event")
}

// BenchmarkTaskEventsAmongOthers reads one task's 500 events from a log
// where 50 other tasks wrote 20 times as many: the per-task index makes the
// read cost the task's events, not the log's (the task view's opening
// reads its transcript this way).
func BenchmarkTaskEventsAmongOthers(b *testing.B) {
	for _, others := range []int{0, 10000} {
		b.Run(fmt.Sprintf("others=%d", others), func(b *testing.B) {
			s := benchStore(b)
			ctx := context.Background()
			var evs []NewEvent
			for i := range 500 + others {
				id := "task-long"
				if others > 0 && i%21 != 0 {
					id = fmt.Sprintf("task-%d", i%50)
				}
				evs = append(evs, NewEvent{TaskID: id, Kind: "task/transcript", Data: benchData})
			}
			for len(evs) > 0 {
				n := min(len(evs), 1000)
				if _, err := s.AppendEvents(ctx, evs[:n]); err != nil {
					b.Fatal(err)
				}
				evs = evs[n:]
			}
			want := 500
			if others > 0 {
				want = (500 + others + 20) / 21
			}
			b.ResetTimer()
			for b.Loop() {
				got, _, err := s.Events("task-long", 0, 10000)
				if err != nil || len(got) != want {
					b.Fatalf("Events: %d events, %v; want %d", len(got), err, want)
				}
			}
		})
	}
}
