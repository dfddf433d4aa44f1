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
	"time"

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
	// Logout logs claude out (`claude auth logout`): familiar's agents use
	// claude's own login. nil: logout is not offered.
	Logout func(ctx context.Context) error
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
	termAuth    bool                 // guarded by mu; the client can run `familiar acp login` in a terminal
	notices     bool                 // guarded by mu; the client shows notice updates
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
	// The editor is gone: the claude its sessions kept warm for a
	// follow-up goes too (issue 40), not when familiar exits minutes later.
	// Tasks at work go on, as in any editor.
	a.mu.Lock()
	open := make([]*session, 0, len(a.sessions))
	for _, s := range a.sessions {
		open = append(open, s)
	}
	a.mu.Unlock()
	for _, s := range open {
		a.rememberSeen(s)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		s.releasePrepared(rctx)
		cancel()
		if taskID := s.task(); taskID != "" {
			gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if t, err := s.f.TaskGet(gctx, &protocol.TaskGetParams{ID: taskID}); err == nil {
				letWarmGo(gctx, s.f, t)
			}
			cancel()
		}
	}
	a.mu.Lock()
	for _, f := range a.familiars {
		_ = f.Close()
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
		return a.authenticate(ctx, raw)
	case "logout":
		return a.logout(ctx)
	case "session/new":
		return a.newSession(ctx, raw)
	case "session/load":
		return a.loadSession(ctx, raw, true)
	case "session/resume":
		return a.loadSession(ctx, raw, false)
	case "session/close":
		var p sessionIDParams
		s, err := a.sessionOf(raw, &p, &p.SessionID)
		if err != nil {
			return nil, err
		}
		return a.closeSession(ctx, s)
	case "session/delete":
		return a.deleteSession(ctx, raw)
	case "session/set_config_option":
		var p setConfigParams
		s, err := a.sessionOf(raw, &p, &p.SessionID)
		if err != nil {
			return nil, err
		}
		return s.setConfig(ctx, p)
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
	if method == "_familiar/queue" {
		var p queueParams
		s, err := a.sessionOf(raw, &p, &p.SessionID)
		if err != nil {
			return nil, err
		}
		return s.queue(ctx, &p)
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
	a.termAuth = p.ClientCapabilities.Auth.Terminal
	sc := p.ClientCapabilities.Session
	a.notices = sc != nil && len(sc.Notices) > 0 && string(sc.Notices) != "null"
	a.mu.Unlock()
	caps := map[string]any{
		"loadSession":        true,
		"promptCapabilities": map[string]any{"image": false, "audio": false, "embeddedContext": true},
		"mcpCapabilities":    map[string]any{"http": true, "sse": true},
		"sessionCapabilities": map[string]any{"list": map[string]any{}, "resume": map[string]any{},
			"close": map[string]any{}, "delete": map[string]any{}},
	}
	if a.opts.Logout != nil {
		caps["auth"] = map[string]any{"logout": map[string]any{}}
	}
	// A client asking for a newer version gets the one familiar speaks,
	// as ACP's version negotiation says.
	return map[string]any{
		"protocolVersion":   ProtocolVersion,
		"agentCapabilities": caps,
		"agentInfo":         map[string]any{"name": "familiar", "title": "familiar", "version": a.opts.Version},
		"authMethods":       authMethods(p.ClientCapabilities.Auth.Terminal),
	}, nil
}

// The ways to log in a client can show the person (the ACP Registry lists
// only agents that declare some). familiar holds no login of its own: its
// agents run claude, which uses the person's claude login or an API key
// from the environment.
const (
	authClaudeLogin = "claude-login"
	authAPIKey      = "anthropic-api-key"
	authTerminal    = "claude-login-terminal"
)

func authMethods(terminal bool) []any {
	m := []any{
		map[string]any{"id": authClaudeLogin, "name": "Log in with your Claude account",
			"description": "Run `claude auth login` in a terminal (or `claude setup-token` for a long-lived token); familiar's agents use claude's login."},
		map[string]any{"id": authAPIKey, "name": "Anthropic API key",
			"description": "Set ANTHROPIC_API_KEY in the environment the editor starts `familiar acp` in; familiar's agents pass it to claude."},
	}
	if terminal {
		// The client runs `familiar acp login` in a terminal of its own.
		m = append(m, map[string]any{"type": "terminal", "id": authTerminal, "name": "Log in with your Claude account (terminal)",
			"description": "Runs `claude auth login` in a terminal.", "args": []string{"login"}})
	}
	return m
}

// authenticate checks the method id, then asks the familiar of the current
// directory's repository how its tasks would log in: a login that would
// block them is refused with familiar's fix.
func (a *Agent) authenticate(ctx context.Context, raw json.RawMessage) (any, error) {
	var p struct {
		MethodID string `json:"methodId"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("params", "authenticate takes {methodId}: "+err.Error())
	}
	switch p.MethodID {
	case authClaudeLogin, authAPIKey:
	case "":
		return nil, invalidParams("methodId", "authenticate needs methodId.")
	default:
		return nil, invalidParams("methodId", fmt.Sprintf("Unknown auth method %q: %s or %s.", p.MethodID, authClaudeLogin, authAPIKey))
	}
	if a.opts.RepoRoot == nil || a.opts.RepoRoot(a.opts.Cwd) == "" {
		return map[string]any{}, nil // nothing to check against until a session names a repository
	}
	f, err := a.familiarFor(ctx, "cwd", a.opts.Cwd)
	if err != nil {
		return nil, err
	}
	if err := authRequired(f); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// authRequired is ACP's auth_required when familiar says its tasks could
// not log in: a client then shows the person the auth methods, instead of
// a session whose first prompt ends blocked.
func authRequired(f *familiar) *rpcError {
	au := f.claudeAuth
	if au == nil || (au.Method != "none" && au.Problem == "") {
		return nil
	}
	// familiar's problem names the fix already.
	msg := au.Problem
	if msg == "" {
		msg = "claude is not logged in; run `claude auth login` in a terminal, or set ANTHROPIC_API_KEY"
	}
	return &rpcError{Code: codeAuthRequired, Message: msg + " (where the editor starts familiar acp), then try again."}
}

// logout logs claude out: familiar's agents have no login but claude's.
func (a *Agent) logout(ctx context.Context) (any, error) {
	if a.opts.Logout == nil {
		return nil, &rpcError{Code: codeMethodNotFound, Message: "familiar acp cannot log claude out here; run `claude auth logout` in a terminal."}
	}
	if err := a.opts.Logout(ctx); err != nil {
		return nil, errorOf(err, "claude auth logout", a.opts.Logger)
	}
	return map[string]any{}, nil
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
	f, _, err := dialFamiliar(ctx, a.opts.Dial, root, a.opts.Version, func(m protocol.ServerMessageNotification) { a.globalMessage(root, m) })
	if err != nil {
		return nil, errorOf(err, "", a.opts.Logger)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if prev := a.familiars[root]; prev != nil {
		_ = f.Close()
		return prev, nil
	}
	a.familiars[root] = f
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		<-f.Done()
		a.familiarGone(f)
	}()
	return f, nil
}

// globalMessage shows a warning or error of the familiar of root that is
// about no one task to every session on it. The warning that a task is
// elevated is left out: a session that chose elevated said so itself
// (setDirective), and another client's elevated task is not this one's;
// so is task/undo's warning (/undo says it).
func (a *Agent) globalMessage(root string, m protocol.ServerMessageNotification) {
	if m.Setting == "directives.elevated" || strings.HasPrefix(m.Text, undoWarning) {
		return
	}
	a.mu.Lock()
	var to []*session
	for _, s := range a.sessions {
		if s.f.root == root {
			to = append(to, s)
		}
	}
	a.mu.Unlock()
	for _, s := range to {
		s.warn(m.Level, m.Text)
	}
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
	if err := authRequired(f); err != nil {
		return nil, err
	}
	s := a.addSession(ctx, newID(), f, *p.Cwd, mcp, true)
	s.mu.Lock()
	done := s.preparing // before the answer: a reprepare after it waits for this one
	s.mu.Unlock()
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		s.prepare(pctx, done)
	}()
	return replied{result: map[string]any{"sessionId": s.id, "modes": modes(s.mode), "configOptions": s.configOptions()},
		then: s.announce}, nil
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

func (a *Agent) addSession(ctx context.Context, id string, f *familiar, cwd string, mcp map[string]protocol.McpServer, prepare bool) *session {
	s := &session{id: id, a: a, f: f, cwd: cwd, mcp: mcp, mode: string(protocol.ModeExecutor),
		model: modelDefault, skills: skillsDefault, announced: map[string]bool{}, changed: make(chan struct{}, 1)}
	if prepare {
		s.preparing = make(chan struct{})
	}
	// The skills offered: without them the option offers the profile's
	// defaults and none, which still holds.
	if list, err := f.SkillsList(ctx, &protocol.SkillsListParams{}); err != nil {
		a.opts.Logger.Warn("skills/list", "err", err)
	} else {
		s.skillList = list
	}
	a.mu.Lock()
	if old := a.sessions[id]; old != nil {
		old.stopFollowing()
	}
	a.sessions[id] = s
	a.mu.Unlock()
	return s
}

// loadSession is session/load (replay: the transcript is sent first) and
// session/resume (no replay).
func (a *Agent) loadSession(ctx context.Context, raw json.RawMessage, replay bool) (any, error) {
	method := "session/load"
	if !replay {
		method = "session/resume"
	}
	var p loadSessionParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("params", method+" takes {sessionId, cwd, mcpServers}: "+err.Error())
	}
	if p.SessionID == "" {
		return nil, invalidParams("sessionId", "sessionId is required.")
	}
	f, mcp, err := a.sessionPlace(ctx, method, p.Cwd, p.McpServers)
	if err != nil {
		return nil, err
	}
	if a.deleted(f.root, a.taskOf(f.root, p.SessionID)) {
		return nil, &rpcError{Code: codeNotFound, Message: fmt.Sprintf("Session %q was deleted.", p.SessionID),
			Data: map[string]string{"field": "sessionId"}}
	}
	taskID := a.taskOf(f.root, p.SessionID)
	t, err := f.TaskGet(ctx, &protocol.TaskGetParams{ID: taskID})
	if err != nil {
		return nil, &rpcError{Code: codeNotFound, Message: fmt.Sprintf("No session %q in %s: %v", p.SessionID, f.root, err),
			Data: map[string]string{"field": "sessionId"}}
	}
	s := a.addSession(ctx, p.SessionID, f, *p.Cwd, mcp, false)
	s.mode, s.skills = string(t.Mode), skillsStarted
	if t.Model != "" {
		s.model = t.Model
	}
	if d := t.Directives; d != nil {
		s.think, s.elevated, s.verbose = d.Think, d.Elevated, d.Verbose
	}
	s.sawTask(*t)
	if replay {
		if err := s.replay(ctx, t); err != nil {
			return nil, errorOf(err, "", a.opts.Logger)
		}
	} else {
		s.mu.Lock()
		s.settled = settledFrom(t.Steps)
		s.mu.Unlock()
		if seen := a.seen(f.root, p.SessionID, t.ID); seen > 0 {
			// What streamed since the session's last client went
			// (issue 37): the rest of the conversation it did not show.
			if err := s.replayFrom(ctx, t, seen); err != nil {
				return nil, errorOf(err, "", a.opts.Logger)
			}
		} else {
			s.follow(t.ID)
		}
	}
	return replied{result: map[string]any{"modes": modes(s.mode), "configOptions": s.configOptions()}, then: s.announce}, nil
}

// closeSession is session/close: the turn in flight is cancelled, the
// task's agent stopped (paused: the task stays, and loading the session
// later goes on with it), and the session forgotten here.
func (a *Agent) closeSession(ctx context.Context, s *session) (any, error) {
	var t *protocol.Task
	if taskID := s.task(); taskID != "" {
		var err error
		if t, err = s.f.TaskGet(ctx, &protocol.TaskGetParams{ID: taskID}); err != nil {
			return nil, errorOf(err, "", a.opts.Logger)
		}
	}
	if t != nil && t.Status.HoldsWorktree() {
		// Its agent is, or is about to be, at work: the pause stops the
		// turn and the agent at once (interrupted first, the turn could
		// end, the task finish and its claude stay warm before the pause).
		s.abandonTurn()
		if _, err := s.f.TaskPause(ctx, &protocol.TaskPauseParams{ID: t.ID}); err != nil {
			return nil, errorOf(err, "stop the session's agent", a.opts.Logger)
		}
	} else {
		s.cancel(ctx)
		if t != nil {
			letWarmGo(ctx, s.f, t)
		}
	}
	s.releasePrepared(ctx)
	a.rememberSeen(s)
	// The session stops following its task here, so the prompt in flight
	// (if any) hears of no end of its turn: it ends now.
	s.mu.Lock()
	tu := s.turn
	s.mu.Unlock()
	if tu != nil {
		tu.end(stopCancelled)
	}
	a.forget(s)
	return map[string]any{}, nil
}

// forget drops a session from this connection.
func (a *Agent) forget(s *session) {
	s.stopFollowing()
	s.mu.Lock()
	for _, c := range s.permissions {
		c()
	}
	s.mu.Unlock()
	a.mu.Lock()
	if a.sessions[s.id] == s {
		delete(a.sessions, s.id)
	}
	a.mu.Unlock()
}

// deleteSession is session/delete: the session's task leaves session/list
// and its worktree is removed, only if it holds no unmerged work.
func (a *Agent) deleteSession(ctx context.Context, raw json.RawMessage) (any, error) {
	var p sessionIDParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, invalidParams("params", "session/delete takes {sessionId}: "+err.Error())
	}
	if p.SessionID == "" {
		return nil, invalidParams("sessionId", "sessionId is required.")
	}
	a.mu.Lock()
	s := a.sessions[p.SessionID]
	a.mu.Unlock()
	var f *familiar
	if s != nil {
		f = s.f
	} else {
		// session/delete names no cwd: the session is one this connection
		// knows the repository of, or one of the current directory's.
		a.mu.Lock()
		for _, cand := range a.familiars {
			if _, err := os.Stat(filepath.Join(a.mapDir(cand.root), p.SessionID)); err == nil && plainName(p.SessionID) {
				f = cand
			}
		}
		a.mu.Unlock()
		if f == nil {
			var err error
			if f, err = a.familiarFor(ctx, "sessionId", a.opts.Cwd); err != nil {
				return nil, err
			}
		}
	}
	taskID := a.taskOf(f.root, p.SessionID)
	if s != nil {
		taskID = s.task()
	}
	if taskID != "" {
		t, err := f.TaskGet(ctx, &protocol.TaskGetParams{ID: taskID})
		if err != nil {
			return nil, &rpcError{Code: codeNotFound, Message: fmt.Sprintf("No session %q in %s: %v", p.SessionID, f.root, err),
				Data: map[string]string{"field": "sessionId"}}
		}
		if why := a.unmergedWork(ctx, f, t); why != "" {
			return nil, &rpcError{Code: codeInvalidRequest, Message: "Not deleted: " + why, Data: map[string]string{"field": "sessionId"}}
		}
		if t.Worktree != nil {
			if err := f.TaskRemove(ctx, &protocol.TaskRemoveParams{ID: taskID, DeleteBranch: true}); err != nil {
				return nil, &rpcError{Code: codeInvalidRequest, Message: "Not deleted: " + err.Error(), Data: map[string]string{"field": "sessionId"}}
			}
		}
		if err := a.markDeleted(f.root, taskID); err != nil {
			return nil, errorOf(err, "", a.opts.Logger)
		}
	}
	if s != nil {
		s.releasePrepared(ctx)
		a.forget(s)
	}
	if plainName(p.SessionID) {
		_ = os.Remove(filepath.Join(a.mapDir(f.root), p.SessionID))
	}
	return map[string]any{}, nil
}

// unmergedWork says why a task's worktree must stay ("" if it may go): an
// agent still at work, or changes not merged.
func (a *Agent) unmergedWork(ctx context.Context, f *familiar, t *protocol.Task) string {
	if t.Status.HoldsWorktree() { // its agent is, or is about to be, at work
		return fmt.Sprintf("its task is %s; cancel the turn and close the session first.", statusWords(t.Status))
	}
	if t.Status == protocol.StatusMerged || t.Worktree == nil {
		return ""
	}
	d, err := f.TaskDiff(ctx, &protocol.TaskDiffParams{ID: t.ID})
	if err != nil {
		return "familiar could not tell what the task changed: " + err.Error()
	}
	if len(d.Files) == 0 {
		return ""
	}
	var names []string
	for i, fl := range d.Files {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(d.Files)-5))
			break
		}
		names = append(names, fl.Path)
	}
	return fmt.Sprintf("its worktree holds changes that are not merged (%s). Merge them with /merge, or discard them, first.", strings.Join(names, ", "))
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
	res, err := f.TaskList(ctx, &protocol.TaskListParams{Limit: protocol.MaxTaskListLimit, Cursor: p.Cursor})
	if err != nil {
		return nil, errorOf(err, "", a.opts.Logger)
	}
	byTask := a.sessionIDs(f.root)
	sessions := []map[string]any{}
	for _, t := range res.Tasks {
		if a.deleted(f.root, t.ID) || a.sessionAfter(f.root, t.ID) != "" {
			continue // deleted, or an earlier task of a listed conversation
		}
		id := byTask[t.ID]
		if id == "" {
			id = t.ID // a task made by another editor: its id is the session id
		}
		// _meta says what the task is doing, in familiar's words and the
		// person's, for clients that show more than a title.
		sessions = append(sessions, map[string]any{"sessionId": id, "cwd": f.root, "title": t.Title,
			"updatedAt": t.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z"),
			"_meta":     map[string]any{"familiar": map[string]any{"taskId": t.ID, "status": t.Status, "state": statusWords(t.Status)}}})
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
	// A session made here is "acp-…"; any other id is the task another
	// editor made, which stands for its session until it goes on.
	if old := a.taskOf(root, sessionID); old != taskID && plainName(old) && (old != sessionID || !strings.HasPrefix(sessionID, "acp-")) {
		// The conversation goes on in a new task (a prompt after /merge,
		// /retry): the one before is this session's past, not a session
		// of its own in session/list (issue 37).
		prev := filepath.Join(dir, "previous")
		if err := os.MkdirAll(prev, 0o700); err != nil {
			return fmt.Errorf("remember session: %w", err)
		}
		if err := os.WriteFile(filepath.Join(prev, old), []byte(sessionID), 0o600); err != nil {
			return fmt.Errorf("remember session: %w", err)
		}
	}
	tmp := filepath.Join(dir, "."+sessionID+".tmp")
	if err := os.WriteFile(tmp, []byte(taskID), 0o600); err != nil {
		return fmt.Errorf("remember session: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, sessionID))
}

// What a session's client was last sent is kept when the client goes
// (session/close, the editor's exit): acp/seen/<session id> holds the task
// and the notification's seq, so session/resume sends what came after.

func (a *Agent) rememberSeen(s *session) {
	s.mu.Lock()
	taskID, seq := s.taskID, s.lastSeq
	s.mu.Unlock()
	if taskID == "" || seq == 0 || !plainName(s.id) {
		return
	}
	dir := filepath.Join(a.mapDir(s.f.root), "seen")
	tmp := filepath.Join(dir, "."+s.id+".tmp")
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		err = os.WriteFile(tmp, []byte(fmt.Sprintf("%s %d", taskID, seq)), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, s.id))
	}
	if err != nil {
		a.opts.Logger.Warn("remember what the session's client saw", "err", err)
	}
}

// seen is the seq a session's last client was sent of task taskID, 0 when
// not known (none kept, or kept of another task).
func (a *Agent) seen(root, sessionID, taskID string) int64 {
	if !plainName(sessionID) {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(a.mapDir(root), "seen", sessionID))
	if err != nil {
		return 0
	}
	var task string
	var seq int64
	if _, err := fmt.Sscanf(string(b), "%s %d", &task, &seq); err != nil || task != taskID {
		return 0
	}
	return seq
}

// A deleted session's task stays in familiar's store (other editors list
// it); ACP stops listing it: acp/deleted/<task id> marks it.

func (a *Agent) markDeleted(root, taskID string) error {
	dir := filepath.Join(a.mapDir(root), "deleted")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("mark session deleted: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(taskID)), nil, 0o600); err != nil {
		return fmt.Errorf("mark session deleted: %w", err)
	}
	return nil
}

func (a *Agent) deleted(root, taskID string) bool {
	_, err := os.Stat(filepath.Join(a.mapDir(root), "deleted", filepath.Base(taskID)))
	return err == nil
}

// taskOf is the task of an ACP session id; a task id stands for itself,
// unless a session went on from it in another task (its current one).
func (a *Agent) taskOf(root, sessionID string) string {
	if !plainName(sessionID) {
		return sessionID
	}
	b, err := os.ReadFile(filepath.Join(a.mapDir(root), sessionID))
	if err != nil {
		if s := a.sessionAfter(root, sessionID); s != "" && s != sessionID {
			if b, err := os.ReadFile(filepath.Join(a.mapDir(root), s)); err == nil {
				return strings.TrimSpace(string(b))
			}
		}
		return sessionID
	}
	return strings.TrimSpace(string(b))
}

// sessionAfter is the session that went on from task taskID in another
// task, "" if none did.
func (a *Agent) sessionAfter(root, taskID string) string {
	if !plainName(taskID) {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(a.mapDir(root), "previous", taskID))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// plainName: an id that names a file of the map dir and nothing else.
func plainName(id string) bool {
	return id != "" && !strings.ContainsAny(id, "/\\") && !strings.HasPrefix(id, ".")
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
		if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
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

// letWarmGo lets the claude a finished task keeps warm for a follow-up go
// (task/pause of a finished task does only that): its session is closed or
// its editor gone, and it holds ~200 MB for nothing. A task with no warm
// claude is left as it is.
func letWarmGo(ctx context.Context, f *familiar, t *protocol.Task) {
	if t.Status != protocol.StatusMerging || t.Agent == nil {
		return
	}
	// -32003 when its claude is already gone: nothing to do.
	_, _ = f.TaskPause(ctx, &protocol.TaskPauseParams{ID: t.ID})
}
