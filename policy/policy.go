package policy

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// Verdict is what happens to a permission request.
type Verdict string

const (
	Allow Verdict = "allow"
	Deny  Verdict = "deny"
	Ask   Verdict = "ask" // a person decides
)

// Policy is PROTOCOL.md's permission policy. The zero value asks about
// everything.
type Policy struct {
	// Default is the verdict for a call no rule matches; "" means Ask.
	Default Verdict  `json:"default"`
	Allow   []string `json:"allow,omitempty"`
	Deny    []string `json:"deny,omitempty"`
}

// Validate reports the first problem with p, naming the rule ("deny[1]
// \"Bash(rm:*\": …"), so that bad settings are refused with an error a person
// can act on instead of being half applied.
func (p Policy) Validate() error {
	switch p.Default {
	case "", Allow, Deny, Ask:
	default:
		return fmt.Errorf("default must be \"ask\", \"allow\" or \"deny\", not %q", p.Default)
	}
	for _, list := range []struct {
		name  string
		rules []string
	}{{"allow", p.Allow}, {"deny", p.Deny}} {
		for i, s := range list.rules {
			if _, err := ParseRule(s); err != nil {
				return fmt.Errorf("%s[%d] %q: %w", list.name, i, s, err)
			}
		}
	}
	return nil
}

// Decision is the verdict on one tool call and why.
type Decision struct {
	Verdict Verdict
	// Rule is the rule that decided, as written in the policy; "" when the
	// default (or elevation) decided. When a compound command needed several
	// allow rules, it is the first; Reason names them all.
	Rule string
	// Reason is one sentence fit for the audit log and, on a deny, for the
	// agent.
	Reason string
}

// Dirs says where an agent runs, so that relative paths in rules can be
// resolved against the absolute paths Claude's file tools use. Both must be
// absolute to be used; an empty or relative one is unknown.
type Dirs struct {
	// Work is the agent's working directory (the task's worktree): rule
	// paths "x", "./x" and "/x", and relative paths in tool input, resolve
	// against it.
	Work string
	// Home is what "~/" in a rule means.
	Home string
	// Resolve, when set, returns an absolute path with its symbolic links
	// resolved (ResolveSymlinks does it on the file system). A file path is
	// then decided on both its written and its resolved form: an allow
	// rule must cover both, a deny rule either.
	Resolve func(string) string
}

// Decide is DecideIn with unknown directories: a rule path relative to the
// working or home directory then never allows an absolute path, and denies
// one whenever a trailing part of the path matches it.
func Decide(p Policy, elevated bool, tool string, input json.RawMessage) Decision {
	return DecideIn(Dirs{}, p, elevated, tool, input)
}

// DecideIn decides whether the agent running in d may call tool with input.
func DecideIn(d Dirs, p Policy, elevated bool, tool string, input json.RawMessage) Decision {
	// A policy that should have been refused is not half applied: someone
	// decides by hand, and the audit log says why.
	if err := p.Validate(); err != nil {
		return Decision{Verdict: Ask, Reason: "the permission policy is invalid (" + err.Error() + "), so a person decides"}
	}
	c := newCall(tool, input, d)
	for _, s := range p.Deny {
		r, _ := ParseRule(s)
		if m, why := r.matchDeny(c); m {
			return Decision{Verdict: Deny, Rule: s, Reason: "denied by the rule " + s + why}
		}
	}
	if why := c.guarded(); why != "" {
		// Neither elevation nor a rule that does not name it allows this:
		// claude reads hooks and settings from these directories and runs
		// them outside familiar's policy, and an unsandboxed call is
		// outside the wall the sandbox puts around the task.
		if dec, ok := allowed(p.Allow, c); ok {
			return dec
		}
		v := Ask
		if p.Default == Deny {
			v = Deny
		}
		return Decision{Verdict: v, Reason: why + ", which only a rule naming it allows" + elevatedNote(elevated) + ", so " + map[Verdict]string{Ask: "a person decides", Deny: "the default applies: deny"}[v]}
	}
	if elevated {
		// Elevated means "allow what no rule denies": an explicit deny
		// rule is the person's word and still wins.
		return Decision{Verdict: Allow, Reason: "the task is elevated and no deny rule matches, so it is allowed"}
	}
	if dec, ok := allowed(p.Allow, c); ok {
		return dec
	}
	v := p.Default
	if v == "" {
		v = Ask
	}
	reason := "no rule decides this " + tool + " call, so the default applies: " + string(v)
	if c.unallowed != "" {
		reason = "the command " + quote(c.unallowed) + " matches no allow rule, so the default applies: " + string(v)
	} else if c.uncertainWhy != "" {
		reason = "what the command runs is only known when it runs (" + c.uncertainWhy + "), so no prefix rule allows it and the default applies: " + string(v)
	}
	return Decision{Verdict: v, Reason: reason}
}

func elevatedNote(elevated bool) string {
	if elevated {
		return " (elevation does not)"
	}
	return ""
}

// allowed finds the allow rules that cover c. For Bash every simple command
// of the script needs one (unless a rule spells out the whole script).
func allowed(rules []string, c *call) (Decision, bool) {
	parsed := make([]Rule, len(rules))
	for i, s := range rules {
		parsed[i], _ = ParseRule(s)
	}
	guard := c.guarded() != ""
	for i, r := range parsed {
		// A guarded call is allowed as a whole only by a rule naming it: a
		// Bash rule spelling out the script, a path rule naming the
		// directory; not by Bash or Edit alone.
		if r.allowsWhole(c) && (!guard || r.m != nil && (c.tool == "Bash" || r.namesGuarded())) {
			return Decision{Verdict: Allow, Rule: rules[i], Reason: "allowed by the rule " + rules[i]}, true
		}
	}
	if c.tool != "Bash" || c.command == nil || len(*c.command) > maxScript || c.unsandboxed {
		return Decision{}, false
	}
	s := c.script()
	if s.unsure || len(s.commands) == 0 {
		return Decision{}, false
	}
	if s.uncertain != "" {
		c.uncertainWhy = s.uncertain
		return Decision{}, false
	}
	var by []string
	var first string
	for _, cmd := range s.commands {
		found := false
		for i, r := range parsed {
			if r.allowsCommand(cmd) {
				if first == "" {
					first = rules[i]
				}
				by = append(by, quote(cmd.text)+" by "+rules[i])
				found = true
				break
			}
		}
		if !found {
			c.unallowed = cmd.text
			return Decision{}, false
		}
	}
	reason := "allowed by the rule " + first
	if len(by) > 1 {
		reason = "every command is allowed: " + strings.Join(by, ", ")
	}
	return Decision{Verdict: Allow, Rule: first, Reason: reason}, true
}

// call is one tool call, with its input read once.
type call struct {
	tool string
	dirs Dirs
	// fields of the input, nil when absent or not a string.
	command, filePath, notebookPath, path, url, subagentType, pattern *string
	// unsandboxed: a Bash call asking to run outside claude's sandbox
	// (dangerouslyDisableSandbox).
	unsandboxed  bool
	badInput     bool // input is not a JSON object
	parsed       *script
	unallowed    string // the first command no allow rule covered, for Reason
	uncertainWhy string // why no prefix rule could allow the script, for Reason
	alt          *call  // the call with its path's links resolved; see resolved
	noAlt        bool   // resolved has looked
}

func newCall(tool string, input json.RawMessage, d Dirs) *call {
	if !path.IsAbs(d.Work) {
		d.Work = ""
	}
	if !path.IsAbs(d.Home) {
		d.Home = ""
	}
	c := &call{tool: tool, dirs: Dirs{Work: cleanDir(d.Work), Home: cleanDir(d.Home), Resolve: d.Resolve}}
	// A map, not a struct: encoding/json matches struct fields without
	// regard to case, so {"command":"rm -rf /","Command":"ls"} would be read
	// as "ls" while Claude runs the first. Keys here must match exactly.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(input, &fields); err != nil || fields == nil {
		c.badInput = true
		return c
	}
	str := func(key string) *string {
		raw, ok := fields[key]
		if !ok {
			return nil
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		return &s
	}
	c.command = str("command")
	c.filePath = str("file_path")
	c.notebookPath = str("notebook_path")
	c.path = str("path")
	c.url = str("url")
	c.subagentType = str("subagent_type")
	c.pattern = str("pattern")
	if raw, ok := fields["dangerouslyDisableSandbox"]; ok && string(raw) != "false" && string(raw) != "null" {
		c.unsandboxed = true
	}
	return c
}

func cleanDir(d string) string {
	if d == "" {
		return ""
	}
	return path.Clean(d)
}

// script parses the Bash command once per call.
func (c *call) script() *script {
	if c.parsed == nil {
		c.parsed = analyze(*c.command)
	}
	return c.parsed
}

// guarded says why the call needs a rule that names it, even when the task
// is elevated: it writes under .claude/, .git/, .vscode/ or .idea/, or runs
// a command outside claude's sandbox. "" when it does not.
func (c *call) guarded() string {
	if c.isGuardedPath() {
		f, _ := c.editPath()
		return "it writes " + f + " under " + protectedPath(f)
	}
	if c.tool != "Bash" || c.command == nil {
		return ""
	}
	if c.unsandboxed {
		return "it asks to run outside the sandbox (dangerouslyDisableSandbox)"
	}
	if len(*c.command) > maxScript {
		return ""
	}
	for _, cmd := range c.script().commands {
		if cmd.protected != "" {
			return "the command " + quote(cmd.text) + " " + cmd.protected
		}
	}
	return ""
}

// quote shortens what goes into a Reason: a command can be a whole script.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 character
			cut--
		}
		s = s[:cut] + "…"
	}
	return fmt.Sprintf("%q", s)
}
