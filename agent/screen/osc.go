package screen

import (
	"bytes"
	"io"
	"strings"
)

// maxOSCPayload bounds what the filter keeps of one OSC sequence. Window
// titles are a few dozen bytes; longer payloads (OSC 52 clipboard, long
// hyperlinks) are skipped up to their terminator without being kept.
const maxOSCPayload = 4 << 10

// Control bytes the filter recognises.
const (
	bel = 0x07
	esc = 0x1b
	can = 0x18 // cancels a sequence in progress
	sub = 0x1a // cancels a sequence in progress
)

type oscState uint8

const (
	oscGround  oscState = iota // passing bytes through
	oscEscape                  // saw ESC in ground; ']' would start an OSC
	oscString                  // inside ESC ] ...
	oscStringE                 // saw ESC inside an OSC: '\' ends it (ST)
)

// OSCFilter removes OSC sequences (ESC ] ... BEL and ESC ] ... ESC \) from a
// byte stream and passes everything else to its writer unchanged.
//
// It exists because the emulator's parser takes the C1 byte 0x9C as a string
// terminator even inside UTF-8 text, so `ESC]0;✳ Claude Code BEL` (✳ is E2 9C
// B3) ends early and the rest of the title is printed onto the screen. The
// filter only honours the 7-bit terminators, which is what a UTF-8 terminal
// does.
//
// Window titles (OSC 0 and 2) are remembered: Claude puts its spinner glyph in
// front of the title while it works. Sequences may be split across writes at
// any byte. An OSC is also ended, as in xterm, by CAN, SUB, or an ESC that does
// not start ST; in the last case the ESC and what follows are passed on. Only
// the first maxOSCPayload bytes of an OSC are kept, so memory stays bounded
// whatever the stream holds.
//
// An OSCFilter is not safe for concurrent use.
type OSCFilter struct {
	w       io.Writer
	state   oscState
	payload []byte // OSC bytes after "ESC ]", at most maxOSCPayload
	long    bool   // payload outgrew maxOSCPayload; the sequence is dropped unparsed
	title   string
}

// NewOSCFilter returns a filter that writes the non-OSC bytes to w.
func NewOSCFilter(w io.Writer) *OSCFilter {
	return &OSCFilter{w: w}
}

// Title returns the window title most recently set by OSC 0 or OSC 2.
func (f *OSCFilter) Title() string { return f.title }

// Write filters p. It reports len(p) unless the underlying writer fails.
func (f *OSCFilter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		switch f.state {
		case oscGround:
			i := bytes.IndexByte(p, esc)
			if i < 0 {
				return n, f.pass(p)
			}
			// The ESC is held until the next byte says whether it starts an OSC.
			if err := f.pass(p[:i]); err != nil {
				return n, err
			}
			f.state = oscEscape
			p = p[i+1:]
		case oscEscape:
			if p[0] == ']' {
				f.state = oscString
				f.payload = f.payload[:0]
				f.long = false
				p = p[1:]
				continue
			}
			if p[0] == esc {
				// ESC ESC: the first one is void, as in a terminal's parser.
				p = p[1:]
				continue
			}
			f.state = oscGround
			if err := f.pass([]byte{esc}); err != nil {
				return n, err
			}
		case oscString:
			i := indexOSCEnd(p)
			if i < 0 {
				f.keep(p)
				return n, nil
			}
			f.keep(p[:i])
			b := p[i]
			p = p[i+1:]
			switch b {
			case bel:
				f.finish()
			case esc:
				f.state = oscStringE
			default: // CAN, SUB: the sequence is cancelled
				f.state = oscGround
			}
		case oscStringE:
			if p[0] == '\\' {
				f.finish()
				p = p[1:]
				continue
			}
			// ESC followed by anything else aborts the OSC and begins a new
			// escape sequence, which may itself be another OSC.
			f.state = oscEscape
		}
	}
	return n, nil
}

func (f *OSCFilter) pass(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	_, err := f.w.Write(p)
	return err
}

// indexOSCEnd returns the index of the first byte that ends an OSC string,
// or -1. All of them are ASCII, so they never occur inside a UTF-8 character.
func indexOSCEnd(p []byte) int {
	for i, b := range p {
		if b < 0x20 && (b == bel || b == esc || b == can || b == sub) {
			return i
		}
	}
	return -1
}

func (f *OSCFilter) keep(p []byte) {
	if f.long {
		return
	}
	if len(f.payload)+len(p) > maxOSCPayload {
		f.long = true
		f.payload = f.payload[:0]
		return
	}
	f.payload = append(f.payload, p...)
}

// finish handles a complete OSC sequence.
func (f *OSCFilter) finish() {
	f.state = oscGround
	if !f.long {
		if num, arg, ok := strings.Cut(string(f.payload), ";"); ok && (num == "0" || num == "2") {
			f.title = arg
		}
	}
	if cap(f.payload) > 256 {
		f.payload = nil // don't pin a large buffer after a rare long sequence
	}
}
