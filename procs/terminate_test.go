package procs

import (
	"context"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/procs/proctable"
)

// TestTerminateAfterGrace: a child that ignores SIGTERM is killed once the
// grace period has passed on the clock, and not before.
func TestTerminateAfterGrace(t *testing.T) {
	checkLeaks(t)
	clk := clock.NewFake(time.Unix(1000, 0))
	p := startHelper(t, Config{Clock: clk, Grace: 10 * time.Second}, "ignore-term")
	waitOutput(t, p.Output(), "ready")

	errc := make(chan error, 1)
	go func() { errc <- p.Terminate(testContext(t)) }()
	waitOutput(t, p.Output(), "got SIGTERM")
	if !clk.WaitForTimers(1, 10*time.Second) {
		t.Fatal("no grace timer")
	}
	select {
	case <-p.Done():
		t.Fatal("exited before the grace period")
	case err := <-errc:
		t.Fatalf("Terminate returned before the grace period: %v", err)
	default:
	}
	clk.Advance(10 * time.Second)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Terminate did not return after the grace period")
	}
	if st, ok := p.ExitStatus(); !ok || st.Signal != syscall.SIGKILL {
		t.Errorf("status = %v, %v; want killed by SIGKILL", st, ok)
	}
}

// TestTerminateDoneContext: a done context cuts the grace short; the tree
// is still killed.
func TestTerminateDoneContext(t *testing.T) {
	checkLeaks(t)
	clk := clock.NewFake(time.Unix(1000, 0))
	p := startHelper(t, Config{Clock: clk}, "ignore-term")
	waitOutput(t, p.Output(), "ready")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Terminate(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.ExitStatus(); st.Signal != syscall.SIGKILL {
		t.Errorf("status = %v, want killed by SIGKILL", st)
	}
}

// TestTerminateCooperative: a child that exits on SIGTERM needs no grace
// and no clock advance.
func TestTerminateCooperative(t *testing.T) {
	checkLeaks(t)
	clk := clock.NewFake(time.Unix(1000, 0))
	p := startHelper(t, Config{Clock: clk}, "echo")
	if err := p.Terminate(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.ExitStatus(); st.Signal != syscall.SIGTERM {
		t.Errorf("status = %v, want killed by SIGTERM", st)
	}
	// Again, and after exit: nothing left to do.
	if err := p.Terminate(testContext(t)); err != nil {
		t.Fatal(err)
	}
}

var sleeperLine = regexp.MustCompile(`sleeper (\S+) (\d+) ready`)

// sleepers waits for n sleeper lines in o and returns their identities by name.
func sleepers(t testing.TB, o *Output, n int) map[string]Identity {
	t.Helper()
	if !testenv.Eventually(10*time.Second, func() bool { return len(sleeperLine.FindAllSubmatch(o.Tail().Data, -1)) >= n }) {
		t.Fatalf("want %d sleepers, output: %q", n, o.Tail().Data)
	}
	out := make(map[string]Identity)
	for _, m := range sleeperLine.FindAllSubmatch(o.Tail().Data, -1) {
		pid, _ := strconv.Atoi(string(m[2]))
		id, err := lookupIdentity(pid, "")
		if err != nil {
			t.Fatalf("sleeper %s: %v", m[1], err)
		}
		out[string(m[1])] = id
	}
	return out
}

// TestTerminateTree: descendants in their own sessions (one ignoring
// SIGTERM), one orphaned to us, and one from setsid(1) are all gone after
// Terminate, which waited out the grace for the stubborn one.
func TestTerminateTree(t *testing.T) {
	checkLeaks(t)
	clk := clock.NewFake(time.Unix(1000, 0))
	p := startHelper(t, Config{Clock: clk, Grace: 10 * time.Second}, "tree")
	waitOutput(t, p.Output(), "tree ready")
	want := 3
	if _, err := lookPath("setsid"); err == nil {
		want = 4
	}
	ids := sleepers(t, p.Output(), want)
	t.Logf("sleepers: %v", ids)
	orphan := ids["orphan"]
	if s, err := readStat(orphan.PID); err != nil || s.ppid == p.Identity().PID {
		t.Fatalf("orphan stat %+v, %v: should have been reparented", s, err)
	}

	errc := make(chan error, 1)
	go func() { errc <- p.Terminate(testContext(t)) }()
	if !clk.WaitForTimers(1, 10*time.Second) {
		t.Fatal("no grace timer")
	}
	// Everyone but the stubborn one exits on SIGTERM.
	if !testenv.Eventually(10*time.Second, func() bool {
		for name, id := range ids {
			if alive, _ := id.Alive(); alive && name != "own-session-ignoring-term" {
				return false
			}
		}
		return true
	}) {
		t.Fatal("SIGTERM did not stop the cooperative descendants")
	}
	if alive, _ := ids["own-session-ignoring-term"].Alive(); !alive {
		t.Fatal("the descendant ignoring SIGTERM died before the grace period")
	}
	clk.Advance(10 * time.Second)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Terminate did not return")
	}
	for name, id := range ids {
		if alive, err := id.Alive(); alive || err != nil {
			t.Errorf("%s (%d) alive after Terminate: %v", name, id.PID, err)
		}
	}
}

// TestCloseStopsLeftovers: a child that exits normally but leaves a
// descendant in its own session behind (orphaned to us) — Close stops and reaps it.
func TestCloseStopsLeftovers(t *testing.T) {
	checkLeaks(t)
	p := startHelper(t, Config{}, "orphaner")
	if st, err := p.Wait(testContext(t)); err != nil || !st.Success() {
		t.Fatalf("orphaner: %v, %v", st, err)
	}
	orphan := sleepers(t, p.Output(), 1)["orphan"]
	if alive, _ := orphan.Alive(); !alive {
		t.Fatal("orphan not running")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if alive, _ := orphan.Alive(); alive {
		t.Error("orphan alive after Close")
	}
	select {
	case <-p.Output().Done():
	default:
		t.Error("output not drained after Close")
	}
}

// TestTerminateTreeByIdentity: what a restarted familiar does with an
// Identity from the store whose process is not its child.
func TestTerminateTreeByIdentity(t *testing.T) {
	checkLeaks(t)
	p := startHelper(t, Config{Pipes: true}, "orphaner")
	if _, err := p.Wait(testContext(t)); err != nil {
		t.Fatal(err)
	}
	sleeper := sleepers(t, p.Output(), 1)["orphan"]
	id, err := lookupIdentity(sleeper.PID, p.Identity().Tree)
	if err != nil {
		t.Fatal(err)
	}
	if err := TerminateTree(testContext(t), id, TreeOptions{}); err != nil {
		t.Fatal(err)
	}
	if alive, _ := id.Alive(); alive {
		t.Error("still alive after TerminateTree")
	}
}

// hiddenEnvironments is the process table as macOS shows it to familiar for
// Apple's own binaries (/bin/sh, zsh, sleep): no environment, so no TreeEnv.
type hiddenEnvironments struct{ proctable.Table }

func (hiddenEnvironments) EnvironHas(int, string) bool { return false }

var waiterLine = regexp.MustCompile(`waiter (\S+) (\d+) ready`)

// Processes that left the tree are found without reading an environment:
// a background job orphaned in the agent's session (by its session and
// group), a daemon in a session of its own whose parent was seen (by the
// record of descendants), and a job started after the record in the session
// of a command that was seen and has ended (by that session). Built with
// portableprocs (.ci/run-portable), nothing brings the orphans back to the
// test process, as on macOS.
func TestTerminateFindsEscapesWithoutEnvironments(t *testing.T) {
	checkLeaks(t)
	envTable = hiddenEnvironments{proctable.Local}
	t.Cleanup(func() { envTable = proctable.Local })
	p := startHelper(t, Config{Grace: 10 * time.Second}, "escapes")
	waitOutput(t, p.Output(), "escapes ready")
	if !testenv.Eventually(10*time.Second, func() bool { return len(waiterLine.FindAllSubmatch(p.Output().Tail().Data, -1)) >= 2 }) {
		t.Fatalf("want 2 waiters, output: %q", p.Output().Tail().Data)
	}
	ids := sleepers(t, p.Output(), 2)
	// What a Process does every recordEvery, done now so that the test
	// does not depend on a tick.
	if err := p.lin.record(p.Identity()); err != nil {
		t.Fatal(err)
	}
	var waiters []Identity
	for _, m := range waiterLine.FindAllSubmatch(p.Output().Tail().Data, -1) {
		pid, _ := strconv.Atoi(string(m[2]))
		id, err := lookupIdentity(pid, "")
		if err != nil {
			t.Fatal(err)
		}
		waiters = append(waiters, id)
		if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
	}
	ids = sleepers(t, p.Output(), 3)
	if !testenv.Eventually(10*time.Second, func() bool {
		for _, w := range waiters {
			if alive, _ := w.Alive(); alive {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the waiters did not exit")
	}
	for name, id := range ids {
		s, _ := readStat(id.PID)
		t.Logf("%s: pid %d, parent %d, session %d, group %d (agent %d)", name, id.PID, s.ppid, s.sid, s.pgid, p.Identity().PID)
	}
	if err := p.Terminate(testContext(t)); err != nil {
		t.Fatal(err)
	}
	for name, id := range ids {
		if alive, err := id.Alive(); alive || err != nil {
			t.Errorf("%s (%d) alive after Terminate: %v", name, id.PID, err)
		}
	}
}

// What a restarted familiar does for a task whose claude died with the
// familiar before it: TerminateTree by the saved Identity, with nothing
// recorded, finds what claude left in its process group (reparented to init
// when nothing brings orphans back), without reading an environment.
func TestTerminateTreeFindsTheRootsGroupWithoutEnvironments(t *testing.T) {
	checkLeaks(t)
	envTable = hiddenEnvironments{proctable.Local}
	t.Cleanup(func() { envTable = proctable.Local })
	// Pipes: a PTY's session leader would take its group with it (SIGHUP).
	p := startHelper(t, Config{Pipes: true}, "spawn-and-exit", "false", "sleeper", "in-group")
	sleeper := sleepers(t, p.Output(), 1)["in-group"]
	if _, err := p.Wait(testContext(t)); err != nil {
		t.Fatal(err)
	}
	s, _ := readStat(sleeper.PID)
	t.Logf("sleeper %d: parent %d, group %d (the dead root's %d)", sleeper.PID, s.ppid, s.pgid, p.Identity().PGID)
	if err := TerminateTree(testContext(t), p.Identity(), TreeOptions{}); err != nil {
		t.Fatal(err)
	}
	if alive, _ := sleeper.Alive(); alive {
		t.Error("the sleeper left in the dead root's group survived TerminateTree")
	}
}
