package bench

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// TestCompareOneRound runs the comparison's machinery once per system with
// the real claude: every system that can run here reports one detect and
// one continue figure. (The figures themselves are `familiar bench`'s.)
func TestCompareOneRound(t *testing.T) {
	claude := testenv.Claude(t)
	testenv.Git(t)
	t.Setenv("HOME", t.TempDir())
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := agent.FindCLI(context.Background(), claude, "")
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{ModuleRoot: root, CompareRuns: 1, Out: io.Discard, Log: io.Discard}
	if err := opts.defaults(); err != nil {
		t.Fatal(err)
	}
	r := &runner{opts: opts, report: &Report{}, tmp: tmp, moduleRoot: root, claude: cli}
	if err := r.compare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.report.Compare) != 9 {
		t.Fatalf("%d systems compared, want 9: %+v", len(r.report.Compare), r.report.Compare)
	}
	for _, c := range r.report.Compare {
		if c.Skipped != "" {
			// The adapters are installed on request (bash .ci/run-acp-tools).
			if c.System != SystemACP && c.System != SystemAgentACP {
				t.Errorf("%s skipped: %s", c.System, c.Skipped)
			}
			t.Logf("%s skipped: %s", c.System, c.Skipped)
			continue
		}
		if c.Detect.N != 1 || c.Continue.N != 1 || c.Detect.P50 <= 0 || c.Continue.P50 <= 0 {
			t.Errorf("%s: detect %+v, continue %+v; want one positive figure each", c.System, c.Detect, c.Continue)
		}
	}
}

// TestFollowUpOneRound runs the follow-up scenario's machinery once per
// system with the real claude: each reports one figure, a warm familiar
// holds its claude between turns and a cold one holds nothing.
func TestFollowUpOneRound(t *testing.T) {
	claude := testenv.Claude(t)
	testenv.Git(t)
	t.Setenv("HOME", t.TempDir())
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := agent.FindCLI(context.Background(), claude, "")
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{ModuleRoot: root, CompareRuns: 1, Out: io.Discard, Log: io.Discard}
	if err := opts.defaults(); err != nil {
		t.Fatal(err)
	}
	r := &runner{opts: opts, report: &Report{}, tmp: tmp, moduleRoot: root, claude: cli}
	if err := r.followUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.report.FollowUp) != 6 {
		t.Fatalf("%d systems, want 6: %+v", len(r.report.FollowUp), r.report.FollowUp)
	}
	for _, f := range r.report.FollowUp {
		if f.Skipped != "" {
			if f.System != SystemAgentACP {
				t.Errorf("%s skipped: %s", f.System, f.Skipped)
			}
			continue
		}
		if f.FirstRequest.N != 1 || f.FirstRequest.P50 <= 0 {
			t.Errorf("%s: %+v, want one positive figure", f.System, f.FirstRequest)
		}
		warm := f.System == SystemFamiliarStreamWarm || f.System == SystemFamiliarPTYWarm || f.System == SystemAgentACP || f.System == SystemTUIFloorAllHooks
		if warm != (f.IdleRSSMiB > 0) {
			t.Errorf("%s holds %.1f MiB between turns", f.System, f.IdleRSSMiB)
		}
	}
}

// TestFirstRequestOneRound runs the start scenario's machinery once per
// system with the real claude: each reports one positive figure.
func TestFirstRequestOneRound(t *testing.T) {
	claude := testenv.Claude(t)
	testenv.Git(t)
	t.Setenv("HOME", t.TempDir())
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := agent.FindCLI(context.Background(), claude, "")
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// familiar itself, for its start through serve --stdio.
	familiarBin := filepath.Join(tmp, "familiar")
	build := exec.Command("go", "build", "-o", familiarBin, "./cmd/familiar")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/familiar: %v\n%s", err, out)
	}
	opts := Options{ModuleRoot: root, StartRuns: 1, Familiar: familiarBin, Out: io.Discard, Log: io.Discard}
	if err := opts.defaults(); err != nil {
		t.Fatal(err)
	}
	r := &runner{opts: opts, report: &Report{}, tmp: tmp, moduleRoot: root, claude: cli}
	if err := r.firstRequest(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.report.FirstRequest) != 7 {
		t.Fatalf("%d systems, want 7: %+v", len(r.report.FirstRequest), r.report.FirstRequest)
	}
	for _, f := range r.report.FirstRequest {
		if f.Skipped != "" {
			if f.System != SystemAgentACP {
				t.Errorf("%s skipped: %s", f.System, f.Skipped)
			}
			continue
		}
		if f.First.N != 1 || f.First.P50 <= 0 {
			t.Errorf("%s: %+v, want one positive figure", f.System, f.First)
		}
		// familiar's start is split into its steps, from task/create to
		// claude's first request; no step takes longer than the whole.
		familiar := f.System == SystemFamiliarPTY || f.System == SystemFamiliarStream || f.System == SystemFamiliarPTYDaemon
		var names []string
		for _, st := range f.Steps {
			names = append(names, st.Step)
			if st.Dist.N != 1 || st.Dist.P50 < 0 || st.Dist.P50 > f.First.P50 {
				t.Errorf("%s, step %q: %+v (the whole start took %.1f ms)", f.System, st.Step, st.Dist, f.First.P50)
			}
		}
		if want := []string{StepQueued, "worktree", "spawn", StepCLI}; familiar && !containsInOrder(names, want) {
			t.Errorf("%s: steps %q, want %q among them in order", f.System, names, want)
		}
		if !familiar && len(names) > 0 {
			t.Errorf("%s: steps %q; only familiar's start has steps", f.System, names)
		}
	}
}

// containsInOrder reports whether want's items appear in have in order.
func containsInOrder(have, want []string) bool {
	i := 0
	for _, h := range have {
		if i < len(want) && h == want[i] {
			i++
		}
	}
	return i == len(want)
}
