// Package closing classifies the last message of an agent's turn: does it ask
// the person something (a question, or an ask such as "please confirm"), does
// it report finished work, or can it not tell. It also picks out the answers
// the message suggests (its numbered or bulleted options).
//
// It reads text only; what the words mean is in patterns.go, and the labelled
// corpus under testdata/ holds it to its precision and recall. It never
// decides what a task does with the verdict: unsure must not count as done.
package closing

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is what a closing message does.
type Kind string

const (
	// Question: the message ends asking the person something in prose.
	Question Kind = "question"
	// Ask: it asks the person to decide or do something ("please confirm",
	// "let me know which"), with or without a question mark.
	Ask Kind = "ask"
	// Report: the work is done and nothing is asked of the person.
	Report Kind = "report"
	// Unsure: something in it may be a question; a person should look.
	Unsure Kind = "unsure"
)

// WaitsOnPerson reports whether a turn that ended with this verdict must wait
// for a person rather than count as finished.
func (k Kind) WaitsOnPerson() bool { return k != Report }

// Option is one answer the message suggests.
type Option struct {
	ID    string // the list's own marker ("1", "b") or the item's position
	Label string
}

// Verdict is the classification of one message.
type Verdict struct {
	Kind    Kind
	Options []Option // from the closing list, only when Kind waits on a person
	// Reason names the signal that decided, for logs and tests.
	Reason string
}

// maxLabel bounds an option label (runes): labels are buttons, not essays.
const maxLabel = 200

// Classify reads a turn's last assistant message.
func Classify(msg string) Verdict {
	blocks := parse(msg)
	if len(blocks) == 0 {
		return Verdict{Kind: Report, Reason: "empty"}
	}
	start := closingStart(blocks)
	v := judge(blocks[start:])
	if v.Kind == Report && v.Reason == "no ask" {
		// The closing paragraph asks nothing, but a question to the person
		// earlier on may still be open.
		if s := earlierAsk(blocks[:start]); s != "" {
			v = Verdict{Kind: Unsure, Reason: "earlier: " + s}
		}
	}
	if v.Kind.WaitsOnPerson() {
		v.Options = options(blocks[start:])
	}
	return v
}

// block is a paragraph: prose, a list, a heading or a code block.
type block struct {
	kind  blockKind
	lines []string // for lists: one per item, marker removed
	marks []string // for lists: each item's marker ("1", "a", "" for bullets)
	text  string   // prose with inline code and quotes replaced
}

type blockKind int

const (
	prose blockKind = iota
	list
	heading
	code
)

// parse splits a message into blocks. Fenced code is one code block, so a
// "?" inside it never counts.
func parse(msg string) []block {
	var out []block
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, makeBlock(cur))
			cur = nil
		}
	}
	lines := strings.Split(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			flush()
			fence := t[:3]
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), fence); i++ {
			}
			out = append(out, block{kind: code})
			continue
		}
		if t == "" {
			flush()
			continue
		}
		if strings.HasPrefix(t, "#") {
			flush()
			out = append(out, block{kind: heading, text: t})
			continue
		}
		cur = append(cur, l)
	}
	flush()
	return out
}

func makeBlock(lines []string) block {
	var items, marks, intro []string
	for _, l := range lines {
		if mark, rest, ok := listItem(l); ok {
			items = append(items, rest)
			marks = append(marks, mark)
			continue
		}
		if len(items) > 0 && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) {
			items[len(items)-1] += " " + strings.TrimSpace(l)
			continue
		}
		if len(items) == 0 {
			intro = append(intro, strings.TrimSpace(l))
			continue
		}
		// Prose after a list in the same paragraph: keep it as prose, the
		// list's items become its own block below.
		intro = append(intro, strings.TrimSpace(l))
	}
	if len(items) >= 1 && len(intro) == 0 {
		return block{kind: list, lines: items, marks: marks}
	}
	b := block{kind: prose, text: neutralize(strings.Join(intro, " "))}
	if len(items) > 0 {
		// "I can: a) … b) …" written without a blank line: the prose
		// speaks, the items are its options.
		b.lines, b.marks = items, marks
	}
	return b
}

// listItem recognises "1. x", "2) x", "(3) x", "a) x", "- x", "* x", "• x".
func listItem(l string) (mark, rest string, ok bool) {
	t := strings.TrimLeft(l, " \t")
	if t == "" {
		return "", "", false
	}
	switch {
	case strings.HasPrefix(t, "- "), strings.HasPrefix(t, "* "), strings.HasPrefix(t, "+ "), strings.HasPrefix(t, "• "):
		_, size := utf8.DecodeRuneInString(t)
		return "", strings.TrimSpace(t[size:]), true
	}
	s := strings.TrimPrefix(t, "(")
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 && len(s) > 1 && isLetter(s[0]) && (s[1] == ')' || (s[1] == '.' && s[0] >= 'a' && s[0] <= 'z')) {
		n = 1
	}
	if n == 0 || n > 3 || n >= len(s) || (s[n] != '.' && s[n] != ')') {
		return "", "", false
	}
	if n+1 < len(s) && s[n+1] != ' ' {
		return "", "", false
	}
	return strings.ToLower(s[:n]), strings.TrimSpace(s[n+1:]), true
}

func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// neutralize drops what the message quotes rather than says: inline code
// and quoted strings ("Overwrite existing file?" is not a question to the
// person), and markdown emphasis.
func neutralize(s string) string {
	var b strings.Builder
	quote := rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote || (quote == '“' && r == '”') {
				quote = 0
				b.WriteString("QUOTE")
			}
		case r == '`' || r == '"' || r == '“':
			quote = r
		case r == '*' || r == '_':
		default:
			b.WriteRune(r)
		}
	}
	if quote != 0 {
		// An unclosed quote: keep what followed it rather than lose the
		// end of the message.
		return strings.NewReplacer("`", "", "*", "", "\"", "", "“", "").Replace(s)
	}
	return b.String()
}

// closingStart finds where the closing paragraph begins: the last block, and
// before it a list's introduction, or the paragraph a short sign-off or a
// short ask ("Let me know.", "Which one do you want?") refers to.
func closingStart(blocks []block) int {
	i := len(blocks) - 1
	for i >= 0 && blocks[i].kind == code {
		i--
	}
	if i < 0 {
		return 0
	}
	start := i
	for n := 0; n < 2 && start > 0; n++ {
		cur, prev := blocks[start], blocks[start-1]
		if prev.kind == heading || prev.kind == code && cur.kind != prose {
			break
		}
		if cur.kind == list || (cur.kind == prose && words(cur.text) <= shortBlock) || prev.kind == list {
			start--
			continue
		}
		break
	}
	return start
}

// shortBlock is the most words a closing block may have to count as a
// sign-off or short ask that leans on the paragraph before it.
const shortBlock = 15

func words(s string) int { return len(strings.Fields(s)) }

// sentence is one sentence of prose in the closing paragraph.
type sentence struct {
	text     string
	question bool // ends with "?"
	last     bool // no statement follows it in its paragraph
}

// sentences splits the prose blocks into sentences; list items and code are
// content, not speech, and are left out.
func sentences(blocks []block) []sentence {
	var out []sentence
	for _, b := range blocks {
		if b.kind != prose {
			continue
		}
		var cur []sentence
		start := 0
		rs := []rune(b.text)
		for i := 0; i < len(rs); i++ {
			r := rs[i]
			if r != '.' && r != '?' && r != '!' {
				continue
			}
			// A "." inside a word (file.go, e.g.) does not end a sentence.
			if r == '.' && i+1 < len(rs) && !unicode.IsSpace(rs[i+1]) {
				continue
			}
			for i+1 < len(rs) && (rs[i+1] == '?' || rs[i+1] == '!' || rs[i+1] == '.' || rs[i+1] == ')') {
				i++
			}
			cur = appendSentence(cur, string(rs[start:i+1]))
			start = i + 1
		}
		cur = appendSentence(cur, string(rs[start:]))
		// From the end, so each sentence is read once: a report of a
		// thousand lines, each asking every later one, took 11 s with the
		// race detector and held the task's end that long.
		onlyAsides := true
		for j := len(cur) - 1; j >= 0; j-- {
			cur[j].last = onlyAsides
			if onlyAsides && !aside(cur[j].text) {
				onlyAsides = false
			}
		}
		out = append(out, cur...)
	}
	return out
}

func appendSentence(out []sentence, s string) []sentence {
	s = strings.TrimSpace(s)
	if !hasLetter(s) {
		return out
	}
	t := strings.TrimRight(s, ")]}'’ ")
	return append(out, sentence{text: s, question: strings.HasSuffix(t, "?")})
}

func hasLetter(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

// aside is a sentence that adds to what came before without answering it:
// a parenthetical, a thank-you, a sign-off.
func aside(s string) bool {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "(") {
		return true
	}
	return matchAny(lower(t), signOffs)
}

// judge classifies the closing paragraph.
func judge(blocks []block) Verdict {
	ss := sentences(blocks)
	var asked, questioned, polite, rhetorical string
	for _, s := range ss {
		l := lower(s.text)
		switch {
		case matchAny(l, politeOffers):
			if polite == "" {
				polite = s.text
			}
		case matchAny(l, asks):
			if asked == "" {
				asked = s.text
			}
		}
		if !s.question || matchAny(l, politeOffers) {
			continue
		}
		switch {
		case directed(l), s.last:
			if questioned == "" {
				questioned = s.text
			}
		default:
			// "Why did it fail? The test relied on map order." — asked
			// and answered in the same breath.
			if matchAny(l, answers) || nextAnswers(ss, s) {
				continue
			}
			if rhetorical == "" {
				rhetorical = s.text
			}
		}
	}
	switch {
	case questioned != "":
		return Verdict{Kind: Question, Reason: "question: " + questioned}
	case asked != "":
		return Verdict{Kind: Ask, Reason: "ask: " + asked}
	case rhetorical != "":
		return Verdict{Kind: Unsure, Reason: "undirected question: " + rhetorical}
	case polite != "":
		return Verdict{Kind: Report, Reason: "polite offer: " + polite}
	}
	return Verdict{Kind: Report, Reason: "no ask"}
}

// nextAnswers reports whether the sentence after q starts like an answer to it.
func nextAnswers(ss []sentence, q sentence) bool {
	for i := range ss {
		if ss[i].text == q.text && i+1 < len(ss) {
			return matchAny(lower(ss[i+1].text), answerStarts)
		}
	}
	return false
}

// directed reports whether a question speaks to the person or about what
// the agent should do ("should I", "do you", "is it OK if").
func directed(l string) bool {
	for _, w := range strings.FieldsFunc(l, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' && r != '’' }) {
		if person[w] {
			return true
		}
	}
	return false
}

// earlierAsk finds a question to the person or an ask in the prose before the
// closing paragraph.
func earlierAsk(blocks []block) string {
	for _, s := range sentences(blocks) {
		l := lower(s.text)
		if matchAny(l, politeOffers) {
			continue
		}
		if (s.question && directed(l)) || matchAny(l, asks) {
			return s.text
		}
	}
	return ""
}

// options returns the suggested answers: the items of the last list in the
// closing paragraph, when it has at least two.
func options(blocks []block) []Option {
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		if len(b.lines) < 2 {
			continue
		}
		out := make([]Option, 0, len(b.lines))
		seen := map[string]bool{}
		for j, item := range b.lines {
			id := b.marks[j]
			if id == "" || seen[id] {
				id = itoa(j + 1)
			}
			seen[id] = true
			out = append(out, Option{ID: id, Label: label(item)})
		}
		return out
	}
	return nil
}

func label(item string) string {
	s := strings.TrimSpace(strings.NewReplacer("**", "", "__", "", "`", "").Replace(item))
	if utf8.RuneCountInString(s) > maxLabel {
		s = string([]rune(s)[:maxLabel-1]) + "…"
	}
	return s
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func lower(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "’", "'")
}
