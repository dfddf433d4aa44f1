package bench

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// The benchmarks here run single paths of the scenarios under go test, for
// profiling (-cpuprofile) and comparing (benchstat); `familiar bench` runs
// the whole set and writes the results. They build internal/fakeagent.
//
//	go test ./bench -run '^$' -bench Flood -benchtime 3x -cpuprofile cpu.out

func benchRunner(b *testing.B) *runner {
	b.Helper()
	testenv.Git(b)
	root, err := ModuleRoot()
	if err != nil {
		b.Fatal(err)
	}
	tmp, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	fake, err := BuildFakeAgent(context.Background(), root, tmp)
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{ModuleRoot: root, Runs: 10, StartRuns: 3, FloodMB: 64, Window: 2 * time.Second, Out: io.Discard, Log: io.Discard}
	if err := opts.defaults(); err != nil {
		b.Fatal(err)
	}
	return &runner{opts: opts, report: &Report{}, tmp: tmp, fake: fake, moduleRoot: root}
}

func benchFlood(b *testing.B, f func(*runner) func(context.Context, int64, bool) (ThroughputResult, error), color bool) {
	r := benchRunner(b)
	n := int64(r.opts.FloodMB) << 20
	b.SetBytes(n)
	for b.Loop() {
		res, err := f(r)(context.Background(), n, color)
		if err != nil {
			b.Fatal(err)
		}
		if res.Dropped > 0 {
			b.Errorf("%d bytes dropped", res.Dropped)
		}
	}
}

func BenchmarkFloodPTY(b *testing.B) {
	benchFlood(b, func(r *runner) func(context.Context, int64, bool) (ThroughputResult, error) { return r.floodPTY }, false)
}

func BenchmarkFloodProcs(b *testing.B) {
	benchFlood(b, func(r *runner) func(context.Context, int64, bool) (ThroughputResult, error) { return r.floodProcs }, false)
}

func BenchmarkFloodAgent(b *testing.B) {
	benchFlood(b, func(r *runner) func(context.Context, int64, bool) (ThroughputResult, error) { return r.floodAgent }, false)
}

func BenchmarkFloodAgentColour(b *testing.B) {
	benchFlood(b, func(r *runner) func(context.Context, int64, bool) (ThroughputResult, error) { return r.floodAgent }, true)
}

func BenchmarkFloodOrchestrator(b *testing.B) {
	benchFlood(b, func(r *runner) func(context.Context, int64, bool) (ThroughputResult, error) {
		return r.floodOrchestrator
	}, false)
}

// BenchmarkScreenModel is the screen model alone on text lines, before and
// after the scroll elider.
func BenchmarkScreenModel(b *testing.B) {
	for _, tt := range []struct {
		name  string
		model string
		size  int
		color bool
	}{
		{"before/plain", ModelBefore, 512 << 10, false},
		{"before/colour", ModelBefore, 512 << 10, true},
		{"after/plain", ModelAfter, 8 << 20, false},
		{"after/colour", ModelAfter, 8 << 20, true},
	} {
		b.Run(tt.name, func(b *testing.B) {
			data := lineStream(tt.size, tt.color)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				feedScreen(tt.model, data)
			}
		})
	}
}

// BenchmarkTaskStart is the start scenario with a few runs.
func BenchmarkTaskStart(b *testing.B) {
	r := benchRunner(b)
	for b.Loop() {
		if err := r.taskStart(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	s := r.report.TaskStart
	b.ReportMetric(s.GitWorktreeAdd.P50, "git-add-p50-ms")
	b.ReportMetric(s.WorktreeCreate.P50, "create-p50-ms")
	b.ReportMetric(s.TaskToRunning.P50, "task-to-running-p50-ms")
}

// BenchmarkScale is the scale scenario with a short window.
func BenchmarkScale(b *testing.B) {
	r := benchRunner(b)
	for b.Loop() {
		if err := r.scale(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	s := r.report.Scale
	b.ReportMetric(s.TaskList.P99, "list-p99-ms")
	b.ReportMetric(s.OutputLag.P99, "output-lag-p99-ms")
	b.ReportMetric(s.UpdatedLag.P99, "updated-lag-p99-ms")
}

// BenchmarkDetection is the detection scenario with the real CLI.
func BenchmarkDetection(b *testing.B) {
	cli, err := agent.FindCLI(context.Background(), testenv.Claude(b), "")
	if err != nil {
		b.Fatal(err)
	}
	r := benchRunner(b)
	r.claude = cli
	for b.Loop() {
		r.report.Detection = nil
		if err := r.detection(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	for _, d := range r.report.Detection {
		b.ReportMetric(d.Latency.P50, d.Driver+"-p50-ms")
		b.ReportMetric(d.Latency.P95, d.Driver+"-p95-ms")
	}
}
