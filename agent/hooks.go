package agent

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// HookHandler receives one hook call. It may block (a PermissionRequest is held
// until a person answers); ctx is cancelled when the CLI gives up on the call
// or the server closes. The returned value is sent back as the hook's JSON
// output; nil means "no decision" ({}).
type HookHandler func(ctx context.Context, event string, payload json.RawMessage) any

// HookServer is familiar's loopback listener for Claude Code HTTP hooks. One
// server serves every session; each session has its own route and secret, and
// a call without the right secret is rejected before its body is read.
type HookServer struct {
	logger *slog.Logger
	ln     net.Listener
	srv    *http.Server
	served chan struct{} // closed when Serve returned

	mu     sync.Mutex
	routes map[string]*hookRoute // guarded by mu; by route id
}

type hookRoute struct {
	secret  []byte
	handler HookHandler
	ctx     context.Context // cancelled when the route is removed
}

// maxHookBody bounds a hook payload; tool inputs can be large (a Write of a
// big file) but not unbounded.
const maxHookBody = 32 << 20

// NewHookServer listens on 127.0.0.1 on a free port.
func NewHookServer(logger *slog.Logger) (*HookServer, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hook listener: %w", err)
	}
	h := &HookServer{
		logger: logger,
		ln:     ln,
		routes: map[string]*hookRoute{},
		served: make(chan struct{}),
	}
	h.srv = &http.Server{
		Handler:           http.HandlerFunc(h.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(h.served)
		if err := h.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("hook server stopped", "err", err)
		}
	}()
	return h, nil
}

// URL is the base URL of the listener.
func (h *HookServer) URL() string { return "http://" + h.ln.Addr().String() }

// Register adds a route for one session and returns its URL and secret. The
// returned function removes the route; calls still held are cancelled.
func (h *HookServer) Register(handler HookHandler) (url, secret string, unregister func()) {
	id := randomHex(12)
	secret = randomHex(32)
	ctx, cancel := context.WithCancel(context.Background())
	h.mu.Lock()
	h.routes[id] = &hookRoute{secret: []byte(secret), handler: handler, ctx: ctx}
	h.mu.Unlock()
	return h.URL() + "/hook/" + id, secret, func() {
		h.mu.Lock()
		delete(h.routes, id)
		h.mu.Unlock()
		cancel()
	}
}

// Close stops the listener and waits for every handler to return. Handlers
// see their context cancelled.
func (h *HookServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	if err != nil {
		// Held PermissionRequests do not end on Shutdown: force them.
		err = h.srv.Close()
	}
	<-h.served
	return err
}

func (h *HookServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/hook/")
	if !ok || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	h.mu.Lock()
	route := h.routes[id]
	h.mu.Unlock()
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if route == nil || subtle.ConstantTimeCompare([]byte(token), route.secret) != 1 {
		// Same answer for an unknown route and a wrong secret: nothing to learn.
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxHookBody+1))
	if err != nil || len(body) > maxHookBody {
		http.Error(w, "bad hook payload", http.StatusBadRequest)
		return
	}
	var head struct {
		Event string `json:"hook_event_name"`
	}
	if err := json.Unmarshal(body, &head); err != nil || head.Event == "" {
		http.Error(w, "bad hook payload", http.StatusBadRequest)
		return
	}
	h.logger.Debug("hook", "event", head.Event, "route", id)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// A route removed while a call is held cancels it.
	stop := context.AfterFunc(route.ctx, cancel)
	defer stop()
	out := route.handler(ctx, head.Event, body)
	if out == nil {
		out = struct{}{}
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		h.logger.Debug("hook reply not delivered", "event", head.Event, "err", err)
	}
}

// hookEvent is one hook event familiar subscribes to; tool events take a
// matcher, the others must not have one to match everything.
type hookEvent struct {
	name string
	tool bool
}

// hookEvents are the events the PTY driver subscribes to.
var hookEvents = []hookEvent{
	{"SessionStart", false},
	{"UserPromptSubmit", false},
	{"PreToolUse", true},
	{"PermissionRequest", true},
	{"PostToolUse", true},
	{"PostToolUseFailure", true},
	{"Notification", false},
	{"Stop", false},
	{"SubagentStart", false},
	{"SubagentStop", false},
	{"StopFailure", false},
	{"SessionEnd", false},
}

// skillShellEvent is the gate of the shell commands embedded in skills and
// slash commands (`!` lines), new in 2.1.332: they do not pass through
// PreToolUse or PermissionRequest (CLAUDE-CLI.md Part B §3.1). Only a CLI
// that has it gets it: an older one would not know the event's name.
var skillShellEvent = hookEvent{"PreSkillShellCommand", true}

// SkillShellHookVersion is the first release with PreSkillShellCommand.
const SkillShellHookVersion = "2.1.332"

// HasSkillShellHook says whether claude version v gates skills' shell
// commands with PreSkillShellCommand. An unknown version (a fake claude in
// tests) is taken to be without it.
func HasSkillShellHook(v string) bool {
	return v != "" && CompareVersions(v, SkillShellHookVersion) >= 0
}

// HookSettings returns the --settings document that points every hook at url
// with the session's secret. timeout (seconds) must exceed familiar's approval
// timeout: the CLI fails open when a hook times out (CLAUDE-CLI.md Part B §3).
func HookSettings(url, secret string, timeout int) map[string]any {
	return hookSettings(hookEvents, url, secret, timeout)
}

// sessionHookSettings is HookSettings for one session: the events its
// driver takes (the PTY driver every one, the stream driver, whose tool
// calls ask over stdio, none), plus the skills' shell-command gate where
// claude's version has it; nil when there is nothing to subscribe to.
func sessionHookSettings(driverEvents []hookEvent, version, url, secret string, timeout int) map[string]any {
	events := slices.Clone(driverEvents)
	if HasSkillShellHook(version) {
		events = append(events, skillShellEvent)
	}
	if len(events) == 0 {
		return nil
	}
	return hookSettings(events, url, secret, timeout)
}

func hookSettings(events []hookEvent, url, secret string, timeout int) map[string]any {
	hooks := map[string]any{}
	for _, e := range events {
		h := map[string]any{
			"type":    "http",
			"url":     url,
			"headers": map[string]string{"Authorization": "Bearer " + secret},
			"timeout": timeout,
		}
		entry := map[string]any{"hooks": []any{h}}
		if e.tool {
			entry["matcher"] = "*"
		}
		hooks[e.name] = []any{entry}
	}
	return map[string]any{"hooks": hooks}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// NewSessionID returns a random version-4 UUID for --session-id.
func NewSessionID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
