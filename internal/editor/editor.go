// Package editor is a fake editor client for tests: it speaks LSP-framed
// JSON-RPC to familiar over any byte stream (the real binary's stdio, or a
// socket), records every notification, and lets a test wait for one instead
// of sleeping.
//
// It is for tests only.
package editor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message is one frame from familiar: a response or a notification.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("%d %s %s", e.Code, e.Message, e.Data) }

// Client is one editor connection.
type Client struct {
	t   testing.TB
	w   io.Writer
	wmu sync.Mutex

	mu        sync.Mutex
	nextID    int
	responses map[string]Message // by id
	notes     []Message
	changed   chan struct{}
	readErr   error
	done      chan struct{}

	// InitSettings are settings the client adds to an initialize whose
	// params (a map) do not set them: a harness's defaults, such as
	// agentNice 0, which a test that is about them overrides.
	InitSettings map[string]any
}

// New starts reading frames from r; requests go to w.
func New(t testing.TB, r io.Reader, w io.Writer) *Client {
	c := &Client{t: t, w: w, responses: map[string]Message{}, changed: make(chan struct{}), done: make(chan struct{})}
	go c.read(r)
	return c
}

// Done is closed when the stream from familiar ends.
func (c *Client) Done() <-chan struct{} { return c.done }

func (c *Client) read(r io.Reader) {
	defer close(c.done)
	br := bufio.NewReader(r)
	tp := textproto.NewReader(br)
	for {
		h, err := tp.ReadMIMEHeader()
		if err != nil {
			c.fail(err)
			return
		}
		n, err := strconv.Atoi(h.Get("Content-Length"))
		if err != nil {
			c.fail(fmt.Errorf("bad Content-Length: %v", err))
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			c.fail(err)
			return
		}
		var m Message
		if err := json.Unmarshal(body, &m); err != nil {
			c.fail(fmt.Errorf("bad frame %q: %v", body, err))
			return
		}
		c.mu.Lock()
		if m.Method != "" && len(m.ID) == 0 {
			c.notes = append(c.notes, m)
		} else {
			c.responses[string(m.ID)] = m
		}
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}
}

func (c *Client) fail(err error) {
	c.mu.Lock()
	c.readErr = err
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// WriteRaw writes one frame with body as is (for malformed-input tests).
func (c *Client) WriteRaw(body []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n", len(body))
	c.w.Write(body)
}

// Send sends a request and returns its id.
func (c *Client) Send(method string, params any) string {
	if method == "initialize" && len(c.InitSettings) > 0 {
		params = withDefaults(params, c.InitSettings)
	}
	c.mu.Lock()
	c.nextID++
	id := strconv.Itoa(c.nextID)
	c.mu.Unlock()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextIDNum(id), "method": method, "params": params})
	if err != nil {
		c.t.Fatalf("encode %s: %v", method, err)
	}
	c.WriteRaw(body)
	return id
}

func (c *Client) nextIDNum(id string) int { n, _ := strconv.Atoi(id); return n }

// Notify sends a notification.
func (c *Client) Notify(method string, params any) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	c.WriteRaw(body)
}

// Response waits for the response to id.
func (c *Client) Response(id string) Message {
	c.t.Helper()
	var m Message
	c.waitFor("response "+id, func() bool {
		var ok bool
		m, ok = c.responses[id]
		return ok
	})
	return m
}

// Call sends a request and waits for its response.
func (c *Client) Call(method string, params any) Message {
	c.t.Helper()
	return c.Response(c.Send(method, params))
}

// Result calls method and decodes a successful result into out (may be nil).
func (c *Client) Result(method string, params, out any) {
	c.t.Helper()
	m := c.Call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: %v", method, m.Error)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.t.Fatalf("%s: decode %s: %v", method, m.Result, err)
		}
	}
}

// Notifications returns every notification so far.
func (c *Client) Notifications() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.notes...)
}

// WaitNotification waits for the first notification at index >= from that
// matches, and returns it with the index after it.
func (c *Client) WaitNotification(from int, what string, match func(Message) bool) (Message, int) {
	c.t.Helper()
	var got Message
	next := from
	c.waitFor(what, func() bool {
		for i := from; i < len(c.notes); i++ {
			if match(c.notes[i]) {
				got, next = c.notes[i], i+1
				return true
			}
		}
		return false
	})
	return got, next
}

// Method matches notifications of one method whose params contain all of
// the given substrings.
func Method(method string, contains ...string) func(Message) bool {
	return func(m Message) bool {
		if m.Method != method {
			return false
		}
		for _, s := range contains {
			if !strings.Contains(string(m.Params), s) {
				return false
			}
		}
		return true
	}
}

// Timeout is how long a wait lasts before the test fails.
var Timeout = 90 * time.Second

func (c *Client) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ok := cond()
		ch := c.changed
		err := c.readErr
		c.mu.Unlock()
		if ok {
			return
		}
		if err != nil {
			c.t.Fatalf("waiting for %s: stream ended: %v\nnotifications:\n%s", what, err, c.dump())
		}
		select {
		case <-ch:
		case <-deadline.C:
			c.t.Fatalf("timed out waiting for %s\nnotifications:\n%s", what, c.dump())
		}
	}
}

func (c *Client) dump() string {
	var b strings.Builder
	for _, n := range c.Notifications() {
		if n.Method == "task/output" {
			continue
		}
		p := string(n.Params)
		if len(p) > 400 {
			p = p[:400] + "…"
		}
		fmt.Fprintf(&b, "  %s %s\n", n.Method, p)
	}
	return b.String()
}

// withDefaults returns initialize params (a map) with each of defaults in
// its settings unless the params set it; other params are sent as they are.
func withDefaults(params any, defaults map[string]any) any {
	p, ok := params.(map[string]any)
	if !ok {
		return params
	}
	out := make(map[string]any, len(p)+1)
	for k, v := range p {
		out[k] = v
	}
	settings := map[string]any{}
	if s, ok := p["settings"].(map[string]any); ok {
		for k, v := range s {
			settings[k] = v
		}
	} else if p["settings"] != nil {
		return params
	}
	for k, v := range defaults {
		if _, set := settings[k]; !set {
			settings[k] = v
		}
	}
	out["settings"] = settings
	return out
}
