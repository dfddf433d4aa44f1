package leakcheck

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// leakEnv makes the test binary a child whose one test leaks what it names.
const leakEnv = "LEAKCHECK_TEST_LEAK"

func TestMain(m *testing.M) {
	if os.Getenv(leakEnv) != "" {
		GoroutineTimeout, ChildTimeout = 200*time.Millisecond, 200*time.Millisecond
	}
	Main(m)
}

func TestLeaky(t *testing.T) {
	switch os.Getenv(leakEnv) {
	case "goroutine":
		go func() { select {} }()
	case "child":
		if err := exec.Command("sleep", "60").Start(); err != nil {
			t.Fatal(err)
		}
	case "escaped":
		// The sleep is reparented to init once sh has exited: nobody's
		// child, found only by the marker in its environment.
		if err := exec.Command("sh", "-c", "(sleep 60 >/dev/null 2>&1 &)").Run(); err != nil {
			t.Fatal(err)
		}
	case "none":
		done := make(chan struct{})
		go func() { close(done) }()
		<-done
	default:
		t.Skip("run by TestRunFailsOnLeaks")
	}
}

func TestRunFailsOnLeaks(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		leak, want string
		code       int
	}{
		{"none", "", 0},
		{"goroutine", "1 goroutine(s) outlived the tests", 1},
		{"child", "child process(es) outlived the tests (killed now): ", 1},
		{"escaped", "1 process(es) started by the tests outlived them (killed now): ", 1},
	} {
		cmd := exec.Command(self, "-test.run=^TestLeaky$")
		cmd.Env = append(os.Environ(), leakEnv+"="+tt.leak)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.code || !strings.Contains(string(out), tt.want) {
			t.Errorf("leaking %s: exit %d, want %d with %q:\n%s", tt.leak, code, tt.code, tt.want, out)
		}
	}
}

func TestCheckSeesOnlyNewGoroutines(t *testing.T) {
	stop := make(chan struct{})
	go func() { <-stop }() // started before: not this test's concern
	defer close(stop)
	before := ids(snapshot())
	done := make(chan struct{})
	go func() { <-done }()
	if left := leaked(before); len(left) != 1 {
		t.Fatalf("leaked = %d goroutines, want the 1 started after the snapshot", len(left))
	}
	close(done)
	if err := waitGoroutines(before, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}
