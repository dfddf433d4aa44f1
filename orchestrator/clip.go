package orchestrator

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/familiar-dev/familiar/protocol"
)

// maxText is the most of any single text (tool input or result, message)
// that events, notifications other than task/output, and the store keep.
// The raw output log has everything.
const maxText = 30 << 10

// clip cuts s to maxText bytes on a character boundary and reports whether
// it did.
func clip(s string) (string, bool) { return clipAt(s, maxText) }

// clipAt cuts s to n bytes on a character boundary.
func clipAt(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// clipJSON keeps a JSON value whole when it is small, else replaces it with
// a note of its size and a preview of its text.
func clipJSON(raw json.RawMessage) (json.RawMessage, bool) { return clipJSONAt(raw, maxText) }

// clipJSONAt is clipJSON with a limit of n bytes.
func clipJSONAt(raw json.RawMessage, n int) (json.RawMessage, bool) {
	if len(raw) <= n {
		return raw, false
	}
	preview, _ := clipAt(string(raw), n)
	b, _ := json.Marshal(map[string]any{"truncated": true, "originalSize": len(raw), "preview": preview})
	return b, true
}

// maxStepText bounds each text of a step that task/get returns: a task may
// have a thousand of them. The whole call is in its task/transcript events.
const maxStepText = 2 << 10

// compactStep is a tool call as a step of task/get: input and result
// previews, no diffs.
func compactStep(tc protocol.ToolCall) protocol.ToolCall {
	tc.Input, _ = clipJSONAt(tc.Input, maxStepText)
	tc.Result, _ = clipAt(tc.Result, maxStepText)
	tc.Diffs = nil
	return tc
}
