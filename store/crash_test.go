package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	helperAppend = "append-until-killed"
	helperDBEnv  = "FAMILIAR_STORE_TEST_DB"
)

// runHelper is the test binary acting as a child process (see TestMain).
func runHelper(mode string) int {
	switch mode {
	case helperAppend:
		return appendUntilKilled(os.Getenv(helperDBEnv))
	case helperQuestions:
		return questionCommits(os.Getenv(helperDBEnv))
	case helperJournalKilled:
		return answeredThenKilled(os.Getenv(helperDBEnv))
	default:
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		return 2
	}
}

// appendUntilKilled appends events from a few goroutines and prints each
// seq to stdout once AppendEvent has returned it, i.e. once it is durable.
// It stops on its own only as a safety net; the parent kills it. If the
// parent dies, the next print hits a closed pipe and SIGPIPE ends us.
func appendUntilKilled(path string) int {
	s, err := Open(path, Options{LockTimeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	const appenders, safetyNet = 4, 200_000
	var (
		mu sync.Mutex // one line per write, whole
		wg sync.WaitGroup
	)
	for g := range appenders {
		wg.Go(func() {
			task := fmt.Sprintf("task-%d", g)
			for i := range safetyNet / appenders {
				seq, err := s.AppendEvent(context.Background(), task, "tick", []byte(fmt.Sprintf(`{"i":%d}`, i)))
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "%d\n", seq)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	s.Close()
	return 3 // should have been killed long before
}

// TestCrashKeepsAcknowledgedEvents runs a child that appends events and
// reports each acknowledged seq, checks that a second familiar is refused
// with the child's pid, SIGKILLs the child mid-stream, and then finds every
// acknowledged seq in the reopened database.
func TestCrashKeepsAcknowledgedEvents(t *testing.T) {
	checkLeaks(t)
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+helperAppend, helperDBEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	acked := map[uint64]bool{}
	lines := bufio.NewScanner(stdout)
	readAcks := func(n int) {
		t.Helper()
		for len(acked) < n && lines.Scan() {
			seq, err := strconv.ParseUint(lines.Text(), 10, 64)
			if err != nil {
				t.Fatalf("child printed %q: %v", lines.Text(), err)
			}
			acked[seq] = true
		}
		if len(acked) < n {
			t.Fatalf("child stopped after %d acks: %v\n%s", len(acked), lines.Err(), stderr.String())
		}
	}

	readAcks(200)
	// The child holds the lock: a second familiar is told who.
	err = openLocked(t, path)
	if want := fmt.Sprintf("(pid %d)", cmd.Process.Pid); !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Open while the child runs: err = %q, want it to end with %q", err, want)
	}
	readAcks(len(acked) + 300) // still making progress after our attempt

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed = true
	// Lines already in the pipe were printed after their seq was durable:
	// they count too.
	for lines.Scan() {
		if seq, err := strconv.ParseUint(lines.Text(), 10, 64); err == nil {
			acked[seq] = true
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 {
		t.Fatalf("child ended with %v, want killed by a signal\n%s", err, stderr.String())
	}
	t.Logf("child acknowledged %d events before SIGKILL", len(acked))

	s := openStore(t, dir, nil)
	have := map[uint64]bool{}
	var maxSeq uint64
	for _, e := range allEvents(t, s, "", 1000) {
		have[e.Seq] = true
		maxSeq = max(maxSeq, e.Seq)
	}
	missing := 0
	for seq := range acked {
		if !have[seq] {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged seqs are missing after the crash", missing, len(acked))
	}
	seq, err := s.AppendEvent(t.Context(), "after", "tick", nil)
	if err != nil {
		t.Fatal(err)
	}
	if seq <= maxSeq {
		t.Errorf("first seq after the crash = %d, not above %d", seq, maxSeq)
	}
}
