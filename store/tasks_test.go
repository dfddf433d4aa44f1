package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

	// An update without CreatedAt keeps the stored one and moves the task
	// to its new status in the index.
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
	if recs, total, _, err := s.ListTasks(TaskFilter{Statuses: []string{"queued"}}); err != nil || total != 0 || len(recs) != 0 {
		t.Errorf("queued tasks after the update: %d (total %d), %v; want none", len(recs), total, err)
	}
	if recs, total, _, err := s.ListTasks(TaskFilter{Statuses: []string{"running"}}); err != nil || total != 1 || recs[0].ID != "t1" {
		t.Errorf("running tasks after the update: %+v (total %d), %v", recs, total, err)
	}

	// A new CreatedAt moves the index entry rather than duplicating it.
	moved := t0.Add(-time.Hour)
	if err := s.PutTask(ctx, TaskRecord{ID: "t1", Status: "running", CreatedAt: moved}); err != nil {
		t.Fatal(err)
	}
	if recs, total, _, err := s.ListTasks(TaskFilter{}); err != nil || total != 1 || !recs[0].CreatedAt.Equal(moved) {
		t.Errorf("tasks after moving CreatedAt: %+v (total %d), %v", recs, total, err)
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
	if recs, total, _, err := s.ListTasks(TaskFilter{}); err != nil || total != 0 || len(recs) != 0 {
		t.Errorf("tasks after delete: %+v (total %d), %v", recs, total, err)
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

// pageAll follows cursors from f.Cursor to the end, checking that total is
// the same on every page.
func pageAll(t *testing.T, s *Store, f TaskFilter) (ids []string, total int) {
	t.Helper()
	total = -1
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("cursor does not advance")
		}
		recs, n, next, err := s.ListTasks(f)
		if err != nil {
			t.Fatal(err)
		}
		if total >= 0 && n != total {
			t.Errorf("total changed between pages: %d then %d", total, n)
		}
		total = n
		if next != "" && f.Limit > 0 && len(recs) != f.Limit {
			t.Errorf("a page before the last has %d tasks, want %d", len(recs), f.Limit)
		}
		for _, r := range recs {
			ids = append(ids, r.ID)
		}
		if next == "" {
			return ids, total
		}
		f.Cursor = next
	}
}

func TestListTasksPaging(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	s := openStore(t, t.TempDir(), nil)

	statuses := []string{"queued", "running", "merged"}
	id := func(i int) string { return fmt.Sprintf("task-%02d", i) }
	for i := range 45 {
		rec := TaskRecord{ID: id(i), Status: statuses[i%3], CreatedAt: t0.Add(time.Duration(i) * time.Minute), Data: raw(fmt.Sprintf(`{"n":%d}`, i))}
		if err := s.PutTask(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	// Five more created at the same instant: ties must page without loss
	// or repetition.
	for i := 45; i < 50; i++ {
		if err := s.PutTask(ctx, TaskRecord{ID: id(i), Status: "blocked", CreatedAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}

	newestFirst := func(from, to int, keep func(int) bool) []string {
		var ids []string
		for i := to - 1; i >= from; i-- {
			if keep == nil || keep(i) {
				ids = append(ids, id(i))
			}
		}
		return ids
	}
	ties := []string{id(49), id(48), id(47), id(46), id(45)} // same time: id descending

	tests := []struct {
		name  string
		f     TaskFilter
		want  []string
		total int
	}{
		{"all in pages of 7", TaskFilter{Limit: 7}, append(ties, newestFirst(0, 45, nil)...), 50},
		{"default limit", TaskFilter{}, append(ties, newestFirst(0, 45, nil)...), 50},
		{"ties in pages of 2", TaskFilter{Statuses: []string{"blocked"}, Limit: 2}, ties, 5},
		{"one status", TaskFilter{Statuses: []string{"running"}, Limit: 4}, newestFirst(0, 45, func(i int) bool { return i%3 == 1 }), 15},
		{"two statuses", TaskFilter{Statuses: []string{"queued", "merged"}, Limit: 10}, newestFirst(0, 45, func(i int) bool { return i%3 != 1 }), 30},
		{"since until", TaskFilter{Since: t0.Add(10 * time.Minute), Until: t0.Add(20 * time.Minute), Limit: 3}, newestFirst(10, 20, nil), 10},
		{"until only", TaskFilter{Until: t0.Add(5 * time.Minute)}, newestFirst(0, 5, nil), 5},
		{"since only", TaskFilter{Since: t0.Add(44 * time.Minute), Limit: 1}, append(ties, id(44)), 6},
		{"match", TaskFilter{Match: func(r TaskRecord) bool { return strings.HasSuffix(r.ID, "7") }, Limit: 2},
			[]string{id(47), id(37), id(27), id(17), id(7)}, 5},
		{"nothing", TaskFilter{Statuses: []string{"cancelled"}}, nil, 0},
		{"empty window", TaskFilter{Since: t0.Add(time.Minute), Until: t0.Add(time.Minute)}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, total := pageAll(t, s, tt.f)
			if !slices.Equal(ids, tt.want) {
				t.Errorf("ids = %v\nwant  %v", ids, tt.want)
			}
			if total != tt.total {
				t.Errorf("total = %d, want %d", total, tt.total)
			}
		})
	}

	// Records come back whole, and a cursor survives the deletion of the
	// task it points at.
	recs, _, next, err := s.ListTasks(TaskFilter{Limit: 6})
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(recs[5].Data, raw(`{"n":44}`)) {
		t.Errorf("data of %s = %s", recs[5].ID, recs[5].Data)
	}
	if err := s.DeleteTask(ctx, id(44)); err != nil {
		t.Fatal(err)
	}
	recs, _, _, err = s.ListTasks(TaskFilter{Limit: 1, Cursor: next})
	if err != nil || len(recs) != 1 || recs[0].ID != id(43) {
		t.Errorf("page after a deleted cursor task = %+v, %v; want %s", recs, err, id(43))
	}

	for _, bad := range []string{"garbage", "t1.!!!", taskCursorPrefix + "AAAA"} {
		if _, _, _, err := s.ListTasks(TaskFilter{Cursor: bad}); !errors.Is(err, ErrInvalid) {
			t.Errorf("ListTasks with cursor %q: err = %v, want ErrInvalid", bad, err)
		}
	}
}
