// Package mailbox is an unbounded first-in first-out queue drained in order
// by one goroutine at a time, started when there is work and gone when there
// is none. It is how familiar hands work from goroutines that must not block
// (a PTY reader, a hook call, an agent's event goroutine) to one that may
// (an orchestrator task, the notification publisher, an agent's event
// handler), without ever running two items of one mailbox at once.
package mailbox

import "sync"

// Mailbox delivers pushed items to its handler in order. The zero value is
// not usable; use New.
type Mailbox[T any] struct {
	handle func(batch []T)
	merge  func(last *T, next T) bool
	max    int

	mu      sync.Mutex
	cond    *sync.Cond // signalled when a drain ends
	items   []T        // guarded by mu
	running bool       // guarded by mu: a goroutine is draining
	closed  bool       // guarded by mu: Push refuses
}

// Options configure a Mailbox.
type Options[T any] struct {
	// Handle is called with the items in order, one batch at a time, from
	// one goroutine at a time. A batch holds at most MaxBatch items (all
	// that are queued when 0).
	Handle   func(batch []T)
	MaxBatch int
	// Merge, if set, may fold next into the last queued item (consecutive
	// output chunks); it returns false to queue next on its own.
	Merge func(last *T, next T) bool
}

// New returns an empty mailbox.
func New[T any](o Options[T]) *Mailbox[T] {
	m := &Mailbox[T]{handle: o.Handle, merge: o.Merge, max: o.MaxBatch}
	m.cond = sync.NewCond(&m.mu)
	return m
}

// Push queues item and makes sure a goroutine drains the mailbox. It never
// blocks on the handler. It reports false once the mailbox is closed.
func (m *Mailbox[T]) Push(item T) bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	if m.merge != nil && len(m.items) > 0 && m.merge(&m.items[len(m.items)-1], item) {
		m.mu.Unlock()
		return true
	}
	m.items = append(m.items, item)
	start := !m.running
	m.running = true
	m.mu.Unlock()
	if start {
		go m.drain()
	}
	return true
}

func (m *Mailbox[T]) drain() {
	for {
		m.mu.Lock()
		if len(m.items) == 0 {
			m.running = false
			m.cond.Broadcast()
			m.mu.Unlock()
			return
		}
		n := len(m.items)
		if m.max > 0 {
			n = min(n, m.max)
		}
		batch := make([]T, n)
		copy(batch, m.items)
		clear(m.items[:n])
		m.items = m.items[n:]
		m.mu.Unlock()
		m.handle(batch)
	}
}

// Close refuses further items, waits until everything queued has been
// handled and the draining goroutine has gone. Items pushed by the handler
// while closing are refused too. Calling Close again just waits.
func (m *Mailbox[T]) Close() {
	m.mu.Lock()
	m.closed = true
	for m.running {
		m.cond.Wait()
	}
	m.mu.Unlock()
}

// Len is how many items wait.
func (m *Mailbox[T]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items)
}
