package agent

import "sync"

// emitter delivers events to the caller's handler in order, from one
// goroutine, so a slow handler never blocks the PTY reader or a hook call.
// Consecutive output events are merged while they wait.
type emitter struct {
	fn   func(Event)
	done chan struct{}

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []Event // guarded by mu
	closed bool    // guarded by mu
}

// maxMergedOutput bounds how much output one merged event carries.
const maxMergedOutput = 64 << 10

func newEmitter(fn func(Event)) *emitter {
	e := &emitter{fn: fn, done: make(chan struct{})}
	e.cond = sync.NewCond(&e.mu)
	go e.run()
	return e
}

func (e *emitter) emit(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	if ev.Kind == EventOutput && len(e.queue) > 0 {
		last := &e.queue[len(e.queue)-1]
		if last.Kind == EventOutput && len(last.Output)+len(ev.Output) <= maxMergedOutput {
			last.Output = append(last.Output, ev.Output...)
			return
		}
	}
	if ev.Kind == EventOutput {
		ev.Output = append([]byte(nil), ev.Output...)
	}
	e.queue = append(e.queue, ev)
	e.cond.Signal()
}

func (e *emitter) run() {
	defer close(e.done)
	for {
		e.mu.Lock()
		for len(e.queue) == 0 && !e.closed {
			e.cond.Wait()
		}
		if len(e.queue) == 0 && e.closed {
			e.mu.Unlock()
			return
		}
		ev := e.queue[0]
		e.queue[0] = Event{}
		e.queue = e.queue[1:]
		e.mu.Unlock()
		if e.fn != nil {
			e.fn(ev)
		}
	}
}

// close delivers what is queued, then stops the goroutine and waits for it.
func (e *emitter) close() {
	e.mu.Lock()
	e.closed = true
	e.cond.Signal()
	e.mu.Unlock()
	<-e.done
}
