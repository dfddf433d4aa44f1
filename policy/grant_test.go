package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestGrantRules(t *testing.T) {
	d := Dirs{Work: "/w/task", Home: "/home/u"}
	js := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	for _, tc := range []struct {
		tool  string
		input json.RawMessage
		want  []string
	}{
		{"Bash", js(map[string]string{"command": "npm test"}), []string{"Bash(npm test:*)", "Bash(npm test)"}},
		{"Bash", js(map[string]string{"command": "go test ./..."}), []string{"Bash(go test:*)", "Bash(go test ./...)"}},
		{"Bash", js(map[string]string{"command": "ls"}), []string{"Bash(ls:*)", "Bash(ls)"}},
		// A prefix would allow far more than the person saw.
		{"Bash", js(map[string]string{"command": "rm -rf build"}), []string{"Bash(rm -rf build)"}},
		{"Bash", js(map[string]string{"command": "touch a.txt"}), []string{"Bash(touch a.txt)"}},
		// Redirects and chains: only the exact command (a prefix rule never
		// allows them, so it would be asked again).
		{"Bash", js(map[string]string{"command": "echo 1 > one.txt"}), []string{"Bash(echo 1 > one.txt)"}},
		{"Bash", js(map[string]string{"command": "make && make install"}), []string{"Bash(make && make install)"}},
		{"Bash", js(map[string]string{"command": "echo $(whoami)"}), []string{"Bash(echo $\\(whoami\\))"}},
		// The directory, then the file alone (allow_always_exact).
		{"Write", js(map[string]string{"file_path": "/w/task/src/api/x.go"}), []string{"Edit(./src/api/**)", "Edit(./src/api/x.go)"}},
		{"Write", js(map[string]string{"file_path": "docs/a.md"}), []string{"Edit(./docs/**)", "Edit(./docs/a.md)"}},
		{"Edit", js(map[string]string{"file_path": "/w/task/README.md"}), []string{"Edit(./README.md)"}},
		{"Edit", js(map[string]string{"file_path": "/etc/hosts"}), []string{"Edit(//etc/**)", "Edit(//etc/hosts)"}},
		{"Read", js(map[string]string{"file_path": "/w/task/docs/a.md"}), []string{"Read(./docs/**)"}},
		{"Grep", js(map[string]string{"pattern": "x"}), []string{"Read(./**)"}},
		{"WebFetch", js(map[string]string{"url": "https://Go.dev/doc"}), []string{"WebFetch(domain:go.dev)"}},
		{"mcp__github__create_issue", js(map[string]string{}), []string{"mcp__github__create_issue"}},
		{"Task", js(map[string]string{"subagent_type": "general-purpose"}), []string{"Task(general-purpose)"}},
		{"Bash", json.RawMessage(`"nope"`), nil},
		// A huge command: no rule spells it out (it would be the label).
		{"Bash", js(map[string]string{"command": "echo " + strings.Repeat("x", 5000)}), nil},
		{"Bash", js(map[string]string{"command": "npm run " + strings.Repeat("x", 5000)}), []string{"Bash(npm run:*)"}},
		// Issue 37: a risky flag gets the exact rule only; the prefix
		// offered for a plain command does not cover the risky flags.
		{"Bash", js(map[string]string{"command": "git diff --stat"}), []string{"Bash(git diff:*)", "Bash(git diff --stat)"}},
		{"Bash", js(map[string]string{"command": "git --no-pager diff"}), []string{"Bash(git diff:*)", "Bash(git --no-pager diff)"}},
		{"Bash", js(map[string]string{"command": "git diff --output=x"}), []string{"Bash(git diff --output=x)"}},
		{"Bash", js(map[string]string{"command": "git -C /x diff"}), []string{"Bash(git -C /x diff)"}},
		{"Bash", js(map[string]string{"command": "sudo ls"}), []string{"Bash(sudo ls)"}},
		{"Bash", js(map[string]string{"command": "bash build"}), []string{"Bash(bash build)"}},
		{"Bash", js(map[string]string{"command": "echo ${x@P}"}), []string{"Bash(echo ${x@P})"}},
	} {
		got := GrantRules(d, tc.tool, tc.input)
		if !slices.Equal(got, tc.want) {
			t.Errorf("GrantRules(%s %s) = %q, want %q", tc.tool, tc.input, got, tc.want)
		}
		// Every suggested rule allows the call it was made for, and
		// nothing the person did not see (a deny of the same call wins).
		for _, r := range got {
			if v := DecideIn(d, Policy{Allow: []string{r}}, false, tc.tool, tc.input).Verdict; v != Allow {
				t.Errorf("%s does not allow %s %s", r, tc.tool, tc.input)
			}
		}
	}
	// A granted prefix does not allow a redirect through the same program.
	if v := DecideIn(d, Policy{Allow: []string{"Bash(npm test:*)"}}, false, "Bash", js(map[string]string{"command": "npm test > /etc/passwd"})).Verdict; v == Allow {
		t.Error("Bash(npm test:*) allowed a redirect to a file")
	}
	for _, cmd := range []string{"git diff --output=x", "git diff --ext-diff", "git diff --no-index ~/.ssh/id_rsa /dev/null", "git -c diff.external=x diff"} {
		if v := DecideIn(d, Policy{Allow: []string{"Bash(git diff:*)"}}, false, "Bash", js(map[string]string{"command": cmd})).Verdict; v == Allow {
			t.Errorf("Bash(git diff:*), granted for git diff --stat, allowed %q", cmd)
		}
	}
	// The file's own rule allows that file only, not its neighbour.
	if v := DecideIn(d, Policy{Allow: []string{"Edit(./docs/a.md)"}}, false, "Write", js(map[string]string{"file_path": "/w/task/docs/b.md"})).Verdict; v == Allow {
		t.Error("Edit(./docs/a.md) allowed docs/b.md")
	}
}

func TestClaudeAgrees(t *testing.T) {
	for rule, want := range map[string]bool{
		"Bash(npm test:*)": false, "Bash(npm test)": true, "Bash": false, "Bash(git * main)": false,
		"Bash(ls && rm x)": false, "Edit(./src/**)": false, "Edit(./src/a.go)": true,
		"Edit(./.claude/settings.json)": false, "Read(./docs/a.md)": true, "WebFetch(domain:go.dev)": true,
		"mcp__github": true, "Task(Explore)": true, "Bash(rm:*": false,
	} {
		if got := ClaudeAgrees(rule); got != want {
			t.Errorf("ClaudeAgrees(%q) = %v, want %v", rule, got, want)
		}
	}
}
