package screen_test

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent/screen"
)

// replyBuffer collects what the emulator answers and says when it has some.
type replyBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	got chan struct{} // gets a token per write
}

func newReplyBuffer() *replyBuffer { return &replyBuffer{got: make(chan struct{}, 100)} }

func (r *replyBuffer) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.buf.Write(p)
	r.mu.Unlock()
	select {
	case r.got <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (r *replyBuffer) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

// waitReplies waits until the replies contain want.
func (r *replyBuffer) waitReplies(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for !strings.Contains(r.String(), want) {
		select {
		case <-r.got:
		case <-timeout:
			t.Fatalf("replies %q never contained %q", r.String(), want)
		}
	}
}

// writeWithin runs s.Write(p) and fails if it does not return in time.
func writeWithin(t *testing.T, s *screen.Screen, p string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Write([]byte(p))
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("Write(%q) blocked", p)
	}
}

// A cursor position query must not block Write, and its answer reaches the
// replies writer (the PTY), as a terminal's would.
func TestScreenAnswersQueries(t *testing.T) {
	replies := newReplyBuffer()
	s := screen.New(80, 24, replies)
	defer s.Close()
	writeWithin(t, s, "\x1b[5;10H\x1b[6n")
	replies.waitReplies(t, "\x1b[5;10R")
	// Many queries in one write, more than the reply queue holds at once.
	writeWithin(t, s, strings.Repeat("\x1b[c\x1b[6n", 500))
	replies.waitReplies(t, "\x1b[?62;")
}

// A replies writer that never returns must not stall Write: answers are
// dropped once the queue is full.
func TestScreenStuckRepliesWriter(t *testing.T) {
	stuck := &blockingWriter{release: make(chan struct{})}
	s := screen.New(80, 24, stuck)
	writeWithin(t, s, strings.Repeat("\x1b[6n", 1000))
	if s.DroppedReplies() == 0 {
		t.Errorf("no replies dropped with a stuck writer")
	}
	close(stuck.release) // what closing the PTY does to a blocked write
	s.Close()
}

type blockingWriter struct{ release chan struct{} }

func (b *blockingWriter) Write(p []byte) (int, error) {
	<-b.release
	return 0, io.ErrClosedPipe
}

func TestScreenCloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		s := screen.New(80, 24, io.Discard)
		s.Write([]byte("\x1b[6nhello"))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal("second Close:", err)
		}
		if _, err := s.Write([]byte("x")); err != screen.ErrClosed {
			t.Fatalf("Write after Close: %v, want ErrClosed", err)
		}
		if got := s.Snapshot().Lines[0]; got != "hello" {
			t.Fatalf("Snapshot after Close: %q", got)
		}
	}
	// Close waited for its goroutines, so none of the 40 is left; allow for
	// unrelated runtime goroutines coming and going.
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > before+2 {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d before, %d after closing every Screen", before, runtime.NumGoroutine())
		}
		<-tick.C
	}
}

func TestScreenSnapshot(t *testing.T) {
	s := screen.New(20, 5, nil)
	defer s.Close()
	s.Write([]byte("main screen\r\n"))
	s.Write([]byte("\x1b[?1049h")) // Claude's fullscreen mode
	s.Write([]byte("\x1b[1;1H漢字 wide\x1b[2;3H❯ x   \x1b[3;1H✻ Baked"))
	snap := s.Snapshot()
	if !snap.AltScreen {
		t.Error("AltScreen false after ?1049h")
	}
	want := []string{"漢字 wide", "  ❯ x", "✻ Baked", "", ""}
	if strings.Join(snap.Lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%q\nwant:\n%q", snap.Lines, want)
	}
	if snap.Cursor != (screen.Cursor{Row: 2, Col: 7}) {
		t.Errorf("cursor %+v, want row 2 col 7", snap.Cursor)
	}
	if snap.Cols != 20 || snap.Rows != 5 {
		t.Errorf("size %dx%d", snap.Cols, snap.Rows)
	}
	s.Write([]byte("\x1b[?1049l"))
	if snap := s.Snapshot(); snap.AltScreen || snap.Lines[0] != "main screen" {
		t.Errorf("after ?1049l: alt %v, line 0 %q", snap.AltScreen, snap.Lines[0])
	}
	s.Resize(30, 6)
	if snap := s.Snapshot(); snap.Cols != 30 || snap.Rows != 6 || len(snap.Lines) != 6 {
		t.Errorf("after Resize: %dx%d, %d lines", snap.Cols, snap.Rows, len(snap.Lines))
	}
}

// Writes and snapshots from different goroutines (run with -race).
func TestScreenConcurrentUse(t *testing.T) {
	s := screen.New(80, 24, io.Discard)
	defer s.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 200 {
			s.Write([]byte("\x1b]0;✳ title\x07line \x1b[6n"))
			if i%50 == 0 {
				s.Resize(80+i%3, 24)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range 200 {
			_ = screen.Classify(s.Snapshot())
		}
	}()
	wg.Wait()
}
