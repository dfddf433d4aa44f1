package store

import (
	"context"
	"encoding/json"
	"testing"
)

// A queued task write commits no later than an event appended after it,
// and its wait reports the commit.
func TestQueueTaskCommitsWithLaterEvents(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	wait := s.QueueTask(TaskRecord{ID: "t1", Status: "running", Data: json.RawMessage(`{"a":1}`)})
	if _, err := s.AppendEvent(context.Background(), "t1", "task/updated", json.RawMessage(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := wait(context.Background()); err != nil { // the answer is kept
		t.Fatal(err)
	}
	rec, err := s.GetTask("t1")
	if err != nil || rec.Status != "running" {
		t.Fatalf("GetTask = %+v, %v", rec, err)
	}
	if w := s.QueueTask(TaskRecord{ID: "", Status: "x"}); w(context.Background()) == nil {
		t.Error("an invalid record was queued")
	}
}

// AppendBatch writes audit entries and events in one commit: both are
// there afterwards, the events numbered as AppendEvents numbers them, and
// a bad entry refuses the whole batch (nothing written).
func TestAppendBatchOneCommit(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	ctx := context.Background()
	seqs, err := s.AppendBatch(ctx, []AuditEntry{{TaskID: "t1", Action: "task.status", Actor: "familiar", Data: json.RawMessage(`{"to":"waiting"}`)}},
		[]NewEvent{{TaskID: "t1", Kind: "task/updated", Data: json.RawMessage(`{"s":1}`)},
			{TaskID: "t1", Kind: "task/output", Data: json.RawMessage(`{"o":1}`), Transient: true},
			{TaskID: "t1", Kind: "task/question", Data: json.RawMessage(`{"q":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 3 || seqs[0] >= seqs[1] || seqs[1] >= seqs[2] {
		t.Fatalf("seqs %v, want three increasing", seqs)
	}
	evs, _, err := s.Events("t1", 0, 10)
	if err != nil || len(evs) != 2 || evs[0].Kind != "task/updated" || evs[1].Kind != "task/question" || evs[1].Seq != seqs[2] {
		t.Fatalf("events %+v, %v; want the two stored ones", evs, err)
	}
	audit, _, err := s.Audit(AuditFilter{TaskID: "t1"})
	if err != nil || len(audit) != 1 || audit[0].Action != "task.status" {
		t.Fatalf("audit %+v, %v", audit, err)
	}
	if _, err := s.AppendBatch(ctx, []AuditEntry{{TaskID: "t1"}}, []NewEvent{{TaskID: "t1", Kind: "task/updated", Data: json.RawMessage(`{}`)}}); err == nil {
		t.Error("an audit entry without an action was written")
	}
	if evs, _, _ := s.Events("t1", 0, 10); len(evs) != 2 {
		t.Errorf("a refused batch wrote %d events", len(evs)-2)
	}
}
