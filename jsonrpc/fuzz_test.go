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
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/familiar-dev/familiar/protocol"
)

// fuzzMaxBody replaces MaxFrameSize in the fuzz targets, so that small
// inputs reach the oversized-frame path.
const fuzzMaxBody = 4 << 10

// FuzzReadFrame feeds arbitrary bytes to the frame reader, as a client
// would send them, and checks what PROTOCOL.md promises whatever arrives:
// no panic; reading ends (each request consumes bytes); it ends only with a
// clean EOF, a truncated frame, or a broken header block that was answered
// with -32700 first; everything familiar writes back is a well-formed error
// frame; memory stays within a bound set by the frame limit, not by the
// Content-Length a client claims; and every frame that passes checkRequest
// is one jsonrpc2 can decode (else the "refused a request" fallback runs).
func FuzzReadFrame(f *testing.F) {
	for _, s := range []string{
		"",
		frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"workspaceRoot":"/r"}}`),
		frame(`{"jsonrpc":"2.0","method":"exit"}`) + frame(`{not json`),
		frame(`{"jsonrpc":"2.0","id":99,"result":{}}`),
		frame(`[{"jsonrpc":"2.0","id":1,"method":"x"}]`),
		frame(`{"jsonrpc":"2.0","id":-1,"method":"x"}`),
		frame(`{"jsonrpc":"2.0","id":"a","method":"x","params":7}`),
		frame(`{"jsonrpc":"2.0","id":1,"method":"x","error":{}}`),
		"Content-Length: 99999999999\r\n\r\nabc",
		"Content-Length: 5000\r\n\r\n" + strings.Repeat("x", 5000) + frame(`null`),
		"Content-Length: 10\r\n\r\n{}",
		"content-length:2\n\n{}",
		"Content-Type: x\r\n\r\n{}",
		"Content-Length: -1\r\n\r\n",
		"no colon\r\n\r\n",
		"\r\n",
		"Content-Length: 2\r\nX-A: " + strings.Repeat("a", 9000) + "\r\n\r\n{}",
		"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		logs := &recordHandler{}
		out := &syncBuffer{}
		s := newFrameStream(&memConn{r: bytes.NewReader(data), w: out}, slog.New(logs))
		s.maxBody = fuzzMaxBody

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		requests := 0
		var end error
		for {
			var req jsonrpc2.Request
			if err := s.ReadObject(&req); err != nil {
				end = err
				break
			}
			requests++
			// The shortest frame holding a request is far longer than 16 bytes.
			if requests*16 > len(data) {
				t.Fatalf("%d requests from %d bytes: reading does not make progress", requests, len(data))
			}
			if req.Method == "" {
				t.Fatalf("a request without a method got through: %+v", req)
			}
		}
		runtime.ReadMemStats(&after)
		// Generous: what matters is that a claimed Content-Length above the
		// limit is never allocated, and that allocation follows the input.
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(1<<20+2*fuzzMaxBody+64*len(data)); got > limit {
			t.Fatalf("reading %d bytes allocated %d bytes (limit %d)", len(data), got, limit)
		}

		var fe *errFraming
		switch {
		case errors.Is(end, io.EOF), errors.Is(end, io.ErrUnexpectedEOF), errors.As(end, &fe):
		default:
			t.Fatalf("reading ended with %v (%T), want EOF, unexpected EOF or a framing error", end, end)
		}
		frames := readErrorFrames(t, out.Bytes())
		if fe != nil {
			if n := len(frames); n == 0 || frames[n-1].Error.Code != protocol.CodeParseError || string(frames[n-1].ID) != "null" {
				t.Fatalf("a broken header closed the connection without a -32700 answer: %+v", frames)
			}
		}
		if logs.has("jsonrpc2 refused a request") {
			t.Logf("checkRequest let through a body jsonrpc2.Request refuses (answered -32600): %q", data)
		}
	})
}

// FuzzServeConn sends arbitrary request bodies (the input split at NUL
// bytes, each framed correctly) through a whole connection, and checks that
// every frame is answered as PROTOCOL.md says: each request with a usable id
// gets exactly one response with that id, each rejected frame without one
// gets an error with id null, and nothing else is answered. It runs decoding
// and Validate of every method's params in the method table on the way.
func FuzzServeConn(f *testing.F) {
	join := func(bodies ...string) []byte { return []byte(strings.Join(bodies, "\x00")) }
	f.Add(join(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"workspaceRoot":"/r"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"task/create","params":{"title":"t","description":"d","hints":{"files":["../x"]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"task/list","params":{"status":["nope"],"since":"x"}}`,
		`{"jsonrpc":"2.0","id":"c","method":"task/output","params":{"id":"t","offset":-1}}`,
		`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"c"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"settings/update","params":{"settings":{"maxConcurrent":0}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"shutdown"}`,
		`{"jsonrpc":"2.0","id":5,"method":"task/get","params":{"id":"x"}}`))
	f.Add(join(`{"jsonrpc":"2.0","id":1,"method":"task/get"}`, `{not json`, `{"jsonrpc":"2.0","id":7,"result":1}`,
		`{"jsonrpc":"2.0","method":"x","result":1}`, `{"jsonrpc":"2.0","id":8,"method":"m","error":null}`))
	f.Add(join(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"workspaceRoot":"/r","settings":{"mcpServers":{"a b":{"type":"http","url":"ftp://x"}}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":[]}`,
		`{"jsonrpc":"2.0","id":9,"method":"task/respond","params":{"id":"t","questionId":"q","updatedInput":[1]}}`,
		`{"jsonrpc":"2.0","id":10,"method":"audit/list","params":{"since":"2026-01-02T00:00:00Z","until":"2020-01-01T00:00:00Z"}}`,
		`{"jsonrpc":"2.0","method":"exit"}`, `{"jsonrpc":"2.0","id":11,"method":"task/list"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		bodies := bytes.Split(data, []byte{0})
		var in bytes.Buffer
		for _, b := range bodies {
			fmt.Fprintf(&in, "Content-Length: %d\r\n\r\n%s", len(b), b)
		}
		want := expectedAnswers(bodies)

		log := slog.New(slog.DiscardHandler)
		srv := NewServer(fuzzServer{}, NewHub(log, 0), log)
		out := &syncBuffer{}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := srv.ServeConn(ctx, &memConn{r: bytes.NewReader(in.Bytes()), w: out}); err != nil {
			t.Fatalf("ServeConn: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatal("ServeConn only returned when its context ended")
		}

		got := map[string]int{}
		nulls := 0
		for _, m := range readResponses(t, out.Bytes()) {
			key := idKey(m.ID)
			if key == "" {
				nulls++
				if m.Error == nil {
					t.Fatalf("a result with id null: %+v", m)
				}
				continue
			}
			got[key]++
		}
		if want.exit {
			// After exit the connection closes at once; requests still
			// running are not answered. Nothing may be answered twice or
			// out of thin air, though.
			for k, n := range got {
				if n > want.ids[k] {
					t.Fatalf("id %s answered %d times, sent %d times", k, n, want.ids[k])
				}
			}
			return
		}
		for k, n := range want.ids {
			if got[k] != n {
				t.Fatalf("id %s: %d responses, want %d\ninput %q\noutput %s", k, got[k], n, data, out.Bytes())
			}
		}
		for k, n := range got {
			if want.ids[k] != n {
				t.Fatalf("id %s: %d responses, but it was sent %d times", k, n, want.ids[k])
			}
		}
		if nulls < want.minNull || nulls > want.maxNull {
			t.Fatalf("%d error responses with id null, want %d to %d\ninput %q\noutput %s", nulls, want.minNull, want.maxNull, data, out.Bytes())
		}
	})
}

// answers is what a connection must send back for a list of frame bodies.
type answers struct {
	ids              map[string]int // responses per id (idKey)
	minNull, maxNull int            // error responses with id null
	exit             bool           // an exit notification ends the connection early
}

// expectedAnswers classifies bodies with checkRequest (what the reader
// decides about a single frame); the fuzz target checks that the connection
// above it answers accordingly.
func expectedAnswers(bodies [][]byte) answers {
	a := answers{ids: map[string]int{}}
	for _, b := range bodies {
		id, rejected, isResponse := checkRequest(b)
		switch {
		case isResponse:
		case id != nil:
			a.ids[idKey(id)]++
		case rejected != nil:
			a.minNull++
			a.maxNull++
		default:
			// A notification: no answer, unless jsonrpc2 refuses it after
			// all (then -32600 with id null).
			a.maxNull++
			// Read as checkRequest reads it: a map, so keys match exactly.
			var m map[string]json.RawMessage
			var method string
			if json.Unmarshal(b, &m) == nil && json.Unmarshal(m["method"], &method) == nil && method == protocol.MethodExit {
				a.exit = true
				return a
			}
		}
	}
	return a
}

// idKey is a JSON-RPC id in a canonical form ("" for null or absent), so
// that `"\u0061"` sent and `"a"` answered compare equal.
func idKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return "s:" + s
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return "?" + string(raw)
	}
	return "n:" + strconv.FormatInt(n, 10)
}

// fuzzServer answers initialize and shutdown; every other method is
// Unimplemented (-32601), reached only after its params were decoded and
// validated. Nothing blocks, so a connection always finishes its requests.
type fuzzServer struct{ fakeserver.Unimplemented }

func (fuzzServer) Initialize(_ context.Context, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	return &protocol.InitializeResult{ServerInfo: protocol.ServerInfo{Name: protocol.ServerName},
		ProtocolVersion: protocol.ProtocolVersion, Workspace: protocol.WorkspaceInfo{Root: p.WorkspaceRoot}}, nil
}

func (fuzzServer) Shutdown(context.Context) error { return nil }

// readErrorFrames parses what a frameStream wrote on its own: error
// responses only.
func readErrorFrames(t *testing.T, out []byte) []message {
	t.Helper()
	msgs := readResponses(t, out)
	for _, m := range msgs {
		if m.Error == nil || (m.Error.Code != protocol.CodeParseError && m.Error.Code != protocol.CodeInvalidRequest) {
			t.Fatalf("the frame reader wrote %+v, want a -32700 or -32600 error", m)
		}
		if key := idKey(m.ID); strings.HasPrefix(key, "?") {
			t.Fatalf("error frame with an id that is neither a string nor an integer: %s", m.ID)
		}
	}
	return msgs
}

// readResponses parses familiar's output strictly: LSP frames whose bodies
// are JSON-RPC 2.0 responses with exactly one of result and error.
func readResponses(t *testing.T, out []byte) []message {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(out))
	var msgs []message
	for {
		header, err := r.ReadString('\n')
		if err == io.EOF && header == "" {
			return msgs
		}
		n, ok := strings.CutPrefix(header, "Content-Length: ")
		if !ok || !strings.HasSuffix(n, "\r\n") {
			t.Fatalf("bad frame header %q in %q", header, out)
		}
		size, err := strconv.Atoi(strings.TrimSuffix(n, "\r\n"))
		if blank, _ := r.ReadString('\n'); err != nil || blank != "\r\n" {
			t.Fatalf("bad frame header end after %q", header)
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatalf("truncated frame: %v", err)
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil || m.JSONRPC != "2.0" || m.Method != "" {
			t.Fatalf("familiar wrote %q: %v", body, err)
		}
		if (m.Error == nil) == (m.Result == nil) {
			t.Fatalf("a response needs exactly one of result and error: %s", body)
		}
		msgs = append(msgs, m)
	}
}

func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

// memConn is a connection whose input is fixed bytes and whose output is
// kept; closing it does nothing (the input simply ends).
type memConn struct {
	r io.Reader
	w io.Writer
}

func (c *memConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *memConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *memConn) Close() error                { return nil }

// recordHandler keeps log messages so a fuzz target can look for one.
type recordHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordHandler) WithGroup(string) slog.Handler            { return h }

func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}

func (h *recordHandler) has(prefix string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.msgs {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	return false
}
