package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/internal/leakcheck"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// helperEnv, when set, makes the test binary act as a helper child instead
// of running tests (see crash_test.go), as os/exec's tests do.
const helperEnv = "FAMILIAR_STORE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	leakcheck.Main(m)
}

// leakcheck fails t if, once t and its cleanups are done, a goroutine of this
// package (a Store's writer, a writer blocked in submit, a goroutine a test
// started) is still alive. Call it first so its cleanup runs last.
func checkLeaks(t *testing.T) {
	t.Helper()
	leakcheck.Check(t)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

// openStore opens <dir>/familiar.db and closes it when t ends.
func openStore(t testing.TB, dir string, clk clock.Clock) *Store {
	t.Helper()
	s, err := Open(filepath.Join(dir, FileName), Options{Logger: testLogger(t), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// sameJSON compares JSON documents ignoring insignificant whitespace.
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

func TestSettings(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := openStore(t, t.TempDir(), nil)

	if _, err := s.GetSetting("settings"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetSetting of a missing name: err = %v, want ErrNotFound", err)
	}
	v := raw(`{"maxConcurrent": 3}`)
	if err := s.PutSetting(ctx, "settings", v); err != nil {
		t.Fatal(err)
	}
	v[2] = 'X' // the store must have copied it
	got, err := s.GetSetting("settings")
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(got, raw(`{"maxConcurrent":3}`)) {
		t.Errorf("GetSetting = %s", got)
	}
	for _, bad := range []json.RawMessage{nil, raw(`{`)} {
		if err := s.PutSetting(ctx, "settings", bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutSetting(%q): err = %v, want ErrInvalid", bad, err)
		}
	}
	if err := s.PutSetting(ctx, "", raw(`1`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("PutSetting with empty name: err = %v, want ErrInvalid", err)
	}
}

// TestCloseFlushesAndRefuses closes the store while writers are busy: every
// write either returns ErrClosed or is durable, and the writer goroutine is
// gone when Close returns.
func TestCloseFlushesAndRefuses(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s, err := Open(path, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}

	const writers = 20
	var (
		mu    sync.Mutex
		acked []uint64
		wg    sync.WaitGroup
	)
	for g := range writers {
		wg.Go(func() {
			for {
				seq, err := s.AppendEvent(ctx, fmt.Sprintf("task-%d", g), "tick", nil)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = append(acked, seq)
				mu.Unlock()
			}
		})
	}
	testenv.Await(t, 10*time.Second, "writers to get going", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 100
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if err := s.PutTask(ctx, TaskRecord{ID: "x", Status: "queued"}); !errors.Is(err, ErrClosed) {
		t.Errorf("PutTask after Close: err = %v, want ErrClosed", err)
	}
	if _, err := s.GetTask("x"); !errors.Is(err, ErrClosed) {
		t.Errorf("GetTask after Close: err = %v, want ErrClosed", err)
	}
	if _, err := os.Stat(pidPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file after Close: stat err = %v, want not exist", err)
	}

	s = openStore(t, dir, nil)
	have := map[uint64]bool{}
	for since := uint64(0); ; {
		evs, last, err := s.Events("", since, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			have[e.Seq] = true
		}
		if len(evs) == 0 {
			break
		}
		since = last
	}
	for _, seq := range acked {
		if !have[seq] {
			t.Errorf("acknowledged seq %d is missing after Close and reopen", seq)
		}
	}
}

// holdWriter makes the writer block before its next transaction until the
// returned release is called; entered receives once it is blocked.
func holdWriter(s *Store) (entered <-chan struct{}, release func()) {
	in := make(chan struct{}, 1)
	gate := make(chan struct{})
	var once sync.Once
	s.beforeCommit = func() {
		select {
		case <-gate:
			return
		default:
		}
		select {
		case in <- struct{}{}:
		default:
		}
		<-gate
	}
	return in, func() { once.Do(func() { close(gate) }) }
}

func pendingWrites(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// TestContextCancel: a context done before the call writes nothing; one done
// while waiting returns at once with ctx.Err(), and the write still lands
// (as documented on submit).
func TestContextCancel(t *testing.T) {
	checkLeaks(t)
	s := openStore(t, t.TempDir(), nil)
	entered, release := holdWriter(s)
	defer release()

	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, err := s.AppendEvent(done, "a", "never", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("AppendEvent with a done ctx: err = %v, want context.Canceled", err)
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := s.AppendEvent(context.Background(), "a", "blocker", nil); err != nil {
			t.Error(err)
		}
	})
	<-entered // the writer holds "blocker" and is stuck before committing

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	wg.Go(func() {
		_, err := s.AppendEvent(ctx, "a", "cancelled", nil)
		errc <- err
	})
	testenv.Await(t, 10*time.Second, "the second write to be queued", func() bool { return pendingWrites(s) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("AppendEvent cancelled while waiting: err = %v, want context.Canceled", err)
	}
	release()
	wg.Wait()

	// Close flushes the queue, so after reopening, the cancelled write is in.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, filepath.Dir(s.Path()), nil)
	evs, _, err := s2.Events("a", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if got := strings.Join(kinds, ","); got != "blocker,cancelled" {
		t.Errorf("events = %s, want blocker,cancelled", got)
	}
}

// TestFailedWriteDoesNotSinkBatch queues three writes into one batch, the
// middle one failing after it has written: the others land, its own write is
// rolled back, and all three were handled by one commit.
func TestFailedWriteDoesNotSinkBatch(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := openStore(t, t.TempDir(), nil)
	entered, release := holdWriter(s)
	defer release()

	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.PutSetting(ctx, "blocker", raw(`1`)); err != nil {
			t.Error(err)
		}
	})
	<-entered

	boom := errors.New("boom")
	errs := make([]error, 3)
	wg.Go(func() { _, errs[0] = s.AppendEvent(ctx, "a", "first", nil) })
	testenv.Await(t, 10*time.Second, "first write queued", func() bool { return pendingWrites(s) == 1 })
	wg.Go(func() {
		errs[1] = s.submit(ctx, func(tx *bolt.Tx) error {
			if err := tx.Bucket(bucketSettings).Put([]byte("poison"), []byte(`1`)); err != nil {
				return err
			}
			return boom
		})
	})
	testenv.Await(t, 10*time.Second, "failing write queued", func() bool { return pendingWrites(s) == 2 })
	wg.Go(func() { errs[2] = s.PutSetting(ctx, "third", raw(`3`)) })
	testenv.Await(t, 10*time.Second, "third write queued", func() bool { return pendingWrites(s) == 3 })

	before := s.commits.Load()
	release()
	wg.Wait()

	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("healthy writes failed: %v, %v", errs[0], errs[2])
	}
	if !errors.Is(errs[1], boom) {
		t.Fatalf("failing write: err = %v, want boom", errs[1])
	}
	// One for the blocker, one for the batch of three (the failed attempt is
	// rolled back, not committed).
	if got := s.commits.Load() - before; got != 2 {
		t.Errorf("commits = %d, want 2 (the three writes in one transaction)", got)
	}
	if _, err := s.GetSetting("poison"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the failed write's data: err = %v, want ErrNotFound (rolled back)", err)
	}
	if _, err := s.GetSetting("third"); err != nil {
		t.Error(err)
	}
	if evs, _, err := s.Events("a", 0, 0); err != nil || len(evs) != 1 || evs[0].TaskSeq != 1 {
		t.Errorf("events of a = %+v, %v; want one with TaskSeq 1", evs, err)
	}
}

// TestBatchIsBounded: more than maxBatch queued writes are split over
// transactions of at most maxBatch, and all of them land.
func TestBatchIsBounded(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := openStore(t, t.TempDir(), nil)
	entered, release := holdWriter(s)
	defer release()

	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := s.AppendEvent(ctx, "", "blocker", nil); err != nil {
			t.Error(err)
		}
	})
	<-entered
	const n = maxBatch + 10
	for i := range n {
		wg.Go(func() {
			if _, err := s.AppendEvent(ctx, fmt.Sprintf("task-%d", i%7), "tick", nil); err != nil {
				t.Error(err)
			}
		})
	}
	testenv.Await(t, 10*time.Second, "all writes queued", func() bool { return pendingWrites(s) == n })
	before := s.commits.Load()
	release()
	wg.Wait()
	s.awaitCommitted() // the last batch may have been answered from the journal
	if got := s.commits.Load() - before; got != 3 {
		t.Errorf("commits = %d, want 3 (the blocker, %d, then 10)", got, maxBatch)
	}
	if last, err := s.LastSeq(); err != nil || last != n+1 {
		t.Errorf("LastSeq = %d, %v; want %d", last, err, n+1)
	}
}
