package demomodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Event is one server-sent event of a streamed Messages API answer.
type Event struct {
	Name string          // the "event:" line, e.g. "content_block_delta"
	Data json.RawMessage // the "data:" payload
	// Pause is how long the server waits before sending it (Reply.Pace).
	Pause time.Duration
}

// Token counts reported in usage. They are small and fixed: the CLI shows
// them and computes a cost from them, and large counts would make it think
// the context is full and compact.
const (
	fakeInputTokens  = 100
	fakeOutputTokens = 20
)

// textChunks is how many text_delta events a text block is split into (at
// most); tool input is sent as an empty input_json_delta followed by up to
// jsonChunks pieces, as the real API does, so the CLI's delta assembly is
// exercised.
const (
	textChunks = 3
	jsonChunks = 2
)

// fakeSignature signs thinking blocks; nothing checks it.
const fakeSignature = "fake-signature"

// usage is the usage object of message_start and of a non-streamed message.
func usage(output int) map[string]any {
	return map[string]any{
		"input_tokens":                fakeInputTokens,
		"output_tokens":               output,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     0,
	}
}

// streamEvents renders a resolved reply (IDs and stop reason filled in) as
// the event sequence of the streaming Messages API.
func streamEvents(reply Reply, msgID, model string) ([]Event, error) {
	var evs []Event
	add := func(name string, data map[string]any) error {
		data["type"] = name
		b, err := json.Marshal(data)
		if err != nil {
			return fmt.Errorf("encode %s: %w", name, err)
		}
		evs = append(evs, Event{Name: name, Data: b})
		return nil
	}
	msg := map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": usage(1),
	}
	if err := add("message_start", map[string]any{"message": msg}); err != nil {
		return nil, err
	}
	index := 0
	if reply.Thinking != "" {
		_ = add("content_block_start", map[string]any{"index": index,
			"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for i, piece := range split(reply.Thinking, textChunks) {
			_ = add("content_block_delta", map[string]any{"index": index,
				"delta": map[string]any{"type": "thinking_delta", "thinking": piece}})
			if i > 0 {
				evs[len(evs)-1].Pause = reply.Pace
			}
		}
		_ = add("content_block_delta", map[string]any{"index": index,
			"delta": map[string]any{"type": "signature_delta", "signature": fakeSignature}})
		_ = add("content_block_stop", map[string]any{"index": index})
		index++
	}
	if reply.Text != "" || len(reply.ToolUses) == 0 {
		_ = add("content_block_start", map[string]any{"index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for i, piece := range split(reply.Text, textChunks) {
			_ = add("content_block_delta", map[string]any{"index": index,
				"delta": map[string]any{"type": "text_delta", "text": piece}})
			if i > 0 || reply.Thinking != "" {
				evs[len(evs)-1].Pause = reply.Pace
			}
		}
		_ = add("content_block_stop", map[string]any{"index": index})
		index++
	}
	for _, tu := range reply.ToolUses {
		input, err := toolInput(tu.Input)
		if err != nil {
			return nil, fmt.Errorf("tool_use %s: %w", tu.Name, err)
		}
		_ = add("content_block_start", map[string]any{"index": index,
			"content_block": map[string]any{"type": "tool_use", "id": tu.ID, "name": tu.Name, "input": map[string]any{}}})
		pieces := append([]string{""}, split(string(input), jsonChunks)...)
		for _, piece := range pieces {
			_ = add("content_block_delta", map[string]any{"index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
		}
		_ = add("content_block_stop", map[string]any{"index": index})
		index++
	}
	_ = add("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": reply.StopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": fakeOutputTokens},
	})
	_ = add("message_stop", map[string]any{})
	return evs, nil
}

// messageBody renders a resolved reply as the JSON body of a non-streamed
// (stream:false) answer.
func messageBody(reply Reply, msgID, model string) ([]byte, error) {
	content := []any{}
	if reply.Thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": reply.Thinking, "signature": fakeSignature})
	}
	if reply.Text != "" || len(reply.ToolUses) == 0 {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	for _, tu := range reply.ToolUses {
		input, err := toolInput(tu.Input)
		if err != nil {
			return nil, fmt.Errorf("tool_use %s: %w", tu.Name, err)
		}
		content = append(content, map[string]any{"type": "tool_use", "id": tu.ID, "name": tu.Name, "input": input})
	}
	return json.Marshal(map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": reply.StopReason, "stop_sequence": nil,
		"usage": usage(fakeOutputTokens),
	})
}

// errorBody is the API's error envelope for an HTTP error status.
func errorBody(status int, message string) []byte {
	if message == "" {
		message = http.StatusText(status)
	}
	b, _ := json.Marshal(map[string]any{
		"type":  "error",
		"error": map[string]any{"type": errorType(status), "message": message},
	})
	return b
}

// errorType maps a status to the error type the real API reports with it.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

// toolInput marshals a tool's input; nil becomes {} (the API never sends a
// null input), and json.RawMessage or []byte are used as they are.
func toolInput(in any) (json.RawMessage, error) {
	var b []byte
	switch v := in.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, fmt.Errorf("input is not JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// split cuts s into at most n non-empty pieces at rune boundaries (a JSON
// string holding half a rune would be mangled). "" gives one empty piece so
// a text block always has a delta.
func split(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// writeEvent writes one event in SSE framing.
func writeEvent(w io.Writer, ev Event) error {
	_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Name, ev.Data)
	return err
}

// ReadEvents parses an SSE stream into events (comments and unknown fields
// are skipped; multi-line data is joined with "\n", as the SSE spec says).
func ReadEvents(r io.Reader) ([]Event, error) {
	var (
		out  []Event
		name string
		data []string
	)
	flush := func() {
		if name != "" || len(data) > 0 {
			if name == "" {
				name = "message"
			}
			out = append(out, Event{Name: name, Data: json.RawMessage(strings.Join(data, "\n"))})
		}
		name, data = "", nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data = append(data, value)
		}
	}
	flush()
	return out, sc.Err()
}
