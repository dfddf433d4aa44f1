package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/familiar-dev/familiar/internal/fakeserver"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// waitTimeout bounds every wait in these tests; generous because the race
// detector on two busy cores is slow, and a healthy run never gets near it.
const waitTimeout = 20 * time.Second

// fakeServer is a protocol.Server with just enough behaviour for the
// transport: task/get with id "block" waits for its context, "boom" fails
// with an error that must not reach the client.
type fakeServer struct {
	fakeserver.Unimplemented
	entered chan string // task/get ids that started blocking
}

func newFakeServer() *fakeServer { return &fakeServer{entered: make(chan string, 16)} }

func (f *fakeServer) Initialize(_ context.Context, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	return &protocol.InitializeResult{
		ServerInfo:      protocol.ServerInfo{Name: protocol.ServerName, Version: "test"},
		ProtocolVersion: protocol.ProtocolVersion,
		Capabilities:    protocol.Capabilities{Drivers: protocol.Drivers},
		Workspace:       protocol.WorkspaceInfo{Root: p.WorkspaceRoot},
	}, nil
}

func (f *fakeServer) Shutdown(context.Context) error { return nil }

func (f *fakeServer) TaskCreate(_ context.Context, p *protocol.TaskCreateParams) (*protocol.Task, error) {
	return &protocol.Task{ID: "t1", Title: p.Title, Description: p.Description,
		Status: protocol.StatusQueued, Attempt: 1, CreatedAt: time.Now(), UpdatedAt: time.Now()}, nil
}

func (f *fakeServer) TaskGet(ctx context.Context, p *protocol.TaskGetParams) (*protocol.Task, error) {
	switch p.ID {
	case "block":
		f.entered <- p.ID
		<-ctx.Done()
		return nil, ctx.Err()
	case "boom":
		return nil, errors.New("git failed with token ghp_secret in its arguments")
	}
	return nil, protocol.NotFound("task", p.ID)
}

// harness is a Server over a fakeServer, with logs kept for failure output.
type harness struct {
	fake *fakeServer
	hub  *Hub
	srv  *Server
	logs *syncBuffer
}

func newHarness(t *testing.T, maxQueuedBytes int) *harness {
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	h := &harness{fake: newFakeServer(), hub: NewHub(log, maxQueuedBytes), logs: logs}
	h.srv = NewServer(h.fake, h.hub, log)
	return h
}

// pipe serves one connection over net.Pipe. It returns the client end and
// a function that waits for ServeConn to return and gives its result.
func (h *harness) pipe(t *testing.T) (*client, func() error) {
	a, b := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = h.srv.ServeConn(ctx, a)
	}()
	wait := func() error {
		t.Helper()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Fatal("ServeConn did not return")
		}
		return err
	}
	c := newClient(t, b, b, b)
	t.Cleanup(func() {
		cancel()
		b.Close()
		wait()
	})
	return c, wait
}

// syncBuffer is a goroutine-safe log sink; it outlives the test harmlessly.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Bytes returns a copy of what was written.
func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// message is any JSON-RPC message the server sends.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func (m message) field() string {
	var d struct {
		Field string `json:"field"`
	}
	if m.Error != nil {
		json.Unmarshal(m.Error.Data, &d)
	}
	return d.Field
}

// client is a minimal editor: it writes frames and reads the server's frames
// on one goroutine, checking their framing strictly.
type client struct {
	t      *testing.T
	w      io.Writer
	in     chan message // closed when the server's side ends
	done   chan struct{}
	nextID int
	notes  []message // notifications seen while waiting for responses
}

func newClient(t *testing.T, w io.Writer, r io.Reader, closer io.Closer) *client {
	c := &client{t: t, w: w, in: make(chan message, 4096), done: make(chan struct{})}
	go c.read(bufio.NewReader(r))
	t.Cleanup(func() {
		closer.Close()
		<-c.done
	})
	return c
}

func (c *client) read(r *bufio.Reader) {
	defer close(c.done)
	defer close(c.in)
	for {
		header, err := r.ReadString('\n')
		if err != nil {
			return
		}
		n, ok := strings.CutPrefix(header, "Content-Length: ")
		if !ok || !strings.HasSuffix(n, "\r\n") {
			c.t.Errorf("bad frame header %q", header)
			return
		}
		size, err := strconv.Atoi(strings.TrimSuffix(n, "\r\n"))
		if blank, _ := r.ReadString('\n'); err != nil || blank != "\r\n" {
			c.t.Errorf("bad frame header end after %q", header)
			return
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil || m.JSONRPC != "2.0" {
			c.t.Errorf("server sent %q: %v", body, err)
			return
		}
		c.in <- m
	}
}

func (c *client) writeFrame(body []byte) {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		c.t.Fatalf("writing a frame: %v", err)
	}
}

func (c *client) request(method string, params any) int {
	c.t.Helper()
	c.nextID++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	c.writeFrame(body)
	return c.nextID
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	c.writeFrame(body)
}

// next returns the next message the server sends.
func (c *client) next() message {
	c.t.Helper()
	select {
	case m, ok := <-c.in:
		if !ok {
			c.t.Fatal("the server closed the connection")
		}
		return m
	case <-time.After(waitTimeout):
		c.t.Fatal("no message from the server")
	}
	panic("unreachable")
}

// response returns the response with the given id (a JSON literal),
// keeping notifications that arrive first in c.notes.
func (c *client) response(id string) message {
	c.t.Helper()
	for {
		m := c.next()
		if m.Method != "" {
			c.notes = append(c.notes, m)
			continue
		}
		if string(m.ID) != id {
			c.t.Fatalf("got a response for id %s, want %s: %+v", m.ID, id, m)
		}
		return m
	}
}

func (c *client) call(method string, params any) message {
	c.t.Helper()
	return c.response(strconv.Itoa(c.request(method, params)))
}

// ok calls method and returns its result, failing on an error response.
func (c *client) ok(method string, params any) json.RawMessage {
	c.t.Helper()
	m := c.call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %q", method, m.Error.Code, m.Error.Message)
	}
	return m.Result
}

func (c *client) initialize() {
	c.t.Helper()
	c.ok(protocol.MethodInitialize, map[string]any{"workspaceRoot": "/repo"})
}

// wantError checks that m is an error response with code (and data.field
// when field is not "-").
func wantError(t *testing.T, m message, code int, field string) {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("got result %s, want error %d", m.Result, code)
	}
	if m.Error.Code != code {
		t.Fatalf("got error %d %q, want code %d", m.Error.Code, m.Error.Message, code)
	}
	if field != "-" && m.field() != field {
		t.Fatalf("got data.field %q (%q), want %q", m.field(), m.Error.Message, field)
	}
}

// waitClosed waits until the server ends the connection.
func (c *client) waitClosed() {
	c.t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case _, ok := <-c.in:
			if !ok {
				return
			}
		case <-timeout:
			c.t.Fatal("the server did not close the connection")
		}
	}
}

// checkLeaks fails the test if goroutines of this package or of jsonrpc2
// outlive it. Call it first, so its cleanup runs last.
func checkLeaks(t *testing.T) {
	t.Cleanup(func() {
		deadline := time.After(waitTimeout)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			leaked := leakedGoroutines()
			if len(leaked) == 0 {
				return
			}
			select {
			case <-tick.C:
			case <-deadline:
				t.Errorf("%d goroutines leaked:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
				return
			}
		}
	})
}

func leakedGoroutines() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var leaked []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "jsonrpc.leakedGoroutines") || strings.Contains(g, "testing.tRunner(") {
			continue // this goroutine, and tests running subtests
		}
		if strings.Contains(g, "familiar/jsonrpc.") || strings.Contains(g, "sourcegraph/jsonrpc2") {
			leaked = append(leaked, g)
		}
	}
	return leaked
}

func await(t *testing.T, what string, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
	return nil
}
