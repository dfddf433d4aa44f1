package mcp

import (
	"context"
	"os"
	"path/filepath"
	"sync"
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
	var (
		mu    sync.Mutex
		got   []ProbeResult
		quick time.Duration
	)
	start := time.Now()
	Probe(context.Background(), servers, dir, os.Environ(), 2*time.Second, func(r ProbeResult) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
		if r.Name == "bad" {
			quick = time.Since(start)
		}
	})
	// The failure that comes at once is reported before the mute server's 2 s are over.
	if quick >= 2*time.Second {
		t.Errorf("bad was reported after %v, held back by the mute server", quick)
	}
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

// A called-off probe stops its servers and reports nothing.
func TestProbeCancelled(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "mute.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Probe(ctx, map[string]Server{"mute": {Command: p}}, dir, os.Environ(), time.Minute, func(r ProbeResult) {
		t.Errorf("reported %+v after the probe was called off", r)
	})
}
