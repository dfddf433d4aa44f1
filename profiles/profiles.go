package profiles

import (
	"fmt"
	"strings"
	"sync"
)

// Context is what a prompt template can use about the task at hand.
type Context struct {
	Title              string
	Description        string
	AcceptanceCriteria []string
	Type               string
	Mode               string
	Notes              string   // hints.notes from the caller
	HintFiles          []string // files the caller or familiar thinks are relevant
	PriorAttempt       *Attempt // set on retry
	OtherTasks         []string // titles of other active tasks in the repository
}

// TitleIsFirstLine reports whether the title is the description's first
// line (or its start, cut with "…"), as when a client names a task after the
// first line of what the person typed (familiar acp): the task template then
// gives the description alone, so that the model reads that line once.
func (c Context) TitleIsFirstLine() bool {
	title := strings.TrimSpace(c.Title)
	first, _, _ := strings.Cut(strings.TrimSpace(c.Description), "\n")
	first = strings.TrimSpace(first)
	if cut, ok := strings.CutSuffix(title, "…"); ok {
		return cut != "" && strings.HasPrefix(first, cut)
	}
	return title != "" && first == title
}

// Attempt summarises a previous attempt at the same task.
type Attempt struct {
	Summary       string
	BlockedReason string
	LastError     string
}

// Data is what a profile's template is executed with: the task's Context
// (with HintFiles holding the caller's files and the derived ones, and Mode
// the effective mode), the profile's name, the directory outline and the
// task's skills.
type Data struct {
	Context
	Profile string
	Outline []string
	Skills  []Skill
}

// Prompt is what the agent is started with.
type Prompt struct {
	Text               string // the first user message
	AppendSystemPrompt string // familiar's standing instructions (--append-system-prompt)
}

// Guidance is appended to every agent's system prompt: how to behave when a
// tool call is denied, and the closing contract familiar reads. The
// orchestrator looks for a line starting with exactly "BLOCKED:".
const Guidance = `You are working for familiar, which runs you in your own git worktree on a task for a developer.
When a tool call is denied, note the reason you were given, try an allowed alternative that reaches the same goal, and ask the person only when there is none; do not retry the denied call unchanged.
When you have finished, end with a short summary of what you changed (one paragraph).
If you cannot finish, end with a line starting "BLOCKED:" followed by the reason.`

// Request is everything needed to start (or restart) one task's agent.
type Request struct {
	Context // Mode "" = the profile's mode, else executor

	Profile        string   // the task's profile; "" = chosen by Context.Type
	PromptOverride string   // replaces the profile's template (plain text, not a template); the task context still follows
	Think          bool     // the think directive
	Skills         []Skill  // the task's skills (Skills.Resolve)
	Tracked        []string // the worktree's tracked paths (git ls-files), for derived hints; nil = none
	TestCommands   []string // commands an auditor may run; nil = DefaultTestCommands
}

// Spec is how to start a task's agent.
type Spec struct {
	Profile string // the profile used (to record on the task)
	Mode    string // the effective mode (to record on the task)
	Prompt  Prompt // Text and the full AppendSystemPrompt
	Flags   Flags  // permission mode, tool rules, extra args
	// Network is the profile's network allow-list for the sandbox; empty
	// is open.
	Network []string
}

// Build resolves the request's profile and renders its prompt, with the
// flags of its mode. Errors: ErrNotFound for an unknown profile, a
// *FileError ("path:line: message") for a broken profile file, ErrInvalid
// for a bad mode or test command or a prompt too long for the command line.
func (s *Set) Build(r Request) (Spec, error) {
	p, err := s.Resolve(r.Profile, r.Type)
	if err != nil {
		return Spec{}, err
	}
	mode := r.Mode
	if mode == "" {
		mode = p.Mode
	}
	if mode == "" {
		mode = ModeExecutor
	}
	flags, err := ModeFlags(mode, r.TestCommands)
	if err != nil {
		return Spec{}, err
	}
	flags = flags.Merge(p.AllowedTools, p.DisallowedTools)
	for _, sk := range r.Skills {
		flags = flags.Merge(sk.AllowedTools, nil)
	}
	if r.Think {
		flags = flags.WithThink()
	}
	h := Hints(r.HintFiles, r.Title, r.Description, r.Tracked)
	d := Data{Context: r.Context, Profile: p.Name, Outline: h.Outline, Skills: r.Skills}
	d.Mode, d.HintFiles = mode, h.Files
	text, err := p.render(d, r.PromptOverride)
	if err != nil {
		return Spec{}, err
	}
	return Spec{
		Profile: p.Name,
		Mode:    mode,
		Prompt:  Prompt{Text: text, AppendSystemPrompt: joinParagraphs(Guidance, flags.SystemPrompt)},
		Flags:   flags,
		Network: p.Network,
	}, nil
}

var builtinSet = sync.OnceValue(func() *Set { return Load(Dirs{}) })

// Builtin returns the built-in profiles alone.
func Builtin() *Set { return builtinSet() }

// Build renders the prompt for a task from the built-in profile for its type.
// override, when not empty, replaces the template's instructions, but the
// task context is still included. Kept for callers that do not load
// workspace profiles; Set.Build is the full form.
func Build(c Context, override string) (Prompt, error) {
	spec, err := Builtin().Build(Request{Context: c, PromptOverride: override})
	if err != nil {
		return Prompt{}, fmt.Errorf("render prompt: %w", err)
	}
	return spec.Prompt, nil
}
