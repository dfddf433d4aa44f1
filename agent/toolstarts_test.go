package agent

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// runToolStartHook runs the hook's command as claude does (sh -c, the
// payload on stdin).
func runToolStartHook(t *testing.T, dir, payload string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", ToolStartHook(dir)["command"].(string))
	cmd.Stdin = strings.NewReader(payload)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hook command: %v: %s", err, out)
	}
}

// TestToolStartHookSpoolsPayloads: the hook's command writes what it is
// given into the spool, in a directory whose path needs quoting (a Mac's
// "Application Support", a quote), and drain hands each payload over once,
// oldest first, removing it.
func TestToolStartHookSpoolsPayloads(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "Application Support", "it's")
	ts, err := newToolStarts(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"toolu_1", "toolu_2"} {
		runToolStartHook(t, ts.dir, `{"hook_event_name":"PreToolUse","tool_use_id":"`+id+`"}`)
	}
	// One still being written: never handed over half.
	if err := os.WriteFile(filepath.Join(ts.dir, "99.part"), []byte(`{"tool_use`), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	arrived := ts.next()
	ts.drain(func(raw json.RawMessage) {
		var p hookPayload
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		got = append(got, p.ToolUseID)
	})
	if strings.Join(got, ",") != "toolu_1,toolu_2" {
		t.Fatalf("drained %v, want toolu_1,toolu_2 in order", got)
	}
	select {
	case <-arrived:
	default:
		t.Fatal("a drain that handled starts did not say so")
	}
	arrived = ts.next()
	ts.drain(func(json.RawMessage) { t.Fatal("a payload handed over twice") })
	select {
	case <-arrived:
		t.Fatal("a drain that handled nothing said it handled a start")
	default:
	}
	left, _ := os.ReadDir(ts.dir)
	if len(left) != 1 || left[0].Name() != "99.part" {
		t.Fatalf("spool holds %v, want only the unfinished 99.part", left)
	}
	// A new run of the session starts from an empty spool.
	if ts, err = newToolStarts(cfg); err != nil {
		t.Fatal(err)
	}
	if left, _ = os.ReadDir(ts.dir); len(left) != 0 {
		t.Fatalf("a new spool holds %v", left)
	}
	info, err := os.Stat(ts.dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("spool mode %v (%v), want 0700: payloads hold tool inputs", info.Mode().Perm(), err)
	}
}

// TestToolStartsWatchDelivers: a payload that lands while nothing else
// drains is handed over by the watch, and the watch ends with its context.
func TestToolStartsWatchDelivers(t *testing.T) {
	ts, err := newToolStarts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	watching := make(chan error, 1)
	go func() {
		defer wg.Done()
		watching <- ts.watch(ctx, func(raw json.RawMessage) {
			var p hookPayload
			_ = json.Unmarshal(raw, &p)
			got <- p.ToolUseID
		})
	}()
	defer func() {
		cancel()
		wg.Wait()
		if err := <-watching; err != nil {
			t.Errorf("watch: %v", err)
		}
	}()
	runToolStartHook(t, ts.dir, `{"hook_event_name":"PreToolUse","tool_use_id":"toolu_w"}`)
	select {
	case id := <-got:
		if id != "toolu_w" {
			t.Fatalf("watch delivered %q", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch never delivered the start")
	}
}

// TestStartedCallsMatchAndEnd: a permission takes the started call of its
// tool and input, once; a start read after its call ended starts nothing.
func TestStartedCallsMatchAndEnd(t *testing.T) {
	d := &ptyDriver{}
	call := func(id, tool, input string) hookPayload {
		return hookPayload{ToolUseID: id, ToolName: tool, ToolInput: json.RawMessage(input)}
	}
	ask := func(tool, input string) hookPayload { return call("", tool, input) }
	if !d.callStarted(call("a", "Bash", `{"command":"ls"}`)) || !d.callStarted(call("b", "Bash", `{"command": "ls"}`)) {
		t.Fatal("a new call did not start")
	}
	if !d.callStarted(call("c", "Write", `{"file_path":"x"}`)) {
		t.Fatal("a new call did not start")
	}
	if id := d.startedID(ask("Bash", `{"command":"ls"}`)); id != "b" {
		t.Fatalf("permission took %q, want the newest identical call b", id)
	}
	if id := d.startedID(ask("Bash", `{"command":"ls"}`)); id != "a" {
		t.Fatalf("second identical permission took %q, want a (b was taken)", id)
	}
	if id := d.startedID(ask("Bash", `{"command":"ls"}`)); id != "" {
		t.Fatalf("third identical permission took %q, want none", id)
	}
	if id := d.startedID(ask("Bash", `{"file_path":"x"}`)); id != "" {
		t.Fatalf("a permission of another tool's input took %q", id)
	}
	d.callEnded("z")
	if d.callStarted(call("z", "Read", `{}`)) {
		t.Fatal("a start read after its call's end started it")
	}
	d.callEnded("c")
	if id := d.startedID(ask("Write", `{"file_path":"x"}`)); id != "" {
		t.Fatalf("an ended call was taken: %q", id)
	}
}
