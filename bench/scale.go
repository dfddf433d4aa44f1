package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// ScaleResult is familiar with 10 running and 50 queued tasks.
type ScaleResult struct {
	Running int `json:"running"`
	Queued  int `json:"queued"`
	// TaskList is task/list of all 60 (limit 100), including encoding the
	// result as JSON, called back to back for the window.
	TaskList Dist `json:"taskList"`
	// OutputLag is from the fake agent writing a spinner frame (the time is
	// in the frame) to the notifier being called with the task/output that
	// carries it: PTY, procs, screen model, event, store commit, notifier.
	OutputLag Dist `json:"outputLag"`
	// UpdatedLag is from a task's updatedAt (stamped just before it is saved
	// and published) to the notifier being called with its task/updated.
	UpdatedLag Dist `json:"updatedLag"`
	// Reorder is each task/reorder call of the window: it moves every queued
	// task, and each move is saved and announced.
	Reorder Dist `json:"taskReorder"`
	// NotesPerSec is notifications of all kinds per second in the window.
	NotesPerSec float64 `json:"notificationsPerSec"`
	WindowSec   float64 `json:"windowSec"`
}

func (r *runner) scale(ctx context.Context) error {
	const running, queued = 10, 50
	repo, err := newRepo(ctx, r.tmp, 0, 0)
	if err != nil {
		return err
	}
	w, err := openWorkspace(ctx, r.tmp, repo, r.fake, fakeEnv(r.fake, map[string]string{"FAKEAGENT_MODE": "idle", "FAKEAGENT_STAMP": "1"}), nil)
	if err != nil {
		return err
	}
	defer w.close()
	if err := w.settings(ctx, protocol.SettingsUpdate{MaxConcurrent: intp(running)}); err != nil {
		return err
	}
	watch, stop := newStatusWatch(w.notes)
	defer stop()

	var (
		mu         sync.Mutex
		measuring  bool
		outLag     []time.Duration
		updatedLag []time.Duration
		notes      int
	)
	stopLag := w.notes.handle(func(x note) {
		mu.Lock()
		defer mu.Unlock()
		if !measuring {
			return
		}
		notes++
		switch x.method {
		case protocol.NotifyTaskOutput:
			for _, ns := range stampsIn(x.params) {
				outLag = append(outLag, x.at.Sub(time.Unix(0, ns)))
			}
		case protocol.NotifyTaskUpdated:
			var u struct {
				Task struct {
					UpdatedAt time.Time `json:"updatedAt"`
				} `json:"task"`
			}
			if json.Unmarshal(x.params, &u) == nil && !u.Task.UpdatedAt.IsZero() {
				updatedLag = append(updatedLag, x.at.Sub(u.Task.UpdatedAt))
			}
		}
	})
	defer stopLag()

	var queuedIDs []string
	for i := range running + queued {
		t, err := w.create(ctx, fmt.Sprintf("scale %d", i))
		if err != nil {
			return err
		}
		if i >= running {
			queuedIDs = append(queuedIDs, t.ID)
		}
	}
	if err := watch.wait(ctx, 2*time.Minute, fmt.Sprintf("%d tasks to run", running), func(at map[string]map[protocol.Status]time.Time) bool {
		return countIn(at, protocol.StatusRunning) == running
	}); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // first paints and start-up writes settle

	mu.Lock()
	measuring = true
	mu.Unlock()
	start := time.Now()
	deadline := start.Add(r.opts.Window)
	var wg sync.WaitGroup
	var listErr, reorderErr error
	var list, reorders []time.Duration
	var res ScaleResult
	wg.Go(func() {
		for time.Now().Before(deadline) {
			t0 := time.Now()
			l, err := w.ws.Orch.TaskList(ctx, &protocol.TaskListParams{Limit: 100})
			if err == nil {
				_, err = json.Marshal(l)
			}
			if err != nil {
				listErr = err
				return
			}
			list = append(list, time.Since(t0))
			if len(list) == 1 {
				for _, t := range l.Tasks {
					switch t.Status {
					case protocol.StatusRunning:
						res.Running++
					case protocol.StatusQueued:
						res.Queued++
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	// A person reordering the queue: every queued task's position is
	// announced again each time.
	wg.Go(func() {
		for i := 0; time.Now().Before(deadline); i++ {
			id := queuedIDs[i%len(queuedIDs)]
			t0 := time.Now()
			if _, err := w.ws.Orch.TaskReorder(ctx, &protocol.TaskReorderParams{ID: id, Priority: intp(i % 3)}); err != nil {
				reorderErr = fmt.Errorf("task/reorder: %w", err)
				return
			}
			reorders = append(reorders, time.Since(t0))
			time.Sleep(500 * time.Millisecond)
		}
	})
	wg.Wait()
	took := time.Since(start)
	mu.Lock()
	measuring = false
	res.OutputLag, res.UpdatedLag = distOf(outLag), distOf(updatedLag)
	res.NotesPerSec = round(float64(notes) / took.Seconds())
	mu.Unlock()
	if listErr != nil {
		return listErr
	}
	if reorderErr != nil {
		return reorderErr
	}
	res.TaskList, res.Reorder = distOf(list), distOf(reorders)
	res.WindowSec = round(took.Seconds())
	r.report.Scale = &res
	r.logf("scale %d running + %d queued: task/list p99 %.2f ms; output lag p50 %.1f p99 %.1f ms; task/updated lag p50 %.1f p99 %.1f ms",
		res.Running, res.Queued, res.TaskList.P99, res.OutputLag.P50, res.OutputLag.P99, res.UpdatedLag.P50, res.UpdatedLag.P99)
	return nil
}
