package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// BenchmarkQueueWallTime (issue 34): the merge queue's wall time for 8
// ready tasks with a verify command of verifySec, serially (queueParallel
// 1) and speculatively (4), with no failure and with one, against a plain
// serial loop of `git merge` + the verify command by hand. The same 8
// finished tasks serve every round (queue/undo between; the round with a
// failure is last: its failing task ends set aside). Reported in seconds,
// and familiar's own time per task in the serial round besides verify.
//
//	go test ./orchestrator -run '^$' -bench QueueWallTime -benchtime 1x
func BenchmarkQueueWallTime(b *testing.B) {
	const verifySec = 5
	e := openQueue(b, 60)
	ctx := context.Background()
	var ids, branches []string
	for i := range 8 {
		task := e.create(b, fmt.Sprintf("T%d", i), writes(fmt.Sprintf("printf '%d\\n' > t%d.txt", i, i), ""), 8-i)
		ids = append(ids, task.ID)
	}
	for _, id := range ids {
		e.notes.wait(b, id+" finished", statusIs(id, protocol.StatusMerging))
		got, err := e.o.TaskGet(ctx, &protocol.TaskIDParams{ID: id})
		if err != nil {
			b.Fatal(err)
		}
		branches = append(branches, got.Worktree.Branch)
	}
	base := gitIn(b, e.repo, "rev-parse", "main")
	queue := func(name string, parallel int, verify string, undo bool) float64 {
		p := parallel
		if _, err := e.o.UpdateSettings(ctx, &protocol.SettingsUpdate{QueueParallel: &p}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		q, err := e.o.QueueMerge(ctx, &protocol.QueueMergeParams{IDs: ids, Verify: &verify})
		if err != nil {
			b.Fatal(err)
		}
		var end protocol.QueueUpdatedNotification
		json.Unmarshal(e.notes.wait(b, name+" done", is(protocol.NotifyQueueUpdated, q.ID, `"state":"done"`)).params, &end)
		took := time.Since(start).Seconds()
		merged := 0
		for _, it := range end.Queue.Items {
			if it.State == protocol.QueueItemMerged {
				merged++
			}
		}
		b.Logf("%s: %.2f s, %d merged", name, took, merged)
		if undo {
			if _, err := e.o.QueueUndo(ctx, &protocol.QueueUndoParams{}); err != nil {
				b.Fatal(err)
			}
		}
		return took
	}
	for b.Loop() {
		verify := fmt.Sprintf("sleep %d", verifySec)
		serial := queue("serial", 1, verify, true)
		spec := queue("speculative, parallel 4", 4, verify, true)
		// By hand: merge each branch and run the check, one after another.
		start := time.Now()
		for _, br := range branches {
			gitIn(b, e.repo, "merge", "-q", "--no-edit", br)
			if err := exec.Command("/bin/sh", "-c", verify).Run(); err != nil {
				b.Fatal(err)
			}
		}
		plain := time.Since(start).Seconds()
		gitIn(b, e.repo, "reset", "-q", "--hard", base)
		b.Logf("plain serial git merge + verify: %.2f s", plain)
		failing := queue("speculative, parallel 4, T2 failing", 4, verify+"; test ! -f t2.txt", false)
		b.ReportMetric(serial, "serial-s")
		b.ReportMetric(spec, "speculative-s")
		b.ReportMetric(failing, "speculative-1-failing-s")
		b.ReportMetric(plain, "by-hand-s")
		b.ReportMetric(spec/verifySec, "speculative-x-verify")
		b.ReportMetric(failing/verifySec, "1-failing-x-verify")
		b.ReportMetric((serial-8*verifySec)/8*1000, "own-ms/task")
	}
}
