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
