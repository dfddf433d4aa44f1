// Package profiles owns agent profiles and modes: prompt templates per task
// type, tool allow/deny lists per mode, context injection (task, criteria,
// prior attempt, repository hints, other tasks) and skills with hot reload.
//
// It never spawns processes and never runs git: the repository's tracked
// paths come in as a list (Request.Tracked).
//
// # Profiles
//
// Built-in profiles default, implement, fix, refactor and test are chosen by
// task type (custom → default); an explicit profile name wins. A file
// <repo>/.familiar/profiles/<name>.md overrides ~/.config/familiar/profiles/
// ($XDG_CONFIG_HOME/familiar/profiles/), which overrides the built-ins:
//
//	---
//	name: docs                  # default: the file name
//	description: Write user documentation.
//	taskTypes: [custom]         # default: [name] when name is a task type
//	mode: auditor               # optional default mode
//	allowedTools: [Read]        # optional; merged into the mode's, disallowed wins
//	disallowedTools: [WebFetch] # optional
//	---
//	You are writing documentation.
//	{{template "context" .}}
//	{{template "contract" .}}
//
// The body is a text/template executed with Data: .Title, .Description,
// .AcceptanceCriteria, .Type, .Mode, .Notes, .HintFiles, .Outline,
// .PriorAttempt (.Summary, .BlockedReason, .LastError), .OtherTasks,
// .Skills (.Name, .Description, .Content), .Profile; the functions join,
// lower, upper and trim; and the named templates listed with partials in
// builtin.go. A body that never uses the task gets the context appended. A
// file that cannot be parsed, or whose template fails on sample data, is
// reported as a *FileError "path:line: message", and resolving to it fails
// rather than falling back to another profile.
//
// # Skills
//
// <repo>/.familiar/skills/<name>/SKILL.md overrides
// ~/.config/familiar/skills/<name>/SKILL.md; frontmatter name (must match the
// directory), description, mode, allowedTools (or Claude's allowed-tools);
// the body is the content injected into a task's prompt. WatchSkills keeps
// them current with fsnotify and reports each change through a callback.
package profiles
