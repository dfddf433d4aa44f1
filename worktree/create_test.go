package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/testenv"
)

func TestCreateListRemove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, map[string]string{"README.md": "hello\n", "src/main.go": "package main\n"})
	r := openRepo(t, dir)

	wt := create(t, r, "task-1", "Fix the login bug!")
	if want := r.BranchPrefix() + shortID("task-1") + "-fix-the-login-bug"; wt.Branch != want {
		t.Errorf("Branch = %q; want %q", wt.Branch, want)
	}
	// The task id is in the name, so git branch leads to the task.
	if wt.Branch != "familiar/task-1-fix-the-login-bug" {
		t.Errorf("Branch = %q; want familiar/task-1-fix-the-login-bug", wt.Branch)
	}
	// An id that cannot be a ref component is hashed.
	for id, want := range map[string]string{"te506a36a1b4263cd": "te506a36a1b4263cd", "a/b c": shortHash("a/b c"), "-x": shortHash("-x"), strings.Repeat("a", 41): shortHash(strings.Repeat("a", 41))} {
		if got := shortID(id); got != want {
			t.Errorf("shortID(%q) = %q, want %q", id, got, want)
		}
	}
	if filepath.Dir(wt.Path) != r.WorktreesDir() || filepath.Base(wt.Path) != strings.TrimPrefix(wt.Branch, "familiar/") {
		t.Errorf("Path = %s; want %s/<short-id>-<slug>", wt.Path, r.WorktreesDir())
	}
	if head := gitT(t, dir, "rev-parse", "HEAD"); wt.BaseRef != "main" || wt.BaseCommit != head {
		t.Errorf("base = %q %s; want main %s", wt.BaseRef, wt.BaseCommit, head)
	}
	if wt.RepoRoot != dir || wt.TaskID != "task-1" {
		t.Errorf("RepoRoot, TaskID = %s, %q; want %s, task-1", wt.RepoRoot, wt.TaskID, dir)
	}
	if got := readFile(t, filepath.Join(wt.Path, "src/main.go")); got != "package main\n" {
		t.Errorf("checked-out file = %q", got)
	}
	if got := gitT(t, wt.Path, "symbolic-ref", "--short", "HEAD"); got != wt.Branch {
		t.Errorf("worktree is on %s; want %s", got, wt.Branch)
	}

	entries, err := r.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || !entries[0].Main || entries[0].Path != dir || entries[0].Branch != "main" {
		t.Fatalf("List = %+v; want the main worktree then the task's", entries)
	}
	// Create lists what it made, as ListTracked does; List does not.
	tracked, err := r.ListTracked(ctx, wt.Path)
	if err != nil {
		t.Fatal(err)
	}
	if wt.Listing == nil || !slices.Equal(wt.Listing.Tracked, tracked) || len(tracked) == 0 || wt.Listing.Submodules != nil {
		t.Errorf("Create's listing %+v; ListTracked says %q, and there are no submodules", wt.Listing, tracked)
	}
	made := wt
	made.Listing = nil
	e := entries[1]
	if e.Worktree != made || !e.Familiar || e.Main || e.Head != wt.BaseCommit || e.Detached || e.Locked || e.Prunable {
		t.Errorf("List entry = %+v; want %+v, familiar, at its base", e, wt)
	}

	if err := r.Remove(ctx, wt.Path, RemoveOptions{}); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if exists(wt.Path) {
		t.Error("worktree directory still exists after Remove")
	}
	if got := listPaths(t, r); !slices.Equal(got, []string{dir}) {
		t.Errorf("List after Remove = %v", got)
	}
	if !hasBranch(t, dir, wt.Branch) {
		t.Error("Remove without DeleteBranch deleted the branch")
	}
	wantKind(t, r.Remove(ctx, wt.Path, RemoveOptions{}), ErrNotFound)
	wantKind(t, r.Remove(ctx, dir, RemoveOptions{Force: true}), ErrInvalid)
}

func TestCreateBase(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, map[string]string{"a.txt": "one\n"})
	first := gitT(t, dir, "rev-parse", "HEAD")
	gitT(t, dir, "tag", "v1")
	gitT(t, dir, "branch", "feature")
	writeFiles(t, dir, map[string]string{"a.txt": "two\n"})
	gitT(t, dir, "commit", "-qam", "second")
	second := gitT(t, dir, "rev-parse", "HEAD")
	r := openRepo(t, dir)

	tests := []struct {
		ref         string
		wantRef     string
		wantCommit  string
		wantContent string
	}{
		{"", "main", second, "two\n"},
		{"main", "main", second, "two\n"},
		{"feature", "feature", first, "one\n"},
		{"v1", "v1", first, "one\n"},
		{"refs/heads/feature", "refs/heads/feature", first, "one\n"},
		{first, first, first, "one\n"},
	}
	for i, tt := range tests {
		wt, err := r.Create(context.Background(), CreateOptions{TaskID: "t" + string(rune('a'+i)), Title: "base", BaseRef: tt.ref})
		if err != nil {
			t.Errorf("Create(base %q): %v", tt.ref, err)
			continue
		}
		if wt.BaseRef != tt.wantRef || wt.BaseCommit != tt.wantCommit {
			t.Errorf("Create(base %q) base = %q %s; want %q %s", tt.ref, wt.BaseRef, wt.BaseCommit, tt.wantRef, tt.wantCommit)
		}
		if got := readFile(t, filepath.Join(wt.Path, "a.txt")); got != tt.wantContent {
			t.Errorf("Create(base %q) checked out %q; want %q", tt.ref, got, tt.wantContent)
		}
	}

	_, err := r.Create(context.Background(), CreateOptions{TaskID: "x", Title: "t", BaseRef: "no-such-branch"})
	wantKind(t, err, ErrNotFound)

	// Detached HEAD: the base is recorded as HEAD, at its commit.
	gitT(t, dir, "checkout", "-q", "--detach", "feature")
	wt := create(t, r, "detached", "from detached")
	if wt.BaseRef != "HEAD" || wt.BaseCommit != first {
		t.Errorf("base from a detached HEAD = %q %s; want HEAD %s", wt.BaseRef, wt.BaseCommit, first)
	}
}

func TestCreateConflicts(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, map[string]string{"a": "a\n"})
	r := openRepo(t, dir)
	wt := create(t, r, "same", "same title")

	_, err := r.Create(context.Background(), CreateOptions{TaskID: "same", Title: "same title"})
	wantKind(t, err, ErrConflict)

	// The branch alone (worktree removed, branch kept) is a conflict too.
	if err := r.Remove(context.Background(), wt.Path, RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = r.Create(context.Background(), CreateOptions{TaskID: "same", Title: "same title"})
	wantKind(t, err, ErrConflict)
}

func TestCreateEmptyRepository(t *testing.T) {
	t.Parallel()
	testenv.Git(t)
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	r := openRepo(t, dir)
	_, err := r.Create(context.Background(), CreateOptions{TaskID: "t", Title: "anything"})
	wantKind(t, err, ErrFailedPrecondition)
}

// TestCreateHostileInput feeds titles, refs and ids that would do harm if
// a shell or git's option parser ever saw them, and checks each is either
// refused with ErrInvalid or inert: a safe name, no file "x" anywhere, and
// nothing written outside the temporary directories.
func TestCreateHostileInput(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, map[string]string{"a": "a\n"})
	r := openRepo(t, dir)
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadDir(cwd)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		opts     CreateOptions
		wantErr  error  // nil: created
		wantSlug string // when created
	}{
		{"option title", CreateOptions{Title: "--upload-pack=touch x"}, nil, "upload-pack-touch-x"},
		{"shell title", CreateOptions{Title: "$(rm -rf ~)"}, nil, "rm-rf"},
		{"backticks title", CreateOptions{Title: "`touch x`; touch x"}, nil, "touch-x-touch-x"},
		{"traversal title", CreateOptions{Title: "../../etc"}, nil, "etc"},
		{"absolute title", CreateOptions{Title: "/etc/passwd"}, nil, "etc-passwd"},
		{"newline title", CreateOptions{Title: "a\nb\x00c"}, nil, "a-b-c"},
		{"long title", CreateOptions{Title: strings.Repeat("word ", 40)}, nil, strings.TrimSuffix(strings.Repeat("word-", 8), "-")},
		{"unicode title", CreateOptions{Title: "日本語のタスク"}, ErrInvalid, ""},
		{"emoji title", CreateOptions{Title: "🚀🔥"}, ErrInvalid, ""},
		{"punctuation title", CreateOptions{Title: "--- ... ---"}, ErrInvalid, ""},
		{"empty title", CreateOptions{Title: ""}, ErrInvalid, ""},
		{"dash ref", CreateOptions{Title: "t", BaseRef: "-x"}, ErrInvalid, ""},
		{"option ref", CreateOptions{Title: "t", BaseRef: "--upload-pack=touch x"}, ErrInvalid, ""},
		{"output ref", CreateOptions{Title: "t", BaseRef: "--output=x"}, ErrInvalid, ""},
		{"range ref", CreateOptions{Title: "t", BaseRef: "a..b"}, ErrInvalid, ""},
		{"symmetric range ref", CreateOptions{Title: "t", BaseRef: "main...main"}, ErrInvalid, ""},
		{"control ref", CreateOptions{Title: "t", BaseRef: "a\x01b"}, ErrInvalid, ""},
		{"newline ref", CreateOptions{Title: "t", BaseRef: "main\nHEAD"}, ErrInvalid, ""},
		{"space ref", CreateOptions{Title: "t", BaseRef: "a b"}, ErrInvalid, ""},
		{"revision syntax ref", CreateOptions{Title: "t", BaseRef: "HEAD~1"}, ErrInvalid, ""},
		{"reflog ref", CreateOptions{Title: "t", BaseRef: "@{-1}"}, ErrInvalid, ""},
		{"lock ref", CreateOptions{Title: "t", BaseRef: "main.lock"}, ErrInvalid, ""},
		{"shell ref", CreateOptions{Title: "t", BaseRef: "$(touch x)"}, ErrInvalid, ""},
		{"traversal ref", CreateOptions{Title: "t", BaseRef: "../../etc"}, ErrInvalid, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.TaskID = "hostile-" + string(rune('a'+i))
			wt, err := r.Create(context.Background(), opts)
			if tt.wantErr != nil {
				wantKind(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			want := shortID(opts.TaskID) + "-" + tt.wantSlug
			if wt.Branch != r.BranchPrefix()+want || wt.Path != filepath.Join(r.WorktreesDir(), want) {
				t.Errorf("Create made %s at %s; want branch %s%s under %s", wt.Branch, wt.Path, r.BranchPrefix(), want, r.WorktreesDir())
			}
		})
	}

	// Hostile task ids are refused or only hashed.
	for _, id := range []string{"", "a\nb", "a\x00b"} {
		_, err := r.Create(context.Background(), CreateOptions{TaskID: id, Title: "t"})
		wantKind(t, err, ErrInvalid)
	}
	wt := create(t, r, "../../--upload-pack=x", "id")
	if filepath.Dir(wt.Path) != r.WorktreesDir() {
		t.Errorf("a hostile task id put the worktree at %s", wt.Path)
	}

	for _, d := range append([]string{dir, cwd, r.WorktreesDir()}, listPaths(t, r)...) {
		if exists(filepath.Join(d, "x")) {
			t.Errorf("file x was created in %s", d)
		}
	}
	after, err := os.ReadDir(cwd)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the package directory changed: %d entries before, %d after", len(before), len(after))
	}
	if exists(os.Getenv("HOME")) {
		t.Errorf("HOME (%s) was written to", os.Getenv("HOME"))
	}
}

func TestSlugify(t *testing.T) {
	t.Parallel()
	tests := []struct{ title, want string }{
		{"Fix the login bug", "fix-the-login-bug"},
		{"  leading and trailing  ", "leading-and-trailing"},
		{"CamelCase_and_snake", "camelcase-and-snake"},
		{"v1.2.3 release", "v1-2-3-release"},
		{"café au lait", "caf-au-lait"},
		{"日本語", ""},
		{"---", ""},
		{"a" + strings.Repeat("b", 100), "a" + strings.Repeat("b", maxSlugLen-1)},
		{"fix the login page for users with very long names", "fix-the-login-page-for-users-with-very"},
		{strings.Repeat("ab ", 30), strings.TrimSuffix(strings.Repeat("ab-", 13), "-")},
	}
	for _, tt := range tests {
		got := slugify(tt.title)
		if got != tt.want {
			t.Errorf("slugify(%q) = %q; want %q", tt.title, got, tt.want)
		}
		if len(got) > maxSlugLen || strings.HasPrefix(got, "-") || strings.HasSuffix(got, "-") {
			t.Errorf("slugify(%q) = %q breaks the slug rules", tt.title, got)
		}
	}
}

// TestCheckRefFormatAgreesWithGit pins the Go port of git's ref-name rules
// to git itself.
func TestCheckRefFormatAgreesWithGit(t *testing.T) {
	t.Parallel()
	git := testenv.Git(t)
	names := []string{
		"main", "feature/x", "v1.0", "refs/heads/main", "a..b", "a.", "a/.b", ".a",
		"a.lock", "a.lock/b", "a/b.lock", "a//b", "/a", "a/", "@", "a@{b", "a@b",
		"a b", "a~1", "a^", "a:b", "a?", "a*", "a[b", `a\b`, "a\x01b", "a\x7fb",
		"HEAD", "HEAD~1", "@{-1}", "caf\u00e9", "a/b/c", "-", ".", "..", "",
	}
	for _, name := range names {
		// git check-ref-format would take these for options; validRef
		// refuses them before this check anyway.
		if strings.HasPrefix(name, "-") {
			continue
		}
		cmd := exec.Command(git, "check-ref-format", "--allow-onelevel", name)
		gitOK := cmd.Run() == nil
		why := checkRefFormat(name)
		if gitOK != (why == "") {
			t.Errorf("checkRefFormat(%q) = %q; git check-ref-format says ok=%v", name, why, gitOK)
		}
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := newRepo(t, map[string]string{"a": "a\n"})

	_, err := Open(ctx, t.TempDir(), Options{Root: t.TempDir()})
	wantKind(t, err, ErrNotFound)
	_, err = Open(ctx, filepath.Join(t.TempDir(), "missing"), Options{Root: t.TempDir()})
	wantKind(t, err, ErrNotFound)
	_, err = Open(ctx, dir, Options{Root: filepath.Join(dir, "worktrees")})
	wantKind(t, err, ErrInvalid)
	_, err = Open(ctx, dir, Options{Root: t.TempDir(), BranchPrefix: "-x/"})
	wantKind(t, err, ErrInvalid)
	_, err = Open(ctx, dir, Options{Root: t.TempDir(), Git: filepath.Join(t.TempDir(), "no-git")})
	wantKind(t, err, ErrUnavailable)

	// Opened from a subdirectory, and with another branch prefix.
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	r, err := Open(ctx, filepath.Join(dir, "sub"), Options{Root: t.TempDir(), BranchPrefix: "agents/"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Root() != dir {
		t.Errorf("Root() = %s; want %s", r.Root(), dir)
	}
	if wt := create(t, r, "p", "prefixed"); !strings.HasPrefix(wt.Branch, "agents/") {
		t.Errorf("Branch = %s; want the agents/ prefix", wt.Branch)
	}
}

// TestDefaultRoot cannot run in parallel: it sets XDG_DATA_HOME.
func TestDefaultRoot(t *testing.T) {
	dir := newRepo(t, map[string]string{"a": "a\n"})
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	r, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(data, "familiar", "worktrees", "repo-"+shortHash(dir))
	if r.WorktreesDir() != want {
		t.Errorf("WorktreesDir() = %s; want %s", r.WorktreesDir(), want)
	}
	wt := create(t, r, "d", "default root")
	if filepath.Dir(wt.Path) != want {
		t.Errorf("Path = %s; want it under %s", wt.Path, want)
	}

	t.Setenv("XDG_DATA_HOME", "relative/ignored")
	home := t.TempDir()
	t.Setenv("HOME", home)
	r, err = Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".local", "share", "familiar", "worktrees"); filepath.Dir(r.WorktreesDir()) != want {
		t.Errorf("WorktreesDir() = %s; want it under %s", r.WorktreesDir(), want)
	}
}

// TestConcurrentCreates runs Creates from two Repos on one repository at
// once: the shared per-repository lock must keep git's own locks from
// making any of them fail.
func TestConcurrentCreates(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, map[string]string{"a": "a\n"})
	root := t.TempDir()
	var repos [2]*Repo
	for i := range repos {
		r, err := Open(context.Background(), dir, Options{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		repos[i] = r
	}
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := repos[i%2].Create(context.Background(), CreateOptions{TaskID: string(rune('a' + i)), Title: "parallel"})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := len(listPaths(t, repos[0])); got != n+1 {
		t.Errorf("List has %d worktrees; want %d", got, n+1)
	}
}
