package screen

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/x/vt"
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("screen closed")

// replyQueue is how many reply chunks may wait for the replies writer before
// new ones are dropped. Replies are a few bytes each and rare (start-up
// queries), so reaching it means the reader of the PTY has stopped.
const replyQueue = 64

// While output keeps coming, the emulator takes it at most once per
// coalesceEvery, in one batch, or as soon as maxPending bytes wait: a batch
// costs about what one write does once long runs of lines are cut (see
// scrollElider), so a flood costs the emulator a bounded amount of work per
// second whatever its rate. Output after a pause goes in at once.
const (
	coalesceEvery = 10 * time.Millisecond
	maxPending    = 4 << 20
)

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
// Output written less than coalesceEvery after the emulator last took some
// waits, with whatever follows it, for a goroutine that hands it over in one
// batch; Snapshot, Resize and Close hand over what waits first, so they
// always see everything written.
//
// All methods are safe for concurrent use.
type Screen struct {
	mu       sync.Mutex
	emu      *vt.Emulator  // guarded by mu
	filter   *OSCFilter    // guarded by mu; writes into filtered
	filtered collector     // guarded by mu; what filter passed of one batch
	elide    *scrollElider // guarded by mu; writes filtered into emu
	pending  []byte        // guarded by mu; written, not yet given to the emulator
	applied  time.Time     // guarded by mu; when the emulator last took output
	last     *Snapshot     // guarded by mu; the latest Snapshot, nil once the screen may have changed
	closed   bool          // guarded by mu

	kick chan struct{} // 1-buffered: output is pending
	stop chan struct{} // closed by Close

	replies io.Writer
	queue   chan []byte // from drainReplies to forwardReplies
	dropped atomic.Int64
	panics  atomic.Int64   // output chunks the emulator panicked on
	wg      sync.WaitGroup // drainReplies, forwardReplies and applyPending
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
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
	// Nothing reads the scrollback; the emulator's default keeps 10,000
	// lines of cells (up to ~13 KB each) and trims it by copying.
	s.emu.SetScrollbackSize(1)
	s.elide = newScrollElider(s.emu, cols, rows)
	s.filter = NewOSCFilter(&s.filtered)
	s.wg.Add(3)
	go s.drainReplies()
	go s.forwardReplies()
	go s.applyPending()
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
	s.pending = append(s.pending, p...)
	if len(s.pending) < maxPending && time.Since(s.applied) < coalesceEvery {
		select {
		case s.kick <- struct{}{}:
		default:
		}
		return len(p), nil
	}
	s.applyLocked()
	return len(p), nil
}

// applyLocked gives the pending output to the emulator in one write (the
// filter would split it at every escape; runs of lines must be whole for the
// elider).
func (s *Screen) applyLocked() {
	if len(s.pending) == 0 {
		return
	}
	s.last = nil
	s.filtered.reset()
	_, _ = s.filter.Write(s.pending) // collector never fails
	if cap(s.pending) > 1<<20 {
		s.pending = nil // don't pin a large buffer after a burst
	} else {
		s.pending = s.pending[:0]
	}
	if len(s.filtered.b) > 0 {
		s.feedLocked(s.filtered.b)
	}
	s.applied = time.Now()
}

// feedLocked gives output to the emulator. The pinned emulator panics on
// some sequences a child can write (a scroll region beyond the screen, then
// a scroll: ESC[1;100r ESC[T). A child's output must never take familiar
// down: the chunk is lost to the screen model (the log has it), the panic is
// counted, and the next frames repaint the screen.
func (s *Screen) feedLocked(b []byte) {
	defer func() {
		if r := recover(); r != nil {
			s.panics.Add(1)
		}
	}()
	_, _ = s.elide.Write(b) // fails only after Close
}

// Panics reports how many output chunks the emulator could not take.
func (s *Screen) Panics() int64 { return s.panics.Load() }

// applyPending hands output that waits over to the emulator, at most once
// per coalesceEvery.
func (s *Screen) applyPending() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		}
		s.mu.Lock()
		wait := coalesceEvery - time.Since(s.applied)
		s.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-s.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		s.mu.Lock()
		s.applyLocked()
		s.mu.Unlock()
	}
}

// Resize changes the terminal size; the caller resizes the PTY to match.
func (s *Screen) Resize(cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applyLocked()
	s.last = nil
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
	s.applyLocked()
	s.closed = true
	close(s.stop)
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
	s.applyLocked()
	// The driver looks twice at every screen (the second look confirms
	// the first): with no output in between, the first copy serves.
	if s.last == nil {
		snap := s.safeReadLocked()
		s.last = &snap
	}
	snap := *s.last
	snap.Lines = slices.Clone(snap.Lines)
	return snap
}

// safeReadLocked is readLocked that survives an emulator left inconsistent
// by a recovered panic: the snapshot is then blank (classified Unknown).
func (s *Screen) safeReadLocked() (snap Snapshot) {
	defer func() {
		if r := recover(); r != nil {
			s.panics.Add(1)
			snap = Snapshot{Cols: s.emu.Width(), Rows: s.emu.Height()}
		}
	}()
	return s.readLocked()
}

// readLocked copies the visible screen out of the emulator.
func (s *Screen) readLocked() Snapshot {
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
