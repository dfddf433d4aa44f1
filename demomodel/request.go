package demomodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Request is one call the CLI made, decoded far enough for scripts and
// assertions. Raw keeps the whole body for anything not decoded here.
type Request struct {
	Raw       []byte
	Path      string // URL path, e.g. "/v1/messages"
	Model     string
	System    string   // text of the system blocks, joined by "\n"
	Tools     []string // names of the tools offered, in order
	Messages  []Message
	Stream    bool
	MaxTokens int
	// Thinking is the type of the thinking config ("adaptive", "enabled",
	// "disabled"); "" when the request has none, as the CLI's one-shot
	// helper calls do.
	Thinking string
	// OutputFormat is output_config.format (structured output), if set.
	OutputFormat json.RawMessage
	Header       http.Header
	At           time.Time // when the request arrived
}

// Message is one entry of the request's messages list. The CLI's list can
// contain a system-role entry (CLAUDE-CLI.md, top), so Role is not only
// "user" and "assistant".
type Message struct {
	Role    string
	Content []Block
}

// Block is one content block. Which fields are set depends on Type: "text"
// has Text; "tool_use" has ID, Name and Input; "tool_result" has ToolUseID,
// IsError and Content (its content flattened to text); "thinking" keeps its
// text in Text. Other types keep only Type.
type Block struct {
	Type      string
	Text      string
	ID        string
	Name      string
	Input     json.RawMessage
	ToolUseID string
	IsError   bool
	Content   string
}

// wireRequest is the subset of the Messages API request body that is decoded.
type wireRequest struct {
	Model     string          `json:"model"`
	System    json.RawMessage `json:"system"`
	Tools     []wireTool      `json:"tools"`
	Messages  []wireMessage   `json:"messages"`
	Stream    bool            `json:"stream"`
	MaxTokens int             `json:"max_tokens"`
	Thinking  struct {
		Type string `json:"type"`
	} `json:"thinking"`
	OutputConfig struct {
		Format json.RawMessage `json:"format"`
	} `json:"output_config"`
	OutputFormat json.RawMessage `json:"output_format"` // the older, top-level spelling
}

type wireTool struct {
	Name string `json:"name"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of blocks
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or a list of blocks
}

// ParseRequest decodes a Messages API request body. Header and At are left
// for the caller; Path is "/v1/messages".
func ParseRequest(body []byte) (Request, error) {
	r := Request{Raw: body, Path: messagesPath}
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return r, fmt.Errorf("parse messages request: %w", err)
	}
	r.Model = w.Model
	r.Stream = w.Stream
	r.MaxTokens = w.MaxTokens
	r.Thinking = w.Thinking.Type
	r.OutputFormat = w.OutputConfig.Format
	if len(r.OutputFormat) == 0 {
		r.OutputFormat = w.OutputFormat
	}
	sys, err := parseContent(w.System)
	if err != nil {
		return r, fmt.Errorf("parse messages request: system: %w", err)
	}
	var texts []string
	for _, b := range sys {
		if b.Text != "" {
			texts = append(texts, b.Text)
		}
	}
	r.System = strings.Join(texts, "\n")
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	for i, m := range w.Messages {
		content, err := parseContent(m.Content)
		if err != nil {
			return r, fmt.Errorf("parse messages request: message %d: %w", i, err)
		}
		r.Messages = append(r.Messages, Message{Role: m.Role, Content: content})
	}
	return r, nil
}

// parseContent decodes a content field, which the API allows to be a plain
// string (one text block) or a list of blocks.
func parseContent(raw json.RawMessage) ([]Block, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []Block{{Type: "text", Text: s}}, nil
	}
	var wire []wireBlock
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, err
	}
	out := make([]Block, 0, len(wire))
	for _, w := range wire {
		b := Block{Type: w.Type}
		switch w.Type {
		case "text":
			b.Text = w.Text
		case "thinking":
			b.Text = w.Thinking
		case "tool_use", "server_tool_use":
			b.ID, b.Name, b.Input = w.ID, w.Name, w.Input
		case "tool_result":
			b.ToolUseID, b.IsError = w.ToolUseID, w.IsError
			inner, err := parseContent(w.Content)
			if err != nil {
				return nil, fmt.Errorf("tool_result %s: %w", w.ToolUseID, err)
			}
			b.Content = flatten(inner)
		}
		out = append(out, b)
	}
	return out, nil
}

// flatten renders tool_result content as text; blocks without text (images,
// documents) become a "[type]" placeholder so a test can still see them.
func flatten(blocks []Block) string {
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

// isPrompt reports whether a user message carries something the user said,
// as opposed to only answering tool calls.
func (m Message) isPrompt() bool {
	if m.Role != "user" {
		return false
	}
	for _, b := range m.Content {
		if b.Type == "text" && !isReminder(b.Text) {
			return true
		}
	}
	return false
}

// userText joins the message's text blocks, leaving out the CLI's
// <system-reminder> blocks (context it attaches to the user's turn).
func (m Message) userText() string {
	var parts []string
	for _, b := range m.Content {
		if b.Type == "text" && !isReminder(b.Text) {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// isReminder matches the text blocks the CLI adds to a user message on its
// own (context, skill lists, hook output), which are not what the user typed.
func isReminder(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), "<system-reminder>")
}

// lastPrompt returns the index of the last user message that is a prompt,
// or -1. Messages after it are the model's turns and their tool results
// (and possibly a trailing system-role entry).
func (r Request) lastPrompt() int {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].isPrompt() {
			return i
		}
	}
	return -1
}

// LastUserText returns the text of the last user message that is not only
// tool results, without the CLI's <system-reminder> blocks; "" if none.
func (r Request) LastUserText() string {
	i := r.lastPrompt()
	if i < 0 {
		return ""
	}
	return r.Messages[i].userText()
}

// ToolResults returns the tool_result blocks of the last user message.
func (r Request) ToolResults() []Block {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role != "user" {
			continue
		}
		var out []Block
		for _, b := range r.Messages[i].Content {
			if b.Type == "tool_result" {
				out = append(out, b)
			}
		}
		return out
	}
	return nil
}

// SessionID returns the CLI's X-Claude-Code-Session-Id header (CLAUDE-CLI.md
// §8), which tells the sessions sharing one server apart.
func (r Request) SessionID() string { return r.Header.Get("X-Claude-Code-Session-Id") }

// conversationKey identifies the conversation a request carries: the
// session and its user and assistant messages, which a resend of the same
// turn repeats. Tools, beta features and the system-role environment entry
// may differ between resends, so they are left out.
func (r Request) conversationKey() string {
	var turns []Message
	for _, m := range r.Messages {
		if m.Role != "system" {
			turns = append(turns, m)
		}
	}
	b, _ := json.Marshal(turns)
	return r.SessionID() + "\x00" + string(b)
}

// HasTool reports whether a tool of that name was offered.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}
