package jsonrpc

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/familiar-dev/familiar/protocol"
)

// DefaultMaxQueuedBytes is how much notification data may wait for one
// client before the Hub gives up on it. task/output is the bulk of it; 16 MiB
// is minutes of a busy agent's terminal, far more than a client that is
// merely slow ever falls behind.
const DefaultMaxQueuedBytes = 16 << 20

// queuedOverhead is what one queued notification costs besides its bytes, so
// a flood of tiny notifications is bounded too.
const queuedOverhead = 64

// Hub fans notifications out to every initialized connection.
//
// Each connection has its own queue and its own sender goroutine, so Notify
// never blocks on a client: it encodes params once and appends to each queue.
// A queue is bounded by bytes (maxQueuedBytes, counting the notification
// being written); a client whose queue would overflow — it stopped reading,
// or reads slower than familiar produces — has its connection closed and the
// drop logged at Warn. Dropping, rather than discarding notifications, is
// deliberate: a client that silently missed a task/updated would show a
// wrong state forever, while a dropped client reconnects and replays what it
// missed with task/events (every notification carries seq).
type Hub struct {
	log            *slog.Logger
	maxQueuedBytes int

	mu   sync.Mutex
	subs map[*subscriber]struct{} // guarded by mu
}

// NewHub returns a Hub; maxQueuedBytes <= 0 means DefaultMaxQueuedBytes.
func NewHub(log *slog.Logger, maxQueuedBytes int) *Hub {
	if maxQueuedBytes <= 0 {
		maxQueuedBytes = DefaultMaxQueuedBytes
	}
	return &Hub{log: log, maxQueuedBytes: maxQueuedBytes, subs: map[*subscriber]struct{}{}}
}

// Notify sends the notification method with params to every initialized
// client. It never blocks on a client. params is encoded before Notify
// returns, so the caller may change it afterwards. The orchestrator calls it
// with the protocol package's notification types (which carry seq).
//
// A client that asked for task/output without its data (initialize's
// outputData false) gets a wake-up instead: the notification with data "",
// at most one queued per task. Its params are encoded only if some client
// takes them whole, so a 20 MB/s flood costs nothing to encode when only
// such clients listen.
func (h *Hub) Notify(method string, params any) {
	var n, wake *notification
	var dropped []*subscriber
	h.mu.Lock()
	for sub := range h.subs {
		if sub.wakeOnly && method == protocol.NotifyTaskOutput {
			if wake == nil {
				w, err := outputWake(params)
				if err != nil {
					h.log.Error("task/output wake-up not sent: its params cannot be read", "err", err)
					continue
				}
				wake = &w
			}
			if !sub.enqueue(*wake, h.maxQueuedBytes) {
				delete(h.subs, sub)
				dropped = append(dropped, sub)
			}
			continue
		}
		if n == nil {
			raw, err := json.Marshal(params)
			if err != nil {
				h.mu.Unlock()
				h.log.Error("notification not sent: its params cannot be encoded", "method", method, "err", err)
				return
			}
			n = &notification{method: method, params: raw}
		}
		if !sub.enqueue(*n, h.maxQueuedBytes) {
			delete(h.subs, sub)
			dropped = append(dropped, sub)
		}
	}
	h.mu.Unlock()
	// Closing the connection unblocks a sender stuck writing to it. Done
	// outside h.mu: it is I/O, and it leads to detach, which takes h.mu.
	for _, sub := range dropped {
		h.log.Warn("dropping a client that does not keep up with notifications",
			"conn", sub.conn, "limitBytes", h.maxQueuedBytes)
		sub.drop()
	}
}

// Clients is the number of connections receiving notifications.
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

type notification struct {
	method string
	params json.RawMessage
	// wakeOf is the task of a task/output wake-up (see Notify): one per
	// task waits in a queue at a time.
	wakeOf string
}

// outputWake is the wake-up for a task/output notification: its seq and id,
// data "". params is what the orchestrator publishes (the encoded
// notification, seq first) or the notification itself; only the keys
// before data are read when seq and id come first.
func outputWake(params any) (notification, error) {
	var o protocol.TaskOutputNotification
	switch p := params.(type) {
	case protocol.TaskOutputNotification:
		o = p
	case *protocol.TaskOutputNotification:
		o = *p
	case json.RawMessage:
		if err := readSeqAndID(p, &o); err != nil {
			return notification{}, err
		}
	default:
		b, err := json.Marshal(params)
		if err != nil {
			return notification{}, err
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return notification{}, err
		}
	}
	raw, err := json.Marshal(protocol.TaskOutputNotification{Seq: o.Seq, ID: o.ID})
	if err != nil {
		return notification{}, err
	}
	return notification{method: protocol.NotifyTaskOutput, params: raw, wakeOf: o.ID}, nil
}

// readSeqAndID reads seq and id from an encoded task/output notification
// without scanning its data when they come first.
func readSeqAndID(raw json.RawMessage, o *protocol.TaskOutputNotification) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return json.Unmarshal(raw, o)
	}
	seen := 0
	for seen < 2 && dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		switch k {
		case "seq":
			if err := dec.Decode(&o.Seq); err != nil {
				return err
			}
			seen++
		case "id":
			if err := dec.Decode(&o.ID); err != nil {
				return err
			}
			seen++
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
		}
	}
	return nil
}

func (n notification) size() int { return len(n.method) + len(n.params) + queuedOverhead }

// subscriber is one connection's queue and the goroutine that drains it.
// Its owner (the connection) calls start once initialize has been answered
// and detach when the connection ends; detach waits for the goroutine.
type subscriber struct {
	hub      *Hub
	conn     uint64
	send     func(method string, params json.RawMessage) error
	drop     func() // closes the connection
	wakeOnly bool   // task/output as wake-ups (initialize's outputData false)

	started  chan struct{}
	stop     chan struct{}
	done     chan struct{}
	wake     chan struct{} // capacity 1: "the queue is not empty"
	stopOnce sync.Once
	runOnce  sync.Once

	mu     sync.Mutex
	queue  []notification      // guarded by mu
	queued int                 // guarded by mu: bytes in queue plus the one being sent
	wakes  map[string]struct{} // guarded by mu: tasks with a wake-up in queue
}

// subscribe adds a connection, not yet started: notifications queue up
// until start.
func (h *Hub) subscribe(conn uint64, wakeOnly bool, send func(string, json.RawMessage) error, drop func()) *subscriber {
	s := &subscriber{
		hub: h, conn: conn, send: send, drop: drop, wakeOnly: wakeOnly, wakes: map[string]struct{}{},
		started: make(chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		wake:    make(chan struct{}, 1),
	}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	go s.run()
	return s
}

// start lets queued notifications flow.
func (s *subscriber) start() { s.runOnce.Do(func() { close(s.started) }) }

// detach removes s from the hub, stops its goroutine and waits for it. The
// connection must be closed already, or a blocked send would hold detach.
func (s *subscriber) detach() {
	s.hub.mu.Lock()
	delete(s.hub.subs, s)
	s.hub.mu.Unlock()
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
}

// enqueue reports false, queueing nothing, when n would overflow the queue.
func (s *subscriber) enqueue(n notification, limit int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.wakeOf != "" {
		if _, queued := s.wakes[n.wakeOf]; queued {
			// The one in queue wakes the client for these bytes too: they
			// are in the log before their notification is published.
			return true
		}
		s.wakes[n.wakeOf] = struct{}{}
	}
	if s.queued+n.size() > limit {
		s.queue = nil // free it now; the connection is about to close
		return false
	}
	s.queue = append(s.queue, n)
	s.queued += n.size()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

func (s *subscriber) run() {
	defer close(s.done)
	select {
	case <-s.started:
	case <-s.stop:
		return
	}
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			select {
			case <-s.wake:
				continue
			case <-s.stop:
				return
			}
		}
		n := s.queue[0]
		s.queue[0] = notification{} // let the bytes go once sent
		s.queue = s.queue[1:]
		if n.wakeOf != "" {
			delete(s.wakes, n.wakeOf) // output from now on needs a new one
		}
		s.mu.Unlock()

		err := s.send(n.method, n.params)

		s.mu.Lock()
		s.queued -= n.size()
		s.mu.Unlock()
		if err != nil {
			// Usually the connection is already closed; if a write failed
			// on an open one, close it, since its frames may be torn. Either
			// way ServeConn then detaches us.
			s.drop()
			s.hub.mu.Lock()
			delete(s.hub.subs, s)
			s.hub.mu.Unlock()
			<-s.stop
			return
		}
	}
}
