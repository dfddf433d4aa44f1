package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
	"github.com/familiar-dev/familiar/workspace"
)

// BenchmarkDrainFailingQueue: familiar opens a store with 200 queued tasks
// that all fail to start (claude is missing); it reports how long the queue
// takes to drain (every task blocked) and task/list's latency meanwhile.
// Issue 12's bar: drain ≤ 2 s, task/list p99 ≤ 20 ms.
func BenchmarkDrainFailingQueue(b *testing.B) {
	const n = 200
	repo := testenv.GitRepo(b, nil)
	var drains, p99s, maxes []float64
	for i := 0; i < b.N; i++ {
		dataDir := b.TempDir()
		st, err := store.Open(filepath.Join(dataDir, store.FileName), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now().UTC()
		for j := range n {
			t := protocol.Task{ID: fmt.Sprintf("t%04d", j), Title: fmt.Sprintf("task %d", j), Status: protocol.StatusQueued,
				Type: protocol.TaskTypeImplement, Driver: protocol.DriverPTY, Attempt: 1, CreatedAt: now, UpdatedAt: now}
			data, _ := json.Marshal(map[string]any{"task": t, "seq": j + 1})
			if err := st.PutTask(context.Background(), store.TaskRecord{ID: t.ID, Status: string(t.Status), CreatedAt: now, UpdatedAt: now, Data: data}); err != nil {
				b.Fatal(err)
			}
		}
		st.Close()

		start := time.Now()
		ws, err := workspace.Open(context.Background(), repo, workspace.Options{
			DataDir: dataDir, WorktreesRoot: b.TempDir(), ClaudePath: "/nonexistent/claude"})
		if err != nil {
			b.Fatal(err)
		}
		var lat []time.Duration
		var wg sync.WaitGroup
		done := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				t0 := time.Now()
				if _, err := ws.Orch.TaskList(context.Background(), &protocol.TaskListParams{Limit: 50}); err != nil {
					b.Error(err)
					return
				}
				lat = append(lat, time.Since(t0))
				time.Sleep(time.Millisecond) // a client polling, not a busy loop
			}
		}()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			res, err := ws.Orch.TaskList(context.Background(), &protocol.TaskListParams{Status: []protocol.Status{protocol.StatusBlocked}, Limit: 1})
			if err != nil {
				b.Fatal(err)
			}
			if res.Total == n {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("only %d of %d blocked after 2 min", res.Total, n)
			}
			time.Sleep(2 * time.Millisecond)
		}
		drain := time.Since(start)
		close(done)
		wg.Wait()
		ws.Close()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		drains = append(drains, float64(drain.Milliseconds()))
		if len(lat) > 0 {
			p99s = append(p99s, float64(lat[len(lat)*99/100].Microseconds())/1000)
			maxes = append(maxes, float64(lat[len(lat)-1].Microseconds())/1000)
		}
	}
	b.ReportMetric(median(drains), "drain-ms")
	b.ReportMetric(median(p99s), "list-p99-ms")
	b.ReportMetric(median(maxes), "list-max-ms")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	return v[len(v)/2]
}
