package screen

import (
	"regexp"
	"strconv"
	"strings"
)

// This file is everything familiar knows about the text of Claude Code's
// screens (CLI 2.1.330, fullscreen renderer: see RendererEnv). Each pattern
// names the recordings under testdata/<version>/ that prove it. When a new
// CLI version changes a screen, re-record (record_test.go) and fix it here.

// Text the TUI draws, as matched.
var (
	// A horizontal rule: the top and bottom of the input box, the top of a
	// dialog.
	reRule = regexp.MustCompile(`^\s*─{8,}\s*$`)
	// The input line of the prompt box, with what is in it.
	rePromptLine = regexp.MustCompile(`^❯(?: (.*))?$`)
	// A prompt of the conversation, echoed in the transcript.
	reEchoedPrompt = regexp.MustCompile(`^❯ \S`)
	// The footer while a turn runs.
	reEscToInterrupt = regexp.MustCompile(`esc to interrupt`)
	// The spinner line: a glyph, a random verb and an ellipsis, maybe
	// "(4s · ↓ 5 tokens)".
	reSpinner = regexp.MustCompile(`^\s*[·✢✳✶✻✽*]\s+\S+…`)
	// The spinner line while the CLI backs off after a failed API call:
	// "API error · retrying in 1s · attempt 1/10", "Connection refused — a
	// firewall or proxy may be blocking it (ECONNREFUSED) · retrying in 4s ·
	// attempt 4/10"; up to 2.1.300 "Retrying" ("Unable to connect to API
	// (ConnectionRefused) · Retrying in 1s · attempt 1/2" in 2.1.200).
	reRetrying = regexp.MustCompile(`^\s*[·✢✳✶✻✽*]\s+(.+ · [Rr]etrying in \S+ · attempt \d+/\d+.*)$`)

	// Tool permission dialogs.
	// "Do you want to proceed?", "... create new.txt?", "... make this edit
	// to new.txt?".
	rePermissionQuestion = regexp.MustCompile(`^\s*(Do you want to .+\?)\s*$`)
	rePermissionFooter   = regexp.MustCompile(`^\s*Esc to cancel · Tab to amend`)
	// Body lines of a permission dialog that are not about the call.
	rePermissionNoise = regexp.MustCompile(`^\s*(Tip: .*|╌{8,})\s*$`)

	// AskUserQuestion: the tab header ("←  ☐ Database  ☐ Features  ✔ Submit  →"
	// or " ☐ Color") and the footer.
	reChoiceHeader = regexp.MustCompile(`^\s*(?:←\s+)?[☐☒✔] \S`)
	reChoiceFooter = regexp.MustCompile(`^\s*Enter to select · .*Esc to cancel`)
	// In the footer while the highlighted "Type something." is a text field
	// (its label is then what has been typed).
	reChoiceEditing = regexp.MustCompile(`ctrl\+g to edit`)

	// A numbered option: "❯ 1. Yes", "  2. No", "  4. [ ] Type something".
	reDialogDigit = regexp.MustCompile(`^(\d)\.\s+(.+)$`)
	reNumbered    = regexp.MustCompile(`^(\s*)(❯\s*)?(\d)\.\s+(.*)$`)
	// A multi-select checkbox before a label: "[ ] Auth", "[✔] Export".
	reCheckbox = regexp.MustCompile(`^\[([ ✔])\]\s+`)
	// The highlighted line of an unnumbered list: "❯ No, exit".
	reSelected = regexp.MustCompile(`^(\s*)❯ (.*)$`)

	// Outcomes of the last turn, shown under its echoed prompt.
	reInterrupted = regexp.MustCompile(`^\s*⎿\s+(Interrupted · What should Claude do instead\?)\s*$`)
	// "API Error: 529 …", "API Error: Connection refused — … (ECONNREFUSED)".
	reAPIError   = regexp.MustCompile(`^\s*[●⎿]\s+(API Error: (?:(\d{3})\b)?.*)$`)
	reLoginError = regexp.MustCompile(`^\s*[●⎿]\s+((?:Invalid API key|OAuth token has expired|Not logged in)\b.*|.*Please run /login.*)$`)
	// A claude.ai usage limit: "⎿  You've hit your 5-hour limit · resets
	// 7:33pm (UTC)".
	reUsageLimit = regexp.MustCompile(`^\s*[●⎿]\s+(You've hit your .*limit.*|.*usage limit reached.*)$`)

	// Dialogs that are not tool permissions.
	reConfirmFooter = regexp.MustCompile(`^\s*Enter to confirm · Esc to cancel`)

	// The window title while a turn runs: a turning half circle
	// ("◐ Claude Code", "◑ Claude Code"). Idle or waiting on a person it is
	// "✳ Claude Code".
	reTitleWorking = regexp.MustCompile(`^[◐◓◑◒\x{2801}-\x{28FF}] `) // braille spinner up to 2.1.200
)

// placeholders are hints the CLI writes into an empty input box (dimmed,
// which a Snapshot does not keep). testdata: api-error-500, login-error.
var placeholders = map[string]bool{
	"Resend your message to try again": true,
	"Once fixed, resend your message":  true,
}

// Special AskUserQuestion options.
var optionKinds = map[string]OptionKind{
	"Type something.": OptionTypeSomething,
	"Type something":  OptionTypeSomething, // multi-select spells it without the dot
	"Chat about this": OptionChat,
}

// patterns are tried in order; the first match wins. Dialogs come first: they
// take the place of the prompt box. Working comes before the patterns that
// read the prompt box, which stays on screen while a turn runs.
var patterns = []pattern{
	// testdata: permission-bash, permission-bash-rule, permission-write,
	// permission-write-long, permission-edit; the MCP tool dialog of
	// CLAUDE-CLI.md §2.5. Title is the dialog's title line, Text its
	// question, Detail the body (description, command or file, diff),
	// Options the numbered answers; the first is "Yes", the last "No".
	{name: "permission", state: Permission, match: matchPermission},
	// testdata: choice-single, choice-typing, choice-multi,
	// choice-multi-select, choice-multi-checked, choice-review. Title is the
	// tab header, Text the question, Options the numbered answers with
	// their descriptions, Detail what the review tab summarises.
	{name: "choice", state: Choice, match: matchChoice},
	// The first-run and safety dialogs: a title, a body, an unnumbered list
	// moved with Up/Down and chosen with Enter (digits do nothing), and
	// "Enter to confirm · Esc to cancel". Title is the first line, Text the
	// question (the title if there is none), Detail the body, Options the
	// list.
	//
	// testdata: dialog-trust. "No, exit" is highlighted at first.
	{name: "trust", state: Dialog, match: selectDialog(`^\s*Accessing workspace:`)},
	// testdata: dialog-api-key. "No (recommended)" is highlighted at first.
	{name: "api-key", state: Dialog, match: selectDialog(`^\s*Detected a custom API key in your environment`)},
	// Not recorded (needs --dangerously-skip-permissions): tested with the
	// screen of CLAUDE-CLI.md §1.5.
	{name: "bypass-permissions", state: Dialog, match: selectDialog(`^\s*WARNING: Claude Code running in Bypass Permissions mode`)},
	// Not recorded (familiar passes --strict-mcp-config): tested with the
	// screen of CLAUDE-CLI.md §1.6.
	{name: "mcp-server", state: Dialog, match: selectDialog(`^\s*New MCP server found in this project`)},
	// testdata: api-retry. Text is the retry line ("API error · retrying in
	// 1s · attempt 2/10"), Detail the footer.
	{name: "api-retry", state: Working, match: matchRetrying},
	// testdata: working. Text is the spinner line, Detail the footer.
	{name: "working", state: Working, match: matchWorking},
	// testdata: interrupted, interrupted-permission. Text is the question.
	{name: "interrupted", state: Interrupted, match: matchInterrupted},
	// testdata: login-error, not-logged-in. Text is the message.
	{name: "login-error", state: Failed, match: matchLoginError},
	// testdata: usage-limit. Text is the message with the reset time.
	{name: "usage-limit", state: Failed, match: matchUsageLimit},
	// testdata: api-error, api-error-500, api-gave-up. Text is the message,
	// Detail the HTTP status.
	{name: "api-error", state: Failed, match: matchAPIError},
	// testdata: idle, idle-after-turn, interrupted-early. Text is what is
	// typed in the box (several lines joined by "\n"), Detail the footer.
	{name: "idle", state: Idle, match: matchIdle},
}

// TitleWorking reports whether a window title (Snapshot.Title) says a turn
// is running. testdata: working (title "◐ Claude Code"; "⠐ <session>" in
// 2.1.200), idle ("✳ Claude Code").
func TitleWorking(title string) bool {
	return reTitleWorking.MatchString(title)
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
	opts, _ := v.numberedOptions(q+1, footer-1, false)
	if len(opts) == 0 {
		return Classification{}, false
	}
	// A dialog taller than the screen (a long file to create) has its top,
	// and with it the title, scrolled away: the title is then "".
	title, bodyFrom := "", 0
	if top := v.lastMatch(reRule, 0, q-1); top >= 0 {
		t := v.nextNonBlank(top)
		if t >= q {
			return Classification{}, false
		}
		title, bodyFrom = v.trimmed(t), t+1
	}
	var body []string
	for i := bodyFrom; i < q; i++ {
		if l := v.trimmed(i); l != "" && !rePermissionNoise.MatchString(l) {
			body = append(body, l)
		}
	}
	return Classification{
		Title:   title,
		Text:    rePermissionQuestion.FindStringSubmatch(v.line(q))[1],
		Options: opts,
		Detail:  strings.Join(body, "\n"),
	}, true
}

func matchChoice(v *view) (Classification, bool) {
	header := v.lastMatch(reChoiceHeader, 0, v.last)
	if header < 1 || !reRule.MatchString(v.line(header-1)) {
		return Classification{}, false
	}
	q := v.nextNonBlank(header)
	if q < 0 {
		return Classification{}, false
	}
	end, editing := v.last, false
	if reChoiceFooter.MatchString(v.line(end)) {
		editing = reChoiceEditing.MatchString(v.line(end))
		end = v.prevNonBlank(end)
	}
	opts, used := v.numberedOptions(q+1, end, true)
	// Everything from the question down is the dialog: an unexpected line
	// at the bottom means this is something else.
	if len(opts) == 0 || used != end {
		return Classification{}, false
	}
	for i := range opts {
		if editing && opts[i].Selected {
			opts[i].Kind = OptionTypeSomething
		}
	}
	first := v.firstMatch(reNumbered, q+1, end)
	return Classification{
		Title:   v.trimmed(header),
		Text:    v.trimmed(q),
		Options: opts,
		Detail:  v.join(q+1, first-1),
	}, true
}

// selectDialog matches a select dialog whose title line matches title.
func selectDialog(title string) func(v *view) (Classification, bool) {
	reTitle := regexp.MustCompile(title)
	return func(v *view) (Classification, bool) {
		footer := v.lastMatch(reConfirmFooter, v.last-1, v.last)
		if footer < 0 {
			return Classification{}, false
		}
		top := v.lastMatch(reTitle, 0, footer-1)
		if top < 0 {
			return Classification{}, false
		}
		opts, first := v.selectList(top+1, footer-1)
		if len(opts) == 0 {
			return Classification{}, false
		}
		c := Classification{Title: v.trimmed(top), Text: v.trimmed(top), Options: opts}
		var body []string
		for i := top + 1; i < first; i++ {
			if l := v.trimmed(i); l != "" {
				body = append(body, l)
			}
		}
		// The question, if the dialog asks one, is its last line ending in "?".
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

func matchRetrying(v *view) (Classification, bool) {
	c, ok := matchWorking(v)
	if !ok {
		return Classification{}, false
	}
	footer := v.lastMatch(reEscToInterrupt, v.last-1, v.last)
	i := v.lastMatch(reRetrying, 0, footer-1)
	if i < 0 {
		return Classification{}, false
	}
	c.Text = reRetrying.FindStringSubmatch(v.line(i))[1]
	return c, true
}

func matchInterrupted(v *view) (Classification, bool) {
	from, to, ok := v.lastTurn()
	if !ok {
		return Classification{}, false
	}
	if i := v.lastMatch(reInterrupted, from, to); i >= 0 {
		return Classification{Text: reInterrupted.FindStringSubmatch(v.line(i))[1]}, true
	}
	return Classification{}, false
}

func matchLoginError(v *view) (Classification, bool) {
	from, to, ok := v.lastTurn()
	if !ok {
		return Classification{}, false
	}
	if i := v.lastMatch(reLoginError, from, to); i >= 0 {
		return Classification{Text: reLoginError.FindStringSubmatch(v.line(i))[1]}, true
	}
	return Classification{}, false
}

// matchUsageLimit reads the limit message of the last turn, with the
// prompt box below it (the CLI continues by itself) or with the dialog that
// asks whether to wait (testdata usage-limit): either way it is not a
// question for familiar, which waits for the reset itself.
func matchUsageLimit(v *view) (Classification, bool) {
	from := v.lastMatch(reEchoedPrompt, 0, v.last) + 1
	if from == 0 {
		return Classification{}, false
	}
	if i := v.lastMatch(reUsageLimit, from, v.last); i >= 0 {
		return Classification{Text: reUsageLimit.FindStringSubmatch(v.line(i))[1]}, true
	}
	return Classification{}, false
}

func matchAPIError(v *view) (Classification, bool) {
	from, to, ok := v.lastTurn()
	if !ok {
		return Classification{}, false
	}
	i := v.lastMatch(reAPIError, from, to)
	if i < 0 {
		return Classification{}, false
	}
	m := reAPIError.FindStringSubmatch(v.line(i))
	// A long message wraps onto indented lines.
	text := m[1]
	for j := i + 1; j <= to && indent(v.line(j)) == 2; j++ {
		text += " " + v.trimmed(j)
	}
	return Classification{Text: text, Detail: m[2]}, true
}

func matchIdle(v *view) (Classification, bool) {
	top, bottom, ok := v.promptBox()
	if !ok {
		return Classification{}, false
	}
	var typed []string
	for i := top + 1; i < bottom; i++ {
		l := v.line(i)
		if i == top+1 {
			l = rePromptLine.FindStringSubmatch(l)[1]
		}
		typed = append(typed, strings.TrimSpace(l))
	}
	text := strings.TrimSpace(strings.Join(typed, "\n"))
	if placeholders[text] {
		text = ""
	}
	return Classification{Text: text, Detail: v.join(bottom+1, v.last)}, true
}

// promptBox finds the input box at the bottom of the screen: a rule, "❯ "
// with what is typed (maybe several lines), a rule, then the footer. It
// returns the indexes of the two rules.
func (v *view) promptBox() (top, bottom int, ok bool) {
	bottom = v.lastMatch(reRule, v.last-2, v.last) // the footer is one or two lines
	if bottom < 0 {
		return 0, 0, false
	}
	top = v.lastMatch(reRule, 0, bottom-1)
	if top < 0 || top == bottom-1 || !rePromptLine.MatchString(v.line(top+1)) {
		return 0, 0, false
	}
	return top, bottom, true
}

// lastTurn returns the lines between the last prompt echoed in the
// transcript and the input box (the top of the screen if the prompt has
// scrolled away): where the CLI reports how the turn ended.
func (v *view) lastTurn() (from, to int, ok bool) {
	top, _, ok := v.promptBox()
	if !ok {
		return 0, 0, false
	}
	return v.lastMatch(reEchoedPrompt, 0, top-1) + 1, top - 1, true
}

// numberedOptions reads the "❯ 1. label" lines in [from, to]. A line
// indented to the label's column or deeper continues the option before it:
// as its description when describe is set (AskUserQuestion), otherwise as a
// wrapped label. Rules and other lines are skipped. It also returns the
// index of the last line that belonged to an option.
func (v *view) numberedOptions(from, to int, describe bool) (opts []Option, last int) {
	last = -1
	labelCol := 0
	for i := max(from, 0); i <= min(to, len(v.lines)-1); i++ {
		l := v.lines[i]
		if m := reNumbered.FindStringSubmatch(l); m != nil {
			d, _ := strconv.Atoi(m[3])
			o := Option{Digit: d, Label: strings.TrimSpace(m[4]), Selected: m[2] != ""}
			labelCol = len([]rune(l)) - len([]rune(m[4]))
			if cb := reCheckbox.FindStringSubmatch(o.Label); cb != nil {
				o.Label = strings.TrimSpace(o.Label[len(cb[0]):])
				o.Kind = OptionToggle
				o.Checked = cb[1] != " "
				labelCol += len([]rune(cb[0]))
			}
			if k, ok := optionKinds[o.Label]; ok {
				o.Kind = k
			}
			opts = append(opts, o)
			last = i
			continue
		}
		t := strings.TrimSpace(l)
		if reRule.MatchString(l) {
			last = i
			continue
		}
		if len(opts) == 0 || t == "" || indent(l) < labelCol {
			continue
		}
		o := &opts[len(opts)-1]
		if describe {
			o.Description = strings.TrimSpace(o.Description + "\n" + t)
		} else {
			o.Label += " " + t
		}
		last = i
	}
	return opts, last
}

// selectList reads an unnumbered list in [from, to]: the line marked "❯ "
// and the lines around it that start at the column of its text. It returns
// the options and the index of the first one.
func (v *view) selectList(from, to int) ([]Option, int) {
	sel := v.lastMatch(reSelected, from, to)
	if sel < 0 {
		return nil, -1
	}
	m := reSelected.FindStringSubmatch(v.line(sel))
	col := len(m[1]) + 2 // "❯ " takes two columns
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
		o := Option{Label: label, Selected: i == sel}
		// Up to 2.1.300 the dialogs number their options ("1. Yes").
		if d := reDialogDigit.FindStringSubmatch(label); d != nil {
			o.Digit, o.Label = int(d[1][0]-'0'), d[2]
		}
		opts = append(opts, o)
	}
	return opts, first
}
