package demomodel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseDirectives(t *testing.T) {
	tests := []struct {
		name   string
		prompt string
		want   []Reply
	}{
		{"none", "just a question?", nil},
		{
			name:   "tool then text",
			prompt: "go\n@@TOOL Bash {\"command\":\"echo hi > created.txt\",\"description\":\"Create a file\"}\n@@TEXT All done here.",
			want: []Reply{
				{ToolUses: []ToolUse{{Name: "Bash", Input: json.RawMessage(`{"command":"echo hi > created.txt","description":"Create a file"}`)}}},
				{Text: "All done here."},
			},
		},
		{
			name:   "escapes make lines; leading spaces and CRLF are fine",
			prompt: "  @@TEXT one\\ntwo\\tx \\\\n \\q end\r\n",
			want:   []Reply{{Text: "one\ntwo\tx \\n \\q end"}},
		},
		{
			name:   "tool without input",
			prompt: "@@TOOL EnterPlanMode",
			want:   []Reply{{ToolUses: []ToolUse{{Name: "EnterPlanMode", Input: json.RawMessage(`{}`)}}}},
		},
		{
			name:   "error and delay",
			prompt: "@@DELAY 1.5s\n@@ERROR 529 Overloaded right now\n@@TEXT after",
			want:   []Reply{{Status: 529, Error: "Overloaded right now", Delay: 1500 * time.Millisecond}, {Text: "after"}},
		},
		{
			name:   "thinking and pace",
			prompt: "@@PACE 100ms\n@@THINK Hmm,\\nlet me see.\n@@TEXT Yes.\n@@TEXT Again.",
			want:   []Reply{{Thinking: "Hmm,\nlet me see.", Pace: 100 * time.Millisecond, Text: "Yes."}, {Text: "Again."}},
		},
		{
			name:   "also adds a tool call to the tool step before, else is a step of its own",
			prompt: "@@ALSO Bash {\"command\":\"echo 0\"}\n@@TOOL Bash {\"command\":\"echo 1\"}\n@@ALSO Bash {\"command\":\"echo 2\"}\n@@TEXT done",
			want: []Reply{
				{ToolUses: []ToolUse{{Name: "Bash", Input: json.RawMessage(`{"command":"echo 0"}`)}}},
				{ToolUses: []ToolUse{{Name: "Bash", Input: json.RawMessage(`{"command":"echo 1"}`)}, {Name: "Bash", Input: json.RawMessage(`{"command":"echo 2"}`)}}},
				{Text: "done"},
			},
		},
		{
			name:   "directive must start the line",
			prompt: "say @@TEXT no\n@@TEXTUAL no\n@@TEXT yes",
			want:   []Reply{{Text: "yes"}},
		},
		{
			name:   "malformed directives become explaining texts",
			prompt: "@@TOOL Bash {oops\n@@ERROR 200 fine\n@@TOOL\n@@DELAY soon",
			want: []Reply{
				{Text: "demomodel: @@TOOL Bash: input is not valid JSON: {oops"},
				{Text: `demomodel: @@ERROR needs a status 400-599, got "200"`},
				{Text: "demomodel: @@TOOL needs a tool name"},
				{Text: `demomodel: bad @@DELAY "soon": time: invalid duration "soon"`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseDirectives(tt.prompt)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseDirectives(%q)\n got %#v\nwant %#v", tt.prompt, got, tt.want)
			}
		})
	}
}

// Builders of requests shaped like the CLI's (see testdata/requests).
func text(s string) Block { return Block{Type: "text", Text: s} }
func user(blocks ...Block) Message {
	return Message{Role: "user", Content: blocks}
}
func reminder() Block {
	return text("<system-reminder>\nAs you answer the user's questions...\n</system-reminder>")
}
func env() Message { return Message{Role: "system", Content: []Block{text("# Environment\n...")}} }
func toolCall(id string) Message {
	return Message{Role: "assistant", Content: []Block{{Type: "tool_use", ID: id, Name: "Bash", Input: json.RawMessage(`{}`)}}}
}
func answer(s string) Message { return Message{Role: "assistant", Content: []Block{text(s)}} }
func result(id, out string) Message {
	return user(Block{Type: "tool_result", ToolUseID: id, Content: out})
}
func mainReq(msgs ...Message) Request {
	return Request{Model: "m", Tools: []string{"Bash", "Read"}, Thinking: "adaptive", MaxTokens: 128000, Messages: msgs}
}

func TestPromptScript(t *testing.T) {
	const script = "go\n@@TOOL Bash {\"command\":\"echo hi\"}\n@@TOOL Bash {\"command\":\"echo again\"}\n@@TEXT All done here."
	tool := func(cmd string) Reply {
		return Reply{ToolUses: []ToolUse{{Name: "Bash", Input: json.RawMessage(`{"command":"` + cmd + `"}`)}}}
	}
	tests := []struct {
		name string
		req  Request
		want Reply
	}{
		{"first request", mainReq(user(reminder(), reminder(), text(script)), env()), tool("echo hi")},
		{
			name: "second carries a tool result; the system entry sits after the prompt",
			req:  mainReq(user(reminder(), text(script)), env(), toolCall("t1"), result("t1", "hi")),
			want: tool("echo again"),
		},
		{
			name: "third",
			req:  mainReq(user(text(script)), env(), toolCall("t1"), result("t1", "hi"), toolCall("t2"), result("t2", "again")),
			want: Reply{Text: "All done here."},
		},
		{
			name: "a turn split over several assistant messages counts once",
			req:  mainReq(user(text(script)), answer("thinking"), env(), toolCall("t1"), result("t1", "hi")),
			want: tool("echo again"),
		},
		{
			name: "steps used up",
			req: mainReq(user(text(script)), toolCall("t1"), result("t1", ""), toolCall("t2"), result("t2", ""),
				answer("All done here."), user(text("and now?"))),
			want: Reply{Text: DoneText},
		},
		{
			name: "a new prompt with directives restarts",
			req:  mainReq(user(text(script)), answer("x"), user(text("@@TEXT second prompt")), env()),
			want: Reply{Text: "second prompt"},
		},
		{
			name: "reminder-only user message is not a prompt",
			req:  mainReq(user(text(script)), toolCall("t1"), user(Block{Type: "tool_result", ToolUseID: "t1"}, reminder())),
			want: tool("echo again"),
		},
		{
			// CLAUDE-CLI.md §6: a resumed session's stand-in for a request
			// that a kill left unanswered is no turn of the model's.
			name: "claude's stand-in for an unanswered request is not a turn",
			req:  mainReq(user(reminder(), text(script)), env(), answer("No response requested."), user(text("Continue the task where you left off."))),
			want: tool("echo hi"),
		},
		{
			name: "the same words among others are the model's",
			req:  mainReq(user(text(script)), Message{Role: "assistant", Content: []Block{text("No response requested."), text("and more")}}, user(text("go on"))),
			want: tool("echo again"),
		},
		{"no directives", mainReq(user(reminder(), text("hello")), env()), Reply{Text: NoDirectiveText}},
		{
			name: "a title side request quoting the prompt gets JSON",
			req: Request{Model: "m", MaxTokens: 128000, OutputFormat: json.RawMessage(`{"type":"json_schema","schema":{"properties":{"title":{"type":"string"}}}}`),
				Messages: []Message{user(text("<session>\n" + script + "\n</session>"))}},
			want: Reply{Text: `{"title":"` + SideText + `"}`},
		},
	}
	s := PromptScript()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s(tt.req); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestSequence(t *testing.T) {
	s := Sequence(Reply{Text: "one"}, Reply{ToolUses: []ToolUse{{Name: "Read"}}})
	quota := Request{MaxTokens: 1, Messages: []Message{user(text("quota"))}}
	main := mainReq(user(text("hi")), env())
	got := []string{}
	for _, r := range []Request{quota, main, quota, main, main, main} {
		rep := s(r)
		switch {
		case len(rep.ToolUses) > 0:
			got = append(got, "tool:"+rep.ToolUses[0].Name)
		default:
			got = append(got, rep.Text)
		}
	}
	want := []string{SideText, "one", SideText, "tool:Read", DoneText, DoneText}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func loadRequest(t *testing.T, name string) Request {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "requests", name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCapturedRequests pins the decoding and the side-request rules to
// requests the real CLI 2.1.330 sent (captured with TestExplore*):
// p_* from `claude -p`, tui_* from the interactive CLI with non-essential
// traffic enabled (with it disabled the TUI sends no title requests).
func TestCapturedRequests(t *testing.T) {
	const prompt = "go\n@@TOOL Bash {\"command\":\"echo hi > created.txt\",\"description\":\"Create a file\"}\n@@TEXT All done here."
	tests := []struct {
		file     string
		side     SideKind
		lastUser string
		results  int
		hasBash  bool
	}{
		{"p_first.json", SideNone, prompt, 0, true},
		{"p_tool_result.json", SideNone, prompt, 1, true},
		{"p_no_tools.json", SideNone, "hello there", 0, false},
		{"p_compact.json", SideCompact, "", 1, true}, // the summary request shares the tool_result message
		{"tui_first.json", SideNone, "Please refactor the parser module", 0, true},
		{"tui_title.json", SideTitle, "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := loadRequest(t, tt.file)
			if r.Model == "" || !r.Stream || r.System == "" || len(r.Messages) == 0 {
				t.Errorf("not decoded: model %q stream %v system %d bytes, %d messages", r.Model, r.Stream, len(r.System), len(r.Messages))
			}
			if got := r.SideKind(); got != tt.side {
				t.Errorf("SideKind = %q, want %q", got, tt.side)
			}
			if tt.lastUser != "" {
				if got := r.LastUserText(); got != tt.lastUser {
					t.Errorf("LastUserText = %q, want %q", got, tt.lastUser)
				}
			}
			if got := len(r.ToolResults()); got != tt.results {
				t.Errorf("%d tool results, want %d", got, tt.results)
			}
			if r.HasTool("Bash") != tt.hasBash {
				t.Errorf("HasTool(Bash) = %v; tools %q", !tt.hasBash, r.Tools)
			}
		})
	}

	t.Run("tool result content", func(t *testing.T) {
		r := loadRequest(t, "p_tool_result.json")
		res := r.ToolResults()[0]
		var call Block
		for _, m := range r.Messages {
			for _, b := range m.Content {
				if b.Type == "tool_use" {
					call = b
				}
			}
		}
		if res.ToolUseID == "" || res.ToolUseID != call.ID || res.IsError || !strings.Contains(res.Content, "no output") {
			t.Errorf("tool result %+v for call %+v", res, call)
		}
		if !strings.Contains(string(call.Input), "created.txt") {
			t.Errorf("tool_use input %s", call.Input)
		}
	})
}

func TestParseRequestContentForms(t *testing.T) {
	body := `{"model":"m","system":"plain system","messages":[
		{"role":"user","content":"plain"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/a"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"line1"},{"type":"image","source":{}},{"type":"text","text":"line2"}]}]}
	]}`
	r, err := ParseRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.System != "plain system" || r.LastUserText() != "plain" {
		t.Errorf("system %q, last user text %q", r.System, r.LastUserText())
	}
	if b := r.Messages[1].Content[0]; b.Type != "thinking" || b.Text != "hmm" {
		t.Errorf("thinking block %+v", b)
	}
	res := r.ToolResults()
	if len(res) != 1 || !res[0].IsError || res[0].Content != "line1\n[image]\nline2" {
		t.Errorf("tool results %+v", res)
	}
	if _, err := ParseRequest([]byte(`{"messages":[{"role":"user","content":7}]}`)); err == nil {
		t.Error("bad content accepted")
	}
}

func TestSideReply(t *testing.T) {
	compact := mainReq(user(text("hi")), answer("x"), user(text("CRITICAL: Respond with TEXT ONLY.\n\n"+compactMarker+" the conversation so far")))
	if got := SideReply(compact).Text; !strings.Contains(got, "<summary>"+CompactSummary+"</summary>") {
		t.Errorf("compact reply %q", got)
	}
	helper := Request{Model: "m", Messages: []Message{user(text("summarize these tool calls"))}}
	if helper.SideKind() != SideHelper || SideReply(helper).Text != SideText {
		t.Errorf("helper: kind %q reply %q", helper.SideKind(), SideReply(helper).Text)
	}
	var title struct{ Title string }
	titleReq := loadRequest(t, "tui_title.json")
	if err := json.Unmarshal([]byte(SideReply(titleReq).Text), &title); err != nil || title.Title == "" {
		t.Errorf("title reply %q: %v", SideReply(titleReq).Text, err)
	}
}

func TestSequenceRepeatsAFinalErrorForResends(t *testing.T) {
	first := loadRequest(t, "p_first.json")
	resend := loadRequest(t, "p_first.json")
	// A resend may offer other tools and reword its environment entry; the
	// conversation is the same.
	resend.Tools = resend.Tools[:3]
	if resend.Messages[1].Role != "system" {
		t.Fatalf("p_first.json: message 1 is %q, want the system entry", resend.Messages[1].Role)
	}
	resend.Messages[1] = env()
	next := loadRequest(t, "p_tool_result.json")
	tests := []struct {
		name  string
		first Reply
		want  []string
	}{
		{"final error", Reply{Status: 400, Error: "bad"}, []string{"400", "400", "400", "next"}},
		{"retryable error", Reply{Status: 529, Retryable: true}, []string{"529", "next", DoneText, DoneText}},
		{"success", Reply{Text: "ok"}, []string{"ok", "next", DoneText, DoneText}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Sequence(tt.first, Reply{Text: "next"})
			var got []string
			for _, r := range []Request{first, resend, first, next} {
				rep := s(r)
				if rep.Status != 0 {
					got = append(got, strconv.Itoa(rep.Status))
				} else {
					got = append(got, rep.Text)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
