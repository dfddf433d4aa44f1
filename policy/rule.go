package policy

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Rule is one parsed permission rule.
type Rule struct {
	// Tool is the tool name: "Bash", "Edit", "mcp__github__create_issue".
	Tool string
	// Content is what was between the parentheses, with \( and \) unescaped;
	// "" when the rule covers every call of the tool ("Bash", "Bash()" and
	// "Bash(*)" alike).
	Content string

	m matcher // nil when Content is ""
}

// String is the rule in Claude's syntax.
func (r Rule) String() string {
	if r.Content == "" {
		return r.Tool
	}
	c := strings.NewReplacer("(", `\(`, ")", `\)`).Replace(r.Content)
	return r.Tool + "(" + c + ")"
}

// matcher decides whether a rule's content covers a call. allow must be
// certain; deny answers true when it cannot rule a match out, and says why
// (for the Decision's Reason, starting with ": ").
type matcher interface {
	allow(c *call) bool
	deny(c *call) (bool, string)
}

// The protocol's syntax check uses the same tool-name grammar, except for
// Claude's mcp__server__* (which means the same as mcp__server).
var toolName = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_-]*|mcp__[A-Za-z0-9_-]+__\*)$`)

var (
	editTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}
	readTools = []string{"Read", "NotebookRead", "Grep", "Glob", "LS"}
	// Tools whose rule content is a path pattern.
	pathRuleTools = []string{"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "NotebookRead"}
)

// ParseRule parses a rule in Claude's syntax: Tool or Tool(content).
func ParseRule(s string) (Rule, error) {
	if s == "" {
		return Rule{}, errors.New("a rule must name a tool")
	}
	if strings.TrimSpace(s) != s {
		return Rule{}, errors.New("a rule must not start or end with spaces")
	}
	tool, content := s, ""
	if open := strings.IndexByte(s, '('); open >= 0 {
		if !strings.HasSuffix(s, ")") || escaped(s, len(s)-1) {
			return Rule{}, errors.New(`a rule with "(" must end with ")", as in Bash(go test:*)`)
		}
		tool, content = s[:open], s[open+1:len(s)-1]
		content = strings.NewReplacer(`\(`, "(", `\)`, ")").Replace(content)
	} else if strings.ContainsRune(s, ')') {
		return Rule{}, errors.New(`")" without "("`)
	}
	if !toolName.MatchString(tool) {
		return Rule{}, fmt.Errorf("%q is not a tool name", tool)
	}
	r := Rule{Tool: tool}
	if isMCP(tool) {
		server, _, _ := strings.Cut(strings.TrimPrefix(tool, "mcp__"), "__")
		if server == "" {
			return Rule{}, errors.New("an MCP rule names a server, as in mcp__github or mcp__github__create_issue")
		}
		if content != "" {
			return Rule{}, errors.New("an MCP rule takes no parentheses: name the tool, as in mcp__github__create_issue")
		}
		return r, nil
	}
	if content == "" || content == "*" {
		return r, nil
	}
	r.Content = content
	var err error
	switch {
	case tool == "Bash":
		r.m, err = compileBash(content)
	case slices.Contains(pathRuleTools, tool):
		r.m, err = compilePath(content)
	case tool == "WebFetch":
		r.m, err = compileDomain(content)
	case tool == "Task" || tool == "Agent":
		r.m = subagent(content)
	default:
		r.m = opaque{tool: tool}
	}
	if err != nil {
		return Rule{}, err
	}
	return r, nil
}

// escaped reports whether s[i] is preceded by an odd number of backslashes.
func escaped(s string, i int) bool {
	n := 0
	for i > 0 && s[i-1] == '\\' {
		n++
		i--
	}
	return n%2 == 1
}

func isMCP(tool string) bool { return strings.HasPrefix(tool, "mcp__") }

// covers reports whether r is about tool at all. Deny rules reach further:
// a Write deny rule also stops Edit, a misspelt "bash" still stops Bash, and
// an MCP rule whose tool name could be read as a server prefix stops that
// server's tools.
func (r Rule) covers(tool string, deny bool) bool {
	if r.Tool == tool {
		return true
	}
	if deny && strings.EqualFold(r.Tool, tool) {
		return true
	}
	switch {
	case r.Tool == "Edit" && slices.Contains(editTools, tool):
		return true
	case deny && slices.Contains(editTools, r.Tool) && slices.Contains(editTools, tool):
		return true
	case r.Tool == "Read" && slices.Contains(readTools, tool):
		return true
	case (r.Tool == "Task" || r.Tool == "Agent") && (tool == "Task" || tool == "Agent"):
		return true // the same tool under its old and new name
	case isMCP(r.Tool) && isMCP(tool):
		rt, t := r.Tool, tool
		if deny {
			rt, t = strings.ToLower(rt), strings.ToLower(t)
		}
		rest := strings.TrimPrefix(rt, "mcp__")
		server, name, hasName := strings.Cut(rest, "__")
		if !hasName || name == "*" {
			return strings.HasPrefix(t, "mcp__"+server+"__")
		}
		// mcp__a__b__c is server a's tool b__c for Claude, but a deny rule
		// mcp__a__b is read both ways.
		return t == rt || deny && strings.HasPrefix(t, rt+"__")
	}
	return false
}

func (r Rule) matchDeny(c *call) (bool, string) {
	if !r.covers(c.tool, true) {
		return false, ""
	}
	if r.m == nil {
		return true, ""
	}
	if m, why := r.m.deny(c); m {
		return true, why
	}
	if alt := c.resolved(); alt != nil {
		if m, why := r.m.deny(alt); m {
			return true, why + " (through a symbolic link)"
		}
	}
	return false, ""
}

// allowsWhole reports whether r allows the call as a whole: for Bash, only a
// rule for the whole tool or one spelling out the whole command.
func (r Rule) allowsWhole(c *call) bool {
	if !r.covers(c.tool, false) {
		return false
	}
	if r.m == nil {
		return true
	}
	if !r.m.allow(c) {
		return false
	}
	alt := c.resolved()
	return alt == nil || r.m.allow(alt)
}

// namesGuarded reports whether a path rule names one of the guarded
// directories (.claude, .git, .vscode, .idea) in a segment of its own.
func (r Rule) namesGuarded() bool {
	p, ok := r.m.(*pathPattern)
	if !ok {
		return false
	}
	for _, s := range p.segs {
		if protectedPath(s) != "" {
			return true
		}
	}
	return false
}

// allowsCommand reports whether r allows one simple command of a script.
func (r Rule) allowsCommand(cmd command) bool {
	b, ok := r.m.(*bashPattern)
	return r.Tool == "Bash" && ok && b.allowsCommand(cmd)
}

// domain is WebFetch(domain:host) or WebFetch(domain:*.host).
type domain struct {
	host     string
	wildcard bool // *.host: any subdomain
}

func compileDomain(content string) (matcher, error) {
	h, ok := strings.CutPrefix(content, "domain:")
	if !ok {
		return nil, errors.New(`a WebFetch rule names a domain, as in WebFetch(domain:example.com)`)
	}
	d := domain{host: strings.ToLower(strings.TrimSuffix(h, "."))}
	d.host, d.wildcard = strings.CutPrefix(d.host, "*.")
	if d.host == "" || strings.ContainsAny(d.host, "/:@*?# \t") {
		return nil, fmt.Errorf("%q is not a domain", h)
	}
	return d, nil
}

func (d domain) hostOf(c *call) (string, bool) {
	if c.url == nil {
		return "", false
	}
	u, err := url.Parse(*c.url)
	if err != nil {
		return "", false
	}
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	return h, h != ""
}

func (d domain) allow(c *call) bool {
	h, ok := d.hostOf(c)
	if !ok {
		return false
	}
	if d.wildcard {
		return strings.HasSuffix(h, "."+d.host)
	}
	return h == d.host
}

// deny also covers subdomains: a person who denies example.com means
// www.example.com too.
func (d domain) deny(c *call) (bool, string) {
	h, ok := d.hostOf(c)
	if !ok {
		return true, ": the call has no URL familiar can read"
	}
	if h == d.host || strings.HasSuffix(h, "."+d.host) {
		return true, ": it matches " + h
	}
	return false, ""
}

// subagent is Task(type) / Agent(type): the subagent's type, exactly.
type subagent string

func (s subagent) allow(c *call) bool {
	return c.subagentType != nil && *c.subagentType == string(s)
}

func (s subagent) deny(c *call) (bool, string) {
	if c.subagentType == nil {
		return true, ": the call names no subagent type"
	}
	if strings.EqualFold(*c.subagentType, string(s)) {
		return true, ""
	}
	return false, ""
}

// opaque is content for a tool whose input familiar does not know how to
// match. It never allows, and denies every call of the tool: a person who
// wrote a deny rule wanted something stopped.
type opaque struct{ tool string }

func (opaque) allow(*call) bool { return false }

func (o opaque) deny(*call) (bool, string) {
	return true, ": familiar cannot match the content of " + o.tool + " rules, so it denies every " + o.tool + " call"
}
