package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/familiar-dev/familiar/internal/testenv"
)

const helperJournalKilled = "journal-answered-then-killed"

// answeredThenKilled puts a task, then writes a question's batch (an audit
// entry and two events) and a task update whose commit never comes: the
// writer is held right after answering them from the journal. It prints
// what it was answered and waits to be killed.
func answeredThenKilled(path string) int {
	s, err := Open(path, Options{LockTimeout: 5 * time.Second, BackupEvery: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	if err := s.PutTask(ctx, TaskRecord{ID: "t1", Status: "running", Data: json.RawMessage(`{"n":1}`)}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := s.AppendEvent(ctx, "t1", "task/updated", json.RawMessage(`{"n":1}`)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s.afterJournal = func() error { select {} }
	wait := s.QueueTask(TaskRecord{ID: "t1", Status: "waiting", Data: json.RawMessage(`{"n":2}`)})
	if err := wait(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("task")
	// The writer is held now: this batch waits behind the held commit and is
	// never answered; it must not appear after the crash.
	go s.AppendBatch(ctx, []AuditEntry{{TaskID: "t1", Action: "never", Actor: "familiar"}}, []NewEvent{{TaskID: "t1", Kind: "task/never"}})
	select {}
}

// A write answered from the journal whose commit never happened (familiar
// killed between the two) is in the store at the next start: the task's
// record as answered, and the event log and sequences carrying on above
// everything a client saw. A write that was never answered is not there.
func TestJournalKeepsAnsweredWritesThroughAKill(t *testing.T) {
	checkLeaks(t)
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := killedAfterAnswer(t)

	var logs lockedBuffer
	s, err := Open(path, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), BackupEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rec, err := s.GetTask("t1"); err != nil || rec.Status != "waiting" || !sameJSON(rec.Data, raw(`{"n":2}`)) {
		t.Errorf("task after the kill = %+v, %v; want the answered update", rec, err)
	}
	if !strings.Contains(logs.String(), "answered from the journal") {
		t.Errorf("the replay was not logged:\n%s", logs.String())
	}
	evs := allEvents(t, s, "t1", 100)
	for _, e := range evs {
		if e.Kind == "task/never" {
			t.Errorf("an event never answered is in the store: %+v", e)
		}
	}
	audit, _, err := s.Audit(AuditFilter{TaskID: "t1"})
	if err != nil || len(audit) != 0 {
		t.Errorf("audit = %+v, %v; the unanswered entry must not be there", audit, err)
	}
	seq, err := s.AppendEvent(t.Context(), "t1", "task/updated", nil)
	if err != nil || seq <= evs[len(evs)-1].Seq {
		t.Errorf("next seq %d, %v; want above %d", seq, err, evs[len(evs)-1].Seq)
	}
	if got := allEvents(t, s, "t1", 100); got[len(got)-1].TaskSeq != uint64(len(got)) {
		t.Errorf("task seqs after the replay: %+v", got)
	}
}

// killedAfterAnswer runs answeredThenKilled in a child, kills it (SIGKILL)
// once its task update was answered from the journal, and returns the
// database's path, its journal holding that update.
func killedAfterAnswer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+helperJournalKilled, helperDBEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "task" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, %v\n%s", lines.Text(), lines.Err(), stderr.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if recs, err := readJournal(journalPath(path)); err != nil || len(recs) == 0 {
		t.Fatalf("journal after the kill: %d records, %v; want the answered one", len(recs), err)
	}
	return path
}

// familiar audit export reads a stopped familiar's store read-only. After
// a kill between answering writes and committing them it reads what was
// answered: OpenReadOnly applies the journal's records first (the one
// write it makes) and removes the journal; the next start finds nothing
// left to apply and the answered update still there.
func TestReadOnlyOpenAppliesALeftJournal(t *testing.T) {
	checkLeaks(t)
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := killedAfterAnswer(t)
	var logs lockedBuffer
	ro, err := OpenReadOnly(path, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ro.GetTask("t1")
	ro.Close()
	if err != nil || rec.Status != "waiting" || !sameJSON(rec.Data, raw(`{"n":2}`)) {
		t.Errorf("read-only after the kill: task = %+v, %v; want the answered update", rec, err)
	}
	if !strings.Contains(logs.String(), "answered from the journal") {
		t.Errorf("the replay was not logged:\n%s", logs.String())
	}
	if _, err := os.Stat(journalPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the applied journal is still there: %v", err)
	}
	logs = lockedBuffer{}
	s, err := Open(path, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), BackupEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rec, err := s.GetTask("t1"); err != nil || rec.Status != "waiting" {
		t.Errorf("after the next start: task = %+v, %v", rec, err)
	}
	if strings.Contains(logs.String(), "answered from the journal") {
		t.Errorf("the next start applied the journal again:\n%s", logs.String())
	}
}

// A commit that fails after its writes were answered from the journal
// (a full disk) keeps them owed: the next commit carries them, and a store
// closed while they are owed keeps its journal for the next start.
func TestJournalOwedWritesSurviveAFailedCommit(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := openAt(t, path, Options{BackupEvery: -1})
	ctx := context.Background()
	full := fmt.Errorf("write: %w", syscall.ENOSPC)
	s.afterJournal = func() error { return full }
	seq, err := s.AppendEvent(ctx, "t1", "task/question", json.RawMessage(`{"q":1}`))
	if err != nil {
		t.Fatalf("answered from the journal, yet: %v", err)
	}
	// Answered first; the failed commit is noticed after.
	testenv.Await(t, 10*time.Second, "the store to say it is full", func() bool {
		h := s.Health()
		return !h.OK && errors.Is(h.Err, ErrStoreFull)
	})
	s.afterJournal = nil
	if _, err := s.AppendEvent(ctx, "t1", "task/updated", nil); err != nil {
		t.Fatal(err)
	}
	evs := allEvents(t, s, "t1", 10)
	if len(evs) != 2 || evs[0].Seq != seq || evs[0].Kind != "task/question" || evs[1].TaskSeq != 2 {
		t.Fatalf("events after the next commit = %+v; want the owed one first", evs)
	}

	// Owed at Close: the journal stays, and the next start applies it.
	s.afterJournal = func() error { return full }
	if _, err := s.AppendEvent(ctx, "t1", "task/question", json.RawMessage(`{"q":2}`)); err != nil {
		t.Fatal(err)
	}
	s.failCommit = func() error { return full } // Close's own attempts fail too
	s.Close()
	s = openAt(t, path, Options{BackupEvery: -1})
	defer s.Close()
	if evs := allEvents(t, s, "t1", 10); len(evs) != 3 || !strings.Contains(string(evs[2].Data), `"q":2`) {
		t.Fatalf("events after reopening = %+v; want the owed question", evs)
	}
}

// Records of transactions bbolt committed are skipped (a truncation that
// did not reach the disk must not bring back what was deleted since), a
// record cut short by a crash is ignored, and a database restored from a
// backup drops the journal of the file moved aside.
func TestJournalSkipsCommittedAndTornRecords(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := openAt(t, path, Options{BackupEvery: -1})
	putTasks(t, s, "t", 3)
	if err := s.DeleteTask(context.Background(), "t-1"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var last int
	db.View(func(tx *bolt.Tx) error { last = tx.ID(); return nil })
	db.Close()

	put := func(id, status string) []jop {
		return []jop{{path: [][]byte{bucketTasks}, key: []byte(id), val: fmt.Appendf(nil, `{"status":%q,"createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z","data":{}}`, status)}}
	}
	var j []byte
	j = append(j, encodeJournalRecord(last-1, put("t-1", "old"))...) // committed, then deleted
	j = append(j, encodeJournalRecord(last+1, put("t-9", "answered"))...)
	torn := encodeJournalRecord(last+2, put("t-8", "torn"))
	j = append(j, torn[:len(torn)-3]...)
	if err := os.WriteFile(journalPath(path), j, 0o600); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, Options{BackupEvery: -1})
	for id, want := range map[string]string{"t-1": "", "t-9": "answered", "t-8": ""} {
		rec, err := s.GetTask(id)
		if got := rec.Status; got != want || (want == "" && !errors.Is(err, ErrNotFound)) {
			t.Errorf("task %s after replay: %q, %v; want %q", id, got, err, want)
		}
	}
	s.Close()

	// Damage, a backup restored, and a journal beside the damaged file.
	if err := os.WriteFile(journalPath(path), encodeJournalRecord(1<<30, put("t-7", "of the damaged file")), 0o600); err != nil {
		t.Fatal(err)
	}
	damagePages(t, path, 0, 4)
	s = openAt(t, path, Options{BackupEvery: -1})
	defer s.Close()
	if s.Recovery() == nil {
		t.Fatal("the damaged file was not repaired")
	}
	if _, err := s.GetTask("t-7"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the damaged file's journal was applied to the backup: %v", err)
	}
}

// The decoder never panics and never accepts what the encoder did not write.
func FuzzJournalRecord(f *testing.F) {
	f.Add(encodeJournalRecord(7, []jop{
		{path: [][]byte{bucketEvents}, key: u64(3), val: []byte(`{"kind":"x"}`)},
		{path: [][]byte{bucketEventsByTask, []byte("t1")}, seq: 9, isSeq: true},
	}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "j")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		recs, err := readJournal(p)
		if err != nil {
			t.Fatal(err)
		}
		var again []byte
		for _, r := range recs {
			again = append(again, encodeJournalRecord(r.txid, r.ops)...)
		}
		if !bytes.HasPrefix(b, again) {
			t.Errorf("records read are not what the bytes say")
		}
	})
}

// lockedBuffer is a log destination the writer goroutine and the test may
// share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
