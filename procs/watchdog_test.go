package procs

import (
	"testing"
	"time"

	"github.com/familiar-dev/familiar/clock"
)

func TestWatchdog(t *testing.T) {
	checkLeaks(t)
	clk := clock.NewFake(time.Unix(1000, 0))
	fired := make(chan time.Time, 8)
	w := NewWatchdog(clk, time.Minute, func() { fired <- clk.Now() })
	defer w.Stop()
	expect := func(at time.Time) {
		t.Helper()
		select {
		case got := <-fired:
			if !got.Equal(at) {
				t.Fatalf("fired at %v, want %v", got, at)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("did not fire (want at %v)", at)
		}
	}
	// rearmed waits until the expired timer's callback has re-armed it.
	rearmed := func() {
		t.Helper()
		if !clk.WaitForTimers(1, 10*time.Second) {
			t.Fatal("not re-armed")
		}
	}
	start := clk.Now()

	clk.Advance(40 * time.Second)
	w.Kick() // progress at +40s: due at +100s, not +60s
	clk.Advance(20 * time.Second)
	rearmed()
	clk.Advance(39 * time.Second)
	if len(fired) != 0 {
		t.Fatal("fired early")
	}
	clk.Advance(time.Second)
	expect(start.Add(100 * time.Second))

	// Quiet until the next progress.
	if clk.Pending() != 0 {
		t.Fatal("armed after firing")
	}
	w.Kick()
	rearmed()

	// Paused: nothing fires; Resume gives a full period again.
	w.Pause()
	if clk.Pending() != 0 {
		t.Fatal("armed while paused")
	}
	clk.Advance(time.Hour)
	w.Kick() // progress while paused does not arm it
	if clk.Pending() != 0 {
		t.Fatal("Kick armed a paused watchdog")
	}
	w.Resume()
	resumed := clk.Now()
	clk.Advance(time.Minute)
	expect(resumed.Add(time.Minute))

	w.Stop()
	w.Kick()
	w.Resume()
	if clk.Pending() != 0 {
		t.Fatal("armed after Stop")
	}
}

func TestWatchdogNil(t *testing.T) {
	var w *Watchdog
	w.Kick()
	w.Pause()
	w.Resume()
	w.Stop()
}
