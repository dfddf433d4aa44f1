package bench

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/mask"
)

// TestOutputLagOneWindow runs the output lag scenario for a short window:
// both variants report frames, and the held variant's tail reaches the
// client no sooner than the masker's quiet hold (it was held; the stamp
// before it was not). The figures themselves are `familiar bench`'s.
func TestOutputLagOneWindow(t *testing.T) {
	testenv.Git(t)
	t.Setenv("HOME", t.TempDir())
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fake, err := BuildFakeAgent(context.Background(), root, tmp)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{ModuleRoot: root, Window: 2 * time.Second, Out: io.Discard, Log: io.Discard}
	if err := opts.defaults(); err != nil {
		t.Fatal(err)
	}
	r := &runner{opts: opts, report: &Report{}, tmp: tmp, fake: fake, moduleRoot: root}
	if err := r.outputLag(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.report.OutputLag) != 2 {
		t.Fatalf("%d variants, want 2: %+v", len(r.report.OutputLag), r.report.OutputLag)
	}
	for _, o := range r.report.OutputLag {
		t.Logf("%s: lag %+v, held %+v", o.Variant, o.Lag, o.HeldLag)
		if o.Lag.N == 0 {
			t.Errorf("%s: no frame measured", o.Variant)
		}
	}
	if held := r.report.OutputLag[1]; held.Variant != LagHeld || held.HeldLag.N == 0 || held.HeldLag.P50 < float64(mask.DefaultQuiet.Milliseconds()) {
		t.Errorf("the partial secret was not held until the quiet flush: %+v", held)
	}
}
