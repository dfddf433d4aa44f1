package profiles

// Task types, as PROTOCOL.md names them.
const (
	TypeImplement = "implement"
	TypeFix       = "fix"
	TypeRefactor  = "refactor"
	TypeTest      = "test"
	TypeCustom    = "custom"
)

// TaskTypes lists the valid task types.
var TaskTypes = []string{TypeImplement, TypeFix, TypeRefactor, TypeTest, TypeCustom}

// DefaultProfile is the profile used when no other claims a task's type.
const DefaultProfile = "default"

// partials are the named templates every profile, built-in or not, can use:
//
//	{{template "context" .}}   everything below except the contract
//	{{template "task" .}}      title, description, acceptance criteria
//	{{template "mode" .}}      what the mode allows (architect, auditor)
//	{{template "notes" .}}     the person's notes (hints.notes)
//	{{template "hints" .}}     relevant files and the directory outline
//	{{template "prior" .}}     the previous attempt, on retry
//	{{template "others" .}}    other active tasks in the repository
//	{{template "skills" .}}    the task's skills
//	{{template "contract" .}}  how to report done or blocked
//
// Blank lines are collapsed after rendering, so templates need not fight
// text/template's whitespace rules.
const partials = `
{{- define "task"}}
{{if .TitleIsFirstLine}}# Task{{else}}# Task: {{.Title}}{{end}}
{{with .Description}}
{{.}}
{{end}}
{{with .AcceptanceCriteria}}
## Acceptance criteria
{{range .}}- {{.}}
{{end}}{{end}}
{{end}}

{{- define "mode"}}
{{if eq .Mode "architect"}}
## Mode: architect
Plan only: do not change files or run commands. Where the steps below say to change something, describe the change in your plan instead. Your final message is the plan.
{{else if eq .Mode "auditor"}}
## Mode: auditor
Review and verify only: do not change files. Read the code, run the tests you are allowed to run, and report what you find.
{{end}}
{{end}}

{{- define "notes"}}
{{with .Notes}}
## Notes from the person who asked
{{.}}
{{end}}
{{end}}

{{- define "hints"}}
{{if or .HintFiles .Outline}}
## Where to look
{{with .HintFiles}}Files that are likely relevant:
{{range .}}- {{.}}
{{end}}{{end}}
{{with .Outline}}
Repository layout:
` + "```" + `
{{range .}}{{.}}
{{end}}` + "```" + `
{{end}}
{{end}}
{{end}}

{{- define "prior"}}
{{with .PriorAttempt}}
## Previous attempt
This task was tried before and did not finish. Learn from it; do not repeat what failed.
{{with .Summary}}What it did: {{.}}
{{end}}{{with .BlockedReason}}Why it stopped: {{.}}
{{end}}{{with .LastError}}Last error: {{.}}
{{end}}
{{end}}
{{end}}

{{- define "others"}}
{{with .OtherTasks}}
## Other agents working in this repository
{{range .}}- {{.}}
{{end}}
Each works in its own worktree. Stay within your task and avoid changing what they are likely to change.
{{end}}
{{end}}

{{- define "skills"}}
{{range .Skills}}
## Skill: {{.Name}}
{{with .Description}}{{.}}
{{end}}
{{.Content}}
{{end}}
{{end}}

{{- define "context"}}
{{template "task" .}}
{{template "mode" .}}
{{template "notes" .}}
{{template "hints" .}}
{{template "prior" .}}
{{template "others" .}}
{{template "skills" .}}
{{end}}

{{- define "contract"}}
## When you finish
End your final message in one of two ways:
- Done: a short summary, one paragraph, of what you changed and how you checked it.
- Not possible: a line of its own that starts with "BLOCKED:" and gives the reason, followed by what a person would have to do so that you can go on.
{{end}}
`

// builtins are the built-in profiles, by name.
var builtins = []struct {
	name, description string
	taskTypes         []string
	body              string
}{
	{DefaultProfile, "General work on a task; used when no other profile claims the task's type.", []string{TypeCustom}, `
You are working on a task in this repository.
{{template "context" .}}
## How to work
1. Read the code involved before you change it, and follow the conventions you find (naming, error handling, tests).
2. Keep the change focused on this task: no unrelated refactoring or reformatting.
3. Check your work before you finish: build it and run the relevant tests.
{{template "contract" .}}`},

	{TypeImplement, "Implement a feature or change: code, tests and docs, following the repository's conventions.", []string{TypeImplement}, `
You are implementing a change in this repository.
{{template "context" .}}
## How to work
1. Read the code around the change first and follow its conventions (naming, structure, error handling, tests).
2. Make the change completely: the code, tests for the new behaviour, and docs or comments where users of the code need them.
3. Build and run the relevant tests; fix what fails.
4. Keep the change focused on this task: no unrelated refactoring or reformatting.
{{template "contract" .}}`},

	{TypeFix, "Fix a bug: reproduce it, find the root cause, make a minimal fix with a regression test.", []string{TypeFix}, `
You are fixing a bug in this repository.
{{template "context" .}}
## How to work
1. Reproduce the problem first, ideally with a test that fails now.
2. Find the root cause before you change code; fix the cause, not the symptom.
3. Keep the fix minimal, and keep the regression test: it must pass after the fix.
4. Run the tests around the code you touched.
{{template "contract" .}}`},

	{TypeRefactor, "Refactor: improve the structure of code without changing its behaviour.", []string{TypeRefactor}, `
You are refactoring code in this repository: improve its structure without changing its behaviour.
{{template "context" .}}
## How to work
1. Run the tests before you start, so you know the baseline.
2. Change in small steps and keep the build and the tests passing after each.
3. Do not change behaviour, public interfaces or output unless the task says so; add no features.
4. Run the relevant tests at the end and name anything whose behaviour did change.
{{template "contract" .}}`},

	{TypeTest, "Write or improve tests: behaviour through public interfaces, edge cases, deterministic.", []string{TypeTest}, `
You are writing tests for this repository.
{{template "context" .}}
## How to work
1. Test behaviour through public interfaces: the cases the task names, edge cases and error paths.
2. Keep the tests deterministic: no sleeping to wait for something, no network, no dependence on order or the time of day.
3. Do not change production code to make a test pass. If a test reveals a bug, leave that test skipped with the reason and describe the bug in your summary.
4. Run the tests you wrote and make sure they pass.
{{template "contract" .}}`},
}
