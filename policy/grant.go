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
//     Edit(//abs/dir/**) outside it.
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
		cands = pathGrants("Edit", firstOf(c.filePath, c.notebookPath), false, c.dirs)
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

func bashGrants(command string) []string {
	exact := Rule{Tool: "Bash", Content: strings.TrimSpace(command)}.String()
	s := lex(command, false)
	if !s.allowable() || s.substit || len(s.commands) != 1 {
		return []string{exact}
	}
	cmd := s.commands[0]
	if cmd.risky || len(cmd.words) == 0 {
		return []string{exact}
	}
	for _, dyn := range cmd.dynamic {
		if dyn {
			return []string{exact}
		}
	}
	words := cmd.words
	prefix := words[0]
	switch {
	case len(words) == 1:
	case subcommand.MatchString(words[1]):
		prefix += " " + words[1]
	default:
		// "rm -rf x": a prefix rule would be Bash(rm:*).
		return []string{exact}
	}
	if strings.ContainsAny(prefix, "*()\\") {
		return []string{exact}
	}
	return []string{"Bash(" + prefix + ":*)", exact}
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
