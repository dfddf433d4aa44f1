package policy

import (
	"encoding/json"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// GrantRules returns the rules an "allow always" for this call may grant,
// narrowest useful first, each one certain to allow the call (checked with
// DecideIn). A person sees the rule before choosing it, so nothing is granted
// that the option's label does not name.
//
//   - Bash: "prog sub:*" for a plain command ("npm test" → Bash(npm test:*)),
//     and the exact command. A command that redirects to a file, runs a
//     substitution, chains several commands or starts with a flag gets only
//     the exact rule: a prefix would allow more than it appears to.
//   - Edit, Write, MultiEdit, NotebookEdit: Edit(dir/**) for the file's
//     directory inside the working directory (Edit(./file) at its top), and
//     Edit(//abs/dir/**) outside it; then the file alone (Edit(./dir/file)),
//     the narrower choice: allowing docs/a.md need not allow docs/b.md.
//   - Read and the search tools: Read(…) the same way.
//   - WebFetch: WebFetch(domain:host). Task and Agent: Task(type).
//   - Any other tool, MCP tools included: the tool's name.
//
// It returns nil when no rule can allow the call (bad input).
func GrantRules(d Dirs, tool string, input json.RawMessage) []string {
	var cands []string
	c := newCall(tool, input, d)
	switch {
	case tool == "Bash":
		if c.command != nil {
			cands = bashGrants(*c.command)
		}
	case contains(editTools, tool):
		p := firstOf(c.filePath, c.notebookPath)
		cands = append(pathGrants("Edit", p, false, c.dirs), fileGrant("Edit", p, c.dirs)...)
	case contains(readTools, tool):
		p, tree := firstOf(c.filePath, c.notebookPath), false
		if tool == "Grep" || tool == "Glob" || tool == "LS" {
			p, tree = c.path, true
			if p == nil {
				// They search the working directory by default.
				w := "."
				p = &w
			}
		}
		cands = pathGrants("Read", p, tree, c.dirs)
	case tool == "WebFetch":
		if c.url != nil {
			if u, err := url.Parse(*c.url); err == nil && u.Hostname() != "" {
				cands = []string{"WebFetch(domain:" + strings.ToLower(u.Hostname()) + ")"}
			}
		}
	case tool == "Task" || tool == "Agent":
		if c.subagentType != nil && *c.subagentType != "" {
			cands = []string{Rule{Tool: tool, Content: *c.subagentType}.String()}
		}
	default:
		if toolName.MatchString(tool) {
			cands = []string{tool}
		}
	}
	var out []string
	for _, r := range cands {
		if _, err := ParseRule(r); err != nil {
			continue
		}
		if DecideIn(d, Policy{Default: Deny, Allow: []string{r}}, false, tool, input).Verdict == Allow && !contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// subcommand is a word that names what a program does ("test" in npm test),
// not an argument it works on.
var subcommand = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// maxSubcommand is the longest word taken for a subcommand.
const maxSubcommand = 32

// maxExactRule bounds a rule that spells out a whole command: a longer one
// is no rule a person can read in a button, and would be asked about as a
// whole anyway.
const maxExactRule = 1 << 10

func bashGrants(command string) []string {
	if len(command) > maxScript {
		return nil
	}
	exact := Rule{Tool: "Bash", Content: strings.TrimSpace(command)}.String()
	if len(exact) > maxExactRule {
		exact = ""
	}
	rules := func(prefix string) []string {
		var out []string
		for _, r := range []string{prefix, exact} {
			if r != "" {
				out = append(out, r)
			}
		}
		return out
	}
	s := analyze(command)
	if s.unsure || s.uncertain != "" || len(s.commands) != 1 {
		return rules("")
	}
	cmd := s.commands[0]
	if cmd.risky != "" || cmd.protected != "" || len(cmd.words) == 0 {
		return rules("")
	}
	for _, dyn := range cmd.dynamic {
		if dyn {
			return rules("")
		}
	}
	// A prefix on a program that runs other programs (sudo, env, bash, …)
	// would allow whatever it runs.
	if prog := path.Base(cmd.words[0]); wrappers[prog] || shells[prog] || prog == "eval" || prog == "source" || prog == "." {
		return rules("")
	}
	// git's harmless global options are left out of the text allow rules
	// match; GrantRules drops a prefix that would not match the command.
	words := withoutHarmlessGit(cmd.words)
	prefix := words[0]
	switch {
	case len(words) == 1:
	case len(words[1]) <= maxSubcommand && subcommand.MatchString(words[1]):
		prefix += " " + words[1]
	default:
		// "rm -rf x": a prefix rule would be Bash(rm:*).
		return rules("")
	}
	if strings.ContainsAny(prefix, "*()\\") {
		return rules("")
	}
	return rules("Bash(" + prefix + ":*)")
}

func pathGrants(ruleTool string, p *string, tree bool, d Dirs) []string {
	if p == nil || *p == "" {
		return nil
	}
	f := *p
	if !path.IsAbs(f) {
		if d.Work == "" {
			return nil
		}
		f = path.Join(d.Work, f)
	}
	f = path.Clean(f)
	dir := path.Dir(f)
	if tree {
		dir = f
	}
	if d.Work != "" && (dir == d.Work || strings.HasPrefix(dir, d.Work+"/")) {
		rel := strings.TrimPrefix(strings.TrimPrefix(dir, d.Work), "/")
		switch {
		case rel == "" && tree:
			return []string{ruleTool + "(./**)"}
		case rel == "":
			return []string{ruleTool + "(./" + path.Base(f) + ")"}
		}
		return []string{ruleTool + "(./" + rel + "/**)"}
	}
	return []string{ruleTool + "(/" + dir + "/**)"}
}

// fileGrant is the rule for the one file p: Edit(./dir/file) inside the
// working directory, Edit(//abs/file) outside it.
func fileGrant(ruleTool string, p *string, d Dirs) []string {
	if p == nil || *p == "" {
		return nil
	}
	f := *p
	if !path.IsAbs(f) {
		if d.Work == "" {
			return nil
		}
		f = path.Join(d.Work, f)
	}
	f = path.Clean(f)
	if d.Work != "" && strings.HasPrefix(f, d.Work+"/") {
		return []string{ruleTool + "(./" + strings.TrimPrefix(f, d.Work+"/") + ")"}
	}
	return []string{ruleTool + "(/" + f + ")"}
}

func firstOf(ps ...*string) *string {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func withoutHarmlessGit(words []string) []string {
	drop, _, _ := gitGlobals(words)
	var out []string
	for i, w := range words {
		if !drop[i] {
			out = append(out, w)
		}
	}
	return out
}

// ClaudeAgrees reports whether claude's own matcher allows exactly what
// familiar's does for rule, so that an "allow always" may be handed to
// claude for the session. A rule it does not agree on is kept by familiar
// only: claude then asks for each later call, and familiar's policy decides
// it. claude matches Bash(git diff:*) by prefix, flags and all (git diff
// --output=f), and reads path patterns without familiar's guarded
// directories and resolved links; it agrees on exact commands, single files
// outside the guarded directories, domains, subagents and whole MCP or
// other tools.
func ClaudeAgrees(rule string) bool {
	r, err := ParseRule(rule)
	if err != nil {
		return false
	}
	switch {
	case r.Tool == "Bash":
		b, ok := r.m.(*bashPattern)
		if !ok || b.kind != exact {
			return false // Bash alone, a prefix or a pattern
		}
		s := analyze(r.Content)
		return s.uncertain == "" && !s.unsure && len(s.commands) == 1
	case contains(pathRuleTools, r.Tool):
		p, ok := r.m.(*pathPattern)
		if !ok || r.namesGuarded() {
			return false
		}
		for _, s := range p.segs {
			if strings.ContainsAny(s, "*?[") {
				return false
			}
		}
		return true
	}
	return true
}
