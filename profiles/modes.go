package profiles

import (
	"fmt"
	"slices"
	"strings"
)

// The modes a task's agent runs in. Each is enforced by claude's own flags
// (--permission-mode, --allowedTools, --disallowedTools), not by the prompt
// alone.
const (
	ModeExecutor  = "executor"
	ModeArchitect = "architect"
	ModeAuditor   = "auditor"
)

// Modes lists the valid modes.
var Modes = []string{ModeExecutor, ModeArchitect, ModeAuditor}

// DefaultTestCommands are the commands an auditor may run when the caller
// names none; each becomes the rule "Bash(<command>:*)".
var DefaultTestCommands = []string{"go test", "npm test", "pytest", "cargo test"}

// editTools are the tools that change files.
var editTools = []string{"Write", "Edit", "MultiEdit", "NotebookEdit"}

// Flags is how a mode reaches claude.
type Flags struct {
	PermissionMode  string   // --permission-mode
	AllowedTools    []string // --allowedTools (rules run without asking)
	DisallowedTools []string // --disallowedTools (tools removed from the session)
	// SystemPrompt is the mode's (and directives') addition to the system
	// prompt. Spec.Prompt.AppendSystemPrompt already includes it.
	SystemPrompt string
	ExtraArgs    []string // further flags, e.g. --effort high for the think directive
}

const (
	architectPrompt = `familiar runs you in architect mode: plan only. Do not create, change or delete files and do not run commands; the tools for that are disabled for this session. Read and search the code, then write the plan as your final message (not through ExitPlanMode): the files to change, what to change in each and why, the order of the steps, the risks, and how to test the result.`
	executorPrompt  = `familiar runs you in executor mode: you may read, edit and run commands to complete the task, inside this worktree only.`
	auditorPrompt   = `familiar runs you in auditor mode: review and verify, do not change. You may read and search files%s; writing files is disabled and other commands are refused. Report what you found: each problem with its file:line, the test results, and what you recommend.`

	// thinkPrompt goes with --effort high for the think directive.
	thinkPrompt = `Think step by step before you act: restate the problem, list the options you see, choose one and say why, then carry it out and check the result.`
)

// ModeFlags returns the flags that enforce mode. testCommands are the
// commands an auditor may run ("go test", or a full rule "Bash(make check:*)");
// nil means DefaultTestCommands. The empty mode is executor.
//
// architect also removes ExitPlanMode: the plan is the agent's final message,
// which familiar keeps as the task's summary, rather than a dialog that would
// hand control back to a session that cannot edit anyway.
//
// auditor runs in claude's dontAsk mode: the allow list is the whole tool set
// and anything else is denied without asking, so nobody can be talked into
// approving a write in a review.
func ModeFlags(mode string, testCommands []string) (Flags, error) {
	switch mode {
	case "", ModeExecutor:
		return Flags{PermissionMode: "default", SystemPrompt: executorPrompt}, nil
	case ModeArchitect:
		return Flags{
			PermissionMode:  "plan",
			DisallowedTools: append(slices.Clone(editTools), "Bash", "ExitPlanMode"),
			SystemPrompt:    architectPrompt,
		}, nil
	case ModeAuditor:
		if testCommands == nil {
			testCommands = DefaultTestCommands
		}
		allowed := []string{"Read", "Grep", "Glob"}
		var names []string
		for _, c := range testCommands {
			rule, err := testRule(c)
			if err != nil {
				return Flags{}, err
			}
			allowed = append(allowed, rule)
			names = append(names, "`"+strings.TrimSpace(c)+"`")
		}
		list := ""
		if len(names) > 0 {
			list = " and run the test commands " + strings.Join(names, ", ")
		}
		return Flags{
			PermissionMode:  "dontAsk",
			AllowedTools:    allowed,
			DisallowedTools: slices.Clone(editTools),
			SystemPrompt:    fmt.Sprintf(auditorPrompt, list),
		}, nil
	}
	return Flags{}, fmt.Errorf("%w: unknown mode %q (want %s)", ErrInvalid, mode, strings.Join(Modes, ", "))
}

// testRule turns "go test" into "Bash(go test:*)"; a full Bash rule is kept.
func testRule(c string) (string, error) {
	c = strings.TrimSpace(c)
	if strings.HasPrefix(c, "Bash(") && strings.HasSuffix(c, ")") {
		if err := checkToolRule(c); err != nil {
			return "", err
		}
		return c, nil
	}
	if c == "" || strings.ContainsAny(c, "(),\n\r") {
		return "", fmt.Errorf("%w: test command %q must be a plain command such as \"go test\"", ErrInvalid, c)
	}
	return "Bash(" + c + ":*)", nil
}

// checkToolRule accepts claude permission rules: "Read", "mcp__srv__tool",
// "Bash(go test:*)". Commas would split the rule when the list is joined for
// the command line.
func checkToolRule(r string) error {
	name, arg, hasArg := strings.Cut(r, "(")
	ok := name != "" && !strings.ContainsAny(r, ",\n\r")
	for i, c := range name {
		isLetter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_'
		if !isLetter && (i == 0 || !(c >= '0' && c <= '9' || c == '-')) {
			ok = false
		}
	}
	if hasArg && (!strings.HasSuffix(arg, ")") || len(arg) < 2) {
		ok = false
	}
	if !ok {
		return fmt.Errorf("%w: %q is not a tool rule (want e.g. Read or Bash(go test:*))", ErrInvalid, r)
	}
	return nil
}

// Merge adds tool rules from a profile or skill. A disallowed rule wins: an
// allowed rule is dropped when the same rule, or its whole tool, is
// disallowed ("Bash" disallowed drops "Bash(make:*)").
func (f Flags) Merge(allowed, disallowed []string) Flags {
	f.DisallowedTools = union(f.DisallowedTools, disallowed)
	var keep []string
	for _, r := range union(f.AllowedTools, allowed) {
		tool, _, _ := strings.Cut(r, "(")
		if slices.Contains(f.DisallowedTools, r) || slices.Contains(f.DisallowedTools, tool) {
			continue
		}
		keep = append(keep, r)
	}
	f.AllowedTools = keep
	return f
}

// WithThink applies the think directive: higher effort (claude's
// "--effort high") and a step-by-step instruction in the system prompt.
func (f Flags) WithThink() Flags {
	f.ExtraArgs = append(slices.Clone(f.ExtraArgs), "--effort", "high")
	f.SystemPrompt = joinParagraphs(f.SystemPrompt, thinkPrompt)
	return f
}

// ModeNotice is the message to send when a running task's mode changes.
// claude records the system prompt of a conversation once and resends that
// record on --resume (see --system-prompt-snapshot), so a new mode's
// instructions reach the agent only as a message; the new flags enforce it.
func ModeNotice(mode string, testCommands []string) (string, error) {
	f, err := ModeFlags(mode, testCommands)
	if err != nil {
		return "", err
	}
	if mode == "" {
		mode = ModeExecutor
	}
	return fmt.Sprintf("familiar switched this task to %s mode. %s", mode, f.SystemPrompt), nil
}

func union(a, b []string) []string {
	var out []string
	for _, r := range slices.Concat(a, b) {
		if r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func joinParagraphs(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n\n")
}
