package screen

import (
	"regexp"
	"strconv"
	"strings"
)

// State is what the TUI is doing, as far as the screen shows.
type State int

const (
	// Unknown: no pattern matched. Never a guess at one of the others.
	Unknown State = iota
	// Working: a turn is running (the footer offers "esc to interrupt").
	Working
	// Idle: the input prompt waits for the next message.
	Idle
	// Permission: a tool permission dialog (Bash, Write, Edit, MCP tools...).
	Permission
	// Choice: the model asked a multiple-choice question (AskUserQuestion).
	Choice
	// Interrupted: the turn was interrupted and the CLI asks what to do
	// instead; the prompt takes the answer.
	Interrupted
	// Dialog: anything else waiting on a person: the trust and API-key
	// dialogs.
	Dialog
	// Failed: the last turn ended with an error the CLI reports and nobody
	// can answer on screen: an API error, a login error, a usage limit.
	// It is never a question (it has no options).
	Failed
)

var stateNames = [...]string{
	Unknown:     "unknown",
	Working:     "working",
	Idle:        "idle",
	Permission:  "permission",
	Choice:      "choice",
	Interrupted: "interrupted",
	Dialog:      "dialog",
	Failed:      "failed",
}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Classification is what a pattern read from a screen. Which fields are set
// depends on the pattern; patterns.go says for each.
type Classification struct {
	State   State
	Pattern string // the name of the pattern that matched; "" when Unknown
	// Title names the dialog: a permission dialog's title ("Bash command",
	// "Create file", "Edit file", "Tool use"; "" when a tall dialog has
	// scrolled it away), a question's tab header, a select dialog's first
	// line.
	Title string
	// Text is what is asked or shown: the permission or choice question,
	// the interrupt question, the error message, the spinner line while
	// working, what is typed in the prompt box at idle.
	Text    string
	Options []Option
	// Detail is secondary text: the body of a permission or select dialog
	// (description, command, file, diff), the answers a review tab
	// summarises, the footer, an API error's HTTP status.
	Detail string
}

// Option is one choice a dialog offers.
type Option struct {
	// Digit is the key that chooses the option at once; 0 when the option
	// has no number (move with Up/Down and press Enter).
	Digit       int
	Label       string
	Description string // the line(s) under the label, if any
	Selected    bool   // highlighted by ❯: Enter chooses it
	Checked     bool   // an OptionToggle whose box is ticked
	Kind        OptionKind
}

// OptionKind says what choosing an option does besides answering.
type OptionKind int

const (
	// OptionAnswer answers with the label.
	OptionAnswer OptionKind = iota
	// OptionToggle ticks or unticks a box of a multi-select question; the
	// answer is sent from the review tab.
	OptionToggle
	// OptionTypeSomething ("Type something.") turns into a text field: type
	// the answer, then Enter.
	OptionTypeSomething
	// OptionChat ("Chat about this") leaves the question to talk instead.
	OptionChat
)

// Classify returns the first pattern in patterns that matches the snapshot,
// or State Unknown.
func Classify(s Snapshot) Classification {
	v := newView(s)
	for _, p := range patterns {
		if c, ok := p.match(v); ok {
			c.State = p.state
			c.Pattern = p.name
			return c
		}
	}
	return Classification{State: Unknown}
}

// pattern recognises one kind of screen.
type pattern struct {
	name  string
	state State
	match func(v *view) (Classification, bool)
}

// view is a snapshot prepared for matching.
type view struct {
	lines []string
	last  int // index of the last non-blank line; -1 if the screen is blank
}

func newView(s Snapshot) *view {
	v := &view{lines: s.Lines, last: -1}
	for i := len(s.Lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(s.Lines[i]) != "" {
			v.last = i
			break
		}
	}
	return v
}

func (v *view) line(i int) string {
	if i < 0 || i >= len(v.lines) {
		return ""
	}
	return v.lines[i]
}

func (v *view) trimmed(i int) string { return strings.TrimSpace(v.line(i)) }

// lastMatch returns the index of the last line in [from, to] matching re, or -1.
func (v *view) lastMatch(re *regexp.Regexp, from, to int) int {
	for i := min(to, len(v.lines)-1); i >= max(from, 0); i-- {
		if re.MatchString(v.lines[i]) {
			return i
		}
	}
	return -1
}

// firstMatch returns the index of the first line in [from, to] matching re, or -1.
func (v *view) firstMatch(re *regexp.Regexp, from, to int) int {
	for i := max(from, 0); i <= min(to, len(v.lines)-1); i++ {
		if re.MatchString(v.lines[i]) {
			return i
		}
	}
	return -1
}

// prevNonBlank returns the index of the last non-blank line before i, or -1.
func (v *view) prevNonBlank(i int) int {
	for j := i - 1; j >= 0; j-- {
		if strings.TrimSpace(v.lines[j]) != "" {
			return j
		}
	}
	return -1
}

// nextNonBlank returns the index of the first non-blank line after i, or -1.
func (v *view) nextNonBlank(i int) int {
	for j := i + 1; j < len(v.lines); j++ {
		if strings.TrimSpace(v.lines[j]) != "" {
			return j
		}
	}
	return -1
}

// join returns the trimmed non-blank lines in [from, to] joined by newlines.
func (v *view) join(from, to int) string {
	var parts []string
	for i := max(from, 0); i <= min(to, len(v.lines)-1); i++ {
		if t := strings.TrimSpace(v.lines[i]); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// indent is the number of leading spaces (in runes, which is columns for the
// ASCII indentation the TUI uses).
func indent(s string) int {
	return len(s) - len(strings.TrimLeft(s, " "))
}
