package mask

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON masks the strings inside raw: see Masker.JSON.
func JSON(raw json.RawMessage) json.RawMessage { return plain.JSON(raw) }

// JSON masks the strings inside raw (keys included) and returns valid JSON
// that is byte for byte the same but for the strings it changed, so key
// order and numbers survive. Below a key that names a secret (IsSecretName),
// string values are masked whole, in nested arrays and objects too; other
// values are masked like text. raw that is not valid JSON is masked as text.
// raw itself is returned when nothing needed masking.
func (m *Masker) JSON(raw json.RawMessage) json.RawMessage {
	if m == nil {
		m = plain
	}
	if !json.Valid(raw) {
		if s := m.String(string(raw)); s != string(raw) {
			return json.RawMessage(s)
		}
		return raw
	}
	type frame struct {
		object    bool
		secret    bool // everything below is a secret's value
		keySecret bool // the current key of an object names a secret
		wantKey   bool
	}
	var stack []frame
	secretHere := func() bool {
		if len(stack) == 0 {
			return false
		}
		if top := stack[len(stack)-1]; top.object {
			return top.keySecret
		}
		return stack[len(stack)-1].secret
	}
	var out []byte // nil until a string changes
	last := 0
	for i := 0; i < len(raw); {
		switch raw[i] {
		case '{':
			stack = append(stack, frame{object: true, secret: secretHere(), wantKey: true})
		case '[':
			stack = append(stack, frame{secret: secretHere()})
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if top := &stack[len(stack)-1]; top.object {
				top.wantKey = true
			}
		case ':':
			stack[len(stack)-1].wantKey = false
		case '"':
			end := stringEnd(raw, i)
			s := decodeString(raw[i:end])
			var masked string
			if len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantKey {
				top := &stack[len(stack)-1]
				top.keySecret = top.secret || IsSecretName(s)
				masked = m.String(s)
			} else if secretHere() {
				masked = m.whole(s)
			} else {
				masked = m.String(s)
			}
			if masked != s {
				if out == nil {
					out = make([]byte, 0, len(raw)+len(raw)/8)
				}
				out = append(out, raw[last:i]...)
				out = appendString(out, masked)
				last = end
			}
			i = end
			continue
		}
		i++
	}
	if out == nil {
		return raw
	}
	return append(out, raw[last:]...)
}

// stringEnd returns the index just past the string token starting at i of
// valid JSON.
func stringEnd(raw []byte, i int) int {
	for k := i + 1; k < len(raw); k++ {
		switch raw[k] {
		case '\\':
			k++
		case '"':
			return k + 1
		}
	}
	return len(raw)
}

// decodeString decodes a string token of valid JSON. It is what
// json.Unmarshal would give, without validating again: invalid UTF-8 and
// lone surrogates become U+FFFD.
func decodeString(tok []byte) string {
	body := tok[1 : len(tok)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body)
	}
	var b strings.Builder
	b.Grow(len(body))
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			r, size := utf8.DecodeRune(body[i:])
			b.WriteRune(r) // RuneError for invalid bytes, as json does
			i += size
			continue
		}
		e := body[i+1]
		i += 2
		switch e {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r := hex4(body[i:])
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 <= len(body) && body[i] == '\\' && body[i+1] == 'u' {
					r2 = hex4(body[i+2:])
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			b.WriteRune(r)
		default: // " \ /
			b.WriteByte(e)
		}
	}
	return b.String()
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// appendString appends s as a JSON string, leaving <, > and & readable.
func appendString(out []byte, s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(out, strings.TrimSuffix(b.String(), "\n")...)
}
