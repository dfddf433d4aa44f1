package orchestrator

import (
	"encoding/json"
	"unicode/utf8"
)

// maxText is the most of any single text (tool input or result, message)
// that events, notifications other than task/output, and the store keep.
// The raw output log has everything.
const maxText = 30 << 10

// clip cuts s to maxText bytes on a character boundary and reports whether
// it did.
func clip(s string) (string, bool) {
	if len(s) <= maxText {
		return s, false
	}
	cut := maxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// clipJSON keeps a JSON value whole when it is small, else replaces it with
// a note of its size and a preview of its text.
func clipJSON(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) <= maxText {
		return raw, false
	}
	preview, _ := clip(string(raw))
	b, _ := json.Marshal(map[string]any{"truncated": true, "originalSize": len(raw), "preview": preview})
	return b, true
}
