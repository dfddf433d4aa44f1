package worktree

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// repoWithSubmodule makes a repository whose libs/lib is a submodule,
// initialised in the main checkout, with a url that cannot be reached: a
// worktree must get it from the main checkout's copy, never the network.
func repoWithSubmodule(t *testing.T) (root, libCommit string) {
	t.Helper()
	lib := newRepo(t, map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"})
	libCommit = gitT(t, lib, "rev-parse", "HEAD")
	root = newRepo(t, map[string]string{"README.md": "hi\n"})
	gitT(t, root, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", lib, "libs/lib")
	// Where it came from is gone for good, as a remote can be.
	gitT(t, root, "config", "--file", ".gitmodules", "submodule.libs/lib.url", "https://familiar.invalid/lib.git")
	gitT(t, root, "config", "submodule.libs/lib.url", "https://familiar.invalid/lib.git")
	gitT(t, root, "add", ".gitmodules")
	gitT(t, root, "commit", "-q", "-m", "add lib")
	return root, libCommit
}

func TestSubmodulesAreCheckedOutFromTheMainCheckout(t *testing.T) {
	ctx := context.Background()
	root, libCommit := repoWithSubmodule(t)
	r := openRepo(t, root)
	wt := create(t, r, "task-sub", "use lib")

	if got := readFile(t, filepath.Join(wt.Path, "libs", "lib", "a.txt")); got != "a\n" {
		t.Fatalf("libs/lib/a.txt in the worktree = %q", got)
	}
	subs, err := r.Submodules(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 1 || !subs[0].Initialised || subs[0].Path != "libs/lib" || subs[0].Name != "libs/lib" || subs[0].Commit != libCommit {
		t.Fatalf("Submodules = %+v", subs)
	}
	// Create's own listing says the same, for the task's start to use.
	if wt.Listing == nil || !reflect.DeepEqual(wt.Listing.Submodules, subs) || !slices.Contains(wt.Listing.Tracked, "libs/lib") {
		t.Errorf("Create's listing %+v; Submodules says %+v", wt.Listing, subs)
	}
	if url := gitT(t, root, "config", "submodule.libs/lib.url"); url != "https://familiar.invalid/lib.git" {
		t.Errorf("the user's config was changed: url = %s", url)
	}

	// The agent edits inside the submodule: the files are reported, not a
	// bare "libs/lib".
	writeFiles(t, wt.Path, map[string]string{"libs/lib/a.txt": "a\nmore\n", "libs/lib/new.txt": "new\n", "top.txt": "t\n"})
	changes, err := r.ChangedFiles(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Path+":"+string(c.Status))
	}
	want := []string{"libs/lib/a.txt:modified", "libs/lib/new.txt:added", "top.txt:added"}
	if !slices.Equal(paths, want) {
		t.Errorf("ChangedFiles = %v, want %v", paths, want)
	}

	// A clean worktree with a submodule can be removed (git refuses
	// without --force).
	wt2 := create(t, r, "task-sub2", "remove me")
	if err := r.Remove(ctx, wt2.Path, RemoveOptions{}); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	// A dirty submodule still blocks removal.
	if err := r.Remove(ctx, wt.Path, RemoveOptions{}); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("Remove of a worktree with changes in a submodule: %v", err)
	}
}

// A clone whose submodule was never initialised: the worktree says so
// instead of showing an empty directory as if it were the code.
func TestSubmoduleMissingInTheMainCheckoutIsReported(t *testing.T) {
	ctx := context.Background()
	root, _ := repoWithSubmodule(t)
	clone := filepath.Join(filepath.Dir(root), "clone")
	gitT(t, filepath.Dir(root), "clone", "-q", root, clone)
	r := openRepo(t, clone)
	wt := create(t, r, "task-nosub", "no lib")
	subs, err := r.Submodules(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 1 || subs[0].Initialised || subs[0].Problem != problemNoSource {
		t.Fatalf("Submodules = %+v", subs)
	}
	if wt.Listing == nil || !reflect.DeepEqual(wt.Listing.Submodules, subs) {
		t.Errorf("Create's listing %+v; Submodules says %+v", wt.Listing, subs)
	}
}

// The user checks the task's branch out in the main checkout by force:
// familiar refuses to commit onto it, with a typed error, and commits again
// once the branch is only the task's.
func TestBranchCheckedOutElsewhereIsRefused(t *testing.T) {
	ctx := context.Background()
	root := newRepo(t, map[string]string{"a.txt": "a\n"})
	r := openRepo(t, root)
	wt := create(t, r, "task-elsewhere", "busy branch")
	if err := r.CheckBranch(ctx, wt); err != nil {
		t.Fatalf("CheckBranch before: %v", err)
	}
	gitT(t, root, "checkout", "-q", "--ignore-other-worktrees", wt.Branch)
	writeFiles(t, wt.Path, map[string]string{"b.txt": "b\n"})

	err := r.CheckBranch(ctx, wt)
	var be *BranchElsewhereError
	if !errors.As(err, &be) || be.Path != root || be.Branch != wt.Branch || !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("CheckBranch = %v", err)
	}
	before := gitT(t, root, "rev-parse", "HEAD")
	if _, _, err := r.Checkpoint(ctx, wt, "save"); !errors.As(err, &be) {
		t.Fatalf("Checkpoint = %v, want BranchElsewhereError", err)
	}
	if after := gitT(t, root, "rev-parse", "HEAD"); after != before {
		t.Fatal("the branch moved under the user's checkout")
	}
	if st := gitT(t, root, "status", "--porcelain"); st != "" {
		t.Fatalf("the user's checkout shows changes: %q", st)
	}

	gitT(t, root, "checkout", "-q", "main")
	if _, committed, err := r.Checkpoint(ctx, wt, "save"); err != nil || !committed {
		t.Fatalf("Checkpoint after the user left the branch: %v, %v", committed, err)
	}
}

// An edit inside a submodule is never dropped by a merge without a word:
// Merge refuses and names the files, whatever else the task changed, and
// merges once the submodule is back as it was.
func TestMergeRefusesChangesInsideASubmodule(t *testing.T) {
	ctx := context.Background()
	root, _ := repoWithSubmodule(t)
	r := openRepo(t, root)
	wt := create(t, r, "task-subedit", "edit lib")
	writeFiles(t, wt.Path, map[string]string{"libs/lib/a.txt": "a\nedited\n", "top.txt": "t\n"})
	changes, err := r.ChangedFiles(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if want := map[string]string{"libs/lib/a.txt": "libs/lib", "top.txt": ""}[c.Path]; c.Submodule != want {
			t.Errorf("%s: Submodule = %q, want %q", c.Path, c.Submodule, want)
		}
	}
	gitT(t, wt.Path, "add", "top.txt")
	gitT(t, wt.Path, "commit", "-q", "-m", "top")
	before := gitT(t, root, "rev-parse", "main")

	_, err = r.Merge(ctx, wt, "main", Merge, "")
	var sub *SubmoduleChangesError
	if !errors.As(err, &sub) || !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("Merge with an edit inside a submodule: %v", err)
	}
	if !slices.Equal(sub.Files, []string{"libs/lib/a.txt"}) || !slices.Equal(sub.Submodules, []string{"libs/lib"}) {
		t.Errorf("refusal names %v in %v", sub.Files, sub.Submodules)
	}
	if after := gitT(t, root, "rev-parse", "main"); after != before {
		t.Fatalf("main moved from %s to %s although the merge was refused", before, after)
	}
	t.Logf("refused: %v", err)

	// The edit inside the submodule is undone: the rest merges.
	gitT(t, filepath.Join(wt.Path, "libs", "lib"), "checkout", "--", "a.txt")
	if _, err := r.Merge(ctx, wt, "main", Merge, ""); err != nil {
		t.Fatalf("Merge once the submodule is clean: %v", err)
	}
	if got := gitT(t, root, "show", "main:top.txt"); got != "t" {
		t.Errorf("main:top.txt = %q", got)
	}
}
