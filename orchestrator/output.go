package orchestrator

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/mailbox"
	"github.com/familiar-dev/familiar/mask"
	"github.com/familiar-dev/familiar/procs"
)

// maxTerminalBacklog bounds the raw output waiting to be masked: past it the
// PTY reader waits, and so does the agent's terminal, as a slow terminal
// would make it.
const maxTerminalBacklog = 8 << 20

// terminalOutput is a task's terminal on its way out: masked once, off the
// PTY reader's goroutine, and the same masked bytes go to the output log and
// to the task's clients. A client that pages the log (task/output) and then
// streams the notifications sees one stream; two maskers, one per path, cut
// and flushed at different moments and could disagree. It is the log filter
// of the agent's output (procs.Config.LogFilter): procs writes every read to
// it and closes it when the stream has ended, before the agent exits.
type terminalOutput struct {
	inbox *mailbox.Mailbox[[]byte]
	mw    *mask.Writer
	sink  *terminalSink
	size  *atomic.Int64 // raw bytes written, for the task's output offset

	mu      sync.Mutex
	drained *sync.Cond // signalled as the backlog shrinks
	backlog int        // guarded by mu: raw bytes queued, not yet masked
}

func newTerminalOutput(m *mask.Masker, log io.Writer, publish func([]byte), size *atomic.Int64, clk clock.Clock) *terminalOutput {
	t := &terminalOutput{sink: &terminalSink{log: log, publish: publish}, size: size}
	t.drained = sync.NewCond(&t.mu)
	t.mw = m.NewWriter(t.sink, clk, 0)
	t.inbox = mailbox.New(mailbox.Options[[]byte]{
		Handle: t.mask,
		// Consecutive reads are masked as one piece: fewer, larger
		// notifications under a flood, the same bytes.
		Merge: func(last *[]byte, next []byte) bool {
			if len(*last)+len(next) > 256<<10 {
				return false
			}
			*last = append(*last, next...)
			return true
		},
	})
	return t
}

// Write queues a copy of p (the reader reuses its buffer) and returns at
// once unless the backlog is full. The error is the log's first failure,
// seen by a later write: procs then stops logging and reports it.
func (t *terminalOutput) Write(p []byte) (int, error) {
	if err := t.sink.failed(); err != nil {
		return 0, err
	}
	t.mu.Lock()
	for t.backlog > maxTerminalBacklog {
		t.drained.Wait()
	}
	t.backlog += len(p)
	t.mu.Unlock()
	t.size.Add(int64(len(p)))
	if !t.inbox.Push(append([]byte(nil), p...)) {
		return 0, io.ErrClosedPipe
	}
	return len(p), nil
}

func (t *terminalOutput) mask(batch [][]byte) {
	n := 0
	for _, p := range batch {
		_, _ = t.mw.Write(p) // an error is the sink's, kept there
		n += len(p)
	}
	t.mu.Lock()
	t.backlog -= n
	t.drained.Broadcast()
	t.mu.Unlock()
}

// Close masks what is queued, sends what the masker held back, and returns
// the log's first error. It does not close the log file.
func (t *terminalOutput) Close() error {
	t.inbox.Close()
	_ = t.mw.Close()
	t.sink.flush()
	return t.sink.failed()
}

// terminalSink takes masked output to the clients and the log. The clients
// get it even once the log has failed (the task fails over that anyway).
type terminalSink struct {
	log     io.Writer
	publish func([]byte)

	mu    sync.Mutex
	err   error  // guarded by mu: the log's first failure
	carry []byte // guarded by mu: the start of a character the next write completes
}

// Write publishes whole characters only: a notification's data is a JSON
// string, where half a character becomes U+FFFD (a "─" cut in two by a
// read arrived as "���"). The log takes the bytes as they come.
func (s *terminalSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := p
	if len(s.carry) > 0 {
		out = append(s.carry, p...)
		s.carry = nil
	}
	if cut := procs.CompleteUTF8(out); cut < len(out) {
		s.carry = append([]byte(nil), out[cut:]...)
		out = out[:cut]
	}
	if len(out) > 0 {
		s.publish(out)
	}
	if s.err == nil {
		if _, err := s.log.Write(p); err != nil {
			s.err = err
		}
	}
	return len(p), nil
}

// flush publishes a held character start that nothing completed (the
// stream ended inside it).
func (s *terminalSink) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.carry) > 0 {
		s.publish(s.carry)
		s.carry = nil
	}
}

func (s *terminalSink) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
