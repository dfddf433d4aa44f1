package agent

import (
	"regexp"
	"strings"
)

// Startup refusals: claude (2.1.331 and newer) exits at start, before any
// turn, for reasons a retry does not fix (CLAUDE-CLI.md §8.3). Each becomes
// a blocked task with its own reason and the fix in words.
const (
	// RefusalSideload: managed settings set disableSideloadFlags, and the
	// launch names MCP servers, plugins or agents of its own (familiar's
	// --mcp-config). A launch without them is not refused.
	RefusalSideload = "sideload_flags_disabled"
	// RefusalSessionHeld: the session is running in Claude Code's own
	// background daemon (claude --bg), which holds it.
	RefusalSessionHeld = "session_held_by_background"
)

// StartupRefusal is why claude refused to start, read from what it wrote.
type StartupRefusal struct {
	Reason  string `json:"reason"`  // RefusalSideload or RefusalSessionHeld
	Message string `json:"message"` // claude's own words, one line
}

// Fix is what the person can do about the refusal.
func (r StartupRefusal) Fix() string {
	switch r.Reason {
	case RefusalSideload:
		return "your organization's managed settings set disableSideloadFlags, which refuses a claude started with MCP servers, " +
			"plugins or agents of its own, as familiar starts it for this task: ask your administrator to remove disableSideloadFlags, " +
			"or give the task no MCP servers of its own (then familiar starts claude without them)"
	case RefusalSessionHeld:
		return "this claude session is running in Claude Code's own background agents (claude --bg): stop it there " +
			"(`claude agents` lists them, `claude stop <id>` stops one), then retry the task"
	}
	return ""
}

var ansiRE = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// startupRefusal reads a refusal from the last output of claude (its
// terminal, or its stdout and stderr), nil when it is none of those.
func startupRefusal(out string) *StartupRefusal {
	text := strings.Join(strings.Fields(ansiRE.ReplaceAllString(out, " ")), " ")
	var reason, key string
	switch {
	case strings.Contains(text, "disableSideloadFlags"):
		reason, key = RefusalSideload, "is disabled by your organization"
		if !strings.Contains(text, key) {
			key = "are disabled by your organization"
		}
	case strings.Contains(text, "is running in the background") &&
		(strings.Contains(text, "claude attach") || strings.Contains(text, "claude agents")):
		reason, key = RefusalSessionHeld, "is running in the background"
	default:
		return nil
	}
	return &StartupRefusal{Reason: reason, Message: refusalSentence(text, key)}
}

// refusalSentence is the part of text around key: from the start of the
// sentence that holds it, at most 600 bytes.
func refusalSentence(text, key string) string {
	i := strings.Index(text, key)
	if i < 0 {
		i = 0
	}
	// The sentence starts after the last full stop, at "Error:", or at the
	// flag claude names ("--mcp-config is disabled …"), whichever is last.
	start := 0
	if j := strings.LastIndex(text[:i], ". "); j >= 0 {
		start = j + 2
	}
	if j := strings.LastIndex(text[:i], "Error: "); j >= start {
		start = j
	}
	if j := strings.LastIndex(text[:i], " --"); j+1 > start {
		start = j + 1
	}
	msg := strings.TrimSpace(text[start:])
	if len(msg) > 600 {
		msg = msg[:600]
		for len(msg) > 0 && msg[len(msg)-1]&0xC0 == 0x80 {
			msg = msg[:len(msg)-1]
		}
		msg += "…"
	}
	return msg
}
