package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// buildRaw writes a bbolt file at path with fill, the way an older familiar
// (or none) left it; the test does not use the store's own code for it, so
// the fixture stays what that version wrote even if the code changes.
func buildRaw(t *testing.T, path string, fill func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if fill != nil {
		if err := db.Update(fill); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func rawVersion(t *testing.T, path string) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v uint64
	if err := db.View(func(tx *bolt.Tx) error {
		var err error
		v, err = schemaVersion(tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// writeV1 fills a database as schema version 1 had it: tasks without the
// tasksByCreated index, and a few events.
func writeV1(tx *bolt.Tx) error {
	buckets := map[string]*bolt.Bucket{}
	for _, name := range []string{"meta", "tasks", "events", "eventsByTask", "audit", "auditByTask", "settings"} {
		b, err := tx.CreateBucket([]byte(name))
		if err != nil {
			return err
		}
		buckets[name] = b
	}
	if err := buckets["meta"].Put([]byte("version"), []byte{0, 0, 0, 0, 0, 0, 0, 1}); err != nil {
		return err
	}
	for i, status := range []string{"merged", "running", "queued"} {
		v := fmt.Sprintf(`{"status":%q,"createdAt":"2026-02-0%dT10:00:00Z","updatedAt":"2026-02-0%dT11:00:00Z","data":{"title":"task %d"}}`,
			status, i+1, i+1, i)
		if err := buckets["tasks"].Put([]byte(fmt.Sprintf("v1-task-%d", i)), []byte(v)); err != nil {
			return err
		}
	}
	tb, err := buckets["eventsByTask"].CreateBucket([]byte("v1-task-0"))
	if err != nil {
		return err
	}
	for seq := uint64(1); seq <= 3; seq++ {
		k := []byte{0, 0, 0, 0, 0, 0, 0, byte(seq)}
		v := fmt.Sprintf(`{"taskSeq":%d,"at":"2026-02-01T10:00:0%dZ","taskId":"v1-task-0","kind":"task/updated"}`, seq, seq)
		if err := buckets["events"].Put(k, []byte(v)); err != nil {
			return err
		}
		if err := tb.Put(k, []byte{}); err != nil {
			return err
		}
	}
	if err := buckets["events"].SetSequence(3); err != nil {
		return err
	}
	return tb.SetSequence(3)
}

func TestMigrateFromV1(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	buildRaw(t, path, writeV1)

	s := openStore(t, dir, nil)
	recs, bad, err := s.AllTasks()
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID+"="+r.Status)
	}
	slices.Sort(ids)
	if got := strings.Join(ids, " "); got != "v1-task-0=merged v1-task-1=running v1-task-2=queued" {
		t.Errorf("tasks after migration: %s", got)
	}
	// Version 2's index is gone again in version 3.
	noIndexBucket(t, s)
	if r, err := s.GetTask("v1-task-0"); err != nil || !sameJSON(r.Data, raw(`{"title":"task 0"}`)) ||
		!r.CreatedAt.Equal(time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("GetTask after migration = %+v, %v", r, err)
	}
	// The event log carries on where version 1 left it.
	seq, err := s.AppendEvent(t.Context(), "v1-task-0", "task/updated", nil)
	if err != nil || seq != 4 {
		t.Errorf("first seq after migration = %d, %v; want 4", seq, err)
	}
	if evs, _, err := s.Events("v1-task-0", 0, 0); err != nil || len(evs) != 4 || evs[3].TaskSeq != 4 {
		t.Errorf("events after migration = %+v, %v", evs, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := rawVersion(t, path); v != SchemaVersion() {
		t.Errorf("stored version after migration = %d, want %d", v, SchemaVersion())
	}
}

// TestMigrateFromV0: a bbolt file without familiar's buckets (version 0)
// goes through every migration, like a new one.
func TestMigrateFromV0(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	buildRaw(t, path, nil)

	s := openStore(t, dir, nil)
	if err := s.PutTask(t.Context(), TaskRecord{ID: "a", Status: "queued"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := rawVersion(t, path); v != SchemaVersion() || SchemaVersion() != 3 {
		t.Errorf("stored version = %d, SchemaVersion() = %d; want 3", v, SchemaVersion())
	}
}

// TestMigrationStepsAreAtomic: a failing step leaves the database at the
// last whole version, with nothing of the failed step.
func TestMigrationStepsAreAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	boom := errors.New("boom")
	var ran []string
	steps := []migration{
		{"one", func(tx *bolt.Tx) error {
			ran = append(ran, "one")
			_, err := tx.CreateBucket([]byte("one"))
			return err
		}},
		{"two", func(tx *bolt.Tx) error {
			ran = append(ran, "two")
			if _, err := tx.CreateBucket([]byte("two")); err != nil {
				return err
			}
			return boom
		}},
		{"three", func(tx *bolt.Tx) error { ran = append(ran, "three"); return nil }},
	}
	err = migrateTo(db, steps, testLogger(t))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "1 → 2 (two)") {
		t.Fatalf("migrateTo = %v, want boom naming step 1 → 2", err)
	}
	if got := strings.Join(ran, ","); got != "one,two" {
		t.Errorf("steps run = %s, want one,two", got)
	}
	if err := db.View(func(tx *bolt.Tx) error {
		v, err := schemaVersion(tx)
		if v != 1 || tx.Bucket([]byte("one")) == nil || tx.Bucket([]byte("two")) != nil {
			t.Errorf("after a failed step 2: version %d, bucket one %v, bucket two %v", v, tx.Bucket([]byte("one")) != nil, tx.Bucket([]byte("two")) != nil)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Running again resumes at the failed step.
	ran = nil
	steps[1].apply = func(tx *bolt.Tx) error { ran = append(ran, "two"); return nil }
	if err := migrateTo(db, steps, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ran, ","); got != "two,three" {
		t.Errorf("steps run on retry = %s, want two,three", got)
	}
}

// TestRefuseNewerSchema: a database from a newer familiar is not touched.
func TestRefuseNewerSchema(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	newer := SchemaVersion() + 1
	buildRaw(t, path, func(tx *bolt.Tx) error {
		if err := writeV1(tx); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("version"), u64(newer))
	})

	s, err := Open(path, Options{Logger: testLogger(t)})
	if err == nil {
		s.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("err = %v, want ErrSchemaTooNew", err)
	}
	want := fmt.Sprintf("schema version %d and this familiar knows up to %d", newer, SchemaVersion())
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to say %q", err, want)
	}
	if v := rawVersion(t, path); v != newer {
		t.Errorf("stored version after the refusal = %d, want %d (untouched)", v, newer)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 100 * time.Millisecond, ReadOnly: true})
	if err != nil {
		t.Fatalf("the lock was not released after the refusal: %v", err)
	}
	db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketTasksByCreated) != nil {
			t.Error("the refused database got a v2 bucket")
		}
		return nil
	})
	db.Close()
	if _, err := os.Stat(pidPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file after the refusal: stat err = %v, want not exist", err)
	}
}

// noIndexBucket fails t if s still has version 2's tasksByCreated bucket.
func noIndexBucket(t *testing.T, s *Store) {
	t.Helper()
	if err := s.view(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketTasksByCreated) != nil {
			t.Error("tasksByCreated is still there after migrating to version 3")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
