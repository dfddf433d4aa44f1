package agent

import (
	"bytes"
	"strings"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/agent/transcript"
	"github.com/familiar-dev/familiar/protocol"
)

// transcriptFeed turns what the session's transcript says (the session file
// under the PTY driver, stdout lines under the stream driver) into
// EventTranscript events, and knows the tool calls not finished yet so a
// permission answer can mark one running.
type transcriptFeed struct {
	s *Session

	mu       sync.Mutex        // serialises reading and emitting, so entries keep their order
	r        transcript.Reader // guarded by mu
	lastText string            // guarded by mu; the last assistant text seen
	// pending is streamed text or thinking not emitted yet: the deltas of
	// one read of stdout are merged into one chunk (stream driver).
	pending *transcript.Entry // guarded by mu
	tail    *transcript.Tail  // guarded by mu; PTY only
	resumed bool              // the session file holds earlier turns: start at its end
}

func newTranscriptFeed(s *Session) *transcriptFeed {
	f := &transcriptFeed{s: s, resumed: s.opts.Resume}
	f.r.Dir = s.opts.Dir
	f.r.Now = s.opts.Clock.Now
	return f
}

// line reads one line of either source. Text and thinking deltas (a
// stream_event line) wait in pending for flush, merged with the ones next
// to them; any other line sends them first.
func (f *transcriptFeed) line(l []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	entries := f.r.Line(l)
	for _, e := range entries {
		if !e.Delta {
			f.flushLocked()
			f.emitLocked(e)
			continue
		}
		if p := f.pending; p != nil && p.Kind == e.Kind && p.MessageID == e.MessageID {
			p.Text += e.Text
			p.Final = e.Final
		} else {
			f.flushLocked()
			f.pending = &e
		}
		if e.Final {
			f.flushLocked()
		}
	}
	if len(entries) == 0 && !bytes.Contains(l, []byte(`"stream_event"`)) {
		f.flushLocked()
	}
}

// flush sends the streamed text read so far: the stream driver calls it
// after each read of stdout, so text is sent as it arrives, a chunk per
// read rather than per delta.
func (f *transcriptFeed) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushLocked()
}

func (f *transcriptFeed) flushLocked() {
	if f.pending != nil {
		e := *f.pending
		f.pending = nil
		f.emitLocked(e)
	}
}

func (f *transcriptFeed) emitLocked(e transcript.Entry) {
	if e.Kind == transcript.KindText {
		f.lastText = e.Text
	}
	f.s.emit(Event{Kind: EventTranscript, At: e.At, Transcript: &e})
}

// prompt reports a prompt the driver sent (stream-json does not echo it).
func (f *transcriptFeed) prompt(text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emitLocked(transcript.Entry{TranscriptEntry: protocol.TranscriptEntry{Kind: transcript.KindPrompt, At: f.s.opts.Clock.Now(), Text: text}})
}

// setStatus marks a tool call running (its permission was granted) or failed.
// id may be "" with name set: the oldest unfinished call of that tool.
func (f *transcriptFeed) setStatus(id, name, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id == "" {
		id = f.r.Pending(name)
	}
	if e, ok := f.r.SetStatus(id, status); ok {
		f.emitLocked(e)
	}
}

// pendingID is the id of the oldest unfinished call of a tool.
func (f *transcriptFeed) pendingID(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.r.Pending(name)
}

// turnUsage is the usage since the last prompt.
func (f *transcriptFeed) turnUsage() *protocol.Usage {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.r.Turn()
	if t.Responses == 0 {
		return nil
	}
	return &t
}

// follow starts (or moves) the tail of the session file. The path comes
// from the hooks' transcript_path when they tell one; until then it is where
// the CLI puts it (CLAUDE-CLI.md §6).
func (f *transcriptFeed) follow(path string) {
	f.mu.Lock()
	if f.tail != nil && f.tail.Path() == path {
		f.mu.Unlock()
		return
	}
	old := f.tail
	var off int64
	if f.resumed {
		off = transcript.Size(path)
	}
	f.tail = transcript.NewTail(path, off, f.line)
	f.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

func (f *transcriptFeed) currentTail() *transcript.Tail {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tail
}

// poke reads the session file soon (a hook said something happened).
func (f *transcriptFeed) poke() {
	if t := f.currentTail(); t != nil {
		t.Poke()
	}
}

// settleWithin bounds how long a turn's end waits for the session file to
// catch up with the Stop hook: the CLI buffers its writes, and on a loaded
// machine they lagged the hook by seconds. It usually takes milliseconds.
const settleWithin = 10 * time.Second

// settleEvery is how often the file is re-read while settling.
const settleEvery = 10 * time.Millisecond

// settle reads the session file until it shows the turn's last message (or
// settleWithin passes), so every entry of a turn is reported before the turn
// ends.
func (f *transcriptFeed) settle(lastMessage string) {
	t := f.currentTail()
	if t == nil {
		return
	}
	want := strings.TrimSpace(lastMessage)
	// Real time, not the session's clock: this waits on the CLI's file
	// writes, which an injected clock does not move.
	deadline := time.Now().Add(settleWithin)
	for {
		t.Sync()
		f.mu.Lock()
		done := want == "" || strings.TrimSpace(f.lastText) == want
		f.mu.Unlock()
		if done || !time.Now().Before(deadline) {
			return
		}
		tm := time.NewTimer(settleEvery)
		select {
		case <-tm.C:
		case <-f.s.ctx.Done():
			tm.Stop()
			return
		}
	}
}

// close reads what is left of the session file and stops following it.
func (f *transcriptFeed) close() {
	if t := f.currentTail(); t != nil {
		t.Close()
	}
}
