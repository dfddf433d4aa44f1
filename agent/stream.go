package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/agent/screen"
)

// streamDriver drives `claude -p --input-format stream-json --output-format
// stream-json --verbose --permission-prompt-tool stdio` (CLAUDE-CLI.md §4).
// Every can_use_tool control request becomes a Question; answers become
// control responses. Only whole JSON lines are ever written to its stdin: a
// stray line kills the CLI.
type streamDriver struct {
	s *Session

	writeMu sync.Mutex // serialises lines to stdin

	// rawOutput sends stdout on as EventOutput, without stream_event lines;
	// written only by the reader goroutine (readOutput).
	rawOutput *lineDropper

	askMu sync.Mutex
	// asking is each can_use_tool request still waiting for the person,
	// by request id: the CLI withdraws it with a control_cancel_request
	// (an interrupt does).
	asking map[string]asking // guarded by askMu

	// Touched only by the reader goroutine (feed):
	partial     []byte
	lastText    string
	resetsAt    time.Time       // from a rejected rate_limit_event, for the result that follows
	mcpReported map[string]bool // failed MCP servers already reported
	lastCost    float64         // the CLI's cost so far: result lines carry the process's running total
}

// ProblemMCPFailed starts the Problem text of an MCP server that claude
// could not start.
const ProblemMCPFailed = "an MCP server failed to start in claude"

// asking is one can_use_tool request put to the person.
type asking struct {
	cancel context.CancelFunc // withdraws the question
	done   chan struct{}      // closed once its asker returned
}

func newStreamDriver(s *Session) (driver, error) {
	d := &streamDriver{s: s}
	// The transcript is stdout's stream-json, not a session file.
	s.tr.r.StreamJSON = true
	// The raw output shows stream-json without its stream_event lines
	// (see lineDropper).
	d.rawOutput = &lineDropper{w: writerFunc(func(p []byte) (int, error) {
		s.emit(Event{Kind: EventOutput, Output: append([]byte(nil), p...)})
		return len(p), nil
	})}
	return d, nil
}

// prepare subscribes to hooks only where claude has the skills'
// shell-command gate: tool calls ask over stdio, a skill's shell commands
// have only their hook (CLAUDE-CLI.md Part B §3.1).
func (d *streamDriver) prepare() (map[string]any, map[string]string, func()) {
	o := &d.s.opts
	if o.Hooks == nil || !HasSkillShellHook(o.CLI.Version) {
		return nil, nil, nil
	}
	url, secret, unregister := o.Hooks.Register(d.s.streamHook)
	return sessionHookSettings(nil, o.CLI.Version, url, secret, int(o.HookTimeout/time.Second)), nil, unregister
}

func (d *streamDriver) args(settingsPath string) []string { return streamArgs(&d.s.opts, settingsPath) }

func (d *streamDriver) pipes() bool { return true }

// logFilter drops the stream_event lines from the log (see lineDropper),
// behind the caller's filter.
func (d *streamDriver) logFilter(f func(io.Writer) io.WriteCloser) func(io.Writer) io.WriteCloser {
	return func(w io.Writer) io.WriteCloser {
		if f != nil {
			return &lineDropper{w: f(w), closeW: true}
		}
		return &lineDropper{w: w}
	}
}

func (d *streamDriver) attach() {}

// firstPrompt sends the first prompt as a stream-json line; its stderr is
// diagnostics and goes to the log only.
func (d *streamDriver) firstPrompt() {
	if p := d.s.opts.Prompt; p != "" {
		if err := d.sendPrompt(p); err != nil {
			d.s.emit(Event{Kind: EventProblem, Problem: err.Error()})
		}
	}
}

func (d *streamDriver) output(p []byte) {
	if !d.s.opts.NoOutputEvents {
		_, _ = d.rawOutput.Write(p)
	}
	d.feed(p)
}

func (d *streamDriver) exited() {}

func (d *streamDriver) input([]byte) error {
	return errors.New("the stream driver has no terminal; use SendPrompt")
}

// resize is a no-op: there is no terminal.
func (d *streamDriver) resize(int, int) error { return nil }

func (d *streamDriver) screen() screen.Snapshot { return screen.Snapshot{} }

func streamArgs(o *Options, settingsPath string) []string {
	// --include-partial-messages: the response's stream events too, so the
	// transcript has the text and thinking as they stream (CLAUDE-CLI.md §4.2).
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json",
		"--verbose", "--permission-prompt-tool", "stdio", "--include-partial-messages"}
	return append(args, o.commonArgs(settingsPath)...)
}

// maxStreamLine bounds one stdout line; a tool result can be large.
const maxStreamLine = 64 << 20

// feed takes stdout bytes in order and handles each complete line.
func (d *streamDriver) feed(p []byte) {
	d.partial = append(d.partial, p...)
	for {
		i := bytes.IndexByte(d.partial, '\n')
		if i < 0 {
			break
		}
		line := d.partial[:i]
		d.handleLine(bytes.TrimSpace(line))
		d.partial = d.partial[i+1:]
	}
	// What streamed in this read goes out as one chunk.
	d.s.tr.flush()
	if len(d.partial) > maxStreamLine {
		d.s.emit(Event{Kind: EventProblem, Problem: fmt.Sprintf("stream line over %d bytes dropped", maxStreamLine)})
		d.partial = nil
	}
	if len(d.partial) == 0 {
		d.partial = nil // let a big buffer go
	}
}

type streamMessage struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Message   struct {
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
		} `json:"content"`
	} `json:"message"`
	// result
	Result       string  `json:"result"`
	IsError      bool    `json:"is_error"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	Usage        struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	TerminalReason string `json:"terminal_reason"`
	APIErrorStatus int    `json:"api_error_status"`
	APIError       string `json:"api_error"`
	// system/api_retry
	Attempt     int    `json:"attempt"`
	MaxRetries  int    `json:"max_retries"`
	ErrorStatus int    `json:"error_status"`
	Error       string `json:"error"`
	// rate_limit_event
	RateLimitInfo struct {
		Status   string `json:"status"`
		ResetsAt int64  `json:"resetsAt"`
	} `json:"rate_limit_info"`
	// system/init
	MCPServers []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"mcp_servers"`
}

type canUseTool struct {
	Subtype     string          `json:"subtype"`
	ToolName    string          `json:"tool_name"`
	Input       json.RawMessage `json:"input"`
	Suggestions json.RawMessage `json:"permission_suggestions"`
	Reason      string          `json:"decision_reason"`
	ToolUseID   string          `json:"tool_use_id"`
}

func (d *streamDriver) handleLine(line []byte) {
	if len(line) == 0 {
		return
	}
	d.s.watchdog.Kick()
	var m streamMessage
	if err := json.Unmarshal(line, &m); err != nil {
		// The CLI writes only JSON here; anything else is reported, not fatal.
		d.s.logger.Debug("non-JSON stream line", "len", len(line))
		return
	}
	s := d.s
	switch m.Type {
	case "system":
		switch m.Subtype {
		case "init":
			s.mu.Lock()
			s.retry = APIRetry{} // init starts every turn; its retries count from 1
			s.mu.Unlock()
			s.setActivity(Activity{State: ActivityThinking})
			// init comes at every turn; report each failed server once.
			for _, m := range m.MCPServers {
				if m.Status == "failed" && !d.mcpReported[m.Name] {
					if d.mcpReported == nil {
						d.mcpReported = map[string]bool{}
					}
					d.mcpReported[m.Name] = true
					s.emit(Event{Kind: EventProblem, Problem: ProblemMCPFailed + ": " + m.Name})
				}
			}
		case "api_retry":
			msg := m.Error
			if m.ErrorStatus == 0 && msg == "unknown" {
				msg = "" // what 2.1.330 says of a refused connection: nothing
			}
			s.apiRetry(APIRetry{Attempt: m.Attempt, MaxAttempts: m.MaxRetries, Status: m.ErrorStatus, Message: msg})
		}
	case "rate_limit_event":
		if m.RateLimitInfo.Status == "rejected" && m.RateLimitInfo.ResetsAt > 0 {
			d.resetsAt = time.Unix(m.RateLimitInfo.ResetsAt, 0)
		}
	case "stream_event":
		s.tr.line(line)
	case "tool_progress":
		// A heartbeat while a tool runs; the command watch decides whether
		// the command itself makes progress.
	case "assistant":
		s.tr.line(line)
		for _, c := range m.Message.Content {
			switch c.Type {
			case "tool_use":
				s.setActivity(toolActivity(c.Name, c.Input))
				s.commandStarted(c.ID, c.Name, c.Input)
				s.skillUsed(c.Name, c.Input)
			case "text":
				if c.Text != "" {
					d.lastText = c.Text
				}
			}
		}
	case "user":
		for _, c := range m.Message.Content {
			if c.Type == "tool_result" {
				s.commandEnded(c.ToolUseID)
			}
		}
		s.tr.line(line)
		s.setActivity(Activity{State: ActivityThinking})
	case "control_request":
		var req canUseTool
		if err := json.Unmarshal(m.Request, &req); err != nil || req.Subtype != "can_use_tool" {
			return
		}
		ctx, cancel := context.WithCancel(s.ctx)
		a := asking{cancel: cancel, done: make(chan struct{})}
		d.askMu.Lock()
		if d.asking == nil {
			d.asking = map[string]asking{}
		}
		d.asking[m.RequestID] = a
		d.askMu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer close(a.done)
			defer func() {
				d.askMu.Lock()
				delete(d.asking, m.RequestID)
				d.askMu.Unlock()
				cancel()
			}()
			d.askPermission(ctx, m.RequestID, req)
		}()
	case "control_cancel_request":
		// The CLI no longer waits for this answer: its question is
		// resolved by the agent, and nobody answers it. The reader waits
		// for the question's withdrawal before it reads on: an interrupt's
		// result follows at once, and a turn that ended with its
		// permission still pending reads as waiting on the person, which
		// a withdrawal after it turned into a running task with an idle
		// claude (an ACP session/cancel whose prompt never returned).
		d.askMu.Lock()
		a, ok := d.asking[m.RequestID]
		d.askMu.Unlock()
		if ok {
			a.cancel()
			// The asker returns as soon as its context ends (waitAnswer);
			// emitting never blocks.
			select {
			case <-a.done:
			case <-s.ctx.Done():
			}
		}
	case "result":
		s.tr.line(line)
		msg := m.Result
		if msg == "" {
			msg = d.lastText
		}
		d.lastText = ""
		cost := m.TotalCostUSD - d.lastCost
		d.lastCost = m.TotalCostUSD
		turn := &TurnEnded{
			LastMessage:  msg,
			Failed:       m.IsError,
			CostUSD:      cost,
			InputTokens:  m.Usage.InputTokens,
			OutputTokens: m.Usage.OutputTokens,
			Usage:        s.tr.turnUsage(),
		}
		if m.IsError {
			turn.Error = m.Result
			if m.TerminalReason != "" {
				turn.Error = m.TerminalReason + ": " + m.Result
			}
			if m.TerminalReason == "api_error" || m.APIErrorStatus != 0 || m.APIError != "" {
				turn.Failure = &Failure{
					Kind:    classifyFailure(m.APIErrorStatus, m.APIError, "", m.Result),
					Status:  m.APIErrorStatus,
					Message: m.Result,
				}
				if turn.Failure.Kind == FailureUsageLimit {
					turn.Failure.ResetsAt = d.resetsAt
					if turn.Failure.ResetsAt.IsZero() {
						turn.Failure.ResetsAt, _ = parseResetTime(m.Result, s.opts.Clock.Now())
					}
				}
			}
		}
		d.resetsAt = time.Time{}
		s.commandEnded("")
		s.endTurn(turn)
	}
}

// askPermission puts one can_use_tool request to the person and answers it.
// It runs in its own goroutine: the reader must keep reading meanwhile.
func (d *streamDriver) askPermission(ctx context.Context, requestID string, req canUseTool) {
	s := d.s
	var decision map[string]any
	if req.ToolName == "AskUserQuestion" {
		decision = s.askChoices(ctx, req.Input, "stream")
	} else {
		p := &pendingQuestion{
			q: Question{
				Kind: KindPermission, Text: permissionText(req.ToolName, req.Input),
				Tool: req.ToolName, Input: req.Input, ToolUseID: req.ToolUseID, Options: s.permissionOptions(req.ToolName, req.Input), AllowText: true,
			},
			tool: req.ToolName, input: req.Input, source: "stream",
		}
		a, ok := s.ask(ctx, p)
		if !ok {
			return // withdrawn, or the session is ending
		}
		decision = permissionDecision(p, a, req.Suggestions)
		if decision["behavior"] == "allow" {
			s.tr.setStatus(req.ToolUseID, req.ToolName, "running")
		}
	}
	if decision == nil {
		return
	}
	if err := d.writeJSON(map[string]any{
		"type": "control_response",
		"response": map[string]any{
			"subtype": "success", "request_id": requestID, "response": decision,
		},
	}); err != nil {
		s.emit(Event{Kind: EventProblem, Problem: "could not answer the permission request: " + err.Error()})
	}
}

func (d *streamDriver) sendPrompt(text string) error {
	// stream-json does not echo the prompt; the transcript still shows it.
	d.s.tr.prompt(text)
	return d.writeJSON(map[string]any{
		"type":    "user",
		"message": map[string]any{"role": "user", "content": text},
	})
}

func (d *streamDriver) interrupt() error {
	return d.writeJSON(map[string]any{
		"type":       "control_request",
		"request_id": "interrupt-" + randomHex(4),
		"request":    map[string]any{"subtype": "interrupt"},
	})
}

// writeJSON writes one JSON line. json.Marshal never emits a raw newline, so
// the line cannot be split.
func (d *streamDriver) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode stream message: %w", err)
	}
	b = append(b, '\n')
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	if _, err := d.s.proc.Write(b); err != nil {
		return fmt.Errorf("write to claude: %w", err)
	}
	return nil
}

var _ = context.Background
