package worktree

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/testenv"
)

// benchRepo makes a repository of 100 directories × 100 small files in one
// commit: the size where checkout dominates `git worktree add`, so what
// familiar adds on top shows as a ratio.
func benchRepo(b *testing.B) string {
	b.Helper()
	dir := newRepo(b, nil)
	for d := range 100 {
		sub := filepath.Join(dir, fmt.Sprintf("dir%03d", d))
		must(b, os.Mkdir(sub, 0o755))
		for f := range 100 {
			content := fmt.Sprintf("package p%d\n\n// file %d of dir %d\n", d, f, d)
			must(b, os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.go", f)), []byte(content), 0o644))
		}
	}
	gitT(b, dir, "add", "-A")
	gitT(b, dir, "commit", "-q", "-m", "10k files")
	return dir
}

// removeBench undoes one iteration, untimed, so every iteration adds to a
// repository with the same single worktree.
func removeBench(b *testing.B, dir, path, branch string) {
	b.StopTimer()
	gitT(b, dir, "worktree", "remove", "--force", path)
	gitT(b, dir, "branch", "-q", "-D", branch)
	b.StartTimer()
}

// BenchmarkCreate measures Create; compare with BenchmarkGitWorktreeAdd
// (the goal is under 10% more).
func BenchmarkCreate(b *testing.B) {
	dir := benchRepo(b)
	r := openRepo(b, dir)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		wt, err := r.Create(ctx, CreateOptions{TaskID: strconv.Itoa(i), Title: "bench task"})
		if err != nil {
			b.Fatal(err)
		}
		removeBench(b, dir, wt.Path, wt.Branch)
	}
}

// BenchmarkGitWorktreeAdd is the floor: plain `git worktree add -b`.
func BenchmarkGitWorktreeAdd(b *testing.B) {
	git := testenv.Git(b)
	dir := benchRepo(b)
	root := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		path := filepath.Join(root, strconv.Itoa(i))
		branch := "bench/" + strconv.Itoa(i)
		cmd := exec.Command(git, "worktree", "add", "-b", branch, path, "HEAD")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git worktree add: %v\n%s", err, out)
		}
		removeBench(b, dir, path, branch)
	}
}

// BenchmarkCreateVsGitWorktreeAdd runs Create and plain `git worktree add
// -b` alternately on one repository, so that both see the same load from
// the rest of the machine, and reports each one's mean time and the median
// of their per-pair ratios: on a shared machine that ratio is steadier than
// one computed from the two benchmarks above, which run minutes apart.
func BenchmarkCreateVsGitWorktreeAdd(b *testing.B) {
	git := testenv.Git(b)
	dir := benchRepo(b)
	inner := &gitTimer{verb: "worktree add"}
	r, err := Open(context.Background(), dir, Options{Root: b.TempDir(), Logger: slog.New(inner)})
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	ctx := context.Background()
	var create, add time.Duration
	var ratios []float64
	i := 0
	for b.Loop() {
		i++
		var tc, ta time.Duration
		runCreate := func() {
			start := time.Now()
			wt, err := r.Create(ctx, CreateOptions{TaskID: strconv.Itoa(i), Title: "bench task"})
			tc = time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			removeBench(b, dir, wt.Path, wt.Branch)
		}
		runAdd := func() {
			path := filepath.Join(root, strconv.Itoa(i))
			branch := "bench/" + strconv.Itoa(i)
			start := time.Now()
			cmd := exec.Command(git, "worktree", "add", "-b", branch, path, "HEAD")
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			ta = time.Since(start)
			if err != nil {
				b.Fatalf("git worktree add: %v\n%s", err, out)
			}
			removeBench(b, dir, path, branch)
		}
		// Alternate which goes first, so neither always gets the warmer cache.
		if i%2 == 0 {
			runCreate()
			runAdd()
		} else {
			runAdd()
			runCreate()
		}
		create += tc
		add += ta
		ratios = append(ratios, float64(tc)/float64(ta))
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(create.Nanoseconds())/float64(i), "create-ns/op")
	b.ReportMetric(float64(add.Nanoseconds())/float64(i), "add-ns/op")
	b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
	// What Create spends besides its own `git worktree add`, measured
	// inside the same call and so immune to load changing between calls.
	b.ReportMetric(100*float64(create-inner.took)/float64(inner.took), "overhead-%")
}

// gitTimer is a slog.Handler that sums the time of the git runs whose
// arguments start with verb, from the runner's debug records.
type gitTimer struct {
	verb string
	mu   sync.Mutex
	took time.Duration // guarded by mu
}

func (h *gitTimer) Enabled(context.Context, slog.Level) bool { return true }
func (h *gitTimer) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *gitTimer) WithGroup(string) slog.Handler            { return h }

func (h *gitTimer) Handle(_ context.Context, rec slog.Record) error {
	var args []string
	var took time.Duration
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "args":
			args, _ = a.Value.Any().([]string)
		case "took":
			took = a.Value.Duration()
		}
		return true
	})
	if strings.HasPrefix(strings.Join(args, " "), h.verb+" ") {
		h.mu.Lock()
		h.took += took
		h.mu.Unlock()
	}
	return nil
}
