package agent

import (
	"bytes"
	"io"
)

// streamEventPrefix starts the stream_event lines of --include-partial-messages.
var streamEventPrefix = []byte(`{"type":"stream_event"`)

// lineDropper passes a stream-json output on, without its stream_event
// lines. Those carry the answer in deltas a few characters long, for the
// transcript only: in the raw output (the log and task/output) a secret
// would be cut into pieces between JSON lines, and no masking sees pieces
// as the secret. The whole blocks follow in assistant lines, as without
// partial messages. It decides at each line's start and never holds more
// than the prefix.
type lineDropper struct {
	w    io.Writer
	head []byte // the start of the current line, while it may still be a stream_event
	// drop or pass: the rest of the current line, once decided.
	drop, pass bool
	closeW     bool // Close closes w (a filter of the caller's; never the file itself)
}

func (d *lineDropper) Write(p []byte) (int, error) {
	n := len(p)
	var out []byte
	for len(p) > 0 {
		switch {
		case d.drop || d.pass:
			i := bytes.IndexByte(p, '\n')
			end := len(p)
			if i >= 0 {
				end = i + 1
			}
			if d.pass {
				out = append(out, p[:end]...)
			}
			if i >= 0 {
				d.drop, d.pass = false, false
			}
			p = p[end:]
		default:
			k := min(len(streamEventPrefix)-len(d.head), len(p))
			if i := bytes.IndexByte(p[:k], '\n'); i >= 0 {
				k = i + 1 // a line shorter than the prefix
			}
			d.head = append(d.head, p[:k]...)
			p = p[k:]
			switch {
			case bytes.Equal(d.head, streamEventPrefix):
				d.drop, d.head = true, d.head[:0]
			case !bytes.HasPrefix(streamEventPrefix, d.head) || d.head[len(d.head)-1] == '\n':
				out = append(out, d.head...)
				d.pass = d.head[len(d.head)-1] != '\n'
				d.head = d.head[:0]
			}
		}
	}
	if len(out) > 0 {
		if _, err := d.w.Write(out); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Close passes on a line start it still held and, if closeW, closes w.
func (d *lineDropper) Close() error {
	if len(d.head) > 0 {
		_, _ = d.w.Write(d.head)
		d.head = nil
	}
	if c, ok := d.w.(io.Closer); ok && d.closeW {
		return c.Close()
	}
	return nil
}
