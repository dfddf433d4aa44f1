package procs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

const (
	// DefaultTailBytes is how much of the latest output a Process keeps in
	// memory when Config.TailBytes is zero.
	DefaultTailBytes = 64 << 10
	// DefaultMaxQueued bounds a subscriber's queue when SubscribeOptions.MaxQueued is zero.
	DefaultMaxQueued = 1 << 20

	readBufSize = 32 << 10
	// defaultCarryFlush is how long an incomplete UTF-8 sequence at the end of
	// a read is held back from subscribers waiting for its remaining bytes.
	// Programs write whole characters in one write; a split comes from a read
	// catching a write half-copied, and the rest follows within microseconds.
	// Past this, the bytes are not going to complete and are delivered as they are.
	defaultCarryFlush = 100 * time.Millisecond
)

// ErrClosed is returned by Next after the Subscription was closed.
var ErrClosed = errors.New("procs: subscription closed")

// Chunk is a piece of one output stream.
type Chunk struct {
	// Offset is the position of Data[0] in the stream, counted in bytes
	// from the child's first byte of output; it is also the offset in the
	// log file (while the log has no error).
	Offset int64
	Data   []byte
	// Dropped is how many bytes right before Data this subscriber missed
	// because its queue was full: stream bytes [Offset-Dropped, Offset).
	Dropped int64
}

// Output is one output stream of a Process (the PTY, or stdout or stderr of
// pipes) fanned out to a log file, a ring buffer of the tail, and subscribers.
//
// Every byte read goes to the log file first (a log write error stops logging
// and is reported by LogErr and Config.OnLogError, never to the child), then to
// the tail, then to each subscriber's queue. Subscribers get text cut only at
// UTF-8 character boundaries: an incomplete sequence at the end of a read is
// carried over to the next one (or delivered as is after a short wait or at
// the end of the stream, so invalid bytes are never held forever). Tail and
// the subscribers therefore lag Size by at most three bytes.
type Output struct {
	name     string
	logPath  string
	log      io.WriteCloser // nil when not logging; written only by the reader
	onLogErr func(error)
	onData   func() // progress: kicks the watchdog
	logger   *slog.Logger

	carryFlush time.Duration
	done       chan struct{} // closed when the stream ended and the log is closed

	// blocking is set for a PTY master read in blocking mode (macOS: see
	// ptyBlockingReads): no read deadlines, so held-back bytes are flushed
	// by carryTimer, and stop wakes the read with wake.
	blocking bool
	wake     func() error
	timers   sync.WaitGroup // carryTimer's callback while it may run

	mu sync.Mutex
	// guarded by mu:
	tail     ring
	size     int64  // bytes read from the child
	carry    []byte // incomplete UTF-8 sequence held back from subscribers (≤ 3 bytes)
	subs     map[*Subscription]struct{}
	ended    bool
	logErr   error
	stopping bool // Close gave up waiting for EOF; the reader must exit

	carryTimer *time.Timer // guarded by mu: flushes the carry of a blocking read
}

// newOutput returns the Output for one stream; log may be nil, onLogErr and
// onData may be nil.
func newOutput(name string, tailBytes int, log io.WriteCloser, logPath string, onLogErr func(error), onData func(), logger *slog.Logger) *Output {
	if onLogErr == nil {
		onLogErr = func(error) {}
	}
	return &Output{
		name:       name,
		logPath:    logPath,
		log:        log,
		onLogErr:   onLogErr,
		onData:     onData,
		logger:     logger,
		carryFlush: defaultCarryFlush,
		done:       make(chan struct{}),
		tail:       ring{buf: make([]byte, tailBytes)},
		subs:       make(map[*Subscription]struct{}),
	}
}

// Size returns how many bytes the child has written to this stream so far.
func (o *Output) Size() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.size
}

// LogPath returns the path of the log file, "" when not logging.
func (o *Output) LogPath() string { return o.logPath }

// LogErr returns the first error writing or closing the log file, or nil.
// After an error nothing more is written to the log (the tail and the
// subscribers still get everything), so the log is a prefix of the stream.
func (o *Output) LogErr() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.logErr
}

// Done is closed when the stream has ended (every writer of it has closed it,
// or Process.Close stopped waiting for that), everything read has been
// delivered to the log, tail and subscriber queues, and the log file is closed.
func (o *Output) Done() <-chan struct{} { return o.done }

// Tail returns a copy of the latest output kept in memory (up to
// Config.TailBytes), cut at character boundaries like subscriber chunks.
// Offset says where it starts in the stream.
func (o *Output) Tail() Chunk {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tailLocked(o.tail.cap())
}

func (o *Output) tailLocked(limit int) Chunk {
	emitted := o.size - int64(len(o.carry))
	n := max(0, min(int64(limit), emitted, int64(o.tail.cap()-len(o.carry))))
	data := o.tail.last(int(n) + len(o.carry))[:n]
	// A cut tail may begin inside a character whose lead byte was evicted.
	skip := 0
	for emitted > n && skip < len(data) && skip < utf8.UTFMax-1 && !utf8.RuneStart(data[skip]) {
		skip++
	}
	return Chunk{Offset: emitted - n + int64(skip), Data: data[skip:]}
}

// SubscribeOptions configure a Subscription.
type SubscribeOptions struct {
	// MaxQueued bounds the bytes queued for this subscriber
	// (DefaultMaxQueued when zero). A single read (≤ 32 KiB) is always
	// accepted into an empty queue, so the real bound is MaxQueued + 32 KiB.
	MaxQueued int
	// Replay queues the current Tail as the first chunk, atomically with
	// subscribing, so that nothing is missed or seen twice between the two.
	// Its Offset > 0 means earlier output is only in the log file.
	Replay bool
}

// Subscribe returns a subscription to the output from now on (or from the
// tail, with Replay). The subscriber must call Close when done with it.
//
// Overflow policy: the child is never slowed down by a subscriber. When
// appending a read to the queue would exceed MaxQueued, that read and every
// later one are dropped for this subscriber — nothing is dropped from the log
// or the tail — until it next calls Next and so empties its queue. The first
// chunk after the gap has Dropped set to the number of bytes missed, and the
// gap is exactly [Offset-Dropped, Offset) of the log file, so a terminal
// client can fetch that range from the log (task/output) before applying Data,
// or reset its screen and replay from the tail. Gaps start and end at read
// boundaries, which are character boundaries; an escape sequence may still be
// cut, which is why a client must not apply Data after a gap blindly.
// Dropped() is the running total.
func (o *Output) Subscribe(opts SubscribeOptions) *Subscription {
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = DefaultMaxQueued
	}
	s := &Subscription{out: o, max: opts.MaxQueued, ready: make(chan struct{}, 1)}
	o.mu.Lock()
	defer o.mu.Unlock()
	s.off = o.size - int64(len(o.carry))
	if opts.Replay {
		c := o.tailLocked(opts.MaxQueued)
		s.buf, s.off = c.Data, c.Offset
	}
	if o.ended {
		s.eof = true
		s.end = o.size
	} else {
		o.subs[s] = struct{}{}
	}
	return s
}

// write fans out one read. Only the reader goroutine calls it.
func (o *Output) write(b []byte) {
	if o.log != nil {
		if _, err := o.log.Write(b); err != nil {
			o.failLog(fmt.Errorf("procs: write %s log %s: %w", o.name, o.logPath, err))
		}
	}
	o.mu.Lock()
	o.tail.write(b)
	start := o.size - int64(len(o.carry))
	o.size += int64(len(b))
	var text []byte
	if len(o.carry) > 0 {
		text = append(o.carry, b...)
	} else {
		text = b
	}
	cut := completeUTF8(text)
	o.carry = append(o.carry[:0:0], text[cut:]...)
	if cut > 0 {
		for s := range o.subs {
			s.push(start, text[:cut])
		}
	}
	o.mu.Unlock()
	if o.onData != nil {
		o.onData()
	}
}

// failLog records the first log error and stops logging; the stream goes on.
func (o *Output) failLog(err error) {
	f := o.log
	o.log = nil
	if f != nil {
		_ = f.Close()
	}
	o.mu.Lock()
	first := o.logErr == nil
	if first {
		o.logErr = err
	}
	o.mu.Unlock()
	if first {
		o.logger.Error("procs: output log failed; the task's output is no longer recorded", "err", err)
		o.onLogErr(err)
	}
}

// flushCarry delivers held-back bytes that did not complete a character.
func (o *Output) flushCarry() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushCarryLocked()
}

func (o *Output) flushCarryLocked() {
	if len(o.carry) == 0 {
		return
	}
	start := o.size - int64(len(o.carry))
	for s := range o.subs {
		s.push(start, o.carry)
	}
	o.carry = nil
}

func (o *Output) hasCarry() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.carry) > 0
}

// completeUTF8 returns the length of the longest prefix of b that does not end
// inside a UTF-8 sequence that could still be completed by more bytes.
// Invalid bytes count as complete (they decode as one error rune each).
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// run reads f until the stream ends, then finishes the Output. It is the one
// reader of f, started by Start and waited for by Close.
func (o *Output) run(f *os.File) {
	if o.blocking {
		o.runBlocking(f)
		return
	}
	defer o.finish()
	buf := make([]byte, readBufSize)
	deadlineSet := false
	for {
		n, err := f.Read(buf)
		if n > 0 {
			o.write(buf[:n])
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && !o.isStopping() {
				o.flushCarry()
				deadlineSet = false
				o.setDeadline(f, time.Time{})
				continue
			}
			// EIO is how a PTY master reports that every slave fd is closed.
			if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.EIO) && !o.isStopping() {
				o.logger.Warn("procs: read output", "stream", o.name, "err", err)
			}
			return
		}
		// Wake up to flush held-back bytes if nothing completes them soon.
		if o.hasCarry() {
			deadlineSet = true
			o.setDeadline(f, time.Now().Add(o.carryFlush))
		} else if deadlineSet {
			deadlineSet = false
			o.setDeadline(f, time.Time{})
		}
	}
}

// runBlocking is run for a file read in blocking mode, as creack/pty reads a
// PTY master on macOS: Go's kqueue poller is not used for it, since kqueue
// on a PTY master reports it readable when it is not, and a reader through
// it spun at 100 % CPU (creack/pty#174, reverted in v1.1.21; golang/go#22099).
// Held-back bytes are flushed by a timer instead of a read deadline; stop
// wakes a read by writing to the terminal's other side.
func (o *Output) runBlocking(f *os.File) {
	defer o.finish()
	buf := make([]byte, readBufSize)
	for {
		n, err := f.Read(buf)
		if o.isStopping() {
			return // woken by stop: what this read brought is its wake-up byte, or dropped with it
		}
		if n > 0 {
			o.write(buf[:n])
			if o.hasCarry() {
				o.armCarryTimer()
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.EIO) {
				o.logger.Warn("procs: read output", "stream", o.name, "err", err)
			}
			return
		}
	}
}

// armCarryTimer flushes held-back bytes after carryFlush unless a read
// completes them first (then the flush finds nothing to do).
func (o *Output) armCarryTimer() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.carryTimer != nil && o.carryTimer.Stop() {
		o.timers.Done() // the callback it stopped will not run
	}
	o.timers.Add(1)
	o.carryTimer = time.AfterFunc(o.carryFlush, func() {
		defer o.timers.Done()
		o.flushCarry()
	})
}

// stopCarryTimer stops the carry timer and waits for its callback.
func (o *Output) stopCarryTimer() {
	o.mu.Lock()
	if o.carryTimer != nil && o.carryTimer.Stop() {
		o.timers.Done()
	}
	o.carryTimer = nil
	o.mu.Unlock()
	o.timers.Wait()
}

// setDeadline sets f's read deadline unless Close is forcing the reader out,
// whose past deadline must not be overwritten.
func (o *Output) setDeadline(f *os.File, t time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.stopping {
		_ = f.SetReadDeadline(t)
	}
}

func (o *Output) isStopping() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stopping
}

// stop makes the reader of f return now, whether or not the stream ended.
func (o *Output) stop(f *os.File) {
	o.mu.Lock()
	o.stopping = true
	if !o.blocking {
		_ = f.SetReadDeadline(time.Unix(1, 0))
		o.mu.Unlock()
		return
	}
	o.mu.Unlock()
	// A blocking read has no deadline, and closing f does not end it (the
	// descriptor is closed only once the read returns): give it a byte.
	if err := o.wake(); err != nil {
		o.logger.Error("procs: cannot wake the output reader; it ends when the terminal's last holder closes it", "stream", o.name, "err", err)
	}
}

func (o *Output) finish() {
	if o.blocking {
		o.stopCarryTimer()
	}
	if o.log != nil {
		if err := o.log.Close(); err != nil {
			o.log = nil
			o.failLog(fmt.Errorf("procs: close %s log %s: %w", o.name, o.logPath, err))
		}
		o.log = nil
	}
	o.mu.Lock()
	o.flushCarryLocked()
	o.ended = true
	for s := range o.subs {
		s.endOfStream(o.size)
	}
	clear(o.subs)
	o.mu.Unlock()
	close(o.done)
}

// Subscription is one subscriber's bounded queue of output; see
// Output.Subscribe for what happens when it fills.
type Subscription struct {
	out   *Output
	max   int
	ready chan struct{} // capacity 1: "state changed", for Next to recheck

	mu sync.Mutex
	// guarded by mu:
	buf      []byte // queued bytes, contiguous in the stream
	off      int64  // stream offset of buf[0] (or of the next byte, when buf is empty)
	gap      int64  // bytes missed right before buf
	gapAfter int64  // bytes missed after buf while overflowing
	overflow bool   // dropping until Next empties buf
	dropped  int64
	eof      bool
	end      int64 // stream size at eof
	closed   bool
}

// push queues b, which starts at stream offset off. Called with out.mu held.
func (s *Subscription) push(off int64, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.overflow || (len(s.buf) > 0 && len(s.buf)+len(b) > s.max) {
		s.overflow = true
		s.gapAfter += int64(len(b))
		s.dropped += int64(len(b))
		return
	}
	if len(s.buf) == 0 {
		s.off = off
	}
	s.buf = append(s.buf, b...)
	s.notify()
}

func (s *Subscription) endOfStream(size int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eof = true
	s.end = size
	s.notify()
}

func (s *Subscription) notify() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Next returns everything queued since the last call, coalesced into one
// chunk, waiting until there is something. After the stream has ended and
// everything was returned it returns io.EOF (a trailing gap is first reported
// as a chunk with no Data and Dropped set). It returns ErrClosed after Close,
// and ctx.Err() if ctx ends first. The caller owns the returned Data.
// Next must not be called concurrently with itself.
func (s *Subscription) Next(ctx context.Context) (Chunk, error) {
	for {
		s.mu.Lock()
		switch {
		case s.closed:
			s.mu.Unlock()
			return Chunk{}, ErrClosed
		case len(s.buf) > 0:
			c := Chunk{Offset: s.off, Data: s.buf, Dropped: s.gap}
			s.off += int64(len(s.buf))
			s.buf = nil
			s.gap, s.gapAfter = s.gapAfter, 0
			s.overflow = false
			s.mu.Unlock()
			return c, nil
		case s.gap > 0 && s.eof:
			c := Chunk{Offset: s.end, Dropped: s.gap}
			s.gap = 0
			s.mu.Unlock()
			return c, nil
		case s.eof:
			s.mu.Unlock()
			return Chunk{}, io.EOF
		}
		s.mu.Unlock()
		select {
		case <-s.ready:
		case <-ctx.Done():
			return Chunk{}, ctx.Err()
		}
	}
}

// Dropped returns how many bytes this subscriber has missed in total.
func (s *Subscription) Dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Close unsubscribes and frees the queue; a blocked Next returns ErrClosed.
func (s *Subscription) Close() {
	s.out.mu.Lock()
	delete(s.out.subs, s)
	s.out.mu.Unlock()
	s.mu.Lock()
	s.closed = true
	s.buf = nil
	s.notify()
	s.mu.Unlock()
}

// ring keeps the last len(buf) bytes written to it.
type ring struct {
	buf []byte
	n   int64 // bytes ever written
}

func (r *ring) cap() int { return len(r.buf) }

func (r *ring) write(b []byte) {
	size := len(r.buf)
	if size == 0 {
		return
	}
	r.n += int64(len(b))
	if len(b) > size {
		b = b[len(b)-size:]
	}
	// The last byte of b lands at index (n-1) % size.
	start := int((r.n - int64(len(b))) % int64(size))
	k := copy(r.buf[start:], b)
	copy(r.buf, b[k:])
}

// last returns a copy of the last k bytes written (fewer if not that many were).
func (r *ring) last(k int) []byte {
	k = int(min(int64(k), r.n, int64(len(r.buf))))
	out := make([]byte, k)
	if k == 0 {
		return out
	}
	start := int((r.n - int64(k)) % int64(len(r.buf)))
	m := copy(out, r.buf[start:])
	copy(out[m:], r.buf)
	return out
}
