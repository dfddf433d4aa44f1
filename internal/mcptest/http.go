package mcptest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// HTTP serves the same server over MCP's two HTTP transports, for tests of
// http and sse MCP servers: streamable HTTP (POST a message, get the answer
// as JSON; no server-initiated stream) at any path but the two below, and
// the older HTTP+SSE transport (GET /sse opens the event stream, which
// names the URL to POST messages to; answers come on the stream).
//
// Calls counts the tools/call requests by transport ("http", "sse"), and
// Headers keeps the last Authorization header seen, so a test can tell the
// client's settings arrived.
type HTTP struct {
	mu      sync.Mutex
	calls   map[string]int
	auth    string
	streams map[string]chan []byte // by SSE session
}

// NewHTTP makes a server; mount it on an httptest.Server.
func NewHTTP() *HTTP {
	return &HTTP{calls: map[string]int{}, streams: map[string]chan []byte{}}
}

// Calls is how many tools/call requests came over transport "http" or "sse".
func (h *HTTP) Calls(transport string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[transport]
}

// Authorization is the last Authorization header a request carried.
func (h *HTTP) Authorization() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.auth
}

func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a := r.Header.Get("Authorization"); a != "" {
		h.mu.Lock()
		h.auth = a
		h.mu.Unlock()
	}
	switch {
	case r.URL.Path == "/sse" && r.Method == http.MethodGet:
		h.sseStream(w, r)
	case r.URL.Path == "/messages" && r.Method == http.MethodPost:
		h.ssePost(w, r)
	case r.Method == http.MethodPost:
		h.streamable(w, r)
	default:
		// No standalone server stream, no session to end.
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// answer handles one message; nil for a notification or a response.
func (h *HTTP) answer(body []byte, transport string) ([]byte, error) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("not a JSON-RPC message: %w", err)
	}
	if len(req.ID) == 0 || req.Method == "" {
		return nil, nil
	}
	if req.Method == "tools/call" {
		h.mu.Lock()
		h.calls[transport]++
		h.mu.Unlock()
	}
	return json.Marshal(reply(req))
}

func (h *HTTP) streamable(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := h.answer(body, "http")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if out == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func (h *HTTP) sseStream(w http.ResponseWriter, r *http.Request) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	ch := make(chan []byte, 16)
	h.mu.Lock()
	h.streams[id] = ch
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.streams, id)
		h.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	fmt.Fprintf(w, "event: endpoint\ndata: /messages?sessionId=%s\n\n", id)
	if rc.Flush() != nil {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case msg := <-ch:
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", strings.ReplaceAll(string(msg), "\n", ""))
			if rc.Flush() != nil {
				return
			}
		}
	}
}

func (h *HTTP) ssePost(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	ch := h.streams[r.URL.Query().Get("sessionId")]
	h.mu.Unlock()
	if ch == nil {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := h.answer(body, "sse")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if out != nil {
		select {
		case ch <- out:
		case <-r.Context().Done():
			return
		}
	}
	w.WriteHeader(http.StatusAccepted)
}
