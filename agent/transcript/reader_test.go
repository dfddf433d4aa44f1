package transcript

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readFile(t *testing.T, name string) ([]Entry, *Reader) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "2.1.330", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &Reader{Dir: "/repo"}
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		out = append(out, r.Line(sc.Bytes())...)
	}
	return out, r
}

// The stream driver's session file holds the whole turn: a TodoWrite (which
// 2.1.330 no longer has), a Bash, a Write, an Edit, a failing Bash, the text.
func TestReadSession(t *testing.T) {
	entries, r := readFile(t, "stream-session.jsonl")
	var kinds []string
	final := map[string]*ToolCall{}
	var order []string
	for _, e := range entries {
		kinds = append(kinds, string(e.Kind))
		if e.Kind == KindToolCall {
			if final[e.ToolCall.ID] == nil {
				order = append(order, e.ToolCall.ID)
			}
			final[e.ToolCall.ID] = e.ToolCall
		}
	}
	got := strings.Join(kinds, " ")
	want := "prompt tool_call plan usage tool_call tool_call usage tool_call tool_call usage tool_call tool_call usage tool_call tool_call usage tool_call text usage"
	if got != want {
		t.Errorf("kinds:\n got %s\nwant %s", got, want)
	}
	type row struct{ name, kind, title, status string }
	wantCalls := []row{
		{"TodoWrite", ToolThink, "Update the plan", StatusFailed},
		{"Bash", ToolExecute, "echo hi > a.txt", StatusCompleted},
		{"Write", ToolEdit, "Write /repo/b.txt", StatusCompleted},
		{"Edit", ToolEdit, "Edit /repo/b.txt", StatusCompleted},
		{"Bash", ToolExecute, "ls /nonexistent-xyz", StatusFailed},
	}
	if len(order) != len(wantCalls) {
		t.Fatalf("%d tool calls, want %d", len(order), len(wantCalls))
	}
	for i, w := range wantCalls {
		tc := final[order[i]]
		if tc.Name != w.name || tc.Kind != w.kind || tc.Title != w.title || tc.Status != w.status {
			t.Errorf("call %d = %s %s %q %s, want %+v", i, tc.Name, tc.Kind, tc.Title, tc.Status, w)
		}
		if tc.EndedAt == nil {
			t.Errorf("call %d has no end", i)
		}
	}
	edit := final[order[3]]
	if len(edit.Diffs) != 1 || edit.Diffs[0].OldText != "one" || edit.Diffs[0].NewText != "two" || edit.Files[0] != "/repo/b.txt" {
		t.Errorf("edit = %+v", edit)
	}
	if !strings.Contains(final[order[4]].Result, "cannot access") {
		t.Errorf("failed result = %q", final[order[4]].Result)
	}
	// Six responses of 100 in / 20 out each (the fake API's fixed usage).
	tot := r.Total()
	if tot.Responses != 6 || tot.InputTokens != 600 || tot.OutputTokens != 120 || tot.CostUSD <= 0 {
		t.Errorf("total = %+v", tot)
	}
}

func TestStreamJSONLines(t *testing.T) {
	r := &Reader{}
	lines := []string{
		`{"type":"system","subtype":"init","session_id":"s"}`,
		`{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"thinking","thinking":"Let me look."}],"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200}},"parent_tool_use_id":null,"session_id":"s"}`,
		`{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/x/a.go"}}],"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200}},"parent_tool_use_id":null,"session_id":"s"}`,
		`{"type":"assistant","message":{"id":"m9","model":"claude-sonnet-4-5","content":[{"type":"text","text":"subagent says"}]},"parent_tool_use_id":"t0"}`,
		`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":[{"type":"text","text":"package a"}]}]},"tool_use_result":{"type":"text"}}`,
		`not json`,
		`{"type":"result","subtype":"success","total_cost_usd":0.1}`,
	}
	var got []Entry
	for _, l := range lines {
		got = append(got, r.Line([]byte(l))...)
	}
	if len(got) != 4 {
		t.Fatalf("entries = %+v", got)
	}
	if got[0].Kind != KindThinking || got[0].Text != "Let me look." {
		t.Errorf("thinking = %+v", got[0])
	}
	// The response's usage comes with its first line, and only once.
	if got[1].Kind != KindUsage || got[1].Usage.CacheReadTokens != 1000 || got[1].Usage.CacheWriteTokens != 200 {
		t.Fatalf("usage = %+v", got[1])
	}
	if got[2].Kind != KindToolCall || got[2].ToolCall.Kind != ToolRead || got[2].ToolCall.Status != StatusPending {
		t.Fatalf("call = %+v", got[2])
	}
	if got[3].Kind != KindToolCall || got[3].ToolCall.Status != StatusCompleted || got[3].ToolCall.Result != "package a" {
		t.Errorf("result = %+v", got[3].ToolCall)
	}
	// sonnet: (10 + 200×1.25 + 1000×0.1)×3 + 5×15, per million.
	want := ((10+250+100)*3.0 + 5*15.0) / 1e6
	if d := got[1].Usage.CostUSD - want; d > 1e-12 || d < -1e-12 {
		t.Errorf("cost = %v, want %v", got[1].Usage.CostUSD, want)
	}
}

func TestSetStatusAndPlan(t *testing.T) {
	r := &Reader{Now: func() time.Time { return time.Unix(0, 0) }}
	es := r.Line([]byte(`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"TodoWrite","input":{"todos":[{"content":"A","status":"in_progress","activeForm":"a"},{"content":"B","status":"weird"}]}}]}}`))
	if len(es) != 2 || es[1].Kind != KindPlan || len(es[1].Plan) != 2 || es[1].Plan[1].Status != "pending" {
		t.Fatalf("entries = %+v", es)
	}
	if r.Pending("TodoWrite") != "t" {
		t.Error("pending call not found by name")
	}
	if e, ok := r.SetStatus("t", StatusRunning); !ok || e.ToolCall.Status != StatusRunning {
		t.Errorf("set status = %+v %v", e, ok)
	}
	if _, ok := r.SetStatus("t", StatusRunning); ok {
		t.Error("same status reported twice")
	}
	if _, ok := r.SetStatus("nope", StatusRunning); ok {
		t.Error("unknown call")
	}
}

func TestTailFollowsAppends(t *testing.T) {
	dir := t.TempDir()
	path := FilePath(dir, "/tmp/a b/c", "sid")
	if filepath.Base(filepath.Dir(path)) != "-tmp-a-b-c" {
		t.Fatalf("project dir = %s", path)
	}
	got := make(chan string, 10)
	tl := NewTail(path, 0, func(l []byte) { got <- string(l) })
	defer tl.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("one\ntw")
	tl.Sync()
	if l := <-got; l != "one" {
		t.Fatalf("line = %q", l)
	}
	f.WriteString("o\n")
	select {
	case l := <-got:
		if l != "two" {
			t.Fatalf("line = %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("appended line never read")
	}
}

// A result longer than the excerpt keeps its whole text for the caller to
// store behind a reference; a short one has no separate copy.
func TestLongResultKeptWhole(t *testing.T) {
	r := &Reader{}
	long := strings.Repeat("x", ResultExcerpt+500)
	lines := []string{
		`{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"x"}},{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"y"}}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"` + long + `"},{"tool_use_id":"t2","type":"tool_result","content":"short"}]}}`,
	}
	var got []Entry
	for _, l := range lines {
		got = append(got, r.Line([]byte(l))...)
	}
	var results []Entry
	for _, e := range got {
		if e.ToolCall != nil && e.ToolCall.Status == StatusCompleted {
			results = append(results, e)
		}
	}
	if len(results) != 2 {
		t.Fatalf("entries = %+v", got)
	}
	if results[0].FullResult != long || len(results[0].ToolCall.Result) > ResultExcerpt+len("…") {
		t.Errorf("long result: excerpt %d bytes, full %d", len(results[0].ToolCall.Result), len(results[0].FullResult))
	}
	if results[1].FullResult != "" || results[1].ToolCall.Result != "short" {
		t.Errorf("short result = %+v", results[1].ToolCall)
	}
}

// With --include-partial-messages the stream driver reads each text delta
// as it streams (claude 2.1.330 against the fake API, which sends a text in
// three deltas): the text arrives as three chunks, and the whole block's
// assistant line after them adds nothing but the mark that the block ended.
func TestReadStreamedDeltas(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "2.1.330", "stream-partial.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &Reader{Dir: "/repo", StreamJSON: true}
	var kinds, chunks []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		for _, e := range r.Line(sc.Bytes()) {
			kinds = append(kinds, string(e.Kind))
			if e.Kind == KindText {
				if !e.Delta || e.MessageID == "" {
					t.Errorf("text entry %+v: want a delta of a response", e)
				}
				if e.Final {
					if e.Text != "" {
						t.Errorf("the block's line added %q to whole deltas", e.Text)
					}
					continue
				}
				chunks = append(chunks, e.Text)
			}
		}
	}
	if got, want := strings.Join(kinds, " "), "tool_call tool_call text text text text usage"; got != want {
		t.Errorf("kinds:\n got %s\nwant %s", got, want)
	}
	if len(chunks) != 3 || strings.Join(chunks, "") != "There are no markdown files here, as it turns out." {
		t.Errorf("text chunks %q", chunks)
	}
}

// Thinking streams the same way; a block whose deltas stopped short gets
// its rest from the whole line, and one without deltas is read whole.
func TestReadStreamedThinkingAndShortDeltas(t *testing.T) {
	r := &Reader{StreamJSON: true}
	lines := []string{
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}},"parent_tool_use_id":null,"api_message_id":"m1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think."}},"parent_tool_use_id":null,"api_message_id":"m1"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"x"}},"parent_tool_use_id":null,"api_message_id":"m1"}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"thinking","thinking":"Let me think."}]}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hel"}},"parent_tool_use_id":null,"api_message_id":"m1"}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Hello."}]}}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Unstreamed."}]}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"sub"}},"parent_tool_use_id":"toolu_1","api_message_id":"m2"}`,
		`{"type":"stream_event","event":{"type":"message_stop"},"parent_tool_use_id":null,"api_message_id":"m1"}`,
	}
	var got []string
	for _, l := range lines {
		for _, e := range r.Line([]byte(l)) {
			k := string(e.Kind)
			if e.Final {
				k += "(final)"
			}
			got = append(got, k+":"+e.Text)
		}
	}
	want := []string{"thinking:Let me ", "thinking:think.", "thinking(final):", "text:Hel", "text(final):lo.", "text:Unstreamed."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("entries:\n got %q\nwant %q", got, want)
	}
	if len(r.streamed) != 0 {
		t.Errorf("streamed blocks kept after message_stop: %v", r.streamed)
	}
}
