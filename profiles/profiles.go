package profiles

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
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

// Attempt summarises a previous attempt at the same task.
type Attempt struct {
	Summary       string
	BlockedReason string
	LastError     string
}

// Prompt is what the agent is started with.
type Prompt struct {
	Text               string // the first user message
	AppendSystemPrompt string // familiar's standing instructions
}

// Guidance is appended to every agent's system prompt: how to behave when a
// tool call is denied, and the closing contract familiar reads.
const Guidance = `You are working for familiar, which runs you in your own git worktree on a task for a developer.
When a tool call is denied, note the reason, try an allowed alternative, and ask the person only when there is none.
When you have finished, end with a short summary of what you changed (one paragraph).
If you cannot finish, end with a line starting "BLOCKED:" followed by the reason.`

// defaultTemplate is the built-in profile "default".
var defaultTemplate = template.Must(template.New("default").Parse(`# Task: {{.Title}}
{{if .Description}}
{{.Description}}
{{end}}{{if .AcceptanceCriteria}}
## Acceptance criteria
{{range .AcceptanceCriteria}}- {{.}}
{{end}}{{end}}{{if .HintFiles}}
## Relevant files
{{range .HintFiles}}- {{.}}
{{end}}{{end}}{{if .Notes}}
## Notes
{{.Notes}}
{{end}}{{if .PriorAttempt}}
## Previous attempt
{{if .PriorAttempt.Summary}}Summary: {{.PriorAttempt.Summary}}
{{end}}{{if .PriorAttempt.BlockedReason}}It was blocked: {{.PriorAttempt.BlockedReason}}
{{end}}{{if .PriorAttempt.LastError}}Last error: {{.PriorAttempt.LastError}}
{{end}}{{end}}{{if .OtherTasks}}
## Other agents are working on
{{range .OtherTasks}}- {{.}}
{{end}}Stay within your task; do not change what they own.
{{end}}
When you are done, reply with a short summary of what you changed.`))

// Build renders the prompt for a task. override, when not empty, replaces the
// template's instructions, but the task context is still included.
func Build(c Context, override string) (Prompt, error) {
	var b bytes.Buffer
	if err := defaultTemplate.Execute(&b, c); err != nil {
		return Prompt{}, fmt.Errorf("render prompt: %w", err)
	}
	text := b.String()
	if override != "" {
		text = override + "\n\n" + text
	}
	return Prompt{Text: strings.TrimSpace(text), AppendSystemPrompt: Guidance}, nil
}
