package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

const (
	helperQuestions = "question-commits"
	// markerPID is far above any pid_max: getpgid on it fails at once, and
	// strace shows where each commit begins and ends.
	markerPID = 999_000_000
	questions = 300
)

// questionCommits commits one question's writes (an audit entry and two
// events, as the orchestrator does when a task asks) at a time, with
// markers around the call: what happens between them is what the question's
// notification waits for. A write answered from the journal is committed
// to bbolt after it returns; the writer is held until the closing marker
// is out, so that commit's syncs fall after it, before the next opening
// one.
func questionCommits(path string) int {
	s, err := Open(path, Options{LockTimeout: 5 * time.Second, BackupEvery: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	marked := make(chan struct{})
	s.afterJournal = func() error { <-marked; return nil }
	data := json.RawMessage(`{"id":"t-0123456789","question":{"id":"q1","kind":"permission","tool":"Bash","input":{"command":"go test ./..."}}}`)
	for i := range questions {
		unix.Getpgid(markerPID + 2*i)
		_, err := s.AppendBatch(context.Background(), []AuditEntry{{TaskID: "t-0123456789", Action: "task.status", Actor: "familiar", Data: json.RawMessage(`{"from":"running","to":"waiting"}`)}},
			[]NewEvent{{TaskID: "t-0123456789", Kind: "task/updated", Data: data}, {TaskID: "t-0123456789", Kind: "task/question", Data: data}})
		unix.Getpgid(markerPID + 2*i + 1)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// Every question here is answered from the journal (an idle store,
		// journaled writes): its commit waits for this.
		marked <- struct{}{}
		s.awaitCommitted()
	}
	return 0
}
