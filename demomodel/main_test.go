package demomodel

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMain fails the run if goroutines outlive the tests: every Server must
// have been closed and its handlers (and hooks) must have returned.
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		if err := settled(before, 10*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// settled waits for the goroutine count to fall back to n. Goroutines end
// asynchronously after Close returns (connection readers), so it polls with
// a deadline rather than checking once.
func settled(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			return fmt.Errorf("leaked goroutines: %d running, %d before the tests\n%s", runtime.NumGoroutine(), n, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
