package demomodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// assemble rebuilds a reply from a stream the way a client does, and checks
// the ordering rules the CLI relies on: message_start first, message_stop
// last, each block started, then its deltas, then stopped, with indices in
// order, and message_delta carrying the stop reason before message_stop.
func assemble(evs []Event) (Reply, string, error) {
	var (
		reply Reply
		model string
		open  = -1 // index of the open block
		next  int  // index the next block must have
		kind  string
		input strings.Builder
	)
	if len(evs) == 0 || evs[0].Name != "message_start" {
		return reply, "", fmt.Errorf("stream does not begin with message_start")
	}
	if evs[len(evs)-1].Name != "message_stop" {
		return reply, "", fmt.Errorf("stream does not end with message_stop")
	}
	sawDelta := false
	for i, ev := range evs {
		var d struct {
			Type    string `json:"type"`
			Index   int    `json:"index"`
			Message struct {
				Model string         `json:"model"`
				Usage map[string]int `json:"usage"`
			} `json:"message"`
			ContentBlock struct {
				Type, ID, Name string
				Input          json.RawMessage
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage map[string]int `json:"usage"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return reply, "", fmt.Errorf("event %d: %w", i, err)
		}
		if d.Type != ev.Name {
			return reply, "", fmt.Errorf("event %d: name %q but type %q", i, ev.Name, d.Type)
		}
		switch ev.Name {
		case "message_start":
			if i != 0 {
				return reply, "", fmt.Errorf("second message_start at %d", i)
			}
			if _, ok := d.Message.Usage["input_tokens"]; !ok {
				return reply, "", fmt.Errorf("message_start without usage")
			}
			model = d.Message.Model
		case "content_block_start":
			if open >= 0 || d.Index != next {
				return reply, "", fmt.Errorf("event %d: block %d started (open %d, next %d)", i, d.Index, open, next)
			}
			open, kind = d.Index, d.ContentBlock.Type
			if kind == "tool_use" {
				reply.ToolUses = append(reply.ToolUses, ToolUse{ID: d.ContentBlock.ID, Name: d.ContentBlock.Name})
				input.Reset()
			}
		case "content_block_delta":
			if d.Index != open {
				return reply, "", fmt.Errorf("event %d: delta for block %d, open is %d", i, d.Index, open)
			}
			switch {
			case kind == "text" && d.Delta.Type == "text_delta":
				reply.Text += d.Delta.Text
			case kind == "tool_use" && d.Delta.Type == "input_json_delta":
				input.WriteString(d.Delta.PartialJSON)
			default:
				return reply, "", fmt.Errorf("event %d: %s delta in a %s block", i, d.Delta.Type, kind)
			}
		case "content_block_stop":
			if d.Index != open {
				return reply, "", fmt.Errorf("event %d: stop of block %d, open is %d", i, d.Index, open)
			}
			if kind == "tool_use" {
				if !json.Valid([]byte(input.String())) {
					return reply, "", fmt.Errorf("tool input %q is not JSON", input.String())
				}
				reply.ToolUses[len(reply.ToolUses)-1].Input = json.RawMessage(input.String())
			}
			open = -1
			next++
		case "message_delta":
			if open >= 0 {
				return reply, "", fmt.Errorf("message_delta with block %d open", open)
			}
			reply.StopReason = d.Delta.StopReason
			sawDelta = true
		case "message_stop":
			if !sawDelta {
				return reply, "", fmt.Errorf("message_stop before message_delta")
			}
		default:
			return reply, "", fmt.Errorf("unexpected event %q", ev.Name)
		}
	}
	return reply, model, nil
}

func TestStreamRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		reply Reply
		want  Reply // Input as compact JSON
	}{
		{
			name:  "text",
			reply: Reply{Text: "Hello there, this is a reply."},
			want:  Reply{Text: "Hello there, this is a reply.", StopReason: "end_turn"},
		},
		{
			name:  "empty reply still has a text block",
			reply: Reply{},
			want:  Reply{StopReason: "end_turn"},
		},
		{
			name:  "multi-line unicode text",
			reply: Reply{Text: "línea uno\nzweite Zeile ✓\n第三行"},
			want:  Reply{Text: "línea uno\nzweite Zeile ✓\n第三行", StopReason: "end_turn"},
		},
		{
			name: "tool use with generated id",
			reply: Reply{ToolUses: []ToolUse{{Name: "Bash", Input: map[string]any{
				"command": "echo hi > created.txt", "description": "Create a file"}}}},
			want: Reply{StopReason: "tool_use", ToolUses: []ToolUse{{Name: "Bash",
				Input: json.RawMessage(`{"command":"echo hi \u003e created.txt","description":"Create a file"}`)}}},
		},
		{
			name: "text then two tools, raw and nil input, explicit stop reason",
			reply: Reply{Text: "Let me look.", StopReason: "max_tokens", ToolUses: []ToolUse{
				{ID: "toolu_given", Name: "Write", Input: json.RawMessage(`{ "file_path": "ü.txt", "content": "ä\nö" }`)},
				{Name: "Read"},
			}},
			want: Reply{Text: "Let me look.", StopReason: "max_tokens", ToolUses: []ToolUse{
				{ID: "toolu_given", Name: "Write", Input: json.RawMessage(`{"file_path":"ü.txt","content":"ä\nö"}`)},
				{Name: "Read", Input: json.RawMessage(`{}`)},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resolved := tt.reply.resolve(newID)
			evs, err := streamEvents(resolved, "msg_test", "claude-test-model")
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			for _, ev := range evs {
				if err := writeEvent(&buf, ev); err != nil {
					t.Fatal(err)
				}
			}
			parsed, err := ReadEvents(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if len(parsed) != len(evs) {
				t.Fatalf("read %d events, wrote %d", len(parsed), len(evs))
			}
			got, model, err := assemble(parsed)
			if err != nil {
				t.Fatalf("%v\nstream:\n%s", err, buf.String())
			}
			if model != "claude-test-model" {
				t.Errorf("model = %q", model)
			}
			for i := range got.ToolUses {
				if !strings.HasPrefix(got.ToolUses[i].ID, "toolu_") {
					t.Errorf("tool use %d id %q", i, got.ToolUses[i].ID)
				}
				if got.ToolUses[i].ID != resolved.ToolUses[i].ID {
					t.Errorf("tool use %d id %q, resolved reply has %q", i, got.ToolUses[i].ID, resolved.ToolUses[i].ID)
				}
				if tt.want.ToolUses[i].ID == "" {
					got.ToolUses[i].ID = ""
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("assembled\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestStreamSplitsToolInput(t *testing.T) {
	r := Reply{ToolUses: []ToolUse{{Name: "Bash", Input: map[string]string{"command": "echo hi"}}}}.resolve(newID)
	evs, err := streamEvents(r, "msg_x", "m")
	if err != nil {
		t.Fatal(err)
	}
	var pieces int
	for _, ev := range evs {
		if bytes.Contains(ev.Data, []byte(`"input_json_delta"`)) {
			pieces++
		}
	}
	// An empty first delta, as the real API sends, then jsonChunks pieces.
	if pieces != 1+jsonChunks {
		t.Errorf("%d input_json_delta events, want %d", pieces, 1+jsonChunks)
	}
}

func TestSplit(t *testing.T) {
	for _, s := range []string{"", "a", "abc", "hello world", "ééééé", "日本語テキスト", "a✓b✓c✓d"} {
		for n := 1; n <= 4; n++ {
			parts := split(s, n)
			if strings.Join(parts, "") != s {
				t.Errorf("split(%q, %d) = %q loses text", s, n, parts)
			}
			if len(parts) > max(n, 1) {
				t.Errorf("split(%q, %d) = %d parts", s, n, len(parts))
			}
			for _, p := range parts {
				if !utf8.ValidString(p) {
					t.Errorf("split(%q, %d) cut a rune: %q", s, n, parts)
				}
				if p == "" && s != "" {
					t.Errorf("split(%q, %d) has an empty part", s, n)
				}
			}
		}
	}
}

func TestReadEventsFraming(t *testing.T) {
	in := ": a comment\r\n" +
		"event: ping\n" +
		"data: {\"type\":\"ping\"}\n\n" +
		"data: line1\n" +
		"data: line2\n" +
		"id: 7\n\n" +
		"event: last\n" +
		"data:{}" // no blank line at EOF
	got, err := ReadEvents(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Name: "ping", Data: json.RawMessage(`{"type":"ping"}`)},
		{Name: "message", Data: json.RawMessage("line1\nline2")},
		{Name: "last", Data: json.RawMessage(`{}`)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestMessageBody(t *testing.T) {
	r := Reply{Text: "hi", ToolUses: []ToolUse{{ID: "toolu_1", Name: "Read", Input: map[string]string{"file_path": "/x"}}}}.resolve(newID)
	b, err := messageBody(r, "msg_1", "claude-x")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Type, Role, Model, StopReason string
		Content                       []map[string]any
		Usage                         map[string]int
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	_ = json.Unmarshal(b, &raw)
	if m.Type != "message" || m.Role != "assistant" || m.Model != "claude-x" || raw["stop_reason"] != "tool_use" {
		t.Errorf("body %s", b)
	}
	if len(m.Content) != 2 || m.Content[0]["text"] != "hi" || m.Content[1]["name"] != "Read" {
		t.Errorf("content %v", m.Content)
	}
	if _, ok := m.Usage["output_tokens"]; !ok {
		t.Errorf("no usage in %s", b)
	}
}

func TestErrorBody(t *testing.T) {
	tests := []struct {
		status  int
		message string
		typ     string
		want    string
	}{
		{400, "bad prompt", "invalid_request_error", "bad prompt"},
		{429, "", "rate_limit_error", "Too Many Requests"},
		{529, "busy", "overloaded_error", "busy"},
		{500, "boom", "api_error", "boom"},
	}
	for _, tt := range tests {
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		if err := json.Unmarshal(errorBody(tt.status, tt.message), &e); err != nil {
			t.Fatal(err)
		}
		if e.Type != "error" || e.Error.Type != tt.typ || e.Error.Message != tt.want {
			t.Errorf("errorBody(%d, %q) = %+v", tt.status, tt.message, e)
		}
	}
}

func TestToolInputRejectsNonJSON(t *testing.T) {
	if _, err := toolInput("not json"); err == nil {
		t.Error("toolInput accepted a non-JSON string")
	}
	if _, err := toolInput(func() {}); err == nil {
		t.Error("toolInput accepted a func")
	}
}

// A thinking block streams before the text, in thinking deltas and a
// signature, and each delta after the first waits Pace.
func TestStreamEventsThinkingPaced(t *testing.T) {
	evs, err := streamEvents(Reply{Thinking: "abcdef", Text: "ghijkl", Pace: time.Second, StopReason: "end_turn"}, "msg_1", "m")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	paused := 0
	for _, ev := range evs {
		var d struct {
			ContentBlock struct{ Type string } `json:"content_block"`
			Delta        struct{ Type string }
		}
		_ = json.Unmarshal(ev.Data, &d)
		got = append(got, ev.Name+":"+d.ContentBlock.Type+d.Delta.Type)
		if ev.Pause > 0 {
			paused++
		}
	}
	want := "message_start: content_block_start:thinking content_block_delta:thinking_delta content_block_delta:thinking_delta content_block_delta:thinking_delta content_block_delta:signature_delta content_block_stop: " +
		"content_block_start:text content_block_delta:text_delta content_block_delta:text_delta content_block_delta:text_delta content_block_stop: message_delta: message_stop:"
	if strings.Join(got, " ") != want {
		t.Errorf("events:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if paused != 5 { // every thinking and text delta but the first
		t.Errorf("%d events paused, want 5", paused)
	}
}
