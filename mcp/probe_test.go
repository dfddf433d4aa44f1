package mcp

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A server that answers initialize passes; one that exits, one whose
// command is missing and one that never answers are each said in words,
// without what they wrote; HTTP servers are not probed.
func TestProbe(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := script("good.sh", `read line; echo '{"jsonrpc":"2.0","method":"notifications/message","params":{}}'; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"g","version":"1"}}}'; sleep 60`+"\n")
	bad := script("bad.sh", "echo SECRET-TOKEN-VALUE >&2; exit 3\n")
	mute := script("mute.sh", "sleep 60\n")
	servers := map[string]Server{
		"good":    {Type: TypeStdio, Command: good},
		"bad":     {Command: bad},
		"missing": {Type: TypeStdio, Command: filepath.Join(dir, "nonexistent")},
		"mute":    {Type: TypeStdio, Command: mute},
		"web":     {Type: TypeHTTP, URL: "http://127.0.0.1:1/mcp"},
	}
	got := Probe(context.Background(), servers, dir, os.Environ(), 2*time.Second)
	want := map[string]string{
		"bad":     "exited with status 3 before it answered",
		"good":    "",
		"missing": "cannot start: no such file or directory",
		"mute":    "did not answer within 2s",
	}
	if len(got) != len(want) {
		t.Fatalf("probed %+v", got)
	}
	for _, r := range got {
		if r.Problem != want[r.Name] {
			t.Errorf("%s: %q, want %q", r.Name, r.Problem, want[r.Name])
		}
	}
}

// A cancelled probe stops its servers and reports nothing.
func TestProbeCancelled(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "mute.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := Probe(ctx, map[string]Server{"mute": {Command: p}}, dir, os.Environ(), time.Minute)
	if len(got) != 1 || got[0].Problem != "" {
		t.Fatalf("got %+v", got)
	}
}
