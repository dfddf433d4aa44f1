package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/familiar-dev/familiar/protocol"
)

// Options configure an Agent.
type Options struct {
	// Dial connects to the familiar of a repository (see Dialer).
	Dial Dialer
	// RepoRoot finds the repository holding dir ("" if none).
	RepoRoot func(dir string) string
	// DataDir is familiar's data dir for a repository root; the ACP
	// session ids are kept under it.
	DataDir func(root string) string
	// Driver is the driver of the tasks sessions create: "stream" or
	// "pty"; "" leaves it to the workspace's defaultDriver.
	Driver string
	// Cwd is used by session/list without a cwd.
	Cwd     string
	Version string
	Logger  *slog.Logger
}

// Agent serves one ACP client.
type Agent struct {
	opts Options
	c    *conn

	bg sync.WaitGroup // goroutines that outlive a request: permission and form requests, disconnect watchers

	mu          sync.Mutex
	familiars   map[string]*familiar // guarded by mu; by repository root
	sessions    map[string]*session  // guarded by mu
	elicitation bool                 // guarded by mu; the client takes elicitation requests
}

// Serve speaks ACP on in/out until in ends or ctx is done, then closes its
// connections to familiar (which keeps running for other editors).
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	a := &Agent{opts: opts, familiars: map[string]*familiar{}, sessions: map[string]*session{}}
	a.c = newConn(in, out, a.handle, opts.Logger)
	err := a.c.serve(ctx)
	a.mu.Lock()
	for _, f := range a.familiars {
		_ = f.close()
	}
	a.mu.Unlock()
	// The client is gone and so are the familiar connections: what still
	// runs ends now.
	a.bg.Wait()
	return err
}

func (a *Agent) handle(ctx context.Context, method string, raw json.RawMessage) (any, error) {
	switch method {
	case "initialize":
		return a.initialize(raw)
	case "authenticate":
		return map[string]any{}, nil
	case "session/new":
		return a.newSession(ctx, raw)
	case "session/load":
		return a.loadSession(ctx, raw)
	case "session/list":
		return a.listSessions(ctx, raw)
	case "session/prompt":
		var p promptParams
		s, err := a.sessionOf(raw, &p, &p.SessionID)
		if err != nil {
			return nil, err
		}
		return s.prompt(ctx, p.Prompt)
	case "session/cancel":
		var p sessionIDParams
		if s, err := a.sessionOf(raw, &p, &p.SessionID); err == nil {
			s.cancel(ctx)
		}
		return nil, nil
	case "session/set_mode":
		var p setModeParams
		s, err := a.sessionOf(raw, &p, &p.SessionID)
		if err != nil {
			return nil, err
		}
		return s.setMode(ctx, p.ModeID)
	case "$/cancel_request":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(raw, &p) == nil {
			a.c.cancelIncoming(p.RequestID)
		}
		return nil, nil
	}
	if cmd, ok := strings.CutPrefix(method, "_familiar/"); ok {
		var p sessionIDParams
		s, err := a.sessionOf(raw, &p, &p.SessionID)
		if err != nil {
			return nil, err
		}
		return s.extension(ctx, cmd)
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("familiar acp has no method %q.", method)}
}

func (a *Agent) initialize(raw json.RawMessage) (any, error) {
	var p initializeParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("params", "initialize takes an object: "+err.Error())
	}
	if p.ProtocolVersion == nil {
		return nil, invalidParams("protocolVersion", "initialize needs protocolVersion.")
	}
	a.mu.Lock()
	e := p.ClientCapabilities.Elicitation
	a.elicitation = e != nil && len(e.Form) > 0 && string(e.Form) != "null"
	a.mu.Unlock()
	// A client asking for a newer version gets the one familiar speaks,
	// as ACP's version negotiation says.
	return map[string]any{
		"protocolVersion": ProtocolVersion,
		"agentCapabilities": map[string]any{
			"loadSession":         true,
			"promptCapabilities":  map[string]any{"image": false, "audio": false, "embeddedContext": true},
			"mcpCapabilities":     map[string]any{"http": true, "sse": true},
			"sessionCapabilities": map[string]any{"list": map[string]any{}},
		},
		"agentInfo":   map[string]any{"name": "familiar", "title": "familiar", "version": a.opts.Version},
		"authMethods": []any{},
	}, nil
}

// sessionOf decodes params and finds the session they name.
func (a *Agent) sessionOf(raw json.RawMessage, p any, id *string) (*session, error) {
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, invalidParams("params", "The params are not the expected object: "+err.Error())
	}
	if *id == "" {
		return nil, invalidParams("sessionId", "sessionId is required.")
	}
	a.mu.Lock()
	s := a.sessions[*id]
	a.mu.Unlock()
	if s == nil {
		return nil, &rpcError{Code: codeNotFound, Message: fmt.Sprintf("No session %q here; create it with session/new or load it with session/load.", *id),
			Data: map[string]string{"field": "sessionId"}}
	}
	return s, nil
}

// familiarFor connects (once) to the familiar of the repository holding cwd.
func (a *Agent) familiarFor(ctx context.Context, field, cwd string) (*familiar, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return nil, invalidParams(field, "cwd must be an absolute path.")
	}
	root := a.opts.RepoRoot(cwd)
	if root == "" {
		return nil, invalidParams(field, fmt.Sprintf("%s is not inside a git repository; familiar works on git repositories.", cwd))
	}
	a.mu.Lock()
	f := a.familiars[root]
	a.mu.Unlock()
	if f != nil {
		return f, nil
	}
	f, _, err := dialFamiliar(ctx, a.opts.Dial, root, a.opts.Version)
	if err != nil {
		return nil, &rpcError{Code: codeInternal, Message: err.Error()}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if prev := a.familiars[root]; prev != nil {
		_ = f.close()
		return prev, nil
	}
	a.familiars[root] = f
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		<-f.rpc.DisconnectNotify()
		a.familiarGone(f)
	}()
	return f, nil
}

// familiarGone ends the turns that waited on a familiar that went away;
// the next session/new or session/load connects again.
func (a *Agent) familiarGone(f *familiar) {
	a.mu.Lock()
	if a.familiars[f.root] == f {
		delete(a.familiars, f.root)
	}
	var lost []*session
	for _, s := range a.sessions {
		if s.f == f {
			lost = append(lost, s)
		}
	}
	a.mu.Unlock()
	for _, s := range lost {
		s.mu.Lock()
		tu := s.turn
		s.mu.Unlock()
		if tu != nil {
			s.message("familiar for " + f.root + " went away; load the session again to go on.")
			tu.end(stopEndTurn)
		}
	}
}

func (a *Agent) newSession(ctx context.Context, raw json.RawMessage) (any, error) {
	var p newSessionParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("params", "session/new takes {cwd, mcpServers}: "+err.Error())
	}
	f, mcp, err := a.sessionPlace(ctx, "session/new", p.Cwd, p.McpServers)
	if err != nil {
		return nil, err
	}
	s := a.addSession(newID(), f, *p.Cwd, mcp)
	s.announce()
	return map[string]any{"sessionId": s.id, "modes": modes(s.mode)}, nil
}

// sessionPlace reads the cwd and MCP servers of session/new or session/load:
// the familiar of cwd's repository and the client's servers for its tasks.
func (a *Agent) sessionPlace(ctx context.Context, method string, cwd *string, servers []mcpServerParam) (*familiar, map[string]protocol.McpServer, error) {
	if cwd == nil {
		return nil, nil, invalidParams("cwd", method+" needs cwd.")
	}
	mcp, err := mcpServers(servers)
	if err != nil {
		return nil, nil, err
	}
	f, err := a.familiarFor(ctx, "cwd", *cwd)
	if err != nil {
		return nil, nil, err
	}
	return f, mcp, nil
}

func (a *Agent) addSession(id string, f *familiar, cwd string, mcp map[string]protocol.McpServer) *session {
	s := &session{id: id, a: a, f: f, cwd: cwd, mcp: mcp, mode: string(protocol.ModeExecutor),
		announced: map[string]bool{}}
	a.mu.Lock()
	if old := a.sessions[id]; old != nil {
		old.stopFollowing()
	}
	a.sessions[id] = s
	a.mu.Unlock()
	return s
}

func (a *Agent) loadSession(ctx context.Context, raw json.RawMessage) (any, error) {
	var p loadSessionParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("params", "session/load takes {sessionId, cwd, mcpServers}: "+err.Error())
	}
	if p.SessionID == "" {
		return nil, invalidParams("sessionId", "sessionId is required.")
	}
	f, mcp, err := a.sessionPlace(ctx, "session/load", p.Cwd, p.McpServers)
	if err != nil {
		return nil, err
	}
	taskID := a.taskOf(f.root, p.SessionID)
	var t protocol.Task
	if err := f.call(ctx, protocol.MethodTaskGet, map[string]string{"id": taskID}, &t); err != nil {
		return nil, &rpcError{Code: codeNotFound, Message: fmt.Sprintf("No session %q in %s: %v", p.SessionID, f.root, err),
			Data: map[string]string{"field": "sessionId"}}
	}
	s := a.addSession(p.SessionID, f, *p.Cwd, mcp)
	s.mode = string(t.Mode)
	if err := s.replay(ctx, t.ID); err != nil {
		return nil, &rpcError{Code: codeInternal, Message: err.Error()}
	}
	s.announce()
	return map[string]any{"modes": modes(s.mode)}, nil
}

func (a *Agent) listSessions(ctx context.Context, raw json.RawMessage) (any, error) {
	var p listSessionsParams
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, invalidParams("params", "session/list takes {cwd?, cursor?}: "+err.Error())
		}
	}
	cwd := p.Cwd
	if cwd == "" {
		cwd = a.opts.Cwd
	}
	f, err := a.familiarFor(ctx, "cwd", cwd)
	if err != nil {
		return nil, err
	}
	var res protocol.TaskListResult
	if err := f.call(ctx, protocol.MethodTaskList, map[string]any{"limit": protocol.MaxTaskListLimit, "cursor": p.Cursor}, &res); err != nil {
		return nil, &rpcError{Code: codeInternal, Message: err.Error()}
	}
	byTask := a.sessionIDs(f.root)
	sessions := []map[string]any{}
	for _, t := range res.Tasks {
		id := byTask[t.ID]
		if id == "" {
			id = t.ID // a task made by another editor: its id is the session id
		}
		sessions = append(sessions, map[string]any{"sessionId": id, "cwd": f.root, "title": t.Title,
			"updatedAt": t.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z")})
	}
	out := map[string]any{"sessions": sessions}
	if res.NextCursor != "" {
		out["nextCursor"] = res.NextCursor
	}
	return out, nil
}

// The ACP session → task map lives in the data dir, one small file per
// session, so a restarted familiar acp (or another one) finds the task.

func (a *Agent) mapDir(root string) string { return filepath.Join(a.opts.DataDir(root), "acp") }

func (a *Agent) rememberTask(root, sessionID, taskID string) error {
	dir := a.mapDir(root)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("remember session: %w", err)
	}
	tmp := filepath.Join(dir, "."+sessionID+".tmp")
	if err := os.WriteFile(tmp, []byte(taskID), 0o600); err != nil {
		return fmt.Errorf("remember session: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, sessionID))
}

// taskOf is the task of an ACP session id; a task id stands for itself.
func (a *Agent) taskOf(root, sessionID string) string {
	if strings.ContainsAny(sessionID, "/\\") || strings.HasPrefix(sessionID, ".") {
		return sessionID
	}
	b, err := os.ReadFile(filepath.Join(a.mapDir(root), sessionID))
	if err != nil {
		return sessionID
	}
	return strings.TrimSpace(string(b))
}

// sessionIDs maps task ids to the ACP session ids that made them.
func (a *Agent) sessionIDs(root string) map[string]string {
	out := map[string]string{}
	ents, err := os.ReadDir(a.mapDir(root))
	if err != nil {
		return out
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(a.mapDir(root), e.Name())); err == nil {
			out[strings.TrimSpace(string(b))] = e.Name()
		}
	}
	return out
}

func modes(current string) modeState {
	return modeState{CurrentModeID: current, AvailableModes: []sessionMode{
		{ID: "executor", Name: "Executor", Description: "Implements the task: edits files and runs commands, with your permission."},
		{ID: "architect", Name: "Architect", Description: "Plans only: reads and proposes, never writes."},
		{ID: "auditor", Name: "Auditor", Description: "Reads the code and runs tests; never writes."},
	}}
}

func mcpServers(in []mcpServerParam) (map[string]protocol.McpServer, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := map[string]protocol.McpServer{}
	for i, m := range in {
		field := fmt.Sprintf("mcpServers[%d]", i)
		if m.Name == "" {
			return nil, invalidParams(field+".name", "Every MCP server needs a name.")
		}
		s := protocol.McpServer{}
		switch m.Type {
		case "", "stdio":
			if m.Command == "" {
				return nil, invalidParams(field+".command", "A stdio MCP server needs a command.")
			}
			s.Type, s.Command, s.Args = "stdio", m.Command, m.Args
			if len(m.Env) > 0 {
				s.Env = map[string]string{}
				for _, e := range m.Env {
					s.Env[e.Name] = e.Value
				}
			}
		case "http", "sse":
			if m.URL == "" {
				return nil, invalidParams(field+".url", "An "+m.Type+" MCP server needs a url.")
			}
			s.Type, s.URL = protocol.McpServerType(m.Type), m.URL
			if len(m.Headers) > 0 {
				s.Headers = map[string]string{}
				for _, h := range m.Headers {
					s.Headers[h.Name] = h.Value
				}
			}
		default:
			return nil, invalidParams(field+".type", fmt.Sprintf("Unknown MCP server type %q.", m.Type))
		}
		out[m.Name] = s
	}
	return out, nil
}

func newID() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return "acp-" + hex.EncodeToString(b)
}

var errNoTask = errors.New("this session has no task yet: send a prompt first")
