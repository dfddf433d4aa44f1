package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
	"github.com/familiar-dev/familiar/workspace"
)

// BenchmarkTaskList10k: task/list (first page, and a free-text query) with
// 10,000 finished tasks in the history.
func BenchmarkTaskList10k(b *testing.B) {
	repo := testenv.GitRepo(b, nil)
	dataDir := b.TempDir()
	st, err := store.Open(filepath.Join(dataDir, store.FileName), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	const n = 10000
	var wg sync.WaitGroup
	start := time.Now().Add(-n * time.Minute)
	for w := 0; w < 50; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 50 {
				at := start.Add(time.Duration(i) * time.Minute)
				t := protocol.Task{ID: fmt.Sprintf("t%05d", i), Title: fmt.Sprintf("task number %d", i),
					Description: "fix the thing in module " + fmt.Sprint(i%97), Status: protocol.StatusMerged,
					Attempt: 1, CreatedAt: at, UpdatedAt: at,
					Result: &protocol.TaskResult{Success: true, Summary: "changed module " + fmt.Sprint(i%97)}}
				data, _ := json.Marshal(map[string]any{"task": t})
				if err := st.PutTask(context.Background(), store.TaskRecord{ID: t.ID, Status: string(t.Status), CreatedAt: at, UpdatedAt: at, Data: data}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st.Close()
	ws, err := workspace.Open(context.Background(), repo, workspace.Options{
		DataDir: dataDir, WorktreesRoot: b.TempDir(), ClaudePath: "/nonexistent"})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	for _, bc := range []struct {
		name string
		p    protocol.TaskListParams
	}{
		{"page", protocol.TaskListParams{}},
		{"status", protocol.TaskListParams{Status: []protocol.Status{protocol.StatusMerged}}},
		{"query", protocol.TaskListParams{Query: "module 42"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				res, err := ws.Orch.TaskList(context.Background(), &bc.p)
				if err != nil || len(res.Tasks) == 0 {
					b.Fatalf("list: %v %+v", err, res)
				}
			}
		})
	}
}
