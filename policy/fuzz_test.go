package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecide checks the invariants that make the policy safe whatever the
// rule and the call: elevation allows; a rule that is both allowed and
// denied never allows (so a deny rule reaches everything its allow reading
// reaches); a deny rule for the whole tool never allows; and appending a
// command to an allowed script never gets that command allowed unless a rule
// allows it alone.
func FuzzDecide(f *testing.F) {
	for _, s := range []struct{ rule, tool, arg string }{
		{"Bash(go test:*)", "Bash", "go test ./... && rm -rf /"},
		{"Bash(go test:*)", "Bash", "go test $(rm -rf ~)"},
		{"Bash(python3 *)", "Bash", `python3 -c "print(42)" > out`},
		{"Bash(git * main)", "Bash", "git checkout main"},
		{"Bash(ls*)", "Bash", "lsof `id`"},
		{"Bash(echo $(date))", "Bash", "echo $(date)"},
		{"Bash(rm -rf build)", "Bash", `sudo -u x sh -c "rm -rf build"`},
		{"Bash(cat:*)", "Bash", "cat <<E\ncat '\nE\nrm -rf /\n'"},
		{"Bash(echo:*)", "Bash", `echo "$(case x in x) rm ;; esac)"`},
		{"Edit(src/**)", "Write", "/repo/src/../x"},
		{"Read(.env)", "Grep", "/repo"},
		{"Read(~/.ssh)", "Read", "~/.ssh/id_rsa"},
		{"Read(build/)", "Read", "build"},
		{"WebFetch(domain:*.go.dev)", "WebFetch", "https://go.dev@x/"},
		{"mcp__github", "mcp__github__x", ""},
		{"Task(Explore)", "Agent", "Explore"},
	} {
		f.Add(s.rule, s.tool, s.arg)
	}
	dirs := []Dirs{{}, {Work: "/repo", Home: "/home/u"}}
	f.Fuzz(func(t *testing.T, rule, tool, arg string) {
		in := fuzzInput(tool, arg)
		for _, d := range dirs {
			// Elevated allows exactly what an allow-by-default policy with
			// the same deny rules allows: a deny still wins.
			elevated := DecideIn(d, Policy{Deny: []string{rule}}, true, tool, in)
			if want := DecideIn(d, Policy{Default: Allow, Deny: []string{rule}}, false, tool, in); elevated.Verdict != want.Verdict {
				t.Fatalf("elevated: %+v, want %s", elevated, want.Verdict)
			}
			both := Policy{Default: Ask, Allow: []string{rule}, Deny: []string{rule}}
			if got := DecideIn(d, both, false, tool, in); got.Verdict == Allow {
				t.Fatalf("%q both allowed and denied, %s %q: %+v", rule, tool, arg, got)
			}
			if toolName.MatchString(tool) {
				p := Policy{Default: Allow, Allow: []string{rule, tool}, Deny: []string{tool}}
				if got := DecideIn(d, p, false, tool, in); got.Verdict == Allow {
					t.Fatalf("%s denied, %q allowed: %+v", tool, rule, got)
				}
			}
			r, err := ParseRule(rule)
			if err != nil || r.Tool != "Bash" || strings.HasSuffix(arg, `\`) {
				continue
			}
			const evil = "rm -rf /"
			p := Policy{Default: Ask, Allow: []string{rule}}
			if DecideIn(d, p, false, "Bash", bash(evil)).Verdict == Allow {
				continue
			}
			for _, sep := range []string{"\n", ";", "&&", "||", "|", "&"} {
				cmd := arg + " " + sep + " " + evil
				if got := DecideIn(d, p, false, "Bash", bash(cmd)); got.Verdict == Allow {
					t.Fatalf("%q allowed %q: %+v", rule, cmd, got)
				}
			}
		}
	})
}

func fuzzInput(tool, arg string) json.RawMessage {
	key := "path"
	switch tool {
	case "Bash":
		key = "command"
	case "Read", "Edit", "Write", "MultiEdit":
		key = "file_path"
	case "NotebookEdit", "NotebookRead":
		key = "notebook_path"
	case "WebFetch":
		key = "url"
	case "Task", "Agent":
		key = "subagent_type"
	}
	b, _ := json.Marshal(map[string]string{key: arg})
	return b
}

// FuzzBashTable starts from issue 37's table of requests. Whatever the
// command: deciding it never panics; the red team's policy allows it only
// if no deny rule matches; and a deny rule that matches it still matches
// it run any other way bash runs the same text (bash -c, eval, a
// substitution, a brace group): never allowed in one reading what a deny
// rule matches in another.
func FuzzBashTable(f *testing.F) {
	for _, tc := range redCases {
		if tc.tool == "" {
			f.Add(tc.in)
		}
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		in := bash(cmd)
		got := DecideIn(redDirs, redTeam, false, "Bash", in)
		for _, d := range redTeam.Deny {
			one := Policy{Default: Allow, Allow: []string{"Bash"}, Deny: []string{d}}
			denied := DecideIn(redDirs, one, false, "Bash", in).Verdict == Deny
			if denied && got.Verdict == Allow {
				t.Fatalf("%q allowed (%s), yet %s matches it", cmd, got.Reason, d)
			}
			if !denied || strings.HasSuffix(cmd, `\`) {
				continue
			}
			q := "'" + strings.ReplaceAll(cmd, "'", `'\''`) + "'"
			wraps := []string{"bash -c " + q, "eval " + q, "sh -c -- " + q}
			if _, err := parse(cmd); err == nil {
				// Text bash refuses can mean something else inside
				// another construct (A)$( is an error, echo $(A)$() is not).
				wraps = append(wraps, "echo $("+cmd+"\n)", "{ "+cmd+"\n}", "ls; "+cmd)
			}
			for _, wrapped := range wraps {
				if v := DecideIn(redDirs, one, false, "Bash", bash(wrapped)); v.Verdict != Deny {
					t.Fatalf("%s denies %q but not %q: %s", d, cmd, wrapped, v.Reason)
				}
			}
		}
	})
}
