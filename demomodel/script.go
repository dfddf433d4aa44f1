package demomodel

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Script decides the answer to each POST /v1/messages, side requests
// included (see Request.IsSideRequest). The server calls it from one
// goroutine at a time, so a script may keep state without locking.
type Script func(req Request) Reply

// Reply is what one request gets back.
type Reply struct {
	Text       string        // a text block (may be empty if ToolUses is set)
	Thinking   string        // a thinking block before the text, if set (signed with a fake signature)
	Pace       time.Duration // the pause between thinking and text deltas, so they arrive apart as a model's tokens do
	ToolUses   []ToolUse     // tool_use blocks, after the text, streamed with input_json_delta
	StopReason string        // default: "tool_use" if ToolUses is set, else "end_turn"
	Status     int           // non-zero: answer with this HTTP error status and a JSON error body instead
	Error      string        // the error message for Status (default: the status text)
	Retryable  bool          // with Status: let the CLI retry (by default x-should-retry: false stops it)
	Delay      time.Duration // wait this long before answering (ends early if the request is cancelled)
	// Header is added to the answer's HTTP headers (e.g. the
	// anthropic-ratelimit-unified-* headers of a usage-limit refusal; see
	// UsageLimitReply).
	Header map[string]string
}

// UsageLimitReply is the answer a claude.ai subscription gets when its usage
// limit is reached, as the CLI receives it: HTTP 429 rate_limit_error with the
// unified rate-limit headers saying "rejected", which limit, and when it
// resets. The CLI turns it into "You've hit your 5-hour limit · resets
// <time>" and api_error "usage_limit_reached" with the reset time (only when
// it authenticates with a claude.ai OAuth login; with an API key it is a
// plain 429).
func UsageLimitReply(resetsAt time.Time) Reply {
	return Reply{
		Status: 429,
		Error:  "This request would exceed your account's rate limit. Please try again later.",
		Header: map[string]string{
			"anthropic-ratelimit-unified-status":               "rejected",
			"anthropic-ratelimit-unified-reset":                strconv.FormatInt(resetsAt.Unix(), 10),
			"anthropic-ratelimit-unified-representative-claim": "five_hour",
		},
	}
}

// ToolUse is one tool call the model makes.
type ToolUse struct {
	ID    string // generated ("toolu_…") if empty
	Name  string
	Input any // marshalled to JSON; json.RawMessage, []byte and string are used verbatim; nil is {}
}

// resolve fills in what a reply leaves to defaults: tool use IDs and the
// stop reason.
func (r Reply) resolve(newID func(prefix string) string) Reply {
	if len(r.ToolUses) > 0 {
		uses := make([]ToolUse, len(r.ToolUses))
		copy(uses, r.ToolUses)
		for i := range uses {
			if uses[i].ID == "" {
				uses[i].ID = newID("toolu_")
			}
		}
		r.ToolUses = uses
	}
	if r.StopReason == "" && r.Status == 0 {
		if len(r.ToolUses) > 0 {
			r.StopReason = "tool_use"
		} else {
			r.StopReason = "end_turn"
		}
	}
	return r
}

// Texts the stock scripts answer with.
const (
	// DoneText answers main requests once a Sequence or a prompt's
	// directives are used up.
	DoneText = "done"
	// SideText answers side requests (SideReply); it is also the title
	// given to a title request.
	SideText = "Fake session"
	// NoDirectiveText answers a PromptScript prompt that has no directives.
	NoDirectiveText = "OK, this is the fake API answering."
)

// Sequence answers the i-th main request with replies[i] and every main
// request after the last with Reply{Text: DoneText}; side requests get a
// harmless answer (SideReply) and do not use up a reply.
//
// After a non-retryable error reply (Status set, Retryable false) the CLI
// may still resend the same conversation: on a 400 it retries with fewer
// beta features (five resends observed with 2.1.330). Such resends get the
// same error and do not use up a reply either, so the next reply answers the
// next turn, as the test meant.
func Sequence(replies ...Reply) Script {
	var (
		mu       sync.Mutex // the server serializes calls; this makes the script safe on its own too
		next     int
		lastKey  string // conversation of the last main request, when it got a final error
		lastFail Reply
	)
	return func(req Request) Reply {
		if req.IsSideRequest() {
			return SideReply(req)
		}
		mu.Lock()
		defer mu.Unlock()
		key := req.conversationKey()
		if lastKey != "" && key == lastKey {
			return lastFail
		}
		lastKey = ""
		if next >= len(replies) {
			return Reply{Text: DoneText}
		}
		reply := replies[next]
		next++
		if reply.Status != 0 && !reply.Retryable {
			lastKey, lastFail = key, reply
		}
		return reply
	}
}

// Directives a PromptScript prompt can contain, each at the start of a line
// (leading spaces allowed):
//
//	@@TOOL <Name> <json input>   a tool_use (input {} when left out)
//	@@ALSO <Name> <json input>   one more tool_use in the step before, if it is a tool step
//	@@TEXT <text>                a text answer; \n, \t and \\ are unescaped
//	@@ERROR <status> <message>   an HTTP error status with that message
//	@@DELAY <duration>           delays the next step (time.ParseDuration syntax)
//	@@THINK <text>               the next step starts with this thinking (escapes as @@TEXT)
//	@@PACE <duration>            the next step's thinking and text deltas come this far apart
//
// Other lines are ignored, so a prompt can say something before its script.
const (
	DirectiveTool  = "@@TOOL"
	DirectiveText  = "@@TEXT"
	DirectiveError = "@@ERROR"
	DirectiveDelay = "@@DELAY"
	DirectiveThink = "@@THINK"
	DirectivePace  = "@@PACE"
	// DirectiveAlso lets one model turn call several tools, as a model does:
	// a long transcript then costs a model round trip per turn, not per call
	// (the UI test's 150-call task).
	DirectiveAlso = "@@ALSO"
)

// PromptScript answers from directives embedded in the user's prompt, so an
// end-to-end test only has to send a prompt. Step k (from 0) answers the
// main request that follows k model turns after the last user prompt that
// contains directives; a user message that only carries tool results is not
// a prompt. It keeps no state: the position is read from the conversation
// the request carries, so it works across processes, resumed sessions and
// several sessions sharing a server.
//
// A conversation without directives gets NoDirectiveText; once the steps are
// used up, main requests get DoneText; side requests get SideReply. A resend
// of a turn (the CLI's retries) carries the same conversation and so gets
// the same step: an @@ERROR step ends the turn with an error result.
func PromptScript() Script {
	return func(req Request) Reply {
		if req.IsSideRequest() {
			return SideReply(req)
		}
		steps, turns, ok := req.promptSteps()
		switch {
		case !ok:
			return Reply{Text: NoDirectiveText}
		case turns < len(steps):
			return steps[turns]
		default:
			return Reply{Text: DoneText}
		}
	}
}

// promptSteps finds the last user prompt with directives and returns its
// steps and how many model turns (runs of assistant messages) followed it.
func (r Request) promptSteps() (steps []Reply, turns int, ok bool) {
	at := -1
	for i := len(r.Messages) - 1; i >= 0 && at < 0; i-- {
		m := r.Messages[i]
		if !m.isPrompt() {
			continue
		}
		if s := ParseDirectives(m.userText()); len(s) > 0 {
			steps, at = s, i
		}
	}
	if at < 0 {
		return nil, 0, false
	}
	// A system-role entry can sit anywhere (CLAUDE-CLI.md, top); only a
	// user message ends a run of assistant messages.
	inTurn := false
	for _, m := range r.Messages[at+1:] {
		switch m.Role {
		case "assistant":
			if m.resumedUnanswered() {
				// Not a model turn: claude's stand-in for a request that
				// got no answer before its process was killed.
				continue
			}
			if !inTurn {
				turns++
			}
			inTurn = true
		case "user":
			inTurn = false
		}
	}
	return steps, turns, true
}

// unansweredText is what claude puts in a resumed session's history for a
// request that was in flight when its process was killed (CLAUDE-CLI.md,
// "A session resumed after a kill"): an assistant entry the model never
// sent.
const unansweredText = "No response requested."

// resumedUnanswered says m is claude's stand-in for an unanswered request.
func (m Message) resumedUnanswered() bool {
	return m.Role == "assistant" && len(m.Content) == 1 && m.Content[0].Type == "text" && strings.TrimSpace(m.Content[0].Text) == unansweredText
}

// ParseDirectives returns the steps a prompt's directives describe, in
// order; nil if it has none. A malformed directive becomes a text step that
// says what is wrong, so the test sees it in the CLI's result.
func ParseDirectives(prompt string) []Reply {
	var (
		steps       []Reply
		delay, pace time.Duration
		thinking    string
	)
	for line := range strings.Lines(prompt) {
		line = strings.TrimSpace(line)
		word, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		var step Reply
		switch word {
		case DirectiveTool:
			step = toolStep(rest)
		case DirectiveAlso:
			step = toolStep(rest)
			if n := len(steps); n > 0 && len(steps[n-1].ToolUses) > 0 && len(step.ToolUses) > 0 {
				steps[n-1].ToolUses = append(steps[n-1].ToolUses, step.ToolUses...)
				continue
			}
		case DirectiveText:
			step = Reply{Text: unescape(rest)}
		case DirectiveError:
			step = errorStep(rest)
		case DirectiveDelay, DirectivePace:
			d, err := time.ParseDuration(rest)
			if err != nil {
				steps = append(steps, Reply{Text: fmt.Sprintf("demomodel: bad %s %q: %v", word, rest, err)})
				continue
			}
			if word == DirectiveDelay {
				delay = d
			} else {
				pace = d
			}
			continue
		case DirectiveThink:
			thinking = unescape(rest)
			continue
		default:
			continue
		}
		step.Delay, delay = delay, 0
		step.Pace, pace = pace, 0
		step.Thinking, thinking = thinking, ""
		steps = append(steps, step)
	}
	return steps
}

func toolStep(rest string) Reply {
	name, input, _ := strings.Cut(rest, " ")
	input = strings.TrimSpace(input)
	if name == "" {
		return Reply{Text: "demomodel: " + DirectiveTool + " needs a tool name"}
	}
	if input == "" {
		input = "{}"
	}
	if !json.Valid([]byte(input)) {
		return Reply{Text: fmt.Sprintf("demomodel: %s %s: input is not valid JSON: %s", DirectiveTool, name, input)}
	}
	return Reply{ToolUses: []ToolUse{{Name: name, Input: json.RawMessage(input)}}}
}

func errorStep(rest string) Reply {
	code, msg, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(code)
	if err != nil || status < 400 || status > 599 {
		return Reply{Text: fmt.Sprintf("demomodel: %s needs a status 400-599, got %q", DirectiveError, code)}
	}
	return Reply{Status: status, Error: strings.TrimSpace(msg)}
}

// unescape turns the escapes \n, \t and \\ into what they stand for, so a
// one-line directive can carry a multi-line text. Other backslashes stay.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '\\':
			b.WriteByte('\\')
		default:
			b.WriteByte(s[i])
			continue
		}
		i++
	}
	return b.String()
}
