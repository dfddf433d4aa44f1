package agent

import (
	"encoding/json"
	"fmt"

	"github.com/familiar-dev/familiar/policy"
)

// The decision payloads are the same in the PermissionRequest hook output and
// the stream-json control response (CLAUDE-CLI.md §4.3, Part B §4).

// permissionDecision builds the decision for an answered permission question.
// An allow-always grants exactly the rule its option names, for this session
// (familiar re-applies grants to later sessions of the task through its
// policy). The CLI's own permission_suggestions are not used: they can
// switch the session's mode (on "touch a.txt" it suggests accept-edits), which
// only OptionAcceptEdits does.
func permissionDecision(p *pendingQuestion, a Answer, suggestions json.RawMessage) map[string]any {
	if a.OptionID == OptionDeny {
		msg := a.Text
		if msg == "" {
			msg = "The person reviewing this tool call denied it."
		}
		return map[string]any{"behavior": "deny", "message": msg}
	}
	d := map[string]any{"behavior": "allow"}
	if len(a.UpdatedInput) > 0 {
		d["updatedInput"] = a.UpdatedInput
	} else if len(p.input) > 0 {
		d["updatedInput"] = p.input
	}
	switch a.OptionID {
	case OptionAllowAlways, OptionAllowAlwaysExact:
		// An option without a rule said it remembers nothing. A rule
		// claude's matcher reads differently (Bash(git diff:*) would let
		// claude run git diff --output=f unasked) stays familiar's: claude
		// asks again and familiar's policy, holding the grant, decides.
		if rule := optionRule(p.q, a.OptionID); rule != "" && policy.ClaudeAgrees(rule) {
			d["updatedPermissions"] = []map[string]any{addRule(rule)}
		}
	case OptionAcceptEdits:
		d["updatedPermissions"] = []map[string]any{{"type": "setMode", "mode": "acceptEdits", "destination": "session"}}
	}
	return d
}

func optionRule(q Question, id string) string {
	for _, o := range q.Options {
		if o.ID == id {
			return o.Rule
		}
	}
	return ""
}

// addRule is the CLI's permission update that adds one allow rule for the
// session. A localSettings destination would write
// .claude/settings.local.json into the worktree, where it would end up in the
// task's commits.
func addRule(rule string) map[string]any {
	entry := map[string]any{"toolName": rule}
	if r, err := policy.ParseRule(rule); err == nil {
		entry = map[string]any{"toolName": r.Tool}
		if r.Content != "" {
			entry["ruleContent"] = r.Content
		}
	}
	return map[string]any{"type": "addRules", "rules": []any{entry}, "behavior": "allow", "destination": "session"}
}

// permissionText is the one-line description of a tool call shown to a person.
func permissionText(tool string, input json.RawMessage) string {
	a := toolActivity(tool, input)
	switch {
	case tool == "Bash" && a.Detail != "":
		return fmt.Sprintf("Run command: %s", a.Detail)
	case a.State == ActivityWriting && a.Detail != "":
		return fmt.Sprintf("%s %s", tool, a.Detail)
	}
	return fmt.Sprintf("Use tool %s", tool)
}
