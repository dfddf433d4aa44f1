// Package clock lets code that has timeouts (approval, no-progress, grace) take
// its time from an injected source, so tests of a five-minute timeout run in
// milliseconds. It owns nothing but time; it never starts goroutines of its own
// except the ones the standard library's timers imply.
package clock

import (
	"sync"
	"time"
)

// Clock is the part of package time that familiar's timeouts use.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTimer sends the current time on C once d has elapsed.
	NewTimer(d time.Duration) Timer
}

// Timer is a stoppable, resettable timer.
type Timer interface {
	// C is nil for timers made by AfterFunc.
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Real is the wall clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{t: time.AfterFunc(d, f)}
}

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{t: time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Fake is a manual clock for tests: time moves only when Advance is called.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer  // guarded by mu; pending timers only
	changed chan struct{} // closed and replaced whenever timers change; guarded by mu
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// AfterFunc schedules fn to run in its own goroutine when the fake time passes d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	return f.add(d, fn, nil)
}

// NewTimer returns a timer whose channel receives when the fake time passes d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	return f.add(d, nil, make(chan time.Time, 1))
}

func (f *Fake) add(d time.Duration, fn func(), c chan time.Time) *fakeTimer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{clock: f, when: f.now.Add(d), fn: fn, c: c}
	f.timers = append(f.timers, t)
	f.notifyLocked()
	return t
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Advance moves the fake time forward by d and fires every timer that is due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	now := f.now
	var due []*fakeTimer
	kept := f.timers[:0]
	for _, t := range f.timers {
		if !t.when.After(now) {
			due = append(due, t)
		} else {
			kept = append(kept, t)
		}
	}
	f.timers = kept
	if len(due) > 0 {
		f.notifyLocked()
	}
	f.mu.Unlock()
	for _, t := range due {
		if t.fn != nil {
			go t.fn()
		} else {
			select {
			case t.c <- now:
			default:
			}
		}
	}
}

// Pending reports how many timers are waiting to fire.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitForTimers blocks until at least n timers are pending or deadline passes
// (real time), and reports whether they are. Tests use it instead of sleeping
// until the code under test has armed its timer.
func (f *Fake) WaitForTimers(n int, deadline time.Duration) bool {
	stop := time.NewTimer(deadline)
	defer stop.Stop()
	for {
		f.mu.Lock()
		ok := len(f.timers) >= n
		ch := f.changed
		f.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-stop.C:
			return false
		}
	}
}

type fakeTimer struct {
	clock *Fake
	when  time.Time
	fn    func()
	c     chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	f := t.clock
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, p := range f.timers {
		if p == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			f.notifyLocked()
			return true
		}
	}
	return false
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	active := t.Stop()
	f := t.clock
	f.mu.Lock()
	t.when = f.now.Add(d)
	f.timers = append(f.timers, t)
	f.notifyLocked()
	f.mu.Unlock()
	return active
}
