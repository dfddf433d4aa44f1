package transcript

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/familiar-dev/familiar/protocol"
)

// ResultExcerpt bounds ToolCall.Result: enough to show what happened, not a
// whole file read.
const ResultExcerpt = 2000

// maxTitle bounds a tool call's title (a long command).
const maxTitle = 200

// Reader turns transcript or stream-json lines into Entries. It keeps what a
// later line needs (tool calls not finished yet, responses already counted),
// so one Reader reads one session, in order. It is not safe for concurrent
// use.
type Reader struct {
	// Dir resolves relative file paths in tool inputs (the session's cwd).
	Dir string
	// Now stamps entries of lines that carry no timestamp (default time.Now).
	Now func() time.Time
	// StreamJSON says the lines are claude -p's stdout. Its assistant lines
	// carry the usage of message_start (output_tokens 1), not the final
	// one, so usage is taken from each turn's result line instead, with the
	// CLI's own cost.
	StreamJSON bool

	tools   map[string]*ToolCall // by tool_use id, until finished
	early   map[string]string    // statuses set before the call's line was read
	counted map[string]bool      // message ids whose usage was added
	model   string               // the last response's model
	total   Usage                // the session's, Responses counted
	turn    Usage                // since the last prompt
	// stream-json only:
	turnMessages map[string]bool // responses of the current turn
	lastCost     float64         // the CLI's cumulative cost at the last result
	// streamed holds, per response, the text and thinking blocks whose
	// deltas were read (--include-partial-messages), so the block's whole
	// assistant line, which follows them, is not reported a second time.
	streamed map[string][]*streamedBlock
}

// streamedBlock is one text or thinking block read as deltas.
type streamedBlock struct {
	index    int
	kind     Kind
	text     strings.Builder
	reported bool // its assistant line was read
}

// line is the union of the fields Reader reads from either source.
type line struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	IsMeta    bool      `json:"isMeta"`
	IsReplay  bool      `json:"isReplay"`
	// result lines (stream-json)
	TotalCostUSD *float64 `json:"total_cost_usd"`
	Usage        *struct {
		InputTokens      int64 `json:"input_tokens"`
		OutputTokens     int64 `json:"output_tokens"`
		CacheReadTokens  int64 `json:"cache_read_input_tokens"`
		CacheWriteTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
	ModelUsage map[string]json.RawMessage `json:"modelUsage"`
	// A subagent's lines (stream-json) carry the id of the Agent call that
	// runs them; the transcript file keeps them in a file of their own.
	ParentToolUseID string `json:"parent_tool_use_id"`
	// stream_event lines (stream-json with --include-partial-messages):
	// one event of the Messages API's stream, of response APIMessageID.
	Event        *streamEvent `json:"event"`
	APIMessageID string       `json:"api_message_id"`
	Message      struct {
		ID      string          `json:"id"`
		Model   string          `json:"model"`
		Content json.RawMessage `json:"content"`
		Usage   *struct {
			InputTokens      int64 `json:"input_tokens"`
			OutputTokens     int64 `json:"output_tokens"`
			CacheReadTokens  int64 `json:"cache_read_input_tokens"`
			CacheWriteTokens int64 `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
	ToolUseResult       json.RawMessage `json:"toolUseResult"`   // transcript file
	StreamToolUseResult json.RawMessage `json:"tool_use_result"` // stream-json
}

type streamEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"delta"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (r *Reader) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Line reads one line and returns what it adds (often nothing). A line that
// is not JSON, or not a message, adds nothing: the transcript has many kinds
// of lines and new ones appear with new CLI versions.
func (r *Reader) Line(raw []byte) []Entry {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var l line
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil
	}
	if l.Type == "result" && r.StreamJSON {
		r.streamed = nil
		return r.result(&l)
	}
	if l.Type == "stream_event" && l.Event != nil && l.ParentToolUseID == "" {
		return r.streamEvent(&l)
	}
	if l.Type != "assistant" && l.Type != "user" {
		return nil
	}
	if l.IsReplay || l.ParentToolUseID != "" {
		return nil
	}
	at := l.Timestamp
	if at.IsZero() {
		at = r.now()
	}
	if l.Type == "assistant" {
		return r.assistant(&l, at)
	}
	return r.user(&l, at)
}

func (r *Reader) assistant(l *line, at time.Time) []Entry {
	var blocks []block
	if err := json.Unmarshal(l.Message.Content, &blocks); err != nil {
		return nil
	}
	var out []Entry
	id := l.Message.ID
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = r.block(out, id, KindText, b.Text, at)
		case "thinking":
			out = r.block(out, id, KindThinking, b.Thinking, at)
		case "tool_use":
			tc := r.newToolCall(b, at)
			out = append(out, Entry{TranscriptEntry: protocol.TranscriptEntry{Kind: KindToolCall, At: at, MessageID: id, ToolCall: cloneCall(tc)}})
			if st, ok := r.early[b.ID]; ok {
				delete(r.early, b.ID)
				tc.Status = st
				out = append(out, Entry{TranscriptEntry: protocol.TranscriptEntry{Kind: KindToolCall, At: at, MessageID: id, ToolCall: cloneCall(tc)}})
			}
			if plan := planOf(b.Name, b.Input); plan != nil {
				out = append(out, Entry{TranscriptEntry: protocol.TranscriptEntry{Kind: KindPlan, At: at, MessageID: id, Plan: plan}})
			}
		}
	}
	if r.StreamJSON && id != "" && l.Message.Model != "<synthetic>" {
		if r.turnMessages == nil {
			r.turnMessages = map[string]bool{}
		}
		r.turnMessages[id] = true
		r.model = l.Message.Model
	}
	if u := l.Message.Usage; !r.StreamJSON && u != nil && id != "" && !r.counted[id] && l.Message.Model != "<synthetic>" {
		if r.counted == nil {
			r.counted = map[string]bool{}
		}
		r.counted[id] = true
		one := Usage{Model: l.Message.Model, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
		one.CostUSD = Price(one.Model, one)
		add(&r.total, one)
		add(&r.turn, one)
		t := r.total
		one.Total = &t
		out = append(out, Entry{TranscriptEntry: protocol.TranscriptEntry{Kind: KindUsage, At: at, MessageID: id, Usage: &one}})
	}
	return out
}

// streamEvent reads one event of a response as it streams: each text or
// thinking delta is a chunk of text or thinking, reported at once. The rest
// (tool input, usage, stops) is read from the whole lines that follow.
func (r *Reader) streamEvent(l *line) []Entry {
	ev, id := l.Event, l.APIMessageID
	switch ev.Type {
	case "content_block_delta":
		var kind Kind
		var text string
		switch ev.Delta.Type {
		case "text_delta":
			kind, text = KindText, ev.Delta.Text
		case "thinking_delta":
			kind, text = KindThinking, ev.Delta.Thinking
		default:
			return nil
		}
		if text == "" || id == "" {
			return nil
		}
		b := r.streamedBlock(id, ev.Index, kind)
		b.text.WriteString(text)
		return []Entry{{TranscriptEntry: protocol.TranscriptEntry{Kind: kind, At: r.now(), MessageID: id, Text: text}, Delta: true}}
	case "message_stop":
		// Every block's assistant line came before it.
		delete(r.streamed, id)
	}
	return nil
}

func (r *Reader) streamedBlock(id string, index int, kind Kind) *streamedBlock {
	for _, b := range r.streamed[id] {
		if b.index == index {
			return b
		}
	}
	if r.streamed == nil {
		r.streamed = map[string][]*streamedBlock{}
	}
	b := &streamedBlock{index: index, kind: kind}
	r.streamed[id] = append(r.streamed[id], b)
	return b
}

// block reports a whole text or thinking block: as it is if no deltas of
// it were read; else as the block's last chunk (Final), holding what the
// deltas missed — nothing if they were whole, the rest if they stopped
// short, all of it if they were not this block's start.
func (r *Reader) block(out []Entry, id string, kind Kind, text string, at time.Time) []Entry {
	for _, b := range r.streamed[id] {
		if b.kind != kind || b.reported {
			continue
		}
		b.reported = true
		rest, ok := strings.CutPrefix(text, b.text.String())
		if !ok {
			rest = text
		}
		return append(out, Entry{TranscriptEntry: protocol.TranscriptEntry{Kind: kind, At: at, MessageID: id, Text: rest}, Delta: true, Final: true})
	}
	if text == "" {
		return out
	}
	return append(out, Entry{TranscriptEntry: protocol.TranscriptEntry{Kind: kind, At: at, MessageID: id, Text: text}})
}

// result reads the usage of a stream-json turn: the sum over its responses,
// and the CLI's cost (cumulative over the process, so the difference).
func (r *Reader) result(l *line) []Entry {
	if l.Usage == nil {
		return nil
	}
	u := Usage{Model: r.model, InputTokens: l.Usage.InputTokens, OutputTokens: l.Usage.OutputTokens,
		CacheReadTokens: l.Usage.CacheReadTokens, CacheWriteTokens: l.Usage.CacheWriteTokens}
	if l.TotalCostUSD != nil {
		u.CostUSD = *l.TotalCostUSD - r.lastCost
		r.lastCost = *l.TotalCostUSD
	} else {
		u.CostUSD = Price(u.Model, u)
	}
	n := len(r.turnMessages)
	r.turnMessages = nil
	turn := Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD, Responses: n}
	r.turn = turn
	r.total.AddCounts(turn)
	r.total.Responses += n
	t := r.total
	u.Total = &t
	return []Entry{{TranscriptEntry: protocol.TranscriptEntry{Kind: KindUsage, At: r.now(), Usage: &u}}}
}

func (r *Reader) user(l *line, at time.Time) []Entry {
	c := bytes.TrimSpace(l.Message.Content)
	if len(c) == 0 {
		return nil
	}
	if c[0] == '"' {
		var s string
		if json.Unmarshal(c, &s) != nil || l.IsMeta {
			return nil
		}
		r.turn = Usage{}
		return []Entry{{TranscriptEntry: protocol.TranscriptEntry{Kind: KindPrompt, At: at, Text: s}}}
	}
	var blocks []block
	if err := json.Unmarshal(c, &blocks); err != nil {
		return nil
	}
	structured := l.ToolUseResult
	if len(structured) == 0 {
		structured = l.StreamToolUseResult
	}
	var out []Entry
	var prompt []string
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			tc := r.tools[b.ToolUseID]
			if tc == nil {
				continue // a call from before this reader started (a resumed session)
			}
			delete(r.tools, b.ToolUseID)
			tc.Status = StatusCompleted
			if b.IsError {
				tc.Status = StatusFailed
			}
			full := resultText(b.Content)
			tc.Result = excerpt(full)
			if len(full) <= ResultExcerpt {
				full = "" // Result has it all
			}
			end := at
			tc.EndedAt = &end
			if d := end.Sub(tc.StartedAt); d > 0 {
				tc.DurationMs = d.Milliseconds()
			}
			if tc.Kind == ToolEdit && !b.IsError {
				if d := editedDiffs(tc, structured); d != nil {
					tc.Diffs = d
				}
			}
			out = append(out, Entry{TranscriptEntry: protocol.TranscriptEntry{Kind: KindToolCall, At: at, ToolCall: cloneCall(tc)}, FullResult: full})
		case "text":
			if !l.IsMeta && !strings.HasPrefix(b.Text, "<") && !strings.HasPrefix(b.Text, "[Request interrupted") {
				prompt = append(prompt, b.Text)
			}
		}
	}
	if len(prompt) > 0 && len(out) == 0 {
		r.turn = Usage{}
		out = append(out, Entry{TranscriptEntry: protocol.TranscriptEntry{Kind: KindPrompt, At: at, Text: strings.Join(prompt, "\n")}})
	}
	return out
}

// SetStatus changes the status of a tool call not finished yet (running once
// its permission was granted, failed when it was denied) and returns the
// entry that says so; ok is false for an unknown or finished call.
func (r *Reader) SetStatus(toolUseID, status string) (Entry, bool) {
	tc := r.tools[toolUseID]
	if tc == nil {
		// The session file can lag the hook that grants the permission:
		// keep the status for when the call's line arrives.
		if toolUseID != "" {
			if r.early == nil {
				r.early = map[string]string{}
			}
			r.early[toolUseID] = status
		}
		return Entry{}, false
	}
	if tc.Status == status {
		return Entry{}, false
	}
	tc.Status = status
	return Entry{TranscriptEntry: protocol.TranscriptEntry{Kind: KindToolCall, At: r.now(), ToolCall: cloneCall(tc)}}, true
}

// Pending returns the id of the oldest unfinished call of the named tool (""
// if none): hooks that carry no tool_use_id are matched to a call this way.
func (r *Reader) Pending(name string) string {
	var best *ToolCall
	for _, tc := range r.tools {
		if tc.Name == name && (best == nil || tc.StartedAt.Before(best.StartedAt)) {
			best = tc
		}
	}
	if best == nil {
		return ""
	}
	return best.ID
}

// Unfinished returns the calls that have no result yet (oldest first is not
// guaranteed).
func (r *Reader) Unfinished() []string {
	ids := make([]string, 0, len(r.tools))
	for id := range r.tools {
		ids = append(ids, id)
	}
	return ids
}

// Total is the usage of the session so far.
func (r *Reader) Total() Usage { return r.total }

// Turn is the usage since the last prompt.
func (r *Reader) Turn() Usage { return r.turn }

func (r *Reader) newToolCall(b block, at time.Time) *ToolCall {
	tc := &ToolCall{ID: b.ID, Name: b.Name, Input: b.Input, Status: StatusPending, StartedAt: at}
	describe(tc, r.Dir)
	if r.tools == nil {
		r.tools = map[string]*ToolCall{}
	}
	if b.ID != "" {
		r.tools[b.ID] = tc
	}
	return tc
}

func cloneCall(tc *ToolCall) *ToolCall {
	c := *tc
	c.Files = append([]string(nil), tc.Files...)
	c.Diffs = append([]FileDiff(nil), tc.Diffs...)
	return &c
}

// toolInput is the union of the input fields the built-in tools use.
type toolInput struct {
	Command      string `json:"command"`
	Description  string `json:"description"`
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
	Pattern      string `json:"pattern"`
	URL          string `json:"url"`
	Query        string `json:"query"`
	Content      string `json:"content"`
	OldString    string `json:"old_string"`
	NewString    string `json:"new_string"`
	Edits        []struct {
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	} `json:"edits"`
	Prompt string `json:"prompt"`
}

// describe fills in kind, title, files and (for edits) the intended diff.
func describe(tc *ToolCall, dir string) {
	var in toolInput
	_ = json.Unmarshal(tc.Input, &in)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) || dir == "" {
			return p
		}
		return filepath.Join(dir, p)
	}
	file := abs(in.FilePath)
	if file == "" {
		file = abs(in.NotebookPath)
	}
	if file != "" {
		tc.Files = []string{file}
	}
	switch tc.Name {
	case "Bash", "BashOutput", "KillShell", "KillBash":
		tc.Kind = ToolExecute
		tc.Title = in.Command
		if tc.Title == "" {
			tc.Title = in.Description
		}
	case "Read":
		tc.Kind, tc.Title = ToolRead, "Read "+file
	case "Write":
		tc.Kind, tc.Title = ToolEdit, "Write "+file
		tc.Diffs = []FileDiff{{Path: file, NewText: in.Content}}
	case "Edit":
		tc.Kind, tc.Title = ToolEdit, "Edit "+file
		tc.Diffs = []FileDiff{{Path: file, OldText: in.OldString, NewText: in.NewString}}
	case "MultiEdit":
		tc.Kind, tc.Title = ToolEdit, "Edit "+file
		for _, e := range in.Edits {
			tc.Diffs = append(tc.Diffs, FileDiff{Path: file, OldText: e.OldString, NewText: e.NewString})
		}
	case "NotebookEdit":
		tc.Kind, tc.Title = ToolEdit, "Edit "+file
	case "Glob", "Grep", "LS", "ToolSearch":
		tc.Kind = ToolSearch
		tc.Title = strings.TrimSpace(tc.Name + " " + firstOf(in.Pattern, in.Query, in.Path))
		if in.Path != "" {
			tc.Files = []string{abs(in.Path)}
		}
	case "WebFetch", "WebSearch":
		tc.Kind = ToolFetch
		tc.Title = strings.TrimSpace(tc.Name + " " + firstOf(in.URL, in.Query))
	case "Agent", "Task":
		tc.Kind = ToolThink
		tc.Title = strings.TrimSpace("Agent " + firstOf(in.Description, in.Prompt))
	case "TodoWrite":
		tc.Kind, tc.Title = ToolThink, "Update the plan"
	case "EnterPlanMode", "ExitPlanMode":
		tc.Kind, tc.Title = "switch_mode", tc.Name
	default:
		tc.Kind, tc.Title = ToolOther, tc.Name
	}
	tc.Title = clipRunes(strings.TrimSpace(tc.Title), maxTitle)
	if tc.Title == "" {
		tc.Title = tc.Name
	}
}

// editedDiffs takes an edit's diff from its structured result when the CLI
// gives the file as it was (Write over an existing file).
func editedDiffs(tc *ToolCall, structured json.RawMessage) []FileDiff {
	var res struct {
		Type         string  `json:"type"`
		FilePath     string  `json:"filePath"`
		Content      string  `json:"content"`
		OriginalFile *string `json:"originalFile"`
	}
	if json.Unmarshal(structured, &res) != nil || tc.Name != "Write" || res.OriginalFile == nil || len(tc.Diffs) != 1 {
		return nil
	}
	d := tc.Diffs[0]
	d.OldText = *res.OriginalFile
	return []FileDiff{d}
}

// planOf reads a TodoWrite call's todos as the plan.
func planOf(tool string, input json.RawMessage) []PlanItem {
	if tool != "TodoWrite" {
		return nil
	}
	var in struct {
		Todos []struct {
			Content string `json:"content"`
			Status  string `json:"status"`
		} `json:"todos"`
	}
	if json.Unmarshal(input, &in) != nil || in.Todos == nil {
		return nil
	}
	plan := make([]PlanItem, 0, len(in.Todos))
	for _, t := range in.Todos {
		st := t.Status
		if st != "pending" && st != "in_progress" && st != "completed" {
			st = "pending"
		}
		plan = append(plan, PlanItem{Content: t.Content, Status: st})
	}
	return plan
}

// resultText flattens a tool_result's content (a string, or text blocks).
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

func excerpt(s string) string {
	if len(s) <= ResultExcerpt {
		return s
	}
	cut := ResultExcerpt
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
