package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/familiar-dev/familiar/protocol"
)

// SkillCommand says which skill or slash command a shell command comes from
// (PreSkillShellCommand, CLI 2.1.332): shown with the question, audited with
// the decision. InvokedBy is who loaded it: "user" (typed, or sent by
// familiar), "claude" (the Skill tool) or "other" (a subagent's preload, …).
type SkillCommand = protocol.SkillCommand

// skillShellPayload is the PreSkillShellCommand hook's input beyond the
// common fields (CLAUDE-CLI.md Part B §3.1).
type skillShellPayload struct {
	ToolName  string `json:"tool_name"` // "Bash" or "PowerShell"
	ToolInput struct {
		Command string `json:"command"`
	} `json:"tool_input"`
	ToolUseID     string `json:"tool_use_id"` // names no tool call in the transcript
	CommandName   string `json:"command_name"`
	CommandSource string `json:"command_source"`
	InvokedBy     string `json:"invoked_by"`
}

// skillShellCommand answers PreSkillShellCommand as a tool call of the same
// shell: the same question, so the same policy, grants, approvals and audit.
// The CLI cannot wait for an "ask" here (it refuses the command) and applies
// no updatedInput or updatedPermissions, so the hook itself is held until
// the person answers, and answers allow or deny only. An allow-always is
// remembered by familiar's grants (its rule is the command's, as for Bash);
// claude is told only "allow".
func (s *Session) skillShellCommand(ctx context.Context, raw json.RawMessage) any {
	var p skillShellPayload
	if err := json.Unmarshal(raw, &p); err != nil || p.ToolInput.Command == "" {
		return skillShellAnswer("deny", "familiar could not read this shell command of a skill, so it was not run")
	}
	tool := p.ToolName
	if tool == "" {
		tool = "Bash"
	}
	input, _ := json.Marshal(map[string]string{"command": p.ToolInput.Command})
	skill := &SkillCommand{Name: p.CommandName, Source: p.CommandSource, InvokedBy: p.InvokedBy}
	if skill.InvokedBy == "" {
		skill.InvokedBy = "other"
	}
	q := &pendingQuestion{
		q: Question{
			Kind: KindPermission, Text: skillShellText(tool, p.ToolInput.Command, skill),
			Tool: tool, Input: input, Options: s.permissionOptions(tool, input), AllowText: true, Skill: skill,
		},
		tool: tool, input: input, source: "hook",
	}
	a, ok := s.ask(ctx, q)
	if !ok {
		// The CLI gave up on the hook or the session ended: nothing runs.
		return nil
	}
	if a.OptionID == OptionDeny {
		msg := a.Text
		if msg == "" {
			msg = "The person reviewing this command denied it."
		}
		return skillShellAnswer("deny", msg)
	}
	if len(a.UpdatedInput) > 0 && !jsonEqual(a.UpdatedInput, input) {
		// claude runs a skill's command as written or not at all.
		return skillShellAnswer("deny", "the command was changed in review, and a skill's shell command can only run as written")
	}
	return skillShellAnswer("allow", "")
}

func skillShellAnswer(decision, reason string) map[string]any {
	out := map[string]any{"hookEventName": "PreSkillShellCommand", "permissionDecision": decision}
	if reason != "" {
		out["permissionDecisionReason"] = reason
	}
	return map[string]any{"hookSpecificOutput": out}
}

// skillShellText is the question's line: the command, its skill and who
// started it.
func skillShellText(tool, command string, skill *SkillCommand) string {
	who := map[string]string{"user": "you", "claude": "claude"}[skill.InvokedBy]
	if who == "" {
		who = "claude's session"
	}
	name := skill.Name
	if name == "" {
		name = "a skill"
	} else {
		name = "/" + strings.TrimPrefix(name, "/")
	}
	verb := "Run command"
	if tool != "Bash" {
		verb = "Run " + tool + " command"
	}
	return fmt.Sprintf("%s: %s (from %s, started by %s)", verb, firstLine(command), name, who)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// skillUseNotice is said once per session when claude uses a skill on a CLI
// without PreSkillShellCommand: its `!` shell commands run under the
// skill's own allowed-tools, which familiar neither sees nor audits.
func skillUseNotice(version, skill string) string {
	if skill == "" {
		skill = "a skill"
	} else {
		skill = "skill /" + strings.TrimPrefix(skill, "/")
	}
	return fmt.Sprintf("%s: claude %s runs the shell commands written in a skill (its `!` lines) under the skill's own allowed-tools, "+
		"without familiar's approvals, policy or audit; claude %s or newer asks through familiar", skill, version, SkillShellHookVersion)
}

// streamHook serves the stream driver's one hook, PreSkillShellCommand.
func (s *Session) streamHook(ctx context.Context, event string, raw json.RawMessage) any {
	s.watchdog.Kick()
	if event == "PreSkillShellCommand" {
		return s.skillShellCommand(ctx, raw)
	}
	return nil
}

// skillUsed tells the person, once per session, that a skill's shell
// commands escape familiar on a claude without PreSkillShellCommand.
func (s *Session) skillUsed(tool string, input json.RawMessage) {
	if tool != "Skill" || HasSkillShellHook(s.opts.CLI.Version) {
		return
	}
	var in struct {
		Skill   string `json:"skill"`
		Command string `json:"command"`
	}
	_ = json.Unmarshal(input, &in)
	if in.Skill == "" {
		in.Skill = in.Command
	}
	s.mu.Lock()
	told := s.skillNoticeSaid
	s.skillNoticeSaid = true
	s.mu.Unlock()
	if !told {
		s.emit(Event{Kind: EventProblem, Problem: skillUseNotice(s.opts.CLI.Version, in.Skill)})
	}
}
