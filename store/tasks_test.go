package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/clock"
)

func TestTaskRoundTrip(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openStore(t, t.TempDir(), clk)

	if _, err := s.GetTask("t1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetTask of a missing task: err = %v, want ErrNotFound", err)
	}

	// Zero times are filled in: created and updated now.
	in := TaskRecord{ID: "t1", Status: "queued", Data: raw(`{"title": "fix the build", "attempt": 1}`)}
	if err := s.PutTask(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetTask("t1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "t1" || got.Status != "queued" || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0) ||
		!sameJSON(got.Data, in.Data) {
		t.Fatalf("GetTask = %+v (data %s)", got, got.Data)
	}

	// An update without CreatedAt keeps the stored one.
	clk.Advance(time.Minute)
	if err := s.PutTask(ctx, TaskRecord{ID: "t1", Status: "running", Data: raw(`{"title":"fix the build","attempt":1,"agent":{"pid":42}}`)}); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetTask("t1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "running" || !got.CreatedAt.Equal(t0) || !got.UpdatedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("after update: %+v", got)
	}
	if recs, bad, err := s.AllTasks(); err != nil || len(bad) != 0 || len(recs) != 1 || recs[0].Status != "running" {
		t.Errorf("tasks after the update: %+v, unreadable %v, %v; want t1 running", recs, bad, err)
	}

	// A new CreatedAt replaces the stored one rather than adding a task.
	moved := t0.Add(-time.Hour)
	if err := s.PutTask(ctx, TaskRecord{ID: "t1", Status: "running", CreatedAt: moved}); err != nil {
		t.Fatal(err)
	}
	if recs, _, err := s.AllTasks(); err != nil || len(recs) != 1 || !recs[0].CreatedAt.Equal(moved) {
		t.Errorf("tasks after moving CreatedAt: %+v, %v", recs, err)
	}

	// Deleting removes the task and its events, not its audit entries.
	if _, err := s.AppendEvent(ctx, "t1", "task/updated", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendAudit(ctx, AuditEntry{TaskID: "t1", Action: "task.created", Actor: "user"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTask(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetTask("t1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetTask after delete: err = %v, want ErrNotFound", err)
	}
	if evs, _, err := s.Events("", 0, 0); err != nil || len(evs) != 0 {
		t.Errorf("events after delete = %+v, %v; want none", evs, err)
	}
	if entries, _, err := s.Audit(AuditFilter{TaskID: "t1"}); err != nil || len(entries) != 1 {
		t.Errorf("audit after delete = %+v, %v; want the one entry", entries, err)
	}
	if recs, _, err := s.AllTasks(); err != nil || len(recs) != 0 {
		t.Errorf("tasks after delete: %+v, %v", recs, err)
	}
	if err := s.DeleteTask(ctx, "t1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second DeleteTask: err = %v, want ErrNotFound", err)
	}

	for _, bad := range []TaskRecord{
		{ID: "", Status: "queued"},
		{ID: "x", Status: ""},
		{ID: "x", Status: "queued", Data: raw(`{"unterminated`)},
		{ID: strings.Repeat("x", maxIDLen+1), Status: "queued"},
		{ID: "x", Status: "queued", CreatedAt: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if err := s.PutTask(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutTask(%.40q, %q): err = %v, want ErrInvalid", bad.ID, bad.Status, err)
		}
	}
}
