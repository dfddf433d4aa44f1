package policy

import (
	"errors"
	"path"
	"regexp"
	"strings"
)

// A lexer, not a shell parser: it finds where simple commands begin and end
// and which words they have, and it knows when it may be wrong. Every place
// where it could disagree with bash about what is quoted (heredoc bodies,
// comments, the end of a substitution) makes the script "uncertain": allow
// rules then stop matching, and deny rules also see a reading that ignores
// quotes, so text bash runs can never hide from them inside what the lexer
// took for a string.

// command is one simple command of a script.
type command struct {
	text  string   // the words as written, quotes kept, joined by single spaces
	words []string // the words with quotes and escapes removed
	// dynamic[i]: word i holds an expansion ($x, ${x}, $(…), `…`), so what
	// it is is only known when the command runs.
	dynamic []bool
	// risky: the command runs a substitution or redirects output to a file,
	// so only a rule spelling it out exactly may allow it.
	risky bool
}

// script is what the lexer made of a whole Bash command.
type script struct {
	commands []command // including those inside substitutions
	broken   bool      // an unterminated quote or substitution, or nesting too deep
	heredoc  bool      // has a << heredoc, whose body the lexer reads as commands
	comment  bool      // has a # comment, which the lexer reads as words
	substit  bool      // has a $(…), `…`, <(…) or >(…)
}

// allowable reports whether the lexer's reading is sure enough for rules
// that allow by prefix or pattern (or per command at all).
func (s *script) allowable() bool { return !s.broken && !s.heredoc && !s.comment }

func (s *script) uncertain() bool { return !s.allowable() || s.substit }

const (
	// Deeper nesting is not real work; it makes the script broken.
	maxDepth = 64
	// Longer commands are not analysed: they are never allowed by a prefix
	// or pattern, and every Bash deny rule matches them. Keeps the checks
	// of deny rules (which try each word after a wrapper as the program)
	// cheap.
	maxScript = 64 << 10
	// sh -c "sh -c '…'" deeper than this matches every Bash deny rule.
	maxShellDepth = 4
	// The bytes lexed and tried for deny rules, all readings together: a
	// script needing more (eval eval eval … would otherwise grow as a power
	// of its length) matches every Bash deny rule.
	maxReadings = 16 * maxScript
)

func lex(src string, blind bool) script {
	l := lexer{src: src, blind: blind}
	l.list(0)
	return l.script
}

type lexer struct {
	src   string
	pos   int
	blind bool // quotes and escapes are ordinary characters; no nesting
	depth int
	script
}

func (l *lexer) peek(n int) byte {
	if l.pos+n < len(l.src) {
		return l.src[l.pos+n]
	}
	return 0
}

// list lexes commands up to the end of the input or, inside a substitution,
// to its closing byte, which it consumes.
func (l *lexer) list(close byte) {
	var b builder
	parens := 0 // subshells opened inside a $( … ), whose ")" do not close it
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		// close is 0 at the top level, where a NUL byte is just a byte.
		if close != 0 && c == close && (close != ')' || parens == 0) {
			l.pos++
			l.flush(&b)
			return
		}
		switch {
		case c == ' ' || c == '\t':
			b.endWord()
			l.pos++
		case c == '(':
			parens++
			l.flush(&b)
			l.pos++
		case c == ')':
			if parens > 0 {
				parens--
			}
			l.flush(&b)
			l.pos++
		case c == '\n' || c == ';' || c == '|' || c == '&' && l.peek(1) != '>':
			l.flush(&b)
			l.pos++
		case c == '&' || c == '>' || c == '<':
			if l.peek(1) == '(' && c != '&' && !l.blind {
				start := l.pos
				l.nest(&b, 2, ')')
				b.add(l.src[start:l.pos], l.src[start:l.pos])
			} else {
				l.redirect(&b)
			}
		case l.blind && (c == '\'' || c == '"' || c == '\\'):
			b.add(l.src[l.pos:l.pos+1], "")
			l.pos++
		case c == '`':
			if l.blind {
				l.flush(&b)
				l.pos++
				continue
			}
			start := l.pos
			l.nest(&b, 1, '`')
			b.add(l.src[start:l.pos], l.src[start:l.pos])
		case c == '$' && l.peek(1) == '(' && !l.blind:
			start := l.pos
			l.nest(&b, 2, ')')
			b.add(l.src[start:l.pos], l.src[start:l.pos])
		case c == '$' && l.peek(1) == '\'' && !l.blind:
			l.ansiQuote(&b)
		case c == '\\':
			l.escape(&b)
		case c == '\'':
			l.singleQuote(&b)
		case c == '"':
			l.doubleQuote(&b)
		default:
			if c == '#' && !b.inWord {
				l.comment = true
			}
			if c == '$' && !l.blind {
				b.wordDyn = true
			}
			b.add(l.src[l.pos:l.pos+1], l.src[l.pos:l.pos+1])
			l.pos++
		}
	}
	if close != 0 {
		l.broken = true
	}
	l.flush(&b)
}

// flush ends the command being built.
func (l *lexer) flush(b *builder) {
	b.endWord()
	if b.redir != "" {
		b.risky = true // a redirection with no target: bash refuses it
	}
	if len(b.words) > 0 {
		l.commands = append(l.commands, command{text: b.text.String(), words: b.words, dynamic: b.dynamic, risky: b.risky})
	}
	*b = builder{}
}

// nest lexes a substitution whose opening is skip bytes long; its commands
// join the script, and the command around it becomes risky.
func (l *lexer) nest(b *builder, skip int, close byte) {
	b.risky = true
	b.wordDyn = true
	l.substit = true
	if l.depth >= maxDepth {
		l.broken = true
		l.pos = len(l.src)
		return
	}
	l.pos += skip
	l.depth++
	l.list(close)
	l.depth--
}

// redirect reads a redirection operator (with its file descriptor, as in
// 2>&1) as a word of its own; the next word is its target.
func (l *lexer) redirect(b *builder) {
	fd := ""
	if b.inWord && isDigits(b.raw.String()) {
		fd = b.raw.String()
		b.raw.Reset()
		b.plain.Reset()
		b.inWord = false
	} else {
		b.endWord()
	}
	op := ">"
	for _, o := range []string{"&>>", "&>", ">>", ">&", ">|", "<<<", "<<-", "<<", "<>", "<&", ">", "<"} {
		if strings.HasPrefix(l.src[l.pos:], o) {
			op = o
			break
		}
	}
	l.pos += len(op)
	if op == "<<" || op == "<<-" {
		l.heredoc = true
	}
	if b.redir != "" {
		b.risky = true // an operator where a target belongs
	}
	// The operator starts a word, so "2>&1" stays one word; what follows it
	// in that word, or else the next word, is the target.
	b.add(fd+op, fd+op)
	b.redir, b.opLen = op, len(fd+op)
}

func (l *lexer) escape(b *builder) {
	switch {
	case l.pos+1 >= len(l.src):
		b.add(`\`, `\`)
		l.pos++
	case l.src[l.pos+1] == '\n': // a line continuation joins the lines
		l.pos += 2
	default:
		b.add(l.src[l.pos:l.pos+2], l.src[l.pos+1:l.pos+2])
		l.pos += 2
	}
}

func (l *lexer) singleQuote(b *builder) {
	end := strings.IndexByte(l.src[l.pos+1:], '\'')
	if end < 0 {
		l.broken = true
		b.add(l.src[l.pos:], l.src[l.pos+1:])
		l.pos = len(l.src)
		return
	}
	b.add(l.src[l.pos:l.pos+end+2], l.src[l.pos+1:l.pos+1+end])
	l.pos += end + 2
}

// ansiQuote reads $'…', where \' does not end the string, decoding its
// escapes as bash does: $'\x72m' is rm to a deny rule.
func (l *lexer) ansiQuote(b *builder) {
	start := l.pos
	var plain strings.Builder
	for i := l.pos + 2; i < len(l.src); i++ {
		switch l.src[i] {
		case '\\':
			i = ansiEscape(l.src, i+1, &plain) - 1
		case '\'':
			l.pos = i + 1
			b.add(l.src[start:l.pos], plain.String())
			return
		default:
			plain.WriteByte(l.src[i])
		}
	}
	l.broken = true
	b.add(l.src[start:], plain.String())
	l.pos = len(l.src)
}

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

func (l *lexer) doubleQuote(b *builder) {
	start := l.pos
	l.pos++
	var plain strings.Builder
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == '"':
			l.pos++
			b.add(l.src[start:l.pos], plain.String())
			return
		case c == '\\' && l.pos+1 < len(l.src):
			switch n := l.src[l.pos+1]; n {
			case '$', '`', '"', '\\':
				plain.WriteByte(n)
			case '\n':
			default:
				plain.WriteByte('\\')
				plain.WriteByte(n)
			}
			l.pos += 2
		case c == '$' && l.peek(1) == '(':
			s := l.pos
			l.nest(b, 2, ')')
			plain.WriteString(l.src[s:l.pos])
		case c == '`':
			s := l.pos
			l.nest(b, 1, '`')
			plain.WriteString(l.src[s:l.pos])
		default:
			if c == '$' {
				b.wordDyn = true
			}
			plain.WriteByte(c)
			l.pos++
		}
	}
	l.broken = true
	b.add(l.src[start:], plain.String())
}

// builder collects one command's words.
type builder struct {
	text       strings.Builder
	words      []string
	raw, plain strings.Builder // the word being read
	inWord     bool
	dynamic    []bool
	wordDyn    bool // the word being read holds an expansion
	risky      bool
	redir      string // a redirection operator waiting for its target
	opLen      int    // how much of the word being read is that operator
}

func (b *builder) add(raw, plain string) {
	b.raw.WriteString(raw)
	b.plain.WriteString(plain)
	b.inWord = true
}

func (b *builder) appendWord(raw, plain string) {
	if b.text.Len() > 0 {
		b.text.WriteByte(' ')
	}
	b.text.WriteString(raw)
	b.words = append(b.words, plain)
	b.dynamic = append(b.dynamic, b.wordDyn)
	b.wordDyn = false
}

func (b *builder) endWord() {
	if !b.inWord {
		return
	}
	raw, plain := b.raw.String(), b.plain.String()
	b.raw.Reset()
	b.plain.Reset()
	b.inWord = false
	b.appendWord(raw, plain)
	if b.redir == "" {
		return
	}
	target := plain[b.opLen:]
	if target == "" && b.opLen > 0 {
		b.opLen = 0 // the operator stood alone: the next word is its target
		return
	}
	if !harmlessRedirect(b.redir, target) {
		b.risky = true
	}
	b.redir, b.opLen = "", 0
}

// harmlessRedirect reports whether a redirection only reads, duplicates a
// descriptor, or throws output away.
func harmlessRedirect(op, target string) bool {
	switch op {
	case "<", "<<", "<<-", "<<<":
		return true
	case ">&", "<&":
		return isDigits(target) || target == "-"
	}
	switch target {
	case "/dev/null", "/dev/stdout", "/dev/stderr":
		return op != "<>"
	}
	return false
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
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
	if s := lex(body, false); !s.broken && len(s.commands) == 1 {
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

// allowsCommand matches one simple command of a script the lexer is sure
// about. Prefix and glob rules never match a risky command.
func (p *bashPattern) allowsCommand(cmd command) bool {
	if p.kind != exact && cmd.risky {
		return false
	}
	return p.match(p.text, cmd.text)
}

func (p *bashPattern) deny(c *call) (bool, string) {
	if c.command == nil {
		return true, ": the call has no command familiar can read"
	}
	r := c.readings()
	if r.unsure {
		return true, ": the command is too long or too deeply nested for familiar to check"
	}
	if r.dynamic != "" {
		return true, ": the program " + quote(r.dynamic) + " is only known when the command runs"
	}
	if p.match(p.fields, r.whole) {
		return true, ""
	}
	for _, t := range r.texts {
		if p.match(p.text, t) {
			return true, ": it matches " + quote(t)
		}
	}
	for _, t := range r.plains {
		if p.match(p.plain, t.String()) {
			return true, ": it matches " + quote(t.String())
		}
	}
	return false, ""
}

// readings are the strings deny rules are tried against.
type readings struct {
	whole  string    // the whole script, whitespace squeezed
	texts  []string  // each command as written
	plains []reading // each command without quotes, from each word that may be the program
	unsure bool      // the script could not be read in full
	spent  int       // bytes lexed and put into readings, against maxReadings
	// dynamic is a program word holding an expansion ("$X -rf /", eval
	// "$CMD"): it may be any program, so every Bash deny rule matches.
	dynamic string
}

// reading is head+tail, kept apart so that trying every word after a wrapper
// as the program does not copy the rest of the command each time.
type reading struct{ head, tail string }

func (r reading) String() string { return r.head + r.tail }

func (c *call) readings() *readings {
	if c.denyReadings == nil {
		r := &readings{whole: strings.Join(strings.Fields(*c.command), " ")}
		r.read(*c.command, 0)
		c.denyReadings = r
	}
	return c.denyReadings
}

func (r *readings) read(src string, depth int) {
	r.spent += 2 * len(src)
	if depth > maxShellDepth || len(src) > maxScript || r.spent > maxReadings {
		r.unsure = true
		return
	}
	s := lex(src, false)
	scripts := []script{s}
	if s.uncertain() {
		scripts = append(scripts, lex(src, true))
	}
	for _, sc := range scripts {
		for _, cmd := range sc.commands {
			r.texts = append(r.texts, cmd.text)
			r.addPlain(cmd, depth)
		}
	}
}

var (
	// Words that may come before the program.
	keywords = map[string]bool{"!": true, "{": true, "}": true, "if": true, "then": true, "else": true,
		"elif": true, "while": true, "until": true, "do": true, "done": true, "fi": true, "time": true}
	assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=`)
	// Programs that run another program named by one of their arguments.
	wrappers = map[string]bool{"sudo": true, "doas": true, "su": true, "env": true, "command": true,
		"builtin": true, "exec": true, "nohup": true, "nice": true, "ionice": true, "timeout": true,
		"time": true, "stdbuf": true, "setsid": true, "xargs": true, "find": true, "parallel": true,
		"watch": true, "strace": true, "ltrace": true, "chroot": true, "flock": true, "unbuffer": true,
		"eval": true, "sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "ash": true,
		"mksh": true, "fish": true, "busybox": true, "script": true}
	shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true,
		"ash": true, "mksh": true, "fish": true, "su": true}
	dashC = regexp.MustCompile(`^-[A-Za-z]*c[A-Za-z]*$`)
)

// maxStarts bounds the words tried as the program after a wrapper.
const maxStarts = 256

func (r *readings) addPlain(cmd command, depth int) {
	w := cmd.words
	i := 0
	for i < len(w) && (keywords[w[i]] || assignment.MatchString(w[i])) {
		i++
	}
	if i == len(w) {
		return
	}
	// Only the program itself: after a wrapper, a word with an expansion
	// is as likely an option's value (sudo -u "$USER", find "$dir").
	if i < len(cmd.dynamic) && cmd.dynamic[i] && r.dynamic == "" {
		r.dynamic = w[i]
	}
	full := strings.Join(w[i:], " ")
	end := len(w)
	if !wrappers[path.Base(w[i])] {
		end = i + 1
	} else if end-i > maxStarts {
		r.unsure = true
		return
	}
	off := 0
	for j := i; j < end; j++ {
		rest := full[off:]
		off += len(w[j]) + 1
		if r.spent += len(rest); r.spent > maxReadings {
			r.unsure = true
			return
		}
		r.plains = append(r.plains, reading{tail: rest})
		prog := path.Base(w[j])
		if prog != w[j] {
			r.plains = append(r.plains, reading{head: prog, tail: rest[len(w[j]):]})
		}
		switch {
		case prog == "eval":
			r.read(strings.Join(w[j+1:], " "), depth+1)
		case shells[prog]:
			for k := j + 1; k+1 < len(w); k++ {
				if dashC.MatchString(w[k]) {
					r.read(w[k+1], depth+1)
					break
				}
			}
		}
	}
}
