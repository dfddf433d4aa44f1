package procs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/testenv"
)

// orphanExiter runs the orphan-exiter helper with os/exec and returns the
// pid of the orphan it leaves, which exits once reparented to this process.
// It reports failures with t.Error, so goroutines may call it.
func orphanExiter(t *testing.T) int {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Error(err)
		return 0
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=orphan-exiter", runEnv+"="+runID)
	out, err := cmd.Output()
	if err != nil {
		// The reaper must not have taken the exit status of an os/exec child.
		t.Errorf("orphan-exiter: %v", err)
		return 0
	}
	var pid int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "orphan %d", &pid); err != nil {
		t.Errorf("orphan-exiter said %q", out)
	}
	return pid
}

func TestReaperReapsOrphansAsTheyExit(t *testing.T) {
	if !subreaper {
		t.Skip("no subreaper in this build: orphans go to init, which reaps them")
	}
	checkLeaks(t)
	r := StartReaper(nil)
	defer r.Close()
	var orphans []int
	for range 5 {
		orphans = append(orphans, orphanExiter(t))
	}
	// Each orphan exits once it is ours; the reaper must take it without
	// any Process being terminated.
	if !testenv.Eventually(10*time.Second, func() bool { return allGone(orphans) }) {
		t.Fatalf("reaped %d of %d orphans; zombie children left: %v", r.Reaped(), len(orphans), zombieChildren())
	}
	if r.Reaped() < int64(len(orphans)) {
		t.Errorf("Reaped() = %d, want at least %d", r.Reaped(), len(orphans))
	}
}

// TestReaperStealsNoExitStatus runs children that others wait for — with
// os/exec in familiar's process group, with Start in their own session or
// group, and with StartCommand in a session of their own — while orphans
// exit and the reaper sweeps: every waiter gets its child's own exit code.
func TestReaperStealsNoExitStatus(t *testing.T) {
	checkLeaks(t)
	r := StartReaper(nil)
	defer r.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg        sync.WaitGroup
		orphansMu sync.Mutex
		orphans   []int
	)
	errs := make(chan error, 100)
	for i := range 12 {
		wg.Add(4)
		go func() { // os/exec, like git
			defer wg.Done()
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=exit 3", runEnv+"="+runID)
			var ee *exec.ExitError
			if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
				errs <- errors.New("os/exec child: " + errString(err))
			}
		}()
		go func() { // procs, under a PTY or with pipes
			defer wg.Done()
			p, err := Start(helperConfig(Config{Pipes: i%2 == 0}, "exit", "5"))
			if err != nil {
				errs <- err
				return
			}
			defer p.Close()
			st, err := p.Wait(context.Background())
			if err != nil || st.Code != 5 {
				errs <- errors.New("procs child: status " + st.String() + " " + errString(err))
			}
		}()
		go func() { // os/exec in a session of its own, like the background familiar
			defer wg.Done()
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=exit 4", runEnv+"="+runID)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			wait, err := StartCommand(cmd)
			if err != nil {
				errs <- err
				return
			}
			var ee *exec.ExitError
			if err := wait(); !errors.As(err, &ee) || ee.ExitCode() != 4 {
				errs <- errors.New("StartCommand child: " + errString(err))
			}
		}()
		go func() { // an orphan, so sweeps run meanwhile
			defer wg.Done()
			pid := orphanExiter(t)
			orphansMu.Lock()
			orphans = append(orphans, pid)
			orphansMu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !testenv.Eventually(10*time.Second, func() bool { return allGone(orphans) }) {
		t.Errorf("orphans not reaped: zombie children %v", zombieChildren())
	}
}

// allGone reports whether none of pids exists any more (reaped, not zombies).
func allGone(pids []int) bool {
	for _, pid := range pids {
		if _, err := readStat(pid); err == nil {
			return false
		}
	}
	return true
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
