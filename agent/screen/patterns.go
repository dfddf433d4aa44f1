package screen

import (
	"regexp"
	"strconv"
	"strings"
)

// This file is everything familiar knows about the text of Claude Code's
// screens (CLI 2.1.330, fullscreen renderer, see RendererEnv). Each pattern is
// proven by the recordings under testdata/<version>/ named in its comment;
// when a new CLI version changes a screen, re-record (record_test.go) and fix
// the pattern here.

// Text the TUI draws, as matched.
var (
	// A horizontal rule: the top and bottom of the input box and of dialogs.
	reRule = regexp.MustCompile(`^\s*─{8,}\s*$`)
	// The input line of the prompt box; the text typed so far follows.
	rePromptLine = regexp.MustCompile(`^❯[ \x{00a0}]?(.*)$`)
	// The footer while a turn runs.
	reEscToInterrupt = regexp.MustCompile(`esc to interrupt`)
	// The spinner line: glyph, random verb with an ellipsis, "(4s · ↓ 5 tokens)".
	reSpinner = regexp.MustCompile(`^\s*[·✢✳✶✻✽*]\s+\S.*…`)

	// Tool permission dialogs (§2.3–2.5).
	rePermissionQuestion = regexp.MustCompile(`^\s*(Do you want to (?:proceed|create .+|make this edit to .+|.+)\?)\s*$`)
	rePermissionFooter   = regexp.MustCompile(`^\s*Esc to cancel · Tab to amend`)
	rePermissionTip      = regexp.MustCompile(`^\s*Tip: `)
	reDashedRule         = regexp.MustCompile(`^\s*╌{8,}\s*$`)

	// AskUserQuestion (§2.7).
	reChoiceFooter = regexp.MustCompile(`^\s*Enter to select · .*Esc to cancel`)
	reChoiceHeader = regexp.MustCompile(`[☐☒✔]`)

	// A numbered option: "❯ 1. Yes", "  2. No", "  4. [ ] Type something".
	reNumbered = regexp.MustCompile(`^(\s*)(❯\s*)?(\d)\.\s+(.*)$`)
	// A multi-select checkbox before a label: "[ ] Auth", "[✔] Export".
	reCheckbox = regexp.MustCompile(`^\[[ ✔xX]\]\s*`)
	// The highlighted line of an unnumbered list: "❯ No, exit".
	reSelected = regexp.MustCompile(`^(\s*)❯\s(.*)$`)

	// After Esc, a rejected permission, or an interrupting message (§2.2, §2.6).
	reInterrupted = regexp.MustCompile(`Interrupted · What should Claude do instead\?`)

	// Errors the API returned, shown in the transcript above the prompt.
	reAPIError   = regexp.MustCompile(`API Error: (\d{3})\b.*`)
	reLoginError = regexp.MustCompile(`(?i)(invalid api key|please run /login|authentication_error|x-api-key)`)

	// Dialogs that are not tool permissions (§1.2, §1.3, §1.5, §1.6).
	reConfirmFooter = regexp.MustCompile(`^\s*Enter to confirm · Esc to cancel`)
)

// Special AskUserQuestion options (§2.7).
var optionKinds = map[string]OptionKind{
	"Type something.": OptionTypeSomething,
	"Type something":  OptionTypeSomething, // multi-select spells it without the dot
	"Chat about this": OptionChat,
}

// selectDialogs are the first-run and safety dialogs: a title, a body, an
// unnumbered list moved with Up/Down, "Enter to confirm · Esc to cancel".
var selectDialogs = []struct {
	name  string
	title *regexp.Regexp
}{
	// testdata: dialog-trust. Default highlight is "No, exit"; digits do nothing.
	{"trust", regexp.MustCompile(`^\s*Accessing workspace:`)},
	// testdata: dialog-api-key. Default highlight is "No (recommended)".
	{"api-key", regexp.MustCompile(`^\s*Detected a custom API key in your environment`)},
	// CLAUDE-CLI.md §1.5 (not recorded: needs --dangerously-skip-permissions).
	{"bypass-permissions", regexp.MustCompile(`^\s*WARNING: Claude Code running in Bypass Permissions mode`)},
	// CLAUDE-CLI.md §1.6 (not recorded: familiar passes --strict-mcp-config).
	{"mcp-server", regexp.MustCompile(`^\s*New MCP server found in this project`)},
}

// patterns are tried in order; the first match wins. Dialogs come first: they
// replace the prompt box. Working comes before the prompt-box patterns because
// the box stays on screen while a turn runs.
var patterns = []pattern{
	// testdata: permission-bash, permission-bash-rule, permission-write,
	// permission-edit. Title is the dialog's title line, Text the question,
	// Detail the body (command, file, description), Options the numbered
	// answers (the last one is "No").
	{name: "permission", state: Permission, match: matchPermission},
	// testdata: choice-single, choice-multi, choice-multi-select,
	// choice-review. Title is the tab header, Text the question, Options the
	// numbered answers with their descriptions.
	{name: "choice", state: Choice, match: matchChoice},
	// testdata: dialog-trust, dialog-api-key. The Classification's Pattern
	// is the dialog's name from selectDialogs; Title its title, Text its
	// question, Options the list (no digits: Up/Down and Enter).
	{name: "select-dialog", state: Dialog, match: matchSelectDialog},
	// testdata: working. Text is the spinner line, Detail the footer.
	{name: "working", state: Working, match: matchWorking},
	// testdata: interrupted, interrupted-permission.
	{name: "interrupted", state: Interrupted, match: matchInterrupted},
	// testdata: login-error. Text is the error line, Detail the status.
	{name: "login-error", state: Dialog, match: matchLoginError},
	// testdata: api-error, api-error-500. Text is the error line, Detail the
	// HTTP status.
	{name: "api-error", state: Dialog, match: matchAPIError},
	// testdata: idle, idle-after-turn. Text is what is typed in the box,
	// Detail the footer.
	{name: "idle", state: Idle, match: matchIdle},
}

func matchPermission(v *view) (Classification, bool) {
	footer := v.lastMatch(rePermissionFooter, v.last-1, v.last)
	if footer < 0 {
		return Classification{}, false
	}
	q := v.lastMatch(rePermissionQuestion, 0, footer-1)
	if q < 0 {
		return Classification{}, false
	}
	opts := v.numberedOptions(q+1, footer-1, false)
	if len(opts) == 0 {
		return Classification{}, false
	}
	top := v.lastMatch(reRule, 0, q-1)
	if top < 0 {
		return Classification{}, false
	}
	title := v.nextNonBlank(top)
	var body []string
	for i := title + 1; i < q; i++ {
		l := v.trimmed(i)
		if l == "" || reDashedRule.MatchString(l) || rePermissionTip.MatchString(l) {
			continue
		}
		body = append(body, l)
	}
	return Classification{
		Title:   v.trimmed(title),
		Text:    rePermissionQuestion.FindStringSubmatch(v.line(q))[1],
		Options: opts,
		Detail:  strings.Join(body, "\n"),
	}, true
}

func matchChoice(v *view) (Classification, bool) {
	footer := v.lastMatch(reChoiceFooter, v.last-1, v.last)
	if footer < 0 {
		return Classification{}, false
	}
	header := v.lastMatch(reChoiceHeader, 0, footer-1)
	if header < 0 {
		return Classification{}, false
	}
	q := v.nextNonBlank(header)
	if q < 0 || q >= footer {
		return Classification{}, false
	}
	opts := v.numberedOptions(q+1, footer-1, true)
	if len(opts) == 0 {
		return Classification{}, false
	}
	for i := range opts {
		opts[i].Label = reCheckbox.ReplaceAllString(opts[i].Label, "")
		opts[i].Kind = optionKinds[opts[i].Label]
	}
	return Classification{
		Title:   v.trimmed(header),
		Text:    v.trimmed(q),
		Options: opts,
	}, true
}

func matchSelectDialog(v *view) (Classification, bool) {
	footer := v.lastMatch(reConfirmFooter, v.last-1, v.last)
	if footer < 0 {
		return Classification{}, false
	}
	for _, d := range selectDialogs {
		title := v.lastMatch(d.title, 0, footer-1)
		if title < 0 {
			continue
		}
		opts, first := v.selectList(title+1, footer-1)
		if len(opts) == 0 {
			return Classification{}, false
		}
		c := Classification{Pattern: d.name, Title: v.trimmed(title), Options: opts}
		var body []string
		for i := title + 1; i < first; i++ {
			if l := v.trimmed(i); l != "" {
				body = append(body, l)
			}
		}
		// The question is the last body line that asks one; otherwise the
		// title says what the dialog wants.
		c.Text = c.Title
		for i := len(body) - 1; i >= 0; i-- {
			if strings.HasSuffix(body[i], "?") {
				c.Text = body[i]
				body = append(body[:i], body[i+1:]...)
				break
			}
		}
		c.Detail = strings.Join(body, "\n")
		return c, true
	}
	return Classification{}, false
}

func matchWorking(v *view) (Classification, bool) {
	footer := v.lastMatch(reEscToInterrupt, v.last-1, v.last)
	if footer < 0 {
		return Classification{}, false
	}
	c := Classification{Detail: v.trimmed(footer)}
	if sp := v.lastMatch(reSpinner, 0, footer-1); sp >= 0 {
		c.Text = v.trimmed(sp)
	}
	return c, true
}

// promptBox finds the input box at the bottom: a rule, "❯ " and what is
// typed (maybe several lines), a rule, then the footer. It returns the
// indexes of the two rules.
func (v *view) promptBox() (top, bottom int, ok bool) {
	// The footer is one or two lines under the box.
	bottom = v.lastMatch(reRule, v.last-3, v.last)
	if bottom < 0 {
		return 0, 0, false
	}
	top = v.lastMatch(reRule, 0, bottom-1)
	if top < 0 || top == bottom-1 {
		return 0, 0, false
	}
	if !rePromptLine.MatchString(v.line(top + 1)) {
		return 0, 0, false
	}
	return top, bottom, true
}

// aboveBox returns the indexes of the last few non-blank lines above the
// prompt box, nearest first: where the last turn's outcome is shown.
func (v *view) aboveBox(top, n int) []int {
	var out []int
	for i := v.prevNonBlank(top); i >= 0 && len(out) < n; i = v.prevNonBlank(i) {
		out = append(out, i)
	}
	return out
}

func matchInterrupted(v *view) (Classification, bool) {
	top, _, ok := v.promptBox()
	if !ok {
		return Classification{}, false
	}
	for _, i := range v.aboveBox(top, 3) {
		if m := reInterrupted.FindString(v.line(i)); m != "" {
			return Classification{Text: m}, true
		}
	}
	return Classification{}, false
}

func matchLoginError(v *view) (Classification, bool) {
	top, _, ok := v.promptBox()
	if !ok {
		return Classification{}, false
	}
	for _, i := range v.aboveBox(top, 3) {
		if reLoginError.MatchString(v.line(i)) {
			c := Classification{Text: trimTranscriptMark(v.line(i))}
			if m := reAPIError.FindStringSubmatch(v.line(i)); m != nil {
				c.Detail = m[1]
			}
			return c, true
		}
	}
	return Classification{}, false
}

func matchAPIError(v *view) (Classification, bool) {
	top, _, ok := v.promptBox()
	if !ok {
		return Classification{}, false
	}
	for _, i := range v.aboveBox(top, 3) {
		if m := reAPIError.FindStringSubmatch(v.line(i)); m != nil {
			return Classification{Text: trimTranscriptMark(v.line(i)), Detail: m[1]}, true
		}
	}
	return Classification{}, false
}

func matchIdle(v *view) (Classification, bool) {
	top, bottom, ok := v.promptBox()
	if !ok {
		return Classification{}, false
	}
	var typed []string
	for i := top + 1; i < bottom; i++ {
		l := v.line(i)
		if m := rePromptLine.FindStringSubmatch(l); m != nil && i == top+1 {
			l = m[1]
		}
		typed = append(typed, strings.TrimSpace(l))
	}
	return Classification{
		Text:   strings.TrimSpace(strings.Join(typed, "\n")),
		Detail: v.join(bottom+1, v.last),
	}, true
}

// trimTranscriptMark drops the "⎿" or "●" the transcript puts before a line.
func trimTranscriptMark(s string) string {
	s = strings.TrimSpace(s)
	for _, mark := range []string{"⎿", "●"} {
		s = strings.TrimSpace(strings.TrimPrefix(s, mark))
	}
	return s
}

// numberedOptions reads "❯ 1. label" lines in [from, to]. A line indented to
// the label's column or deeper continues the option before it: its
// description when describe is set (AskUserQuestion), otherwise a wrapped
// label. Other lines (rules, "Submit") end nothing and are skipped.
func (v *view) numberedOptions(from, to int, describe bool) []Option {
	var opts []Option
	labelCol := -1
	for i := max(from, 0); i <= min(to, len(v.lines)-1); i++ {
		l := v.lines[i]
		if m := reNumbered.FindStringSubmatch(l); m != nil {
			d, _ := strconv.Atoi(m[3])
			opts = append(opts, Option{Digit: d, Label: strings.TrimSpace(m[4]), Selected: m[2] != ""})
			labelCol = len([]rune(l)) - len([]rune(m[4]))
			continue
		}
		t := strings.TrimSpace(l)
		if len(opts) == 0 || t == "" || reRule.MatchString(l) || indent(l) < labelCol {
			continue
		}
		o := &opts[len(opts)-1]
		if describe {
			o.Description = strings.TrimSpace(o.Description + "\n" + t)
		} else {
			o.Label += " " + t
		}
	}
	return opts
}

// selectList reads an unnumbered list in [from, to]: the line marked "❯ "
// and the lines around it that start at the same column as its text. It
// returns the options and the index of the first one.
func (v *view) selectList(from, to int) ([]Option, int) {
	sel := v.lastMatch(reSelected, from, to)
	if sel < 0 {
		return nil, -1
	}
	m := reSelected.FindStringSubmatch(v.line(sel))
	col := len(m[1]) + 2 // "❯ " is two columns
	member := func(i int) bool {
		l := v.line(i)
		return strings.TrimSpace(l) != "" && indent(l) == col
	}
	first := sel
	for first-1 >= from && member(first-1) {
		first--
	}
	last := sel
	for last+1 <= to && member(last+1) {
		last++
	}
	var opts []Option
	for i := first; i <= last; i++ {
		label := v.trimmed(i)
		if i == sel {
			label = strings.TrimSpace(m[2])
		}
		opts = append(opts, Option{Label: label, Selected: i == sel})
	}
	return opts, first
}
