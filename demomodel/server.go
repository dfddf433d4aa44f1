package demomodel

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

const messagesPath = "/v1/messages"

// APIKey is the key Env hands the CLI. It is longer than 20 characters on
// purpose: the CLI remembers an approved key by its last 20 (CLAUDE-CLI.md
// §1), and a shorter key hides mistakes in computing that tail.
const APIKey = "sk-test-fakeapi-0123456789abcdef"

// Server is a fake Messages API on 127.0.0.1. It answers POST /v1/messages
// from its Script and every other request with a harmless empty answer, and
// logs both. It never talks to the network beyond its own listener.
type Server struct {
	script Script
	ln     net.Listener
	srv    *http.Server
	url    string
	served chan struct{} // closed when the serving goroutine has returned
	closed chan struct{} // closed by Close, ends pending delays
	once   sync.Once

	// handlers counts running handlers, so Close can wait for them; a
	// handler that starts after Close began returns at once (quitting).
	handlersMu sync.Mutex
	quitting   bool
	handlers   sync.WaitGroup

	scriptMu sync.Mutex // serializes calls of script

	mu      sync.Mutex // guards the fields below
	reqs    []Request
	others  []Request
	changed chan struct{} // closed and replaced whenever reqs grows
	hooks   []func(Request, Reply)
}

// Start starts a server that answers with script, listening on 127.0.0.1
// only. Close it when done. The script must not block for long: Close waits
// for it. It panics if no loopback port can be had, as a machine without
// loopback cannot run familiar at all; use Listen to get the error instead.
func Start(script Script) *Server {
	s, err := Listen(script)
	if err != nil {
		panic(err)
	}
	return s
}

// Listen is Start returning an error instead of panicking.
func Listen(script Script) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demomodel: listening on loopback: %w", err)
	}
	s := &Server{
		script:  script,
		ln:      ln,
		url:     "http://" + ln.Addr().String(),
		served:  make(chan struct{}),
		closed:  make(chan struct{}),
		changed: make(chan struct{}),
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.track)}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s, nil
}

// URL is the base URL, for ANTHROPIC_BASE_URL.
func (s *Server) URL() string { return s.url }

// Close stops the server: pending delays end, connections are closed, and it
// returns once every handler (and every OnResponseDone hook) has returned.
// Safe to call twice.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closed)
		s.handlersMu.Lock()
		s.quitting = true
		s.handlersMu.Unlock()
		_ = s.srv.Close() // closes the listener and every connection
		<-s.served
		s.handlers.Wait()
	})
}

// track runs serveHTTP counted in handlers, so Close can wait for it.
func (s *Server) track(w http.ResponseWriter, r *http.Request) {
	s.handlersMu.Lock()
	if s.quitting {
		s.handlersMu.Unlock()
		return
	}
	s.handlers.Add(1)
	s.handlersMu.Unlock()
	defer s.handlers.Done()
	s.serveHTTP(w, r)
}

// Env is the environment that points a claude process at this server, with
// non-essential traffic (telemetry, update checks, error reports) off.
// Pass it as the extra of agent.SessionEnv, and seed the config dir with
// APIKey approved.
func (s *Server) Env() map[string]string {
	return map[string]string{
		"ANTHROPIC_BASE_URL":                       s.URL(),
		"ANTHROPIC_API_KEY":                        APIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_ERROR_REPORTING":                  "1",
	}
}

// Requests returns every POST /v1/messages so far, in order of arrival,
// side requests included.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// MainRequests returns the requests that are not side requests.
func (s *Server) MainRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if !r.IsSideRequest() {
			out = append(out, r)
		}
	}
	return out
}

// OtherRequests returns every request that was not a POST /v1/messages
// (count_tokens and anything unexpected), in order of arrival.
func (s *Server) OtherRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.others...)
}

// WaitRequests waits until at least n requests (as Requests counts them)
// have arrived, or timeout passes. It returns the requests so far and
// whether there are n of them.
func (s *Server) WaitRequests(n int, timeout time.Duration) ([]Request, bool) {
	return s.WaitFor(func(reqs []Request) bool { return len(reqs) >= n }, timeout)
}

// WaitFor waits until cond holds for the requests so far (re-checked on
// each arrival), or timeout passes. It returns the requests it last checked
// and whether cond held. cond must not call the Server.
func (s *Server) WaitFor(cond func([]Request) bool, timeout time.Duration) ([]Request, bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		reqs := append([]Request(nil), s.reqs...)
		changed := s.changed
		s.mu.Unlock()
		if cond(reqs) {
			return reqs, true
		}
		select {
		case <-changed:
		case <-timer.C:
			return reqs, false
		}
	}
}

// OnResponseDone adds a hook called right after a reply was completely
// written and flushed (for a stream: after message_stop), with the reply as
// sent (generated IDs and stop reason filled in). Hooks run in the handler's
// goroutine, in the order added; they must not block for long or call Close.
// A reply whose request was cancelled before it was sent calls no hook.
func (s *Server) OnResponseDone(hook func(Request, Reply)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, hook)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != messagesPath {
		s.serveOther(w, r, body, at)
		return
	}
	req, err := ParseRequest(body)
	req.Header = r.Header.Clone()
	req.At = at
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody(http.StatusBadRequest, err.Error()))
		return
	}

	reply := s.callScript(req).resolve(newID)

	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		case <-s.closed:
			t.Stop()
			return
		}
	}

	model := req.Model
	if model == "" {
		model = "claude-fake"
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	switch {
	case reply.Status != 0:
		if !reply.Retryable {
			// Honoured by the Anthropic SDK and the CLI's retry loop, so an
			// error test does not sit through minutes of backoff.
			w.Header().Set("X-Should-Retry", "false")
		}
		writeJSON(w, reply.Status, errorBody(reply.Status, reply.Error))
	case !req.Stream:
		b, err := messageBody(reply, newID("msg_"), model)
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, errorBody(http.StatusInternalServerError, "demomodel: "+err.Error()))
			return
		}
		writeJSON(w, http.StatusOK, b)
	default:
		if !s.stream(w, r, reply, model) {
			return
		}
	}
	s.responseDone(req, reply)
}

// stream writes reply as SSE, flushing after each event. It reports whether
// the whole stream was written.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, reply Reply, model string) bool {
	evs, err := streamEvents(reply, newID("msg_"), model)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, errorBody(http.StatusInternalServerError, "demomodel: "+err.Error()))
		return false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Request-Id", newID("req_"))
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for _, ev := range evs {
		if ev.Pause > 0 {
			t := time.NewTimer(ev.Pause)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return false
			case <-s.closed:
				t.Stop()
				return false
			}
		}
		if r.Context().Err() != nil {
			return false
		}
		if err := writeEvent(w, ev); err != nil {
			return false
		}
		if err := rc.Flush(); err != nil {
			return false
		}
	}
	return true
}

// callScript runs the script, one call at a time; the lock is released even
// if the script panics (net/http recovers a handler's panic, and a held lock
// would hang every later request).
func (s *Server) callScript(req Request) Reply {
	s.scriptMu.Lock()
	defer s.scriptMu.Unlock()
	return s.script(req)
}

func (s *Server) responseDone(req Request, reply Reply) {
	s.mu.Lock()
	hooks := slices.Clone(s.hooks)
	s.mu.Unlock()
	for _, h := range hooks {
		h(req, reply)
	}
}

// serveOther logs a request that is not POST /v1/messages and answers it
// harmlessly: count_tokens gets a small count, anything else an empty object.
func (s *Server) serveOther(w http.ResponseWriter, r *http.Request, body []byte, at time.Time) {
	s.mu.Lock()
	s.others = append(s.others, Request{
		Raw: body, Path: r.URL.Path, Header: r.Header.Clone(), At: at,
	})
	s.mu.Unlock()
	if r.URL.Path == messagesPath+"/count_tokens" {
		writeJSON(w, http.StatusOK, []byte(`{"input_tokens":`+strconv.Itoa(fakeInputTokens)+`}`))
		return
	}
	writeJSON(w, http.StatusOK, []byte(`{}`))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", newID("req_"))
	w.WriteHeader(status)
	_, _ = w.Write(body)
	_ = http.NewResponseController(w).Flush()
}

// newID returns a fresh random ID with the given prefix ("msg_", "toolu_"),
// unique across servers, so a conversation resumed against a new server
// never sees a repeated tool_use ID.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + "01fake" + hex.EncodeToString(b[:])
}
