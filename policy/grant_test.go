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
	// The file's own rule allows that file only, not its neighbour.
	if v := DecideIn(d, Policy{Allow: []string{"Edit(./docs/a.md)"}}, false, "Write", js(map[string]string{"file_path": "/w/task/docs/b.md"})).Verdict; v == Allow {
		t.Error("Edit(./docs/a.md) allowed docs/b.md")
	}
}
