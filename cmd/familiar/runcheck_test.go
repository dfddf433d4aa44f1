package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/doctor"
)

// familiar run --check reports a misspelt key of .familiar/config.yaml in
// the words familiar doctor uses, and a broken tasks file as familiar run
// does; it runs nothing.
func TestRunCheckSaysWhatDoctorSays(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	repo := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tasks.yaml", "tasks:\n  - title: a\n    description: b\n")
	t.Chdir(repo)

	var stdout, stderr bytes.Buffer
	if code := run([]string{"run", "--check", "tasks.yaml"}, &stdout, &stderr); code != 0 {
		t.Fatalf("a valid file without config: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "tasks.yaml: ok, 1 tasks") {
		t.Errorf("stdout %q", stdout.String())
	}

	write(".familiar/config.yaml", "mergeVerify: make test\nmergeVerfy: make lint\n")
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"run", "--check", "tasks.yaml"}, &stdout, &stderr); code != 2 {
		t.Fatalf("a misspelt config key: exit %d, want 2\n%s%s", code, stdout.String(), stderr.String())
	}
	said := strings.TrimSpace(stderr.String())
	if !strings.Contains(said, `config.yaml:2: unknown key "mergeVerfy" (known: mergeVerify, testCommands)`) {
		t.Errorf("run --check said %q", said)
	}
	c := doctor.CheckRepoConfig(context.Background(), repo)
	if c.OK || c.Detail != said {
		t.Errorf("doctor says %+v; run --check said %q", c, said)
	}

	write("tasks.yaml", "tasks:\n  - title: a\n    descripton: b\n")
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"run", "--check", "tasks.yaml"}, &stdout, &stderr); code != 2 {
		t.Fatalf("a misspelt task key: exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "tasks.yaml:3:5: tasks[0].descripton") || !strings.Contains(stderr.String(), "mergeVerfy") {
		t.Errorf("run --check said %q; want both files' errors", stderr.String())
	}
}
