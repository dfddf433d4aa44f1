package agent

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSessionSavedNeedsAMessage(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-repo")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(proj, "s1.jsonl")
	if SessionSaved(dir, "s1") {
		t.Error("saved with no file")
	}
	// What claude 2.1.200 had written when a pause stopped it: resuming
	// that says "No conversation found".
	if err := os.WriteFile(file, []byte(`{"type":"queue-operation","operation":"enqueue","sessionId":"s1"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if SessionSaved(dir, "s1") {
		t.Error("saved with bookkeeping lines only")
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"type":"user","message":{"role":"user","content":"go"},"sessionId":"s1"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !SessionSaved(dir, "s1") {
		t.Error("not saved with the person's message in it")
	}
	if SessionSaved(dir, "other") || SessionSaved("", "s1") {
		t.Error("saved for another session or no config dir")
	}
}
