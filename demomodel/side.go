package demomodel

import (
	"encoding/json"
	"strings"
)

// SideKind names an auxiliary call of the CLI, one that is not a turn of the
// conversation. What each looks like was read from the traffic of the real
// CLI 2.1.330 (testdata/requests/) and its bundled source; see SideKind.
type SideKind string

const (
	// SideNone is a turn of the main conversation (or of a subagent's).
	SideNone SideKind = ""
	// SideQuota is the quota probe: max_tokens 1, one user message "quota".
	SideQuota SideKind = "quota"
	// SideTitle is session title generation: a one-shot helper whose
	// structured output has a "title" field. The TUI sends it after each
	// prompt unless non-essential traffic is disabled.
	SideTitle SideKind = "title"
	// SideCompact is conversation compaction (/compact or automatic): the
	// whole conversation plus a last user message asking for a summary.
	SideCompact SideKind = "compact"
	// SideHelper is any other one-shot helper (tool-use summaries, prompt
	// suggestions, away summaries, ...): no tools, no thinking, a single
	// user message and no system-role entry.
	SideHelper SideKind = "helper"
)

// compactMarker starts the summary instructions of a compaction request,
// in both its full and partial forms.
const compactMarker = "Your task is to create a detailed summary of"

// SideKind classifies the request. Main-conversation requests of the CLI
// always carry a thinking config and a system-role "# Environment" entry
// (even with --tools "" they do), which its one-shot helpers never do.
func (r Request) SideKind() SideKind {
	if r.MaxTokens == 1 {
		return SideQuota
	}
	if last := r.lastUser(); last != nil && strings.Contains(last.allText(), compactMarker) {
		return SideCompact
	}
	if len(r.OutputFormat) > 0 && outputHasProperty(r.OutputFormat, "title") {
		return SideTitle
	}
	if len(r.Tools) == 0 && (r.Thinking == "" || r.Thinking == "disabled") && !r.hasSystemEntry() {
		return SideHelper
	}
	return SideNone
}

// IsSideRequest reports whether the request is one of the CLI's auxiliary
// calls (quota probe, title generation, compaction, other one-shot helpers)
// rather than a turn of the conversation.
func (r Request) IsSideRequest() bool { return r.SideKind() != SideNone }

// SideReply is a harmless answer of the shape each side request expects:
// JSON for a title, an <analysis>/<summary> pair for compaction, and a
// short text otherwise.
func SideReply(req Request) Reply {
	switch req.SideKind() {
	case SideTitle:
		return Reply{Text: `{"title":"` + SideText + `"}`}
	case SideCompact:
		return Reply{Text: "<analysis>Fake analysis.</analysis>\n<summary>" + CompactSummary + "</summary>"}
	default:
		return Reply{Text: SideText}
	}
}

// CompactSummary is the summary SideReply gives a compaction request.
const CompactSummary = "Fake summary of the conversation so far."

func (r Request) lastUser() *Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return &r.Messages[i]
		}
	}
	return nil
}

func (r Request) hasSystemEntry() bool {
	for _, m := range r.Messages {
		if m.Role == "system" {
			return true
		}
	}
	return false
}

// allText joins every text block, reminders included.
func (m Message) allText() string {
	var parts []string
	for _, b := range m.Content {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// outputHasProperty reports whether a json_schema output format declares
// the property name.
func outputHasProperty(format json.RawMessage, name string) bool {
	var f struct {
		Schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"schema"`
	}
	if json.Unmarshal(format, &f) != nil {
		return false
	}
	_, ok := f.Schema.Properties[name]
	return ok
}
