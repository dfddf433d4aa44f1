package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/clock"
)

func TestOpenReadOnly(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)

	if _, err := OpenReadOnly(path, Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenReadOnly of a missing database = %v, want os.ErrNotExist", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenReadOnly created %s", path)
	}

	s := openStore(t, dir, clock.NewFake(t0))
	if _, err := s.AppendAudit(context.Background(), AuditEntry{TaskID: "t1", Action: "task.status", Actor: "familiar", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	// A running familiar holds the lock: a reader says so instead of waiting.
	if _, err := OpenReadOnly(path, Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("OpenReadOnly while a familiar holds the store = %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	ro, err := OpenReadOnly(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := ro.Audit(AuditFilter{})
	if err != nil || len(entries) != 1 || entries[0].TaskID != "t1" {
		t.Fatalf("Audit = %+v, %v; want the one entry written", entries, err)
	}
	if _, err := ro.AppendAudit(context.Background(), AuditEntry{Action: "x", Actor: "y"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("a write to a read-only store = %v, want ErrClosed", err)
	}
	// Two readers share the lock.
	ro2, err := OpenReadOnly(path, Options{LockTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	if err := ro2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	// Once the readers are gone a familiar opens it as usual.
	openStore(t, dir, clock.NewFake(t0))
}
