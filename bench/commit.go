package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/familiar-dev/familiar/dirs"
	"github.com/familiar-dev/familiar/store"
)

// CommitResult is what one store commit costs where familiar keeps its
// store: every notification waits for its commit before a client sees it,
// a question too (a status change's audit entry and its events in one
// commit, store.AppendBatch). The figure is the file system's and the OS's:
// a write that finds the store idle is answered after the journal's one
// sync (bbolt's commit, two syncs, follows it), and Go's sync is fdatasync
// on Linux but fcntl(F_FULLFSYNC), a flush of the drive's cache, on macOS.
type CommitResult struct {
	// Kind: CommitLone (one event) or CommitQuestion (an audit entry and
	// two events: a status change and its question).
	Kind string `json:"kind"`
	// Where: the data dir the temporary store was made in, or "temp" when
	// it could not be made there.
	Where   string `json:"where"`
	OS      string `json:"os"`
	Latency Dist   `json:"latency"`
}

// The commits measured.
const (
	CommitLone     = "one event"
	CommitQuestion = "a status change's audit entry and two events (a question's commit)"
)

// commitRuns is how many commits of each kind are timed.
const commitRuns = 200

// storeCommit times store commits, one at a time, in a store made beside
// familiar's own (the same file system), then removes it.
func (r *runner) storeCommit(ctx context.Context) error {
	where := "familiar's data dir"
	dir, err := commitDir(dirs.Data())
	if err != nil {
		r.logf("store commit: %v; measuring in the temporary dir instead", err)
		where = "temp"
		if dir, err = os.MkdirTemp(r.tmp, "commit-"); err != nil {
			return err
		}
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(filepath.Join(dir, store.FileName), store.Options{BackupEvery: -1})
	if err != nil {
		return fmt.Errorf("open a store in %s: %w", dir, err)
	}
	defer st.Close()
	data := json.RawMessage(`{"seq":0,"id":"t-0123456789","question":{"id":"q1","kind":"permission","tool":"Bash","input":{"command":"go test ./..."},"text":"asks to run Bash: go test ./..."}}`)
	audit := json.RawMessage(`{"from":"running","to":"waiting"}`)
	for _, kind := range []string{CommitLone, CommitQuestion} {
		lat := make([]time.Duration, 0, commitRuns)
		for range commitRuns {
			if err := ctx.Err(); err != nil {
				return err
			}
			// A question comes to an idle store: the previous write's commit
			// is finished before the clock starts (LastSeq waits for it).
			if _, err := st.LastSeq(); err != nil {
				return err
			}
			began := time.Now()
			switch kind {
			case CommitLone:
				_, err = st.AppendEvents(ctx, []store.NewEvent{{TaskID: "t-0123456789", Kind: "task/question", Data: data}})
			default:
				_, err = st.AppendBatch(ctx, []store.AuditEntry{{TaskID: "t-0123456789", Action: "task.status", Actor: "familiar", Data: audit}},
					[]store.NewEvent{{TaskID: "t-0123456789", Kind: "task/updated", Data: data}, {TaskID: "t-0123456789", Kind: "task/question", Data: data}})
			}
			if err != nil {
				return fmt.Errorf("commit (%s): %w", kind, err)
			}
			lat = append(lat, time.Since(began))
		}
		r.report.StoreCommit = append(r.report.StoreCommit, CommitResult{Kind: kind, Where: where, OS: runtime.GOOS, Latency: distOf(lat)})
	}
	return nil
}

// commitDir makes a temporary directory in data, familiar's data dir
// (made if missing, as familiar makes it).
func commitDir(data string) (string, error) {
	if data == "" {
		return "", fmt.Errorf("no data dir")
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(data, "bench-commit-")
}
