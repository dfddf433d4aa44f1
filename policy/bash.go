package policy

import (
	"errors"
	"path"
	"strings"
)

// ansiEscape decodes the escape of $'…' whose letter is at s[i] and
// returns the index after it.
func ansiEscape(s string, i int, out *strings.Builder) int {
	if i >= len(s) {
		out.WriteByte('\\')
		return i
	}
	number := func(i, max, base int) (rune, int) {
		var r rune
		n := 0
		for ; n < max && i+n < len(s); n++ {
			d := strings.IndexByte("0123456789abcdef"[:base], lowerByte(s[i+n]))
			if d < 0 {
				break
			}
			r = r*rune(base) + rune(d)
		}
		return r, i + n
	}
	switch c := s[i]; c {
	case 'a':
		out.WriteByte('\a')
	case 'b':
		out.WriteByte('\b')
	case 'e', 'E':
		out.WriteByte(0x1b)
	case 'f':
		out.WriteByte('\f')
	case 'n':
		out.WriteByte('\n')
	case 'r':
		out.WriteByte('\r')
	case 't':
		out.WriteByte('\t')
	case 'v':
		out.WriteByte('\v')
	case 'x', 'u', 'U':
		digits := 2
		if c == 'u' {
			digits = 4
		} else if c == 'U' {
			digits = 8
		}
		r, j := number(i+1, digits, 16)
		if j == i+1 {
			out.WriteByte('\\')
			out.WriteByte(c)
			return i + 1
		}
		if c == 'x' {
			out.WriteByte(byte(r))
		} else {
			out.WriteRune(r)
		}
		return j
	case 'c':
		if i+1 < len(s) {
			out.WriteByte(s[i+1] & 0x1f)
			return i + 2
		}
		out.WriteString("\\c")
	default:
		if c >= '0' && c <= '7' {
			r, j := number(i, 3, 8)
			out.WriteByte(byte(r))
			return j
		}
		out.WriteByte(c) // \\, \', \", \? and unknown escapes
	}
	return i + 1
}
func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// bashPattern is the content of a Bash rule.
type bashPattern struct {
	kind patternKind
	// The pattern in the forms it is compared in: as written (against a
	// command's text), with quotes removed (against the readings deny rules
	// try) and with whitespace squeezed (against the whole script).
	text, plain, fields glob
	whole               string // the content, for a rule spelling out a whole script
}

type patternKind int

const (
	exact   patternKind = iota
	prefix              // "p:*" or "p *": p alone or followed by a space
	anyGlob             // * matches any text
)

// glob is a pattern split at its unescaped stars.
type glob struct {
	s    string
	segs []string // for anyGlob
}

func compileBash(content string) (matcher, error) {
	body, kind := content, exact
	stars := unescapedStars(content)
	switch {
	case strings.HasSuffix(content, ":*"):
		body, kind = strings.TrimSuffix(content, ":*"), prefix
		if len(stars) > 1 {
			return nil, errors.New(`":*" cannot be combined with other "*" in the same rule`)
		}
	case strings.Contains(content, ":*"):
		return nil, errors.New(`":*" may only end a rule, as in Bash(go test:*)`)
	case len(stars) == 1 && strings.HasSuffix(content, " *"):
		body, kind = strings.TrimSuffix(content, " *"), prefix
	case len(stars) > 0:
		kind = anyGlob
	}
	if strings.TrimSpace(body) == "" {
		return nil, errors.New("a Bash rule needs a command before its wildcard")
	}
	p := &bashPattern{kind: kind, whole: strings.TrimSpace(content)}
	if s := analyze(body); s.uncertain == "" && !s.unsure && len(s.commands) == 1 {
		p.text = p.newGlob(s.commands[0].text)
		p.plain = p.newGlob(strings.Join(s.commands[0].words, " "))
	} else {
		// Operators or substitutions in a rule: it can only match a whole
		// script or, for deny, a reading of one.
		p.text = p.newGlob(strings.TrimSpace(body))
		p.plain = p.text
	}
	p.fields = p.newGlob(strings.Join(strings.Fields(body), " "))
	return p, nil
}

func (p *bashPattern) newGlob(s string) glob {
	g := glob{s: s}
	if p.kind == anyGlob {
		last := 0
		for _, i := range unescapedStars(s) {
			g.segs = append(g.segs, s[last:i])
			last = i + 1
		}
		g.segs = append(g.segs, s[last:])
	}
	return g
}

func unescapedStars(s string) []int {
	var at []int
	for i := 0; i < len(s); i++ {
		if s[i] == '*' && !escaped(s, i) {
			at = append(at, i)
		}
	}
	return at
}

func (p *bashPattern) match(g glob, s string) bool {
	switch p.kind {
	case exact:
		return s == g.s
	case prefix:
		return s == g.s || strings.HasPrefix(s, g.s) && s[len(g.s)] == ' '
	}
	return globMatch(g.segs, s)
}

// globMatch matches s against segments that were separated by stars: the
// first is a prefix, the last a suffix, the others appear in order between.
// Taking the leftmost occurrence of each middle segment is always right for
// a pattern whose only wildcard is *, so this is linear, never backtracking.
func globMatch(segs []string, s string) bool {
	first, last := segs[0], segs[len(segs)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	mid := s[len(first) : len(s)-len(last)]
	for _, seg := range segs[1 : len(segs)-1] {
		i := strings.Index(mid, seg)
		if i < 0 {
			return false
		}
		mid = mid[i+len(seg):]
	}
	return true
}

// allow matches the whole script, only for a rule spelling it out.
func (p *bashPattern) allow(c *call) bool {
	return p.kind == exact && c.command != nil && strings.TrimSpace(*c.command) == p.whole
}

// allowsCommand matches one simple command of a script familiar is sure
// about. Prefix and glob rules never match a risky or protected command.
func (p *bashPattern) allowsCommand(cmd command) bool {
	if p.kind != exact && (cmd.risky != "" || cmd.protected != "") {
		return false
	}
	return p.match(p.text, cmd.text)
}

func (p *bashPattern) deny(c *call) (bool, string) {
	if c.command == nil {
		return true, ": the call has no command familiar can read"
	}
	s := c.script()
	if s.unsure {
		return true, ": the command is too long or too deeply nested for familiar to check"
	}
	if s.uncertain != "" {
		return true, ": what it runs is only known when it runs (" + s.uncertain + "), so every Bash deny rule applies"
	}
	if p.match(p.fields, strings.Join(strings.Fields(*c.command), " ")) {
		return true, ""
	}
	for _, cmd := range s.commands {
		if p.match(p.text, cmd.text) {
			return true, ": it matches " + quote(cmd.text)
		}
		if r, ok := p.denyReading(cmd); ok {
			return true, ": it matches " + quote(r)
		}
	}
	return false, ""
}

// denyReading tries the readings of cmd a deny rule is matched against:
// from each word that may be the program (after a wrapper such as sudo,
// env, xargs or find -exec), with and without the program's directory, and
// for git without its global options. A word only known when it runs may
// be anything, so the rule matches if some value of it would.
func (p *bashPattern) denyReading(cmd command) (string, bool) {
	words, dyn := cmd.words, cmd.dynamic
	if len(words) == 0 {
		return "", false
	}
	end := 1
	if wrappers[path.Base(words[0])] {
		end = min(len(words), maxStarts)
	}
	for j := 0; j < end; j++ {
		if dyn[j] {
			if j == 0 {
				return strings.Join(words, " "), true
			}
			continue // after a wrapper, more likely an option's value
		}
		w, d := words[j:], dyn[j:]
		variants := [][]string{w}
		if b := path.Base(w[0]); b != w[0] {
			variants = append(variants, append([]string{b}, w[1:]...))
		}
		for _, v := range variants {
			if p.couldMatch(v, d) {
				return strings.Join(v, " "), true
			}
			if g, gd, ok := withoutGit(v, d); ok && p.couldMatch(g, gd) {
				return strings.Join(g, " "), true
			}
		}
	}
	return "", false
}

// couldMatch reports whether the plain pattern matches words for some value
// of their dynamic words.
func (p *bashPattern) couldMatch(words []string, dyn []bool) bool {
	k := 0
	for k < len(words) && !dyn[k] {
		k++
	}
	known := strings.Join(words[:k], " ")
	if k == len(words) {
		return p.match(p.plain, known)
	}
	if k == 0 {
		return true
	}
	pat := p.plain.s
	switch p.kind {
	case exact:
		return pat == known || strings.HasPrefix(pat, known+" ")
	case prefix:
		return strings.HasPrefix(pat+" ", known+" ") || strings.HasPrefix(known+" ", pat+" ")
	}
	first := p.plain.segs[0]
	return strings.HasPrefix(known+" ", first) || strings.HasPrefix(first, known)
}
