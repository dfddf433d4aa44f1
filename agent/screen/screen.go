package screen

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/charmbracelet/x/vt"
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("screen closed")

// replyQueue is how many reply chunks may wait for the replies writer before
// new ones are dropped. Replies are a few bytes each and rare (start-up
// queries), so reaching it means the reader of the PTY has stopped.
const replyQueue = 64

// Screen is the terminal as the child sees it: a vt emulator of a fixed size,
// fed with the child's output through an OSCFilter.
//
// The emulator answers terminal queries (DA, DSR/CPR, mode reports) by writing
// to a pipe that has to be read for Write to return. A Screen drains that pipe
// in its own goroutine into the replies writer given to New, which is the
// PTY's input side, so the child gets the answers a real terminal would give.
// Answers that the replies writer cannot take (it blocks, and more than
// replyQueue chunks are waiting) are dropped and counted rather than stalling
// Write.
//
// All methods are safe for concurrent use.
type Screen struct {
	mu       sync.Mutex
	emu      *vt.Emulator  // guarded by mu
	filter   *OSCFilter    // guarded by mu; writes into filtered
	filtered collector     // guarded by mu; what filter passed of one Write
	elide    *scrollElider // guarded by mu; writes filtered into emu
	closed   bool          // guarded by mu

	replies io.Writer
	queue   chan []byte // from drainReplies to forwardReplies
	dropped atomic.Int64
	wg      sync.WaitGroup // drainReplies and forwardReplies
}

// New returns a Screen of cols×rows whose terminal answers go to replies (nil
// discards them). It starts the goroutines that drain those answers; Close
// stops them.
func New(cols, rows int, replies io.Writer) *Screen {
	if replies == nil {
		replies = io.Discard
	}
	s := &Screen{
		emu:     vt.NewEmulator(cols, rows),
		replies: replies,
		queue:   make(chan []byte, replyQueue),
	}
	// Nothing reads the scrollback; the emulator's default keeps 10,000
	// lines of cells (up to ~13 KB each) and trims it by copying.
	s.emu.SetScrollbackSize(1)
	s.elide = newScrollElider(s.emu, cols, rows)
	s.filter = NewOSCFilter(&s.filtered)
	s.wg.Add(2)
	go s.drainReplies()
	go s.forwardReplies()
	return s
}

// drainReplies reads the emulator's answers as soon as they are written, so
// that a query in the output never blocks Write.
func (s *Screen) drainReplies() {
	defer s.wg.Done()
	defer close(s.queue)
	buf := make([]byte, 1024)
	for {
		n, err := s.emu.Read(buf)
		if n > 0 {
			select {
			case s.queue <- append([]byte(nil), buf[:n]...):
			default:
				s.dropped.Add(1)
			}
		}
		if err != nil {
			return
		}
	}
}

// forwardReplies writes the answers to the replies writer. A failing writer
// (the PTY is gone) does not stop it: the queue must keep moving.
func (s *Screen) forwardReplies() {
	defer s.wg.Done()
	for b := range s.queue {
		_, _ = s.replies.Write(b)
	}
}

// Write feeds the child's output to the terminal. It never blocks on the
// replies writer.
func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	// The emulator gets one Write per Write (the filter would split it at
	// every escape), so that runs of lines are whole for the elider.
	s.filtered.reset()
	_, _ = s.filter.Write(p) // collector never fails
	if len(s.filtered.b) == 0 {
		return len(p), nil
	}
	if _, err := s.elide.Write(s.filtered.b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Resize changes the terminal size; the caller resizes the PTY to match.
func (s *Screen) Resize(cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emu.Resize(cols, rows)
	s.elide.resize(cols, rows)
}

// DroppedReplies reports how many terminal answers were dropped because the
// replies writer did not keep up.
func (s *Screen) DroppedReplies() int64 { return s.dropped.Load() }

// Close stops the reply goroutines and waits for them. The owner of the
// Screen calls it when the PTY's output has ended; later calls do nothing,
// and Write then returns ErrClosed. A reply write in progress is waited for,
// so close the PTY first if a write to it may block forever. Snapshot still
// works after Close and shows the last screen.
func (s *Screen) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	// Closing the pipe's write end ends drainReplies' Read with EOF. The
	// emulator's own Close is not used here: it sets a flag that Read checks
	// without a lock.
	if c, ok := s.emu.InputPipe().(io.Closer); ok {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()

	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emu.Close()
}

// Cursor is a zero-based cell position.
type Cursor struct {
	Row, Col int
}

// Snapshot is what the terminal shows at one moment.
type Snapshot struct {
	// Lines holds one string per row, trailing spaces trimmed; the second
	// half of a wide character is not repeated. No-break spaces, which the
	// TUI uses to keep its layout, are plain spaces here.
	Lines     []string
	Cursor    Cursor
	Title     string // the window title (OSC 0/2)
	AltScreen bool   // the alternate (fullscreen) buffer is shown
	Cols      int
	Rows      int
}

// Snapshot copies the visible screen.
func (s *Screen) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	cols, rows := s.emu.Width(), s.emu.Height()
	snap := Snapshot{
		Lines:     make([]string, rows),
		Title:     s.filter.Title(),
		AltScreen: s.emu.IsAltScreen(),
		Cols:      cols,
		Rows:      rows,
	}
	pos := s.emu.CursorPosition()
	snap.Cursor = Cursor{Row: pos.Y, Col: pos.X}
	var b strings.Builder
	for y := range rows {
		b.Reset()
		for x := 0; x < cols; x++ {
			c := s.emu.CellAt(x, y)
			switch {
			case c == nil:
				b.WriteByte(' ')
			case c.Width == 0 && c.Content == "":
				// Placeholder behind a wide character.
			case c.Content == "":
				b.WriteByte(' ')
			case c.Content == "\u00a0":
				b.WriteByte(' ')
			default:
				b.WriteString(c.Content)
			}
		}
		snap.Lines[y] = strings.TrimRight(b.String(), " ")
	}
	return snap
}

// String returns the lines joined by newlines, for logs and test failures.
func (s Snapshot) String() string {
	return strings.Join(s.Lines, "\n")
}

// Text returns the screen with blank lines removed, like the captures in
// CLAUDE-CLI.md.
func (s Snapshot) Text() string {
	var b strings.Builder
	for _, l := range s.Lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		fmt.Fprintln(&b, l)
	}
	return b.String()
}
