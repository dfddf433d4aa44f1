package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// familiar acp passes on serve's warnings and errors and nothing else of
// its log: ACP clients show every stderr line as an error. Lines that are
// not log records (a panic) pass, split across writes or not.
func TestACPStderrKeepsWarningsOnly(t *testing.T) {
	var out bytes.Buffer
	w := &warningsOnly{w: &out}
	in := `{"time":"t","level":"INFO","msg":"joining the familiar already serving this repository"}
{"time":"t","level":"DEBUG","msg":"x"}
{"time":"t","level":"INFO+2","msg":"y"}
{"time":"t","level":"WARN","msg":"disk almost full"}
{"time":"t","level":"ERROR","msg":"forward","err":"broken pipe"}
panic: something
`
	for i := 0; i < len(in); i += 7 { // in pieces, as a pipe delivers them
		if _, err := w.Write([]byte(in[i:min(i+7, len(in))])); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"time":"t","level":"WARN","msg":"disk almost full"}
{"time":"t","level":"ERROR","msg":"forward","err":"broken pipe"}
panic: something
`
	if out.String() != want {
		t.Errorf("passed on:\n%s\nwant:\n%s", out.String(), want)
	}
}

// `familiar acp login` (an ACP client's terminal auth method) runs
// `claude auth login` on the terminal it was given.
func TestACPLoginRunsClaudeAuthLogin(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "claude")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"claude $*\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAMILIAR_CLAUDE", fake)
	var out, errb bytes.Buffer
	if code := runACP(context.Background(), []string{"login"}, strings.NewReader(""), &out, &errb, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got := strings.TrimSpace(out.String()); got != "claude auth login" {
		t.Errorf("ran %q", got)
	}
}
