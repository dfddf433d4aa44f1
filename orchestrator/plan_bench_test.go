package orchestrator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// BenchmarkPlanWallTime (issue 39): issue 39's five-step plan (A and B
// independent; C needs A; D needs A and B; E needs C and D: a critical
// path of three steps) against the same five steps one after another (each
// needing the one before), the same scripted model and the same verify
// command (a sleep of verifySec), maxConcurrent 3. Reported: each wall
// time in seconds, their ratio, and familiar's own time per step besides
// agents and verify: scheduling (from the moment a step could start — the
// plan's run or its last need's merge — to its task's start) and
// integration (from its task's end to its merge, less the verify it ran).
//
//	go test ./orchestrator -run '^$' -bench PlanWallTime -benchtime 1x
func BenchmarkPlanWallTime(b *testing.B) {
	const verifySec = 1
	verify := fmt.Sprintf("sleep %d", verifySec)
	graph := [][]string{{}, {}, {"a"}, {"a", "b"}, {"c", "d"}}
	chain := [][]string{{}, {"a"}, {"b"}, {"c"}, {"d"}}
	run := func(name string, needs [][]string) (wall float64, sched, integ time.Duration) {
		three := 3
		e := openQueueWith(b, &protocol.SettingsUpdate{MaxConcurrent: &three})
		ctx := context.Background()
		var steps []protocol.PlanStepSpec
		for i, n := range needs {
			id := string(rune('a' + i))
			steps = append(steps, protocol.PlanStepSpec{ID: id, Title: "Step " + id, Needs: n,
				Description: writes(fmt.Sprintf("printf '%s\\n' > %s.txt", id, id), "")})
		}
		start := time.Now()
		p, err := e.o.PlanCreate(ctx, &protocol.PlanCreateParams{Steps: steps, Verify: &verify, Run: true})
		if err != nil {
			b.Fatal(err)
		}
		e.notes.wait(b, name+" done", planNote(p.ID, protocol.PlanDone))
		wall = time.Since(start).Seconds()
		done := lastPlan(b, e, p.ID)
		merged := map[string]time.Time{}
		for _, s := range done.Steps {
			merged[s.ID] = s.MergedAt
		}
		for _, s := range done.Steps {
			ready := done.StartedAt
			for _, n := range s.Needs {
				if merged[n].After(ready) {
					ready = merged[n]
				}
			}
			task := e.get(b, s.TaskID)
			at := func(x time.Time) string { return fmt.Sprintf("%5.1f", x.Sub(done.StartedAt).Seconds()) }
			b.Logf("%s %s: could start %s, created %s, started %s, finished %s, merged %s", name, s.ID,
				at(ready), at(task.CreatedAt), at(task.StartedAt), at(task.FinishedAt), at(s.MergedAt))
			sched += task.StartedAt.Sub(ready)
			integ += s.MergedAt.Sub(task.FinishedAt) - verifySec*time.Second
		}
		n := time.Duration(len(done.Steps))
		b.Logf("%s: %.2f s wall; per step %v scheduling, %v integration besides verify", name, wall, sched/n, integ/n)
		return wall, sched / n, integ / n
	}
	for range b.N {
		g, gs, gi := run("graph", graph)
		c, _, _ := run("one after another", chain)
		b.ReportMetric(g, "graph-s")
		b.ReportMetric(c, "serial-s")
		b.ReportMetric(c/g, "speedup")
		b.ReportMetric(float64(gs.Milliseconds()), "sched-ms/step")
		b.ReportMetric(float64(gi.Milliseconds()), "integrate-ms/step")
	}
}
