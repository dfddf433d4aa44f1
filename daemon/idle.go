package daemon

import (
	"context"
	"time"

	"github.com/familiar-dev/familiar/clock"
)

// IdleOptions say how WaitIdle sees the daemon.
type IdleOptions struct {
	Clock clock.Clock
	// Clients is the number of connected clients.
	Clients func() int
	// Busy says what keeps the daemon busy ("2 running, 1 queued"), "" when
	// nothing is queued, running or waiting.
	Busy func(context.Context) (string, error)
	// Timeout is the current idleExitSec as a duration; read at every check,
	// so a settings change applies at once.
	Timeout func() time.Duration
	// Every is how often idleness is checked (default 1 s). Exiting a little
	// late is harmless; polling keeps the orchestrator free of hooks for it.
	Every time.Duration
}

// WaitIdle returns nil once the daemon has had no client and nothing to do
// for Timeout without interruption, or ctx.Err() when ctx is done first. A
// Busy error counts as busy (never exit on doubt).
func WaitIdle(ctx context.Context, o IdleOptions) error {
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Every <= 0 {
		o.Every = time.Second
	}
	var since time.Time // zero while not idle
	t := o.Clock.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
		}
		now := o.Clock.Now()
		idle := o.Clients() == 0
		if idle {
			busy, err := o.Busy(ctx)
			idle = err == nil && busy == ""
		}
		switch {
		case !idle:
			since = time.Time{}
		case since.IsZero():
			since = now
		}
		timeout := o.Timeout()
		if !since.IsZero() && now.Sub(since) >= timeout {
			return nil
		}
		next := o.Every
		if !since.IsZero() {
			// Do not overshoot a short timeout by a whole period.
			next = max(min(next, since.Add(timeout).Sub(now)), time.Millisecond)
		}
		t.Reset(next)
	}
}
