package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/rpcclient"
	"github.com/familiar-dev/familiar/store"
	"github.com/familiar-dev/familiar/workspace"
)

// auditExport is `familiar audit export [--since T] [--task ID]`: the audit
// log of the repository in the current directory as JSON lines, oldest
// first. It asks the running familiar when there is one, else reads the
// store it left, read-only (auditSource).
func auditExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		return printHelp(stdout, strings.Replace(auditHelp, "\nFlags:\n", "\nFlags: see familiar audit export --help\n", 1))
	}
	if len(args) == 0 || args[0] != "export" {
		fmt.Fprintln(stderr, "usage: familiar audit export [--since RFC3339] [--task ID] [--data-dir DIR]")
		return 2
	}
	fs := flag.NewFlagSet("audit export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sinceS := fs.String("since", "", "only entries at or after this time (RFC 3339)")
	taskID := fs.String("task", "", "only entries of this task")
	dataDir := fs.String("data-dir", "", "familiar's data dir for the repository")
	withHelp(fs, auditHelp, stdout)
	if code, done := parseFlags(fs, args[1:]); done {
		return code
	}
	var since time.Time
	if *sinceS != "" {
		t, err := time.Parse(time.RFC3339, *sinceS)
		if err != nil {
			fmt.Fprintf(stderr, "familiar audit export: --since %q is not an RFC 3339 time (e.g. 2026-11-21T10:00:00Z)\n", *sinceS)
			return 2
		}
		since = t
	}
	wd, _ := os.Getwd()
	loc, ok := workspace.Locate(wd)
	if !ok {
		fmt.Fprintln(stderr, "familiar audit export: run it inside the repository")
		return 2
	}
	root := loc.Root
	dd := *dataDir
	if dd == "" {
		dd = loc.DataDir
	}
	pages, closeSource, err := auditSource(ctx, dd, root, *taskID, since)
	if err != nil {
		fmt.Fprintf(stderr, "familiar audit export: %v\n", err)
		return 1
	}
	defer closeSource()
	// Pages come newest first; JSONL is easier to read oldest first.
	var all []protocol.AuditEntry
	cursor := ""
	for {
		es, next, err := pages(cursor)
		if err != nil {
			fmt.Fprintf(stderr, "familiar audit export: %v\n", err)
			return 1
		}
		all = append(all, es...)
		if next == "" {
			break
		}
		cursor = next
	}
	enc := json.NewEncoder(stdout)
	for i := len(all) - 1; i >= 0; i-- {
		if err := enc.Encode(all[i]); err != nil {
			return 1
		}
	}
	return 0
}

// auditPages returns one page of the audit log, newest first, and the
// cursor of the next page ("" after the last).
type auditPages func(cursor string) ([]protocol.AuditEntry, string, error)

// auditSource asks the familiar serving the repository for its audit log
// when one runs — its store is its own — and otherwise reads the store it
// left, read-only (a familiar starting meanwhile only waits for the read).
// A repository familiar never served has an empty log.
func auditSource(ctx context.Context, dataDir, root, taskID string, since time.Time) (auditPages, func(), error) {
	var sock string
	live := func() bool {
		p, ok := liveSocket(dataDir)
		sock = p
		return ok
	}
	viaSocket := func() (auditPages, func(), error) {
		c, err := rpcclient.Dial(ctx, sock, protocol.InitializeParams{WorkspaceRoot: root,
			ClientInfo: &protocol.ClientInfo{Name: "familiar audit export", Version: version}}, nil)
		if err != nil {
			return nil, nil, err
		}
		return func(cursor string) ([]protocol.AuditEntry, string, error) {
			res, err := c.AuditList(ctx, &protocol.AuditListParams{
				TaskID: taskID, Since: protocol.Time{Time: since}, Limit: protocol.MaxAuditLimit, Cursor: cursor})
			if err != nil {
				return nil, "", fmt.Errorf("%s: %w", protocol.MethodAuditList, err)
			}
			return res.Entries, res.NextCursor, nil
		}, func() { c.Close() }, nil
	}
	if live() {
		return viaSocket()
	}
	st, err := store.OpenReadOnly(filepath.Join(dataDir, store.FileName), store.Options{})
	switch {
	case errors.Is(err, os.ErrNotExist):
		return func(string) ([]protocol.AuditEntry, string, error) { return nil, "", nil }, func() {}, nil
	case errors.Is(err, store.ErrLocked) && live():
		return viaSocket() // a familiar started after the first look
	case err != nil:
		return nil, nil, err
	}
	return func(cursor string) ([]protocol.AuditEntry, string, error) {
		es, next, err := st.Audit(store.AuditFilter{TaskID: taskID, Since: since, Limit: protocol.MaxAuditLimit, Cursor: cursor})
		out := make([]protocol.AuditEntry, 0, len(es))
		for _, e := range es {
			out = append(out, protocol.AuditEntry{Seq: int64(e.Seq), At: e.At, TaskID: e.TaskID, Action: e.Action, Actor: e.Actor, Data: e.Data})
		}
		return out, next, err
	}, func() { st.Close() }, nil
}
