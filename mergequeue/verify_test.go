package mergequeue

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
)

// settingsHost is a Host that only has settings (runVerify reads nothing
// else).
type settingsHost struct {
	Host
	s protocol.Settings
}

func (h settingsHost) Settings() protocol.Settings { return h.s }

// timeoutClock is the wall clock, except the verify command's timeout
// (a timer of exactly timeout), which fires when the test says.
type timeoutClock struct {
	clock.Clock
	timeout time.Duration
	fire    chan time.Time
}

func (c timeoutClock) NewTimer(d time.Duration) clock.Timer {
	if d == c.timeout {
		return manualTimer{c: c.fire}
	}
	return c.Clock.NewTimer(d)
}

type manualTimer struct{ c chan time.Time }

func (t manualTimer) C() <-chan time.Time      { return t.c }
func (manualTimer) Stop() bool                 { return true }
func (manualTimer) Reset(d time.Duration) bool { return true }

// The verify command's whole tree ends with it, as an agent's does, when
// the queue is cancelled (its run's context), when familiar shuts down
// (the queue's context: the same path) and when it times out, a child
// that left its session with setsid too; and a verify that finished leaves
// nothing running either.
func TestVerifyTreeEnds(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid command here (util-linux): the tree's setsid child cannot be made")
	}
	const timeoutSec = 3600
	for _, tc := range []struct {
		name string
		end  func(cancel context.CancelFunc, fire chan time.Time)
		tail string // after the setsid child is started
		want func(t *testing.T, res verifyResult)
	}{
		{name: "cancelled", tail: "sleep 300", end: func(cancel context.CancelFunc, _ chan time.Time) { cancel() },
			want: func(t *testing.T, res verifyResult) {
				if res.ok {
					t.Errorf("a cancelled verify passed: %+v", res)
				}
			}},
		{name: "timed out", tail: "sleep 300", end: func(_ context.CancelFunc, fire chan time.Time) { fire <- time.Now() },
			want: func(t *testing.T, res verifyResult) {
				if res.ok || !res.timedOut || res.timeoutSec != timeoutSec {
					t.Errorf("a timed-out verify: %+v", res)
				}
			}},
		{name: "finished", tail: "exit 0", end: func(context.CancelFunc, chan time.Time) {},
			want: func(t *testing.T, res verifyResult) {
				if !res.ok || res.timedOut {
					t.Errorf("a verify that exited 0: %+v", res)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pids := filepath.Join(dir, "pids")
			fire := make(chan time.Time, 1)
			m := New(Config{Host: settingsHost{s: protocol.Settings{CommandTimeoutSec: timeoutSec, TermGraceSec: 5}},
				DataDir: t.TempDir(), Ctx: context.Background(),
				Clock: timeoutClock{Clock: clock.Real, timeout: timeoutSec * time.Second, fire: fire}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			command := "setsid sleep 300 & echo $! > " + pids + ".tmp; mv " + pids + ".tmp " + pids + "; " + tc.tail
			done := make(chan verifyResult, 1)
			go func() { done <- m.runVerify(ctx, dir, command) }()
			testenv.Await(t, 60*time.Second, "the verify command's setsid child to start", func() bool {
				_, err := os.Stat(pids)
				return err == nil
			})
			b, err := os.ReadFile(pids)
			if err != nil {
				t.Fatal(err)
			}
			child, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("the child's pid %q: %v", b, err)
			}
			// $! is the background job's pid as soon as it is forked; setsid
			// makes it a session of its own a moment later (seen under load:
			// checked once, it was still in the shell's).
			testenv.Await(t, 60*time.Second, "the child in a session of its own", func() bool {
				sid, err := unix.Getsid(child)
				return err == nil && sid == child
			})
			tc.end(cancel, fire)
			var res verifyResult
			select {
			case res = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("runVerify did not return")
			}
			tc.want(t, res)
			// runVerify returns once the tree is gone.
			if unix.Kill(child, 0) == nil && !zombie(child) {
				t.Errorf("the verify's setsid child %d outlived it", child)
			}
			if runs, _ := os.ReadDir(m.verifyDir()); len(runs) != 0 {
				t.Errorf("the verify's record is left: %v", runs)
			}
		})
	}
}

// zombie says whether pid has exited and is waiting to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}
