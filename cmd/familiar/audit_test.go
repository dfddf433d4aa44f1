package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/familiar-dev/familiar/internal/fakeserver"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/jsonrpc"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
	"github.com/familiar-dev/familiar/workspace"
)

// exportAudit runs `familiar audit export` in a fresh repository against
// dataDir and returns the actions it printed, in order.
func exportAudit(t *testing.T, dataDir string, args ...string) []string {
	t.Helper()
	t.Chdir(gitRepo(t))
	var out, errb bytes.Buffer
	code := auditExport(context.Background(), append([]string{"export", "--data-dir", dataDir}, args...), &out, &errb)
	if code != 0 {
		t.Fatalf("audit export exited %d: %s", code, errb.String())
	}
	var actions []string
	dec := json.NewDecoder(&out)
	for dec.More() {
		var e protocol.AuditEntry
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("output is not JSON lines: %v\n%s", err, out.String())
		}
		actions = append(actions, e.TaskID+":"+e.Action)
	}
	return actions
}

func TestAuditExportWithoutFamiliarReadsTheStoreReadOnly(t *testing.T) {
	testenv.Git(t)
	dd := t.TempDir()
	if got := exportAudit(t, dd); len(got) != 0 {
		t.Fatalf("a repository familiar never served exported %v", got)
	}
	st, err := store.Open(filepath.Join(dd, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, task := range []string{"t1", "t2", "t1"} {
		if _, err := st.AppendAudit(context.Background(), store.AuditEntry{TaskID: task, Action: fmt.Sprint("a", i), Actor: "user", Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(exportAudit(t, dd, "--task", "t1"), " "), "t1:a0 t1:a2"; got != want {
		t.Fatalf("exported %q, want %q (oldest first, only t1)", got, want)
	}
	// The export left no lock behind: a familiar opens the store at once.
	st, err = store.Open(filepath.Join(dd, store.FileName), store.Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("after the export: %v", err)
	}
	st.Close()
}

// auditServer is a running familiar as far as audit/list goes: 250 entries,
// served in pages of 100, newest first.
type auditServer struct {
	fakeserver.Unimplemented
	mu     sync.Mutex
	params []protocol.AuditListParams
}

func (s *auditServer) Initialize(context.Context, *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	return &protocol.InitializeResult{}, nil
}

func (s *auditServer) AuditList(_ context.Context, p *protocol.AuditListParams) (*protocol.AuditListResult, error) {
	s.mu.Lock()
	s.params = append(s.params, *p)
	s.mu.Unlock()
	top := 250
	if p.Cursor != "" {
		fmt.Sscan(p.Cursor, &top)
	}
	res := &protocol.AuditListResult{}
	for seq := top; seq > 0 && seq > top-100; seq-- {
		res.Entries = append(res.Entries, protocol.AuditEntry{Seq: int64(seq), TaskID: p.TaskID, Action: fmt.Sprint("a", seq), Actor: "user", Data: []byte(`{}`)})
	}
	if top > 100 {
		res.NextCursor = fmt.Sprint(top - 100)
	}
	return res, nil
}

func TestAuditExportAsksTheRunningFamiliar(t *testing.T) {
	testenv.Git(t)
	dd := t.TempDir()
	impl := &auditServer{}
	log := slog.New(slog.DiscardHandler)
	ln, err := jsonrpc.NewServer(impl, jsonrpc.NewHub(log, 0), log).Listen(context.Background(), "unix:"+workspace.SocketPath(dd))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	got := exportAudit(t, dd, "--task", "t9")
	if len(got) != 250 || got[0] != "t9:a1" || got[249] != "t9:a250" {
		t.Fatalf("exported %d entries %v … %v, want t9:a1 … t9:a250 oldest first", len(got), got[:min(2, len(got))], got[max(0, len(got)-2):])
	}
	impl.mu.Lock()
	defer impl.mu.Unlock()
	if len(impl.params) != 3 || impl.params[0].TaskID != "t9" || impl.params[2].Cursor != "50" {
		t.Fatalf("audit/list calls: %+v", impl.params)
	}
}
