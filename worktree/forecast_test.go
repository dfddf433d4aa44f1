package worktree

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Three tasks at work, nothing committed: A and B change the same lines of
// one file and different lines of another, C a file of its own. The
// forecast sees the conflict and the overlap from snapshots, and no
// checkout changes while it looks.
func TestForecastFromSnapshots(t *testing.T) {
	ctx := context.Background()
	lines := func(n int, edit map[int]string) string {
		var b strings.Builder
		for i := range n {
			l := "line " + string(rune('a'+i))
			if e, ok := edit[i]; ok {
				l = e
			}
			b.WriteString(l + "\n")
		}
		return b.String()
	}
	root := newRepo(t, map[string]string{"f.txt": lines(10, nil), "h.txt": lines(20, nil), "g.txt": "g\n"})
	r := openRepo(t, root)
	a := create(t, r, "task-a", "a")
	b := create(t, r, "task-b", "b")
	c := create(t, r, "task-c", "c")
	writeFiles(t, a.Path, map[string]string{"f.txt": lines(10, map[int]string{2: "A was here"}), "h.txt": lines(20, map[int]string{0: "A"}), "new-a.txt": "a\n"})
	writeFiles(t, b.Path, map[string]string{"f.txt": lines(10, map[int]string{2: "B was here"}), "h.txt": lines(20, map[int]string{18: "B"})})
	writeFiles(t, c.Path, map[string]string{"g.txt": "g by c\n"})

	statusBefore := gitT(t, a.Path, "status", "--porcelain")
	headBefore := gitT(t, a.Path, "rev-parse", "HEAD")
	snap := map[string]string{}
	for _, wt := range []Worktree{a, b, c} {
		s, err := r.Snapshot(ctx, wt)
		if err != nil {
			t.Fatal(err)
		}
		snap[wt.TaskID] = s
	}
	if got := gitT(t, a.Path, "status", "--porcelain"); got != statusBefore {
		t.Errorf("the snapshot changed the worktree's status:\n%s\nwas\n%s", got, statusBefore)
	}
	if got := gitT(t, a.Path, "rev-parse", "HEAD"); got != headBefore {
		t.Errorf("the snapshot moved HEAD")
	}
	if got := gitT(t, root, "show", snap["task-a"]+":new-a.txt"); got != "a" {
		t.Errorf("the snapshot lacks the untracked file: %q", got)
	}
	// Nothing pending: the snapshot is HEAD itself.
	d := create(t, r, "task-d", "d")
	if s, err := r.Snapshot(ctx, d); err != nil || s != gitT(t, d.Path, "rev-parse", "HEAD") {
		t.Errorf("snapshot of a clean worktree = %s, %v; want its HEAD", s, err)
	}

	for _, tc := range []struct {
		base, head          string
		conflicts, overlaps []string
	}{
		{"main", snap["task-a"], nil, nil},
		{"main", snap["task-b"], nil, nil},
		{snap["task-a"], snap["task-b"], []string{"f.txt"}, []string{"h.txt"}},
		{snap["task-b"], snap["task-a"], []string{"f.txt"}, []string{"h.txt"}},
		{snap["task-a"], snap["task-c"], nil, nil},
	} {
		f, err := r.Forecast(ctx, tc.base, tc.head)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f.Conflicts, tc.conflicts) || !slices.Equal(f.Overlaps, tc.overlaps) {
			t.Errorf("Forecast(%.8s, %.8s) = %+v, want conflicts %v overlaps %v", tc.base, tc.head, f, tc.conflicts, tc.overlaps)
		}
	}
	if _, err := r.Forecast(ctx, "--output=x", "main"); err == nil {
		t.Error("an option as a revision was taken")
	}
}

// BenchmarkForecastCheckpoint is the git time of one task's forecast after
// a checkpoint, on a repository of 10,000 files with n live tasks: a
// snapshot of the task, then its forecast against the base and against each
// other task's (cached) snapshot. Each task edits a file of its own and one
// shared file, so every pair has work to compare.
func BenchmarkForecastCheckpoint(b *testing.B) {
	for _, n := range []int{1, 5, 10} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			ctx := context.Background()
			dir := benchRepo(b)
			r := openRepo(b, dir)
			var wts []Worktree
			snaps := map[string]string{}
			for i := range n {
				wt := create(b, r, fmt.Sprintf("bench-%d", i), "bench")
				writeFiles(b, wt.Path, map[string]string{
					fmt.Sprintf("dir%03d/file000.go", i): fmt.Sprintf("package p%d\n\n// task %d\n", i, i),
					"dir099/file099.go":                  fmt.Sprintf("package p99\n\n// task %d\n", i),
				})
				wts = append(wts, wt)
				s, err := r.Snapshot(ctx, wt)
				if err != nil {
					b.Fatal(err)
				}
				snaps[wt.TaskID] = s
			}
			i := 0
			for b.Loop() {
				i++
				wt := wts[0]
				writeFiles(b, wt.Path, map[string]string{"dir000/file001.go": fmt.Sprintf("package p0\n\n// edit %d\n", i)})
				s, err := r.Snapshot(ctx, wt)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Forecast(ctx, "main", s); err != nil {
					b.Fatal(err)
				}
				for _, other := range wts[1:] {
					if _, err := r.Forecast(ctx, snaps[other.TaskID], s); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// The shortcut that skips git's merge for disjoint changes still sees a
// file against a directory of the same name, and a rename against an edit
// (which git merges cleanly: an overlap).
func TestForecastFileAgainstDirectoryAndRename(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t, map[string]string{"old.txt": "one\ntwo\nthree\n"})
	r := openRepo(t, root)
	a := create(t, r, "task-a", "a")
	b := create(t, r, "task-b", "b")
	writeFiles(t, a.Path, map[string]string{"x": "a file\n"})
	writeFiles(t, b.Path, map[string]string{"x/y": "in a directory\n"})
	sa, err := r.Snapshot(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := r.Snapshot(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := r.Forecast(ctx, sa, sb); err != nil || len(f.Conflicts) == 0 {
		t.Errorf("file x against directory x/: %+v, %v; want a conflict", f, err)
	}

	c := create(t, r, "task-c", "c")
	d := create(t, r, "task-d", "d")
	gitT(t, c.Path, "mv", "old.txt", "new.txt")
	writeFiles(t, d.Path, map[string]string{"old.txt": "one\ntwo\nthree\nfour\n"})
	sc, err := r.Snapshot(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	sd, err := r.Snapshot(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	f, err := r.Forecast(ctx, sc, sd)
	if err != nil || len(f.Conflicts) != 0 || !slices.Equal(f.Overlaps, []string{"old.txt"}) {
		t.Errorf("rename against an edit: %+v, %v; want a clean merge with old.txt overlapping", f, err)
	}
}

func TestVersionAtLeast(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"2.39.5", true}, {"2.38", true}, {"2.38.0", true}, {"2.37.9", false}, {"1.99", false},
		{"2.45.windows.1", true}, {"2.39.5 (Apple Git-154)", true}, {"3.0", true}, {"2", false}, {"", false},
	} {
		if got := VersionAtLeast(tc.v, MinVersion); got != tc.want {
			t.Errorf("VersionAtLeast(%q, %s) = %v", tc.v, MinVersion, got)
		}
	}
}
