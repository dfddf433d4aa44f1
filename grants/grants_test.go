package grants

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRepositoryFile(t *testing.T) {
	repo := t.TempDir()
	f := RepositoryFile(repo)
	if list, err := f.List(); err != nil || len(list) != 0 {
		t.Fatalf("missing file: %v %v", list, err)
	}
	at := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)
	for _, r := range []string{"Bash(npm test:*)", "Edit(./src/**)", "Bash(npm test:*)"} {
		if _, err := f.Add(Grant{Rule: r, Tool: "Bash", TaskID: "t1", GrantedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := f.List()
	if err != nil || len(list) != 2 || list[0].Scope != ScopeRepository || !list[1].GrantedAt.Equal(at) {
		t.Fatalf("list = %+v, %v", list, err)
	}
	b, _ := os.ReadFile(filepath.Join(repo, ".familiar", "policy.yaml"))
	if !strings.Contains(string(b), "rule: Bash(npm test:*)") || !strings.HasPrefix(string(b), "# Permission rules") {
		t.Errorf("file:\n%s", b)
	}
	if ok, err := f.Revoke("Bash(npm test:*)"); !ok || err != nil {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	if ok, _ := f.Revoke("Bash(npm test:*)"); ok {
		t.Error("revoked twice")
	}
	list, _ = f.List()
	if got := Rules(list); !slices.Equal(got, []string{"Edit(./src/**)"}) {
		t.Errorf("after revoke: %q", got)
	}
}

// A file the person broke is an error, never read as empty and overwritten.
func TestBadFileIsNotOverwritten(t *testing.T) {
	repo := t.TempDir()
	path := filepath.Join(repo, ".familiar", "policy.yaml")
	os.MkdirAll(filepath.Dir(path), 0o755)
	for _, bad := range []string{"allow: [", "allow:\n  - rule: Bash(rm:*\n", "alow: []\n"} {
		os.WriteFile(path, []byte(bad), 0o644)
		f := RepositoryFile(repo)
		if _, err := f.List(); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: List err = %v", bad, err)
		}
		if _, err := f.Add(Grant{Rule: "Read"}); err == nil {
			t.Errorf("%q: Add over a broken file succeeded", bad)
		}
		if b, _ := os.ReadFile(path); string(b) != bad {
			t.Errorf("%q: file changed to %q", bad, b)
		}
	}
	os.WriteFile(path, nil, 0o644)
	if list, err := RepositoryFile(repo).List(); err != nil || len(list) != 0 {
		t.Errorf("empty file: %v %v", list, err)
	}
}

func TestUserFileFollowsXDG(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	f, err := UserFile()
	if err != nil || f.Path() != filepath.Join(dir, "familiar", "policy.yaml") {
		t.Fatalf("user file %v %v", f, err)
	}
	f.Add(Grant{Rule: "WebFetch(domain:go.dev)"})
	list, _ := f.List()
	if len(list) != 1 || list[0].Scope != ScopeUser {
		t.Errorf("list = %+v", list)
	}
}

func TestAddRemove(t *testing.T) {
	var l []Grant
	l, added := Add(l, Grant{Rule: "Read"})
	l2, again := Add(l, Grant{Rule: "Read"})
	if !added || again || len(l2) != 1 {
		t.Fatalf("add: %v %v %v", added, again, l2)
	}
	l3, removed := Remove(l2, "Read")
	if !removed || len(l3) != 0 || len(l2) != 1 {
		t.Fatalf("remove changed its input or failed: %v %v", l2, l3)
	}
}

// The repository file never makes the person's checkout dirty (which would
// stop task/merge): familiar excludes it locally when it creates it.
func TestRepositoryFileKeepsCheckoutClean(t *testing.T) {
	repo := t.TempDir()
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	f := RepositoryFile(repo)
	for _, r := range []string{"Read", "Edit(./src/**)"} {
		if _, err := f.Add(Grant{Rule: r}); err != nil {
			t.Fatal(err)
		}
	}
	if st := git("status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("checkout dirty after a grant:\n%s", st)
	}
	b, _ := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude"))
	if strings.Count(string(b), "/.familiar/policy.yaml") != 1 {
		t.Errorf("exclude file:\n%s", b)
	}
}
