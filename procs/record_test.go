package procs

import (
	"errors"
	"os"
	"testing"
	"time"
)

// A task dir's record alone is enough to find and stop the agent tree.
func TestRecordFindsAndStopsTheTree(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	if _, err := ReadRecord(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no record: err = %v", err)
	}
	p := startHelper(t, Config{}, "echo")
	if err := WriteRecord(dir, Record{Identity: p.Identity(), Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	rec, err := ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Identity != p.Identity() || rec.PGID == 0 || rec.StartTime == 0 {
		t.Fatalf("record %+v, process %+v", rec, p.Identity())
	}
	if alive, err := rec.Alive(); err != nil || !alive {
		t.Fatalf("Alive = %v, %v", alive, err)
	}
	if err := TerminateTree(testContext(t), rec.Identity, TreeOptions{Grace: time.Second}); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if alive, _ := rec.Alive(); alive {
		t.Fatal("still alive after TerminateTree")
	}
	if err := RemoveRecord(dir); err != nil {
		t.Fatal(err)
	}
	if err := RemoveRecord(dir); err != nil {
		t.Fatalf("removing twice: %v", err)
	}
}
