package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestSymlinks decides file paths on both their written and their resolved
// form, with links made on the real file system.
func TestSymlinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "repo")
	for _, d := range []string{"src", ".github", ".claude", "docs"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "outside"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"src/gh":     "../.github",
		"src/out.go": "../../outside/x.go",
		"src/cfg":    "../.claude/settings.json",
		"docs/env":   "../.env",
	} {
		if err := os.Symlink(target, filepath.Join(work, link)); err != nil {
			t.Fatal(err)
		}
	}
	linkedWork := filepath.Join(root, "linked")
	if err := os.Symlink(work, linkedWork); err != nil {
		t.Fatal(err)
	}
	d := Dirs{Work: work, Home: filepath.Join(root, "home"), Resolve: ResolveSymlinks}
	for _, tc := range []struct {
		name     string
		dirs     Dirs
		tool, p  string
		elevated bool
		want     Verdict
	}{
		{"a link into a denied directory", d, "Edit", "src/gh/workflows/ci.yml", false, Deny},
		{"a link out of the worktree", d, "Edit", "src/out.go", false, Ask},
		{"a link into .claude, elevated", d, "Write", "src/cfg", true, Ask},
		{"a link to a denied file", d, "Read", filepath.Join(work, "docs/env"), false, Deny},
		{"a plain file", d, "Edit", "src/a.go", false, Allow},
		{"a worktree reached through a link", Dirs{Work: linkedWork, Resolve: ResolveSymlinks}, "Edit", filepath.Join(linkedWork, "src/a.go"), false, Allow},
		{"without a resolver, the written form", Dirs{Work: work}, "Edit", "src/out.go", false, Allow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideIn(tc.dirs, redTeam, tc.elevated, tc.tool, file(tc.p))
			if got.Verdict != tc.want {
				t.Errorf("%s %s = %s (%s), want %s", tc.tool, tc.p, got.Verdict, got.Reason, tc.want)
			}
		})
	}
	if got := ResolveSymlinks(filepath.Join(work, "src/gh/new/file")); got != filepath.Join(work, ".github/new/file") {
		t.Errorf("ResolveSymlinks of a file not yet made = %q", got)
	}
}

// A Bash call asking to run outside claude's sandbox is a question no
// elevation and no prefix rule answers; a rule spelling out the command,
// or a deny rule, does (issue 37).
func TestUnsandboxedCalls(t *testing.T) {
	in := func(cmd string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"command": cmd, "dangerouslyDisableSandbox": true})
		return b
	}
	for _, tc := range []struct {
		name     string
		p        Policy
		elevated bool
		cmd      string
		want     Verdict
	}{
		{"elevated", Policy{}, true, "ls", Ask},
		{"a prefix rule", Policy{Allow: []string{"Bash(ls:*)"}}, false, "ls -la", Ask},
		{"the whole tool", Policy{Allow: []string{"Bash"}}, true, "ls", Ask},
		{"the exact command", Policy{Allow: []string{"Bash(ls -la)"}}, true, "ls -la", Allow},
		{"a deny rule", Policy{Allow: []string{"Bash(rm -rf x)"}, Deny: []string{"Bash(rm:*)"}}, true, "rm -rf x", Deny},
		{"default deny", Policy{Default: Deny}, true, "ls", Deny},
	} {
		if got := DecideIn(redDirs, tc.p, tc.elevated, "Bash", in(tc.cmd)); got.Verdict != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got.Verdict, got.Reason, tc.want)
		}
	}
	// Without the flag, elevation allows as before.
	if got := DecideIn(redDirs, Policy{}, true, "Bash", bash("ls")); got.Verdict != Allow {
		t.Errorf("elevated, sandboxed: %s", got.Verdict)
	}
}
