package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
)

func TestRoundTrip(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	c, _ := h.pipe(t)

	var init protocol.InitializeResult
	if err := json.Unmarshal(c.ok(protocol.MethodInitialize, map[string]any{
		"workspaceRoot": "/repo", "clientInfo": map[string]any{"name": "test", "version": "1"},
		"unknownField": true, // PROTOCOL.md: unknown fields are ignored
	}), &init); err != nil {
		t.Fatal(err)
	}
	if init.ServerInfo.Name != "familiar" || init.Workspace.Root != "/repo" || init.ProtocolVersion != 1 {
		t.Errorf("initialize result = %+v", init)
	}

	raw := c.ok(protocol.MethodTaskCreate, map[string]any{"title": "Fix it", "description": "The bug"})
	var task protocol.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatal(err)
	}
	if task.Title != "Fix it" || task.Status != protocol.StatusQueued {
		t.Errorf("task = %+v", task)
	}
	if !bytes.Contains(raw, []byte(`"acceptanceCriteria":[]`)) {
		t.Errorf("acceptanceCriteria should be [], got %s", raw)
	}

	m := c.call(protocol.MethodTaskGet, map[string]any{"id": "nope"})
	wantError(t, m, protocol.CodeNotFound, "-")
	if !strings.Contains(string(m.Error.Data), `"id":"nope"`) {
		t.Errorf("NotFound data = %s", m.Error.Data)
	}

	// A plain error is internal: generic message, details only in the log.
	m = c.call(protocol.MethodTaskGet, map[string]any{"id": "boom"})
	wantError(t, m, protocol.CodeInternalError, "-")
	if strings.Contains(m.Error.Message, "secret") {
		t.Errorf("internal error leaked its text: %q", m.Error.Message)
	}
	if !strings.Contains(h.logs.String(), "ghp_secret") {
		t.Error("internal error was not logged")
	}

	// Methods with {} results and methods left to Unimplemented.
	wantError(t, c.call(protocol.MethodTaskInput, map[string]any{"id": "t1", "data": "y\r"}),
		protocol.CodeMethodNotFound, "-")
}

func TestParseErrorKeepsConnection(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	c, _ := h.pipe(t)
	for _, body := range []string{`{not json`, `{"jsonrpc":"2.0","id":5,"method":"initialize"`, ``} {
		c.writeFrame([]byte(body))
		m := c.next()
		wantError(t, m, protocol.CodeParseError, "-")
		if string(m.ID) != "null" {
			t.Errorf("%q: id = %s, want null", body, m.ID)
		}
	}
	c.initialize()
}

func TestOversizedFrameIsSkipped(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	c, _ := h.pipe(t)
	c.initialize()

	size := MaxFrameSize + 1
	fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n", size)
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for left := size; left > 0; left -= len(chunk) {
		if _, err := c.w.Write(chunk[:min(left, len(chunk))]); err != nil {
			t.Fatal(err)
		}
	}
	m := c.next()
	wantError(t, m, protocol.CodeInvalidRequest, "-")
	if string(m.ID) != "null" || !strings.Contains(m.Error.Message, strconv.Itoa(size)) {
		t.Errorf("oversize answer = %s %q", m.ID, m.Error.Message)
	}
	// The frame boundary was kept: the next request works.
	wantError(t, c.call(protocol.MethodTaskGet, map[string]any{"id": "x"}), protocol.CodeNotFound, "-")
}

func TestInvalidRequests(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	c, _ := h.pipe(t)
	for _, tc := range []struct{ body, id string }{
		{`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, "null"},
		{`"hello"`, "null"},
		{`null`, "null"},
		{`{"jsonrpc":"1.0","id":7,"method":"initialize"}`, "7"},
		{`{"id":8,"method":"initialize"}`, "8"},
		{`{"jsonrpc":"2.0","id":1.5,"method":"initialize"}`, "null"},
		{`{"jsonrpc":"2.0","id":-3,"method":"initialize"}`, "null"},
		{`{"jsonrpc":"2.0","id":null,"method":"initialize"}`, "null"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}`, "null"},
		{`{"jsonrpc":"2.0","id":"s9","method":42}`, `"s9"`},
		{`{"jsonrpc":"2.0","id":10,"method":""}`, "10"},
		{`{"jsonrpc":"2.0","id":11}`, "11"},
		{`{"jsonrpc":"2.0","id":12,"method":"initialize","params":"x"}`, "12"},
	} {
		c.writeFrame([]byte(tc.body))
		m := c.next()
		if m.Error == nil || m.Error.Code != protocol.CodeInvalidRequest || string(m.ID) != tc.id {
			t.Errorf("%s: got %+v (id %s), want -32600 with id %s", tc.body, m.Error, m.ID, tc.id)
		}
	}
	// A response from the client is ignored, not answered.
	c.writeFrame([]byte(`{"jsonrpc":"2.0","id":99,"result":{}}`))
	c.initialize()
}

func TestBrokenHeadersCloseConnection(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	c, wait := h.pipe(t)
	io.WriteString(c.w, "Content-Type: application/json\r\n\r\n{}")
	wantError(t, c.next(), protocol.CodeParseError, "-")
	c.waitClosed()
	if err := wait(); err == nil {
		t.Error("ServeConn returned nil after a framing error")
	}
}

func TestLifecycle(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	c, wait := h.pipe(t)

	wantError(t, c.call(protocol.MethodTaskGet, map[string]any{"id": "x"}), protocol.CodeServerNotInitialized, "-")
	wantError(t, c.call("no/such", nil), protocol.CodeServerNotInitialized, "-")
	// server/stop reaches the server before initialize (this one does not
	// implement it).
	wantError(t, c.call(protocol.MethodServerStop, map[string]any{"ifIdle": true}), protocol.CodeMethodNotFound, "-")
	// A failed initialize may be retried.
	wantError(t, c.call(protocol.MethodInitialize, map[string]any{}), protocol.CodeInvalidParams, "workspaceRoot")
	wantError(t, c.call(protocol.MethodTaskGet, map[string]any{"id": "x"}), protocol.CodeServerNotInitialized, "-")
	c.initialize()
	wantError(t, c.call(protocol.MethodInitialize, map[string]any{"workspaceRoot": "/repo"}), protocol.CodeInvalidRequest, "-")
	wantError(t, c.call("task/frobnicate", map[string]any{}), protocol.CodeMethodNotFound, "-")

	if res := c.ok(protocol.MethodShutdown, nil); string(res) != "null" {
		t.Errorf("shutdown result = %s, want null", res)
	}
	wantError(t, c.call(protocol.MethodTaskGet, map[string]any{"id": "x"}), protocol.CodeInvalidRequest, "-")
	c.notify(protocol.MethodExit, nil)
	c.waitClosed()
	if err := wait(); err != nil {
		t.Errorf("ServeConn after exit: %v", err)
	}
}

// Requests written right after initialize, without waiting for its
// response, wait for it instead of failing with -32002.
func TestPipelinedAfterInitialize(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	c, _ := h.pipe(t)
	initID := c.request(protocol.MethodInitialize, map[string]any{"workspaceRoot": "/repo"})
	getID := c.request(protocol.MethodTaskGet, map[string]any{"id": "x"})
	got := map[string]message{}
	for len(got) < 2 {
		m := c.next()
		got[string(m.ID)] = m
	}
	if m := got[strconv.Itoa(initID)]; m.Error != nil {
		t.Fatalf("initialize: %+v", m.Error)
	}
	wantError(t, got[strconv.Itoa(getID)], protocol.CodeNotFound, "-")
}

func TestInvalidParams(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	c, _ := h.pipe(t)
	c.initialize()
	for _, tc := range []struct {
		method string
		params string
		field  string
	}{
		{protocol.MethodTaskCreate, `{"description":"d"}`, "title"},
		{protocol.MethodTaskCreate, `{"title":"t","description":"d","priority":"high"}`, "priority"},
		{protocol.MethodTaskCreate, `{"title":"t","description":"d","acceptanceCriteria":["ok",""]}`, "acceptanceCriteria[1]"},
		{protocol.MethodTaskCreate, `{"title":"t","description":"d","mode":"wizard"}`, "mode"},
		{protocol.MethodTaskCreate, `{"title":"t","description":"d","baseRef":"--upload-pack=x"}`, "baseRef"},
		{protocol.MethodTaskCreate, `{"title":"t","description":"d","mcpServers":{"gh":{"type":"http"}}}`, "mcpServers.gh.url"},
		{protocol.MethodTaskList, `{"status":["queued","bogus"]}`, "status[1]"},
		{protocol.MethodTaskList, `{"since":"yesterday"}`, "since"},
		{protocol.MethodTaskList, `{"limit":500}`, "limit"},
		{protocol.MethodSettingsUpdate, `{"settings":{"maxConcurrent":0}}`, "settings.maxConcurrent"},
		{protocol.MethodSettingsUpdate, `{"settings":{"maxConcurrent":"3"}}`, "settings.maxConcurrent"},
		{protocol.MethodSettingsUpdate, `{"settings":{"permissionPolicy":{"default":"maybe"}}}`, "settings.permissionPolicy.default"},
		{protocol.MethodSettingsUpdate, `{}`, "settings"},
		{protocol.MethodTaskSetMode, `{"id":"t1","mode":"wizard"}`, "mode"},
		{protocol.MethodTaskGet, `[1]`, ""},
		{protocol.MethodTaskGet, `{}`, "id"},
		{protocol.MethodTaskResize, `{"id":"t1","cols":0,"rows":24}`, "cols"},
	} {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, tc.method, tc.params)
		c.writeFrame([]byte(body))
		m := c.response("1")
		if m.Error == nil || m.Error.Code != protocol.CodeInvalidParams || m.field() != tc.field {
			t.Errorf("%s %s: got %+v, want -32602 with data.field %q", tc.method, tc.params, m.Error, tc.field)
		} else if !strings.HasSuffix(m.Error.Message, ".") {
			t.Errorf("%s %s: message %q is not a sentence", tc.method, tc.params, m.Error.Message)
		}
	}
}

func TestCancelRequest(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	c, _ := h.pipe(t)
	c.initialize()
	id := c.request(protocol.MethodTaskGet, map[string]any{"id": "block"})
	select {
	case <-h.fake.entered:
	case m := <-c.in:
		t.Fatalf("got %+v before the blocking method was cancelled", m)
	case <-time.After(waitTimeout):
		t.Fatal("the blocking method was not called")
	}
	// The read loop is free while the method blocks.
	wantError(t, c.call(protocol.MethodTaskGet, map[string]any{"id": "x"}), protocol.CodeNotFound, "-")
	c.notify(protocol.MethodCancelRequest, map[string]any{"id": id})
	wantError(t, c.response(strconv.Itoa(id)), protocol.CodeRequestCancelled, "-")
	// Cancelling something already finished is harmless.
	c.notify(protocol.MethodCancelRequest, map[string]any{"id": id})
	wantError(t, c.call(protocol.MethodTaskGet, map[string]any{"id": "x"}), protocol.CodeNotFound, "-")
}

func listen(t *testing.T, h *harness) *Listener {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.sock")
	l, err := h.srv.Listen(context.Background(), "unix:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func dial(t *testing.T, l *Listener) (*client, net.Conn) {
	t.Helper()
	conn, err := net.Dial("unix", l.Path())
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, conn, conn, conn), conn
}

func TestSocketClientsAllGetNotifications(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	l := listen(t, h)
	fi, err := os.Stat(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket mode = %v, want socket 0600", fi.Mode())
	}
	if _, err := h.srv.Listen(context.Background(), "unix:"+l.Path()); err == nil {
		t.Error("a second Listen on a live socket succeeded")
	}

	a, _ := dial(t, l)
	b, _ := dial(t, l)
	uninit, _ := dial(t, l)
	a.initialize()
	b.initialize()
	_ = uninit

	h.hub.Notify(protocol.NotifyServerMessage, protocol.ServerMessageNotification{
		Seq: 42, Level: protocol.LevelWarning, Text: "claude is missing"})
	for name, c := range map[string]*client{"a": a, "b": b} {
		m := c.next()
		var p protocol.ServerMessageNotification
		json.Unmarshal(m.Params, &p)
		if m.Method != protocol.NotifyServerMessage || p.Seq != 42 || p.Text != "claude is missing" {
			t.Errorf("client %s got %+v", name, m)
		}
	}
	// Only initialized clients subscribe; an uninitialized one gets nothing,
	// which the next response (not a notification) proves.
	wantError(t, uninit.call(protocol.MethodTaskGet, map[string]any{"id": "x"}), protocol.CodeServerNotInitialized, "-")

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	a.waitClosed()
	b.waitClosed()
	if _, err := os.Lstat(l.Path()); !os.IsNotExist(err) {
		t.Errorf("socket file left after Close: %v", err)
	}
}

// A client that never reads fills its queue and is dropped; the others keep
// receiving everything, and Notify never blocks.
func TestSlowClientIsDropped(t *testing.T) {
	checkLeaks(t)
	const limit = 64 << 10
	h := newHarness(t, limit)
	l := listen(t, h)

	stuck, err := net.Dial("unix", l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"workspaceRoot":"/"}}`
	fmt.Fprintf(stuck, "Content-Length: %d\r\n\r\n%s", len(initBody), initBody)
	testenv.Await(t, waitTimeout, "the stuck client subscribed", func() bool { return h.hub.Clients() == 1 })

	reader, _ := dial(t, l)
	reader.initialize()
	if n := h.hub.Clients(); n != 2 {
		t.Fatalf("hub has %d clients, want 2", n)
	}

	data := strings.Repeat("x", 8<<10)
	sent := 0
	for h.hub.Clients() == 2 {
		if sent > 10000 { // 80 MB: far beyond any socket buffer plus the limit
			t.Fatal("the stuck client was never dropped")
		}
		sent++
		h.hub.Notify(protocol.NotifyTaskOutput, protocol.TaskOutputNotification{Seq: int64(sent), ID: "t1", Data: data})
		m := reader.next()
		var p protocol.TaskOutputNotification
		json.Unmarshal(m.Params, &p)
		if m.Method != protocol.NotifyTaskOutput || p.Seq != int64(sent) {
			t.Fatalf("reader got %s seq %d, want task/output seq %d", m.Method, p.Seq, sent)
		}
	}
	t.Logf("stuck client dropped after %d notifications of 8 KiB", sent)

	// The stuck client's connection is closed: reading drains what the
	// kernel holds, then ends.
	if _, err := io.Copy(io.Discard, stuck); err != nil {
		t.Errorf("reading the dropped connection: %v", err)
	}
	if !strings.Contains(h.logs.String(), "dropping a client") {
		t.Error("the drop was not logged")
	}
	wantError(t, reader.call(protocol.MethodTaskGet, map[string]any{"id": "x"}), protocol.CodeNotFound, "-")
}

func TestForward(t *testing.T) {
	t.Run("client closes", func(t *testing.T) {
		checkLeaks(t)
		h := newHarness(t, 0)
		l := listen(t, h)
		inR, inW := net.Pipe()
		outR, outW := net.Pipe()
		done := make(chan error, 1)
		go func() { done <- Forward(context.Background(), l.Path(), inR, outW) }()
		c := newClient(t, inW, outR, outR)
		c.initialize()
		// Write a request and close at once: it is still answered.
		id := c.request(protocol.MethodTaskGet, map[string]any{"id": "x"})
		inW.Close()
		wantError(t, c.response(strconv.Itoa(id)), protocol.CodeNotFound, "-")
		if err := await(t, "Forward", done); err != nil {
			t.Errorf("Forward: %v", err)
		}
		outW.Close() // Forward never closes out
		c.waitClosed()
	})
	t.Run("daemon closes", func(t *testing.T) {
		checkLeaks(t)
		h := newHarness(t, 0)
		l := listen(t, h)
		inR, inW := net.Pipe()
		outR, outW := net.Pipe()
		defer inW.Close()
		defer outW.Close()
		done := make(chan error, 1)
		go func() { done <- Forward(context.Background(), l.Path(), inR, outW) }()
		c := newClient(t, inW, outR, outR)
		c.initialize()
		l.Close()
		if err := await(t, "Forward", done); err != nil {
			t.Errorf("Forward: %v", err)
		}
	})
	t.Run("no daemon", func(t *testing.T) {
		err := Forward(context.Background(), filepath.Join(t.TempDir(), "none.sock"), strings.NewReader(""), io.Discard)
		if err == nil {
			t.Error("Forward to a missing socket succeeded")
		}
	})
}

func TestServeStdio(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- h.srv.ServeStdio(context.Background(), inR, outW) }()
	c := newClient(t, inW, outR, outR)
	c.initialize()
	h.hub.Notify(protocol.NotifyTaskUpdated, protocol.TaskUpdatedNotification{Seq: 1, Task: protocol.Task{ID: "t1"}})
	if m := c.next(); m.Method != protocol.NotifyTaskUpdated {
		t.Errorf("got %+v, want task/updated", m)
	}
	inW.Close() // the editor went away
	if err := await(t, "ServeStdio", done); err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
	if n := h.hub.Clients(); n != 0 {
		t.Errorf("hub still has %d clients", n)
	}
	outW.Close()
}

// Cancelling the context ends a connection even while a method blocks.
func TestContextEndsConnection(t *testing.T) {
	checkLeaks(t)
	h := newHarness(t, 0)
	a, b := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.srv.ServeConn(ctx, a) }()
	c := newClient(t, b, b, b)
	c.initialize()
	c.request(protocol.MethodTaskGet, map[string]any{"id": "block"})
	<-h.fake.entered
	cancel()
	if err := await(t, "ServeConn", done); err != nil {
		t.Errorf("ServeConn: %v", err)
	}
}
