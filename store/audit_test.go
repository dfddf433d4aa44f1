package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/clock"
)

func TestAuditPaging(t *testing.T) {
	checkLeaks(t)
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s := openStore(t, t.TempDir(), clk)

	// 30 entries, seq i+1 at t0+i s; tasks t1/t2 alternate, every third has
	// no task; actions alternate.
	task := func(i int) string {
		switch {
		case i%3 == 2:
			return ""
		case i%2 == 0:
			return "t1"
		default:
			return "t2"
		}
	}
	action := func(i int) string { return []string{"permission.decided", "task.cancelled"}[i%2] }
	for i := range 30 {
		e := AuditEntry{TaskID: task(i), Action: action(i), Actor: "user", Data: []byte(fmt.Sprintf(`{"i":%d}`, i))}
		if i%2 == 0 {
			e.At = t0.Add(time.Duration(i) * time.Second) // given by the caller
		} else {
			clk.Advance(t0.Add(time.Duration(i) * time.Second).Sub(clk.Now())) // stamped by the store
		}
		seq, err := s.AppendAudit(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if seq != uint64(i+1) {
			t.Fatalf("audit seq = %d, want %d", seq, i+1)
		}
	}
	// An event does not take an audit seq, nor the other way round.
	if seq, err := s.AppendEvent(ctx, "t1", "task/updated", nil); err != nil || seq != 1 {
		t.Fatalf("first event seq = %d, %v; want 1", seq, err)
	}

	seqsWhere := func(keep func(i int) bool) []uint64 {
		var out []uint64
		for i := 29; i >= 0; i-- {
			if keep(i) {
				out = append(out, uint64(i+1))
			}
		}
		return out
	}
	tests := []struct {
		name string
		f    AuditFilter
		want []uint64
	}{
		{"all", AuditFilter{Limit: 7}, seqsWhere(func(int) bool { return true })},
		{"task", AuditFilter{TaskID: "t1", Limit: 4}, seqsWhere(func(i int) bool { return task(i) == "t1" })},
		{"task and action", AuditFilter{TaskID: "t2", Action: "task.cancelled", Limit: 2}, seqsWhere(func(i int) bool { return task(i) == "t2" && action(i) == "task.cancelled" })},
		{"action", AuditFilter{Action: "permission.decided", Limit: 15}, seqsWhere(func(i int) bool { return i%2 == 0 })},
		{"window", AuditFilter{Since: t0.Add(5 * time.Second), Until: t0.Add(12 * time.Second), Limit: 3}, seqsWhere(func(i int) bool { return i >= 5 && i < 12 })},
		{"unknown task", AuditFilter{TaskID: "nope"}, nil},
		{"unknown action", AuditFilter{Action: "nope"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []uint64
			f := tt.f
			for pages := 0; ; pages++ {
				if pages > 100 {
					t.Fatal("cursor does not advance")
				}
				entries, next, err := s.Audit(f)
				if err != nil {
					t.Fatal(err)
				}
				if next != "" && len(entries) != f.Limit {
					t.Errorf("a page before the last has %d entries, want %d", len(entries), f.Limit)
				}
				for _, e := range entries {
					got = append(got, e.Seq)
				}
				if next == "" {
					break
				}
				f.Cursor = next
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("seqs = %v\nwant   %v", got, tt.want)
			}
		})
	}

	entries, _, err := s.Audit(AuditFilter{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	e := entries[0]
	if e.Seq != 30 || e.TaskID != task(29) || e.Action != action(29) || e.Actor != "user" ||
		!e.At.Equal(t0.Add(29*time.Second)) || !sameJSON(e.Data, []byte(`{"i":29}`)) {
		t.Errorf("newest entry = %+v (data %s)", e, e.Data)
	}

	if _, err := s.AppendAudit(ctx, AuditEntry{Actor: "user"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("AppendAudit without action: err = %v, want ErrInvalid", err)
	}
	for _, bad := range []string{"x", auditCursorPrefix + "0", auditCursorPrefix + "-1"} {
		if _, _, err := s.Audit(AuditFilter{Cursor: bad}); !errors.Is(err, ErrInvalid) {
			t.Errorf("Audit with cursor %q: err = %v, want ErrInvalid", bad, err)
		}
	}
}
