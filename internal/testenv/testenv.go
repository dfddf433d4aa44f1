// Package testenv finds what familiar's tests need from the machine (the
// pinned claude CLI, git) and decides what a test does when it is missing:
// in CI (CI set) the test fails, so a green run never hides a skipped test;
// elsewhere it skips with a message saying how to install it.
//
// It is imported by tests only.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ToolsDirEnv names the variable .ci/run exports with the project-local tools
// dir; FAMILIAR_CLAUDE may name the binary itself.
const (
	ToolsDirEnv  = "FAMILIAR_TOOLS_DIR"
	ClaudeEnv    = "FAMILIAR_CLAUDE"
	claudeHint   = "run .ci/run (or: npm install --prefix .tools @anthropic-ai/claude-code@2.1.330)"
	ciVarName    = "CI"
	claudeInTool = "node_modules/.bin/claude"
)

// InCI reports whether the tests run under CI, where missing tools are failures.
func InCI() bool { return os.Getenv(ciVarName) != "" }

// RepoRoot returns the root of familiar's own source tree (the dir with go.mod).
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// FindClaude returns the path of the claude CLI: $FAMILIAR_CLAUDE, then the
// tools dir ($FAMILIAR_TOOLS_DIR or <repo>/.tools), then PATH. "" if none.
func FindClaude() string {
	if p := os.Getenv(ClaudeEnv); p != "" {
		return p
	}
	dirs := []string{os.Getenv(ToolsDirEnv)}
	if root := RepoRoot(); root != "" {
		dirs = append(dirs, filepath.Join(root, ".tools"))
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		p := filepath.Join(d, claudeInTool)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p
	}
	return ""
}

// Claude returns the claude CLI for an end-to-end test, failing the test in CI
// and skipping it elsewhere when the CLI is not installed. Under go test
// -short (the fast lane) it skips the test: the real claude takes seconds
// per turn, and the engine's behaviour runs against the fake Session there
// (orchestrator's TestFast* and TestRunner*); the full lane runs them all.
func Claude(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the real claude: run without -short (the full lane)")
	}
	p := FindClaude()
	if p == "" {
		Missing(t, "the claude CLI is not installed; "+claudeHint)
	}
	return p
}

// Git returns the git binary, with the same CI rule as Claude.
func Git(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		Missing(t, "git is not installed")
	}
	return p
}

// Missing fails the test in CI and skips it elsewhere.
func Missing(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s (CI is set, so this is a failure, not a skip)", why)
	}
	t.Skipf("skipping: %s", why)
}

// GitRepo makes a git repository in a new temporary directory with one
// commit (files, or an empty commit) on branch main, and returns its real
// path (symlinks resolved: git reports real paths). The identity is given
// on the command line so the test does not depend on the machine's.
func GitRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git := Git(t)
	run := func(args ...string) {
		cmd := exec.Command(git, append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q", "-b", "main")
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("add", "-A")
	run("commit", "-q", "--allow-empty", "-m", "init")
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}
