package worktree

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// An agent that ends its turn with the conflict the merge queue handed it
// still there (markers in the file, the merge in progress, or the file
// `git add`ed with its markers) gets nothing committed: the checkpoint says
// where the conflict is left, and the branch never holds a marker.
func TestCheckpointRefusesAnUnresolvedConflict(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t, map[string]string{"shared.txt": "one\ntwo\nthree\n"})
	r := openRepo(t, root)
	wt := create(t, r, "task-gaveup", "gave up")
	writeFiles(t, wt.Path, map[string]string{"shared.txt": "one\nTASK\nthree\n"})
	if _, _, err := r.Checkpoint(ctx, wt, "work"); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string]string{"shared.txt": "one\nBASE\nthree\n"})
	gitT(t, root, "commit", "-qam", "base moves")
	if err := r.BringBase(ctx, wt, "main", Merge); !errors.As(err, new(*ConflictError)) {
		t.Fatalf("bringing the base in: %v, want a conflict", err)
	}
	head := gitT(t, wt.Path, "rev-parse", "HEAD")

	// 1. The agent did nothing: unmerged, markers in the file.
	_, committed, err := r.Checkpoint(ctx, wt, "familiar: gave up")
	var ue *UnresolvedError
	if !errors.As(err, &ue) || committed {
		t.Fatalf("checkpoint of an untouched conflict: committed %v, %v", committed, err)
	}
	if len(ue.Files) != 0 || len(ue.Markers) != 3 || !slices.Equal(ue.Paths(), []string{"shared.txt"}) {
		t.Errorf("unresolved = %+v", ue)
	}
	if w := ue.Words(); w != "shared.txt (conflict markers at lines 2, 4, 6)" {
		t.Errorf("words = %q", w)
	}
	// 2. The agent ran `git add` on it, markers and all.
	gitT(t, wt.Path, "add", "shared.txt")
	if _, _, err := r.Checkpoint(ctx, wt, "familiar: gave up"); !errors.As(err, &ue) || len(ue.Files) != 0 || len(ue.Markers) != 3 {
		t.Fatalf("checkpoint of an added conflict: %v (%+v)", err, ue)
	}
	if now := gitT(t, wt.Path, "rev-parse", "HEAD"); now != head {
		t.Errorf("the branch moved: %s → %s", head, now)
	}
	if u, err := r.Unresolved(ctx, wt); err != nil || u == nil {
		t.Errorf("Unresolved = %v, %v", u, err)
	}
	// 3. Resolved: committed, the merge concluded.
	writeFiles(t, wt.Path, map[string]string{"shared.txt": "one\nTASK and BASE\nthree\n"})
	if _, committed, err := r.Checkpoint(ctx, wt, "resolved"); err != nil || !committed {
		t.Fatalf("checkpoint of the resolution: %v, %v", committed, err)
	}
	if u, err := r.Unresolved(ctx, wt); err != nil || u != nil {
		t.Errorf("after the resolution Unresolved = %+v, %v", u, err)
	}
}

// A candidate is the base's next commit made beside everything: no ref and
// no checkout moves until Advance, which is a compare-and-swap; the task's
// branch never moves. A candidate with leftover markers (a branch that
// committed them itself) is seen by LeftoverMarkers.
func TestCandidateAndAdvance(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t, map[string]string{"shared.txt": "one\ntwo\nthree\n"})
	r := openRepo(t, root)
	a := create(t, r, "task-a", "A")
	b := create(t, r, "task-b", "B")
	writeFiles(t, a.Path, map[string]string{"a.txt": "a\n"})
	writeFiles(t, b.Path, map[string]string{"b.txt": "<<<<<<< ours\nb\n=======\nB\n>>>>>>> theirs\n"})
	if _, _, err := r.Checkpoint(ctx, a, "A's work"); err != nil {
		t.Fatal(err)
	}
	// B's agent commits its markers itself: the checkpoint would refuse.
	gitT(t, b.Path, "add", "-A")
	gitT(t, b.Path, "commit", "-qm", "B's work")
	aTip, bTip := gitT(t, a.Path, "rev-parse", "HEAD"), gitT(t, b.Path, "rev-parse", "HEAD")
	before, err := r.Tip(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	c1, err := r.Candidate(ctx, before, a, Merge, "A\n\nFamiliar-Task: task-a\n")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := r.Candidate(ctx, c1, b, Squash, "B")
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := r.Tip(ctx, "main"); now != before {
		t.Errorf("a candidate moved main")
	}
	if m, err := r.LeftoverMarkers(ctx, before, c1); err != nil || len(m) != 0 {
		t.Errorf("markers in A's candidate: %v, %v", m, err)
	}
	if m, err := r.LeftoverMarkers(ctx, c1, c2); err != nil || len(m) != 3 || m[0].Path != "b.txt" {
		t.Errorf("markers in B's candidate: %v, %v", m, err)
	}
	if _, err := r.Advance(ctx, "main", c1, c2); !errors.Is(err, ErrFailedPrecondition) {
		t.Errorf("advance from a commit main is not at: %v", err)
	}
	res, err := r.Advance(ctx, "main", before, c1)
	if err != nil || res.After != c1 || res.UpdatedCheckout == "" {
		t.Fatalf("advance = %+v, %v", res, err)
	}
	if got := readFile(t, root+"/a.txt"); got != "a\n" {
		t.Errorf("the checkout did not follow: %q", got)
	}
	if subject := gitT(t, root, "log", "-1", "--format=%s%n%b"); !strings.HasPrefix(subject, "A\n") || !strings.Contains(subject, "Familiar-Task: task-a") {
		t.Errorf("merge commit message = %q", subject)
	}
	if gitT(t, a.Path, "rev-parse", "HEAD") != aTip || gitT(t, b.Path, "rev-parse", "HEAD") != bTip {
		t.Error("a task's branch moved")
	}
	// The branch already in main: its candidate is main itself.
	if c, err := r.Candidate(ctx, c1, a, Merge, "A again"); err != nil || c != c1 {
		t.Errorf("candidate of a merged branch = %s, %v", c, err)
	}

	// A scratch worktree holds the candidate; reused for another, it
	// holds that one, without what the first left but ignored build
	// output; RemoveScratch takes it away.
	dir, err := r.Scratch(ctx, 0, c2)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir+"/a.txt"); got != "a\n" || !exists(dir+"/b.txt") {
		t.Errorf("scratch worktree lacks the candidate's files")
	}
	writeFiles(t, dir, map[string]string{"left.txt": "x", "build.log": "kept"})
	writeFiles(t, dir, map[string]string{".gitignore": "build.log\n"})
	again, err := r.Scratch(ctx, 0, c1)
	if err != nil || again != dir {
		t.Fatalf("slot 0 again = %s, %v", again, err)
	}
	if exists(dir+"/b.txt") || exists(dir+"/left.txt") || !exists(dir+"/a.txt") {
		t.Errorf("the reused scratch worktree is not c1's tree")
	}
	if err := r.RemoveScratch(ctx); err != nil {
		t.Fatal(err)
	}
	if exists(dir) {
		t.Errorf("scratch worktree %s left behind", dir)
	}
	if paths := listPaths(t, r); slices.Contains(paths, dir) {
		t.Errorf("scratch worktree still listed: %v", paths)
	}

	// RestoreBranch takes a branch back, keeping what it undid.
	writeFiles(t, a.Path, map[string]string{"a.txt": "a2\n"})
	if _, _, err := r.Checkpoint(ctx, a, "more"); err != nil {
		t.Fatal(err)
	}
	if err := r.RestoreBranch(ctx, a, aTip); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, a.Path, "rev-parse", "HEAD"); got != aTip {
		t.Errorf("branch after restore = %s, want %s", got, aTip)
	}
	if refs, err := r.UndoRefs(ctx, "task-a"); err != nil || len(refs) != 1 {
		t.Errorf("undo refs = %+v, %v", refs, err)
	}
}

// A delete/modify conflict has no markers: left as the merge made it (this
// side's file), it is not resolved; `git add` or `git rm` of it is.
func TestCheckpointRefusesAnUntouchedDeleteConflict(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t, map[string]string{"gone.txt": "one\n", "keep.txt": "k\n"})
	r := openRepo(t, root)
	wt := create(t, r, "task-del", "del")
	writeFiles(t, wt.Path, map[string]string{"gone.txt": "one\nTASK\n"})
	if _, _, err := r.Checkpoint(ctx, wt, "work"); err != nil {
		t.Fatal(err)
	}
	gitT(t, root, "rm", "-q", "gone.txt")
	gitT(t, root, "commit", "-qm", "base deletes")
	if err := r.BringBase(ctx, wt, "main", Merge); !errors.As(err, new(*ConflictError)) {
		t.Fatalf("bringing the base in: %v, want a conflict", err)
	}
	var ue *UnresolvedError
	if _, _, err := r.Checkpoint(ctx, wt, "gave up"); !errors.As(err, &ue) || !slices.Equal(ue.Files, []string{"gone.txt"}) {
		t.Fatalf("checkpoint of an untouched delete conflict: %v", err)
	}
	if w := ue.Words(); w != "gone.txt (not marked resolved)" {
		t.Errorf("words = %q", w)
	}
	gitT(t, wt.Path, "rm", "-q", "gone.txt")
	if _, committed, err := r.Checkpoint(ctx, wt, "resolved: deleted"); err != nil || !committed {
		t.Fatalf("checkpoint after git rm: %v, %v", committed, err)
	}
}
