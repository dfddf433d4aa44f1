package demomodel

import (
	"fmt"
	"regexp"
	"strings"
)

// Demo is the script of the scripted demo model. A prompt carrying @@
// directives is answered as they say (the built-in demo tasks use them);
// any other task gets a generic, clearly labelled answer: it writes a short
// note about the task into the worktree, then reports what it did. That is
// enough to see a task go through familiar end to end — permission prompt,
// commit, report — with no credentials.
func Demo() Script {
	scripted := PromptScript()
	return func(req Request) Reply {
		if req.IsSideRequest() || len(ParseDirectives(firstPrompt(req))) > 0 {
			return scripted(req)
		}
		title := taskTitle(firstPrompt(req))
		if len(req.ToolResults()) == 0 {
			return Reply{
				Text: "(scripted demo model) I will write a note about this task.",
				ToolUses: []ToolUse{{Name: "Write", Input: map[string]string{
					"file_path": "familiar-demo/" + slug(title) + ".md",
					"content":   fmt.Sprintf("# %s\n\nWritten by familiar's scripted demo model, not by Claude.\n", title),
				}}},
			}
		}
		return Reply{Text: fmt.Sprintf("(scripted demo model) Wrote familiar-demo/%s.md for %q.", slug(title), title)}
	}
}

func firstPrompt(req Request) string {
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "text" && strings.Contains(b.Text, "# Task:") {
				return b.Text
			}
		}
	}
	return req.LastUserText()
}

var titleRE = regexp.MustCompile(`(?m)^# Task: (.+)$`)

func taskTitle(prompt string) string {
	if m := titleRE.FindStringSubmatch(prompt); m != nil {
		return strings.TrimSpace(m[1])
	}
	return "task"
}

func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		return "task"
	}
	return out
}
