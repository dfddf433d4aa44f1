package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// openLocked opens path expecting ErrLocked, and checks it came quickly.
func openLocked(t *testing.T, path string) error {
	t.Helper()
	start := time.Now()
	s, err := Open(path, Options{LockTimeout: 200 * time.Millisecond, Logger: testLogger(t)})
	if err == nil {
		s.Close()
		t.Fatal("second Open succeeded while the database was open")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: err = %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("second Open took %v to fail", d)
	}
	return err
}

const unknownHolder = "another familiar is running for this repository (its pid could not be determined)"

// TestSecondOpenLocked opens the same database twice in one process. bbolt's
// flock belongs to the open file description, so the second os.Open of the
// file conflicts with the first just as another process would.
func TestSecondOpenLocked(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := openStore(t, dir, nil)

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("database mode = %v, want 0600", perm)
	}
	if got, want := pidPath(path), filepath.Join(dir, "familiar.pid"); got != want {
		t.Errorf("pid file = %s, want %s", got, want)
	}

	t.Run("pid known", func(t *testing.T) {
		err := openLocked(t, path)
		want := fmt.Sprintf("another familiar is running for this repository (pid %d)", os.Getpid())
		if err.Error() != want {
			t.Errorf("err = %q, want %q", err, want)
		}
		var le *LockedError
		if !errors.As(err, &le) || le.PID != os.Getpid() || le.Path != path {
			t.Errorf("err = %#v, want a *LockedError naming us and %s", err, path)
		}
	})

	writePID := func(t *testing.T, rec pidRecord) {
		t.Helper()
		b, _ := json.Marshal(rec)
		if err := os.WriteFile(pidPath(path), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T)
	}{
		{"pid file missing", func(t *testing.T) { os.Remove(pidPath(path)) }},
		{"pid file garbage", func(t *testing.T) { os.WriteFile(pidPath(path), []byte("4x2"), 0o600) }},
		// Beyond any pid_max, so certainly no such process.
		{"process gone", func(t *testing.T) { writePID(t, pidRecord{PID: 1 << 30}) }},
		// Alive, but started at another time: a reused pid, not the holder.
		{"pid reused", func(t *testing.T) {
			if _, ok := procStartTime(os.Getpid()); !ok {
				t.Skip("no process start times on this platform")
			}
			writePID(t, pidRecord{PID: os.Getpid(), Start: 1})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup(t)
			if err := openLocked(t, path); err.Error() != unknownHolder {
				t.Errorf("err = %q, want %q", err, unknownHolder)
			}
		})
	}

	// Once the holder is gone, the data dir is free.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, dir, nil)
	rec, err := readPIDFile(pidPath(path))
	if err != nil || rec.PID != os.Getpid() {
		t.Errorf("pid file after reopening = %+v, %v", rec, err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestProcStartTime(t *testing.T) {
	a, okA := procStartTime(os.Getpid())
	b, okB := procStartTime(os.Getpid())
	if okA != okB || a != b {
		t.Errorf("procStartTime of ourselves is not stable: %d,%v then %d,%v", a, okA, b, okB)
	}
	if _, ok := procStartTime(1 << 30); ok {
		t.Error("procStartTime of a pid that cannot exist succeeded")
	}
}
