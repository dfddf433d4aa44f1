package mask

import (
	"io"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/clock"
)

// DefaultQuiet is how long a Writer holds back the tail of its stream after
// the last write, when that tail could be the start of a secret (a Stream
// lets anything else go at once): long enough for a key written in two
// halves by one printf (drawn by the TUI in separate frames, milliseconds
// apart) to arrive whole. 5 ms was tried, when every last word was held, and
// let the first 12 characters of an environment secret through.
const DefaultQuiet = 50 * time.Millisecond

// A Writer masks a stream with a Stream and writes the result to an
// io.Writer: what is safe at once, and the held-back tail after the stream
// has been quiet for a while (Flush on a timer) or at Close. It is safe for
// concurrent use; writes to the underlying writer are serialised and in
// stream order.
type Writer struct {
	clk   clock.Clock
	quiet time.Duration

	mu      sync.Mutex
	s       *Stream        // guarded by mu
	w       io.Writer      // guarded by mu
	timer   clock.Timer    // guarded by mu; armed while the Stream holds bytes
	flushes sync.WaitGroup // timer callbacks scheduled or running
	closed  bool           // guarded by mu
	err     error          // guarded by mu; the first error of w, returned from then on
}

// NewWriter returns a Writer that masks with m onto w. clk nil means
// clock.Real; quiet <= 0 means DefaultQuiet.
func (m *Masker) NewWriter(w io.Writer, clk clock.Clock, quiet time.Duration) *Writer {
	if clk == nil {
		clk = clock.Real
	}
	if quiet <= 0 {
		quiet = DefaultQuiet
	}
	return &Writer{clk: clk, quiet: quiet, s: m.NewStream(0), w: w}
}

// Write masks p and writes what is safe to emit; it returns len(p) unless
// the underlying writer failed.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	if w.err != nil {
		return 0, w.err
	}
	if out := w.s.Write(p); len(out) > 0 {
		if _, err := w.w.Write(out); err != nil {
			w.err = err
			return 0, err
		}
	}
	w.armLocked()
	return len(p), nil
}

// armLocked (re)starts the quiet timer while bytes are held back.
func (w *Writer) armLocked() {
	if w.s.Held() == 0 {
		return
	}
	// A fresh timer each time: resetting one that fired may run its
	// callback twice, and a stopped one will never run, so it is done.
	if w.timer != nil && w.timer.Stop() {
		w.flushes.Done()
	}
	w.flushes.Add(1)
	w.timer = w.clk.AfterFunc(w.quiet, func() {
		defer w.flushes.Done()
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.closed || w.err != nil {
			return
		}
		if out := w.s.Flush(false); len(out) > 0 {
			if _, err := w.w.Write(out); err != nil {
				w.err = err
			}
		}
	})
}

// Close writes everything held back, stops the timer and waits for a flush
// in progress. It does not close the underlying writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	w.closed = true
	if out := w.s.Flush(true); len(out) > 0 && w.err == nil {
		if _, err := w.w.Write(out); err != nil {
			w.err = err
		}
	}
	if w.timer != nil && w.timer.Stop() {
		w.flushes.Done()
	}
	err := w.err
	w.mu.Unlock()
	w.flushes.Wait() // a callback already running sees closed and returns
	return err
}
