package agent

import (
	"encoding/json"
	"fmt"
)

// The decision payloads are the same in the PermissionRequest hook output and
// the stream-json control response (CLAUDE-CLI.md §4.3, Part B §4).

// permissionDecision builds the decision for an answered permission question.
// suggestions are the CLI's permission_suggestions for the call.
func permissionDecision(p *pendingQuestion, a Answer, suggestions json.RawMessage) map[string]any {
	switch a.OptionID {
	case OptionDeny:
		msg := a.Text
		if msg == "" {
			msg = "The person reviewing this tool call denied it."
		}
		return map[string]any{"behavior": "deny", "message": msg}
	case OptionAllowAlways:
		d := map[string]any{"behavior": "allow", "updatedPermissions": alwaysRules(p.tool, p.input, suggestions)}
		if len(a.UpdatedInput) > 0 {
			d["updatedInput"] = a.UpdatedInput
		} else if len(p.input) > 0 {
			d["updatedInput"] = p.input
		}
		return d
	default: // allow, or text alone (a modified input with a note)
		d := map[string]any{"behavior": "allow"}
		if len(a.UpdatedInput) > 0 {
			d["updatedInput"] = a.UpdatedInput
		} else if len(p.input) > 0 {
			d["updatedInput"] = p.input
		}
		return d
	}
}

// alwaysRules is what "allow always" grants: the CLI's own suggestions plus a
// rule for exactly this call, all with destination "session". A localSettings
// destination would write .claude/settings.local.json into the worktree, where
// it would end up in the task's commits.
func alwaysRules(tool string, input, suggestions json.RawMessage) []map[string]any {
	var out []map[string]any
	var sugg []map[string]any
	_ = json.Unmarshal(suggestions, &sugg)
	for _, s := range sugg {
		if _, ok := s["destination"]; ok {
			s["destination"] = "session"
		}
		out = append(out, s)
	}
	rule := map[string]any{"toolName": tool}
	if content := ruleContent(tool, input); content != "" {
		rule["ruleContent"] = content
	}
	out = append(out, map[string]any{
		"type": "addRules", "rules": []any{rule}, "behavior": "allow", "destination": "session",
	})
	return out
}

// ruleContent is the part of a permission rule in parentheses that matches
// exactly this call: the command for Bash, the path for file tools, nothing
// (the whole tool) otherwise.
func ruleContent(tool string, input json.RawMessage) string {
	var in struct {
		Command  string `json:"command"`
		FilePath string `json:"file_path"`
	}
	_ = json.Unmarshal(input, &in)
	switch tool {
	case "Bash":
		return in.Command
	case "Write", "Edit", "MultiEdit", "Read":
		return in.FilePath
	}
	return ""
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
