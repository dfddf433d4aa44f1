package procs

import (
	"sync"
	"time"

	"github.com/familiar-dev/familiar/clock"
)

// Watchdog calls a function when no progress was reported for a while.
// A Process kicks its watchdog on every read of output; the orchestrator
// pauses it while the task waits on a person (a task waiting for an answer
// is not stuck) and resumes it after.
//
// It fires once per quiet period: after firing it stays quiet until the next
// Kick or Resume. It never runs the function after Stop returned.
type Watchdog struct {
	clk  clock.Clock
	idle time.Duration
	fire func()

	mu sync.Mutex
	// guarded by mu:
	last    time.Time   // last progress, or last Resume
	paused  bool        // by Pause; Kick only records progress
	fired   bool        // fired in the current quiet period
	stopped bool        // by Stop or halt; final
	timer   clock.Timer // armed timer, nil when none
	gen     uint64      // identifies timer; callbacks of replaced timers ignore themselves

	running sync.WaitGroup // fire calls in progress
}

// NewWatchdog returns a running watchdog that calls fire after idle without
// progress. fire runs in its own goroutine and must not call Stop (Stop waits
// for it) — post an event instead.
func NewWatchdog(clk clock.Clock, idle time.Duration, fire func()) *Watchdog {
	if clk == nil {
		clk = clock.Real
	}
	w := &Watchdog{clk: clk, idle: idle, fire: fire, last: clk.Now()}
	w.mu.Lock()
	w.armLocked(idle)
	w.mu.Unlock()
	return w
}

// Kick records progress. It is cheap: the timer is not reset on every call,
// only re-armed (when it fires early) for the remaining time.
func (w *Watchdog) Kick() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = w.clk.Now()
	if w.fired && !w.paused && !w.stopped {
		w.fired = false
		w.armLocked(w.idle)
	}
}

// Pause stops the watchdog until Resume; progress still counts.
func (w *Watchdog) Pause() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.paused = true
	w.disarmLocked()
}

// Resume restarts the watchdog with a full idle period from now.
func (w *Watchdog) Resume() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || !w.paused {
		return
	}
	w.paused = false
	w.fired = false
	w.last = w.clk.Now()
	w.armLocked(w.idle)
}

// Stop stops the watchdog for good and waits for a running fire to return.
func (w *Watchdog) Stop() {
	if w == nil {
		return
	}
	w.halt()
	w.running.Wait()
}

// halt stops the watchdog without waiting for a running fire.
func (w *Watchdog) halt() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.disarmLocked()
}

func (w *Watchdog) armLocked(d time.Duration) {
	w.disarmLocked()
	w.gen++
	gen := w.gen
	w.timer = w.clk.AfterFunc(d, func() { w.expired(gen) })
}

func (w *Watchdog) disarmLocked() {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	w.gen++
}

func (w *Watchdog) expired(gen uint64) {
	w.mu.Lock()
	if gen != w.gen || w.stopped || w.paused || w.fired {
		w.mu.Unlock()
		return
	}
	w.timer = nil
	if quiet := w.clk.Now().Sub(w.last); quiet < w.idle {
		w.armLocked(w.idle - quiet)
		w.mu.Unlock()
		return
	}
	w.fired = true
	w.running.Add(1) // under mu and before stopped is set, so Stop's Wait sees it
	w.mu.Unlock()
	defer w.running.Done()
	w.fire()
}
