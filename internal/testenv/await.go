package testenv

import (
	"testing"
	"time"

	"github.com/familiar-dev/familiar/clock"
)

// Eventually polls cond until it holds or within has passed (real time),
// and reports whether it held. It is for conditions nothing signals:
// another process's state in /proc, a file another process writes, work on
// a goroutine the test cannot join. The poll starts at 1 ms and backs off
// to 20 ms, so a quick condition is seen quickly and a slow one does not
// spin on a loaded machine.
func Eventually(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	wait := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(wait)
		wait = min(2*wait, 20*time.Millisecond)
	}
	return true
}

// Await is Eventually that fails the test, naming what it waited for.
func Await(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Eventually(within, cond) {
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// AdvanceArmed waits (up to 10 s, real time) until at least n timers are
// armed on clk, then moves it on by d: advancing before the code under test
// has armed its timer would pass it by, and the test would hang or pass
// for the wrong reason.
func AdvanceArmed(t testing.TB, clk *clock.Fake, n int, d time.Duration) {
	t.Helper()
	if !clk.WaitForTimers(n, 10*time.Second) {
		t.Fatalf("%d timer(s) never armed (%d pending) before advancing %v", n, clk.Pending(), d)
	}
	clk.Advance(d)
}
