package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// client is the test's end of an Agent served on pipes.
type client struct {
	t    *testing.T
	w    io.WriteCloser
	r    *bufio.Scanner
	done chan error
}

func serveAgent(t *testing.T) *client {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, w: inW, r: bufio.NewScanner(outR), done: make(chan error, 1)}
	go func() {
		c.done <- Serve(context.Background(), inR, outW, Options{
			Dial: func(context.Context, string) (io.ReadWriteCloser, error) {
				return nil, errors.New("no familiar in unit tests")
			},
			RepoRoot: func(dir string) string {
				if strings.HasPrefix(dir, "/repo") {
					return "/repo"
				}
				return ""
			},
			DataDir: func(string) string { return t.TempDir() },
		})
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after stdin closed")
		}
	})
	return c
}

func (c *client) roundTrip(line string) map[string]any {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
	if !c.r.Scan() {
		c.t.Fatalf("no answer to %s", line)
	}
	var m map[string]any
	if err := json.Unmarshal(c.r.Bytes(), &m); err != nil {
		c.t.Fatalf("answer is not JSON: %s", c.r.Bytes())
	}
	return m
}

// Bad input gets a JSON-RPC error naming the field, and the connection
// keeps working.
func TestBadInput(t *testing.T) {
	c := serveAgent(t)
	cases := []struct {
		line  string
		code  float64
		field string
	}{
		{`{not json`, codeParseError, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"nope","params":{}}`, codeMethodNotFound, ""},
		{`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`, codeInvalidParams, "protocolVersion"},
		{`{"jsonrpc":"2.0","id":3,"method":"initialize","params":[1]}`, codeInvalidParams, "params"},
		{`{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"mcpServers":[]}}`, codeInvalidParams, "cwd"},
		{`{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"relative","mcpServers":[]}}`, codeInvalidParams, "cwd"},
		{`{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":"/elsewhere","mcpServers":[]}}`, codeInvalidParams, "cwd"},
		{`{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/repo","mcpServers":[{"name":"x"}]}}`, codeInvalidParams, "mcpServers[0].command"},
		{`{"jsonrpc":"2.0","id":8,"method":"session/prompt","params":{"sessionId":"missing","prompt":[]}}`, codeNotFound, "sessionId"},
		{`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"prompt":[]}}`, codeInvalidParams, "sessionId"},
		{`{"jsonrpc":"2.0","id":10,"method":"session/set_mode","params":{"sessionId":7}}`, codeInvalidParams, "params"},
		{`{"jsonrpc":"2.0","id":11,"method":"session/new","params":{"cwd":"/repo","mcpServers":[]}}`, codeInternal, ""},
		{`{"jsonrpc":"2.0","id":12,"method":"authenticate","params":{"methodId":"password"}}`, codeInvalidParams, "methodId"},
		{`{"jsonrpc":"2.0","id":13,"method":"authenticate","params":{}}`, codeInvalidParams, "methodId"},
		{`{"jsonrpc":"2.0","id":14,"method":"authenticate","params":[]}`, codeInvalidParams, "params"},
		{`{"jsonrpc":"2.0","id":15,"method":"session/delete","params":{}}`, codeInvalidParams, "sessionId"},
		{`{"jsonrpc":"2.0","id":16,"method":"session/resume","params":{"cwd":"/repo"}}`, codeInvalidParams, "sessionId"},
		{`{"jsonrpc":"2.0","id":17,"method":"session/resume","params":{"sessionId":"s"}}`, codeInvalidParams, "cwd"},
		{`{"jsonrpc":"2.0","id":18,"method":"session/close","params":{"sessionId":"missing"}}`, codeNotFound, "sessionId"},
		{`{"jsonrpc":"2.0","id":19,"method":"session/set_config_option","params":{"sessionId":"missing","configId":"model","value":"opus"}}`, codeNotFound, "sessionId"},
		{`{"jsonrpc":"2.0","id":20,"method":"logout","params":{}}`, codeMethodNotFound, ""},
	}
	for _, tc := range cases {
		m := c.roundTrip(tc.line)
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != tc.code {
			t.Errorf("%s → %v, want code %v", tc.line, m, tc.code)
			continue
		}
		if msg, _ := e["message"].(string); msg == "" {
			t.Errorf("%s: empty message", tc.line)
		}
		if tc.field != "" {
			d, _ := e["data"].(map[string]any)
			if d["field"] != tc.field {
				t.Errorf("%s: field = %v, want %s", tc.line, d["field"], tc.field)
			}
		}
	}
	m := c.roundTrip(`{"jsonrpc":"2.0","id":99,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	if r, _ := m["result"].(map[string]any); r == nil || r["protocolVersion"] != float64(1) {
		t.Fatalf("initialize after bad input = %v", m)
	}
	// A known method id with no repository to check against is taken.
	if m := c.roundTrip(`{"jsonrpc":"2.0","id":100,"method":"authenticate","params":{"methodId":"claude-login"}}`); m["error"] != nil {
		t.Errorf("authenticate claude-login = %v", m)
	}
}

func TestPromptText(t *testing.T) {
	got := promptText([]contentBlock{{Type: "text", Text: "fix it"}, {Type: "resource_link", URI: "file:///repo/a.go", Name: "a.go"}, {Type: "image"}})
	if got != "fix it\n@/repo/a.go" {
		t.Errorf("prompt = %q", got)
	}
	if c, a, ok := slashCommand("/merge squash"); !ok || c != "merge" || a != "squash" {
		t.Errorf("slash = %q %q %v", c, a, ok)
	}
	if _, _, ok := slashCommand("/unknown"); ok {
		t.Error("unknown slash command taken")
	}
}
