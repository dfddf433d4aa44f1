package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/familiar-dev/familiar/orchestrator"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
)

// auditExport is `familiar audit export [--since T] [--task ID]`: the audit
// log of the repository in the current directory as JSON lines, oldest
// first. It asks the running familiar when there is one (its store is
// locked), else reads the store itself.
func auditExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "export" {
		fmt.Fprintln(stderr, "usage: familiar audit export [--since RFC3339] [--task ID] [--data-dir DIR]")
		return 2
	}
	fs := flag.NewFlagSet("audit export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sinceS := fs.String("since", "", "only entries at or after this time (RFC 3339)")
	taskID := fs.String("task", "", "only entries of this task")
	dataDir := fs.String("data-dir", "", "familiar's data dir for the repository")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
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
	root := repoTop(wd)
	if root == "" {
		fmt.Fprintln(stderr, "familiar audit export: run it inside the repository")
		return 2
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	dd := *dataDir
	if dd == "" {
		dd = orchestrator.DefaultDataDir(root)
	}
	var pages func(cursor string) ([]protocol.AuditEntry, string, error)
	if sock := orchestrator.SocketPath(dd); socketLive(sock) {
		c, err := dialFamiliar(ctx, sock, root)
		if err != nil {
			fmt.Fprintf(stderr, "familiar audit export: %v\n", err)
			return 1
		}
		defer c.Close()
		pages = func(cursor string) ([]protocol.AuditEntry, string, error) {
			var res protocol.AuditListResult
			err := c.Call(ctx, protocol.MethodAuditList, protocol.AuditListParams{
				TaskID: *taskID, Since: protocol.Time{Time: since}, Limit: protocol.MaxAuditLimit, Cursor: cursor}, &res)
			return res.Entries, res.NextCursor, err
		}
	} else {
		st, err := store.Open(filepath.Join(dd, store.FileName), store.Options{})
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return 0
			}
			fmt.Fprintf(stderr, "familiar audit export: %v\n", err)
			return 1
		}
		defer st.Close()
		pages = func(cursor string) ([]protocol.AuditEntry, string, error) {
			es, next, err := st.Audit(store.AuditFilter{TaskID: *taskID, Since: since, Limit: protocol.MaxAuditLimit, Cursor: cursor})
			var out []protocol.AuditEntry
			for _, e := range es {
				out = append(out, protocol.AuditEntry{Seq: int64(e.Seq), At: e.At, TaskID: e.TaskID, Action: e.Action, Actor: e.Actor, Data: e.Data})
			}
			return out, next, err
		}
	}
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

// dialFamiliar connects to a running familiar's socket and initializes.
func dialFamiliar(ctx context.Context, sock, root string) (*jsonrpc2.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, err
	}
	c := jsonrpc2.NewConn(ctx, jsonrpc2.NewBufferedStream(nc, jsonrpc2.VSCodeObjectCodec{}), jsonrpc2.HandlerWithError(
		func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) { return nil, nil }))
	if err := c.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{WorkspaceRoot: root,
		ClientInfo: &protocol.ClientInfo{Name: "familiar audit export", Version: version}}, nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}
