package bench

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/dirs"
)

// TestStoreCommitBesideFamiliarsStore: the store scenario times both kinds
// of commit in a store made in familiar's data dir, which it leaves as it
// found it; where that dir cannot be made it measures in the temporary dir
// and says so. The figures themselves are `familiar bench --only store`'s.
func TestStoreCommitBesideFamiliarsStore(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	r := &runner{opts: Options{Log: io.Discard}, report: &Report{}, tmp: t.TempDir()}
	if err := r.storeCommit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.report.StoreCommit) != 2 {
		t.Fatalf("%d kinds of commit, want 2: %+v", len(r.report.StoreCommit), r.report.StoreCommit)
	}
	for _, c := range r.report.StoreCommit {
		if c.Latency.N != commitRuns || c.Latency.P50 <= 0 || c.Where != "familiar's data dir" {
			t.Errorf("%s: %+v", c.Kind, c)
		}
	}
	if left, _ := os.ReadDir(dirs.Data()); len(left) != 0 {
		t.Errorf("the data dir was left with %v", left)
	}
	var b strings.Builder
	printScenario(&b, r.report, ScenarioStore)
	if !strings.Contains(b.String(), CommitQuestion) || !strings.Contains(b.String(), "familiar's data dir ("+runtime.GOOS+")") {
		t.Errorf("table:\n%s", b.String())
	}

	// A data dir that cannot be made (a file where its parent should be).
	blocker := filepath.Join(home, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_DATA_HOME", filepath.Join(blocker, "data"))
	r = &runner{opts: Options{Log: io.Discard}, report: &Report{}, tmp: t.TempDir()}
	if err := r.storeCommit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(r.report.StoreCommit) != 2 || r.report.StoreCommit[0].Where != "temp" {
		t.Errorf("without a data dir: %+v", r.report.StoreCommit)
	}
}
