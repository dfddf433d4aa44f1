package daemon

import (
	"context"
	"errors"
	"github.com/familiar-dev/familiar/internal/fakeserver"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/protocol"
)

// idleRig drives WaitIdle with a fake clock and settable clients/busy.
type idleRig struct {
	t       *testing.T
	clk     *clock.Fake
	mu      sync.Mutex
	clients int
	busy    string
	done    chan error
}

func newIdleRig(t *testing.T, timeout time.Duration) *idleRig {
	r := &idleRig{t: t, clk: clock.NewFake(time.Unix(1000, 0)), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		r.done <- WaitIdle(ctx, IdleOptions{
			Clock:   r.clk,
			Clients: func() int { r.mu.Lock(); defer r.mu.Unlock(); return r.clients },
			Busy: func(context.Context) (string, error) {
				r.mu.Lock()
				defer r.mu.Unlock()
				return r.busy, nil
			},
			Timeout: func() time.Duration { return timeout },
			Every:   time.Second,
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

func (r *idleRig) set(clients int, busy string) {
	r.mu.Lock()
	r.clients, r.busy = clients, busy
	r.mu.Unlock()
}

// step lets the next check run and reports whether WaitIdle returned.
func (r *idleRig) step(d time.Duration) bool {
	r.t.Helper()
	if !r.clk.WaitForTimers(1, 10*time.Second) {
		select {
		case err := <-r.done:
			r.done <- err
			return true
		default:
			r.t.Fatal("WaitIdle armed no timer")
		}
	}
	r.clk.Advance(d)
	// The check runs, then either re-arms the timer or returns.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-r.done:
			r.done <- err
			return true
		default:
		}
		if r.clk.Pending() > 0 {
			return false
		}
		time.Sleep(time.Millisecond) // the check runs on WaitIdle's goroutine
	}
	r.t.Fatal("WaitIdle neither re-armed nor returned")
	return false
}

func TestWaitIdleNeedsNoClientsAndNothingToDoForTheWholeTimeout(t *testing.T) {
	r := newIdleRig(t, 5*time.Second)
	r.set(1, "")
	for range 10 {
		if r.step(time.Second) {
			t.Fatal("exited with a client connected")
		}
	}
	r.set(0, "1 task(s) queued, 1 starting, running or waiting")
	for range 10 {
		if r.step(time.Second) {
			t.Fatal("exited with a task running")
		}
	}
	r.set(0, "")
	for i := range 4 { // idle at the first check, 4 s later not yet 5 s
		if r.step(time.Second) {
			t.Fatalf("exited after %d s idle", i)
		}
	}
	r.set(0, "1 task(s) queued")
	if r.step(time.Second) {
		t.Fatal("exited while busy")
	}
	r.set(0, "")
	for i := range 5 { // the busy moment restarted the count
		if r.step(time.Second) {
			t.Fatalf("exited %d s after being busy", i)
		}
	}
	if !r.step(time.Second) {
		t.Fatal("still up after 5 s idle")
	}
}

func TestWaitIdleZeroTimeoutExitsAtOnce(t *testing.T) {
	r := newIdleRig(t, 0)
	if !r.step(0) {
		t.Fatal("idleExitSec 0 did not exit at the first idle check")
	}
}

type fakeInner struct {
	fakeserver.Unimplemented
	shutdowns int
}

func (f *fakeInner) Initialize(context.Context, *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	return &protocol.InitializeResult{ProtocolVersion: protocol.ProtocolVersion}, nil
}

func (f *fakeInner) Shutdown(context.Context) error { f.shutdowns++; return nil }

func TestServiceLifecycle(t *testing.T) {
	inner := &fakeInner{}
	s := NewService(inner, 300)
	s.Version = "1.2.3"
	clients, busy, stopped := 0, "", 0
	s.Clients = func() int { return clients }
	s.Busy = func(context.Context) (string, error) { return busy, nil }
	s.Stop = func() { stopped++ }
	ctx := context.Background()

	// An editor's shutdown never reaches the orchestrator.
	if err := s.Shutdown(ctx); err != nil || inner.shutdowns != 0 {
		t.Fatalf("shutdown: %v, inner shutdowns %d", err, inner.shutdowns)
	}
	// Another protocol version is refused, naming both.
	_, err := s.Initialize(ctx, &protocol.InitializeParams{WorkspaceRoot: "/r", ProtocolVersion: 7})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams || !strings.Contains(pe.Message, "version 7") ||
		!strings.Contains(pe.Message, "speaks version 1") || !strings.Contains(pe.Message, "1.2.3") {
		t.Fatalf("initialize with protocol 7: %v", err)
	}
	// idleExitSec from initialize's settings.
	ten := 10
	if _, err := s.Initialize(ctx, &protocol.InitializeParams{WorkspaceRoot: "/r", ProtocolVersion: 1,
		Settings: &protocol.SettingsUpdate{IdleExitSec: &ten}}); err != nil {
		t.Fatal(err)
	}
	if s.IdleExit() != 10*time.Second {
		t.Fatalf("idle exit = %v", s.IdleExit())
	}
	// server/stop {ifIdle} refuses while anybody depends on the daemon.
	clients = 1
	if r, _ := s.ServerStop(ctx, &protocol.ServerStopParams{IfIdle: true}); r.Stopping || !strings.Contains(r.Busy, "1 editor") {
		t.Fatalf("ifIdle with a client = %+v", r)
	}
	clients, busy = 0, "2 task(s) queued"
	if r, _ := s.ServerStop(ctx, &protocol.ServerStopParams{IfIdle: true}); r.Stopping || r.Busy != busy || stopped != 0 {
		t.Fatalf("ifIdle while busy = %+v", r)
	}
	if r, _ := s.ServerStop(ctx, &protocol.ServerStopParams{}); !r.Stopping || stopped != 1 || r.Version != "1.2.3" {
		t.Fatalf("stop = %+v, stopped %d", r, stopped)
	}
}

func TestStatsBusy(t *testing.T) {
	st := &protocol.ServerStats{}
	busy := StatsBusy(func(context.Context) (*protocol.ServerStats, error) { return st, nil })
	if b, _ := busy(context.Background()); b != "" {
		t.Fatalf("idle stats busy = %q", b)
	}
	st.Running = 1
	if b, _ := busy(context.Background()); b == "" {
		t.Fatal("a running task is not busy")
	}
}

func TestInfoRoundTripAndAlive(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadInfo(dir); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("no info: %v", err)
	}
	want := Info{PID: os.Getpid(), Version: "1.0.0", ProtocolVersion: 1, Socket: "s"}
	if err := WriteInfo(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadInfo(dir)
	if err != nil || got.PID != want.PID || got.Version != want.Version {
		t.Fatalf("info = %+v, %v", got, err)
	}
	RemoveInfo(dir, want.PID+1) // not ours: kept
	if _, err := ReadInfo(dir); err != nil {
		t.Fatal("RemoveInfo removed another daemon's info")
	}
	RemoveInfo(dir, want.PID)
	if _, err := ReadInfo(dir); !errors.Is(err, ErrNoDaemon) {
		t.Fatal("RemoveInfo left the info")
	}
	if Alive(0) || Alive(1<<22+12345) {
		t.Fatal("Alive of no process")
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"1.2.3", "1.2.3", 0}, {"1.10.0", "1.9.9", 1}, {"dev", "0.0.1", -1}, {"v2", "1.9", 1}} {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compareVersions(%q, %q) = %d", c.a, c.b, got)
		}
	}
}
