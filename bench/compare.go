package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/demomodel"
	"github.com/familiar-dev/familiar/jsonrpc"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/rpcclient"
	"github.com/familiar-dev/familiar/workspace"
)

// CompareResult is one system's figures in the comparison (issue 12):
// Detect is the time from the scripted API finishing a tool_use reply to
// the client seeing the permission question; Continue is the time from the
// client sending "allow" to the next API request (the tool's result).
type CompareResult struct {
	System   string `json:"system"`
	Detect   Dist   `json:"detect"`
	Continue Dist   `json:"continue"`
	// Skipped says why the system did not run here.
	Skipped string `json:"skipped,omitempty"`
}

// contender is one system driven through one long-lived session, as a
// client of it would: one permission round at a time.
type contender interface {
	// ask sends the i-th prompt and returns when the client sees the
	// permission question it leads to, with the time the client saw it.
	ask(ctx context.Context, i int) (time.Time, error)
	// allow answers the question with allow and returns the time the
	// answer left the client.
	allow(ctx context.Context) (time.Time, error)
	// finish waits for the turn to end (the model's text after the tool).
	finish(ctx context.Context) error
	close()
}

// comparePrompt makes the scripted model run one Bash command (a permission
// question in every system), then end its turn asking in prose, which keeps
// familiar's task waiting with claude alive rather than finished.
func comparePrompt(i int) string {
	return fmt.Sprintf("round %d\n@@TOOL Bash {\"command\":\"touch compare-%d.txt\"}\n@@TEXT Done, shall I go on?", i, i)
}

// Systems of the comparison, in table order.
const (
	SystemFamiliarPTY    = "familiar pty"
	SystemFamiliarStream = "familiar stream"
	// familiar as an editor runs it: serve --stdio and the background
	// familiar it starts (firstRequest only).
	SystemFamiliarPTYDaemon = "familiar pty, through serve --stdio and the background familiar"
	SystemStreamFloor       = "claude stream-json, direct (floor)"
	SystemACP               = "claude-code-acp " + ACPVersion
	SystemAgentACP          = "claude-agent-acp " + AgentACPVersion
	// The interactive CLI with no familiar: its hooks answered at once by
	// a bare HTTP handler (see tuiFloor).
	SystemTUIFloor         = "claude TUI, PermissionRequest hook, direct (floor)"
	SystemTUIFloorAllHooks = "claude TUI, all of familiar's hooks, direct (floor)"
	// The same with PreToolUse over HTTP, which claude waits for:
	// familiar's hooks until issue 29 (see agent.ToolStartHook).
	SystemTUIFloorHTTPPreToolUse = "claude TUI, familiar's hooks with PreToolUse over HTTP, direct (floor)"
	SystemTUIFloorPreTool        = "claude TUI, answered at PreToolUse, direct (floor)"
)

// ACPVersion is the pinned version of Zed's ACP adapter compared against
// under its old name; bash .ci/run-acp-tools installs it into
// <tools>/claude-code-acp.
const ACPVersion = "0.16.2"

// AgentACPVersion is the pinned version of the same adapter under its
// current name (@agentclientprotocol/claude-agent-acp, renamed at 0.17.0
// and 0.24.0); bash .ci/run-acp-tools installs it into
// <tools>/claude-agent-acp.
const AgentACPVersion = "0.101.0"

// An ACP adapter of the comparison: where its package is installed and
// what its name in the table is.
type acpAdapter struct {
	version string
	dirs    []string // under the tools dir, first found wins
	pkg     string   // the npm package, a path under node_modules
	// defaultMode, when set, goes into the session's settings.json as
	// permissions.defaultMode: 0.101.0 starts sessions in claude's auto
	// mode otherwise, where the scripted Bash call would not be asked.
	defaultMode string
}

var (
	oldACP = acpAdapter{version: ACPVersion,
		dirs: []string{"claude-code-acp", "acp"}, pkg: "@zed-industries/claude-code-acp"}
	agentACP = acpAdapter{version: AgentACPVersion,
		dirs: []string{"claude-agent-acp"}, pkg: "@agentclientprotocol/claude-agent-acp", defaultMode: "default"}
)

// compare runs every system's session side by side and asks each the same
// permission question in turn, Runs times (interleaved, so load drifts hit
// all alike).
func (r *runner) compare(ctx context.Context) error {
	if r.claude.Path == "" {
		return errSkip("the claude CLI is not installed (" + r.claudeErr + ")")
	}
	type entry struct {
		name string
		api  *demomodel.Server
		sw   *stopwatch
		c    contender
		res  CompareResult
		lat  []time.Duration
		cont []time.Duration
	}
	var entries []*entry
	defer func() {
		for _, e := range entries {
			if e.c != nil {
				e.c.close()
			}
			e.api.Close()
		}
	}()
	starts := []struct {
		name  string
		start func(ctx context.Context, api *demomodel.Server) (contender, error)
	}{
		{SystemFamiliarPTY, func(ctx context.Context, api *demomodel.Server) (contender, error) {
			return r.startFamiliar(ctx, api, protocol.DriverPTY)
		}},
		{SystemFamiliarStream, func(ctx context.Context, api *demomodel.Server) (contender, error) {
			return r.startFamiliar(ctx, api, protocol.DriverStream)
		}},
		{SystemStreamFloor, r.startStreamFloor},
		{SystemAgentACP, r.startACP(agentACP)},
		{SystemACP, r.startACP(oldACP)},
		{SystemTUIFloor, r.startTUIFloor("PermissionRequest", floorMinimal)},
		{SystemTUIFloorAllHooks, r.startTUIFloor("PermissionRequest", floorFamiliar)},
		{SystemTUIFloorHTTPPreToolUse, r.startTUIFloor("PermissionRequest", floorHTTPPreToolUse)},
		{SystemTUIFloorPreTool, r.startTUIFloor("PreToolUse", floorMinimal)},
	}
	for _, s := range starts {
		if !r.compared(s.name) {
			continue
		}
		api, err := demomodel.Listen(demomodel.PromptScript())
		if err != nil {
			return err
		}
		e := &entry{name: s.name, api: api, sw: toolUseStopwatch(api), res: CompareResult{System: s.name}}
		entries = append(entries, e)
		c, err := s.start(ctx, api)
		switch {
		case isSkip(err):
			e.res.Skipped = err.Error()
			r.skip("compare " + s.name + ": " + err.Error())
			continue
		case err != nil:
			return fmt.Errorf("%s: %w", s.name, err)
		}
		e.c = c
	}
	for i := range r.opts.CompareRuns {
		for _, e := range shuffled(entries, i) {
			if e.c == nil {
				continue
			}
			main := len(e.api.MainRequests())
			seen, err := e.c.ask(ctx, i)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", e.name, i, err)
			}
			e.lat = append(e.lat, e.sw.since(seen))
			sent, err := e.c.allow(ctx)
			if err != nil {
				return fmt.Errorf("%s, round %d: allow: %w", e.name, i, err)
			}
			// The prompt's request is main+1; the tool result's is main+2.
			reqs, ok := e.api.WaitFor(func(reqs []demomodel.Request) bool { return countMain(reqs) >= main+2 }, 90*time.Second)
			if !ok {
				return fmt.Errorf("%s, round %d: no API request after allow", e.name, i)
			}
			e.cont = append(e.cont, nthMain(reqs, main+1).At.Sub(sent))
			if err := e.c.finish(ctx); err != nil {
				return fmt.Errorf("%s, round %d: %w", e.name, i, err)
			}
		}
	}
	for _, e := range entries {
		e.res.Detect, e.res.Continue = distOf(e.lat), distOf(e.cont)
		r.report.Compare = append(r.report.Compare, e.res)
		if e.c != nil {
			r.logf("compare %s: detect p50 %.1f / p95 %.1f ms; continue p50 %.1f / p95 %.1f ms (%d runs)",
				e.name, e.res.Detect.P50, e.res.Detect.P95, e.res.Continue.P50, e.res.Continue.P95, e.res.Detect.N)
		}
	}
	return nil
}

// compared reports whether the system is among CompareOnly's.
func (r *runner) compared(system string) bool {
	if r.opts.CompareOnly == "" {
		return true
	}
	for _, part := range strings.Split(r.opts.CompareOnly, ",") {
		if part != "" && strings.Contains(system, part) {
			return true
		}
	}
	return false
}

func countMain(reqs []demomodel.Request) int {
	n := 0
	for _, r := range reqs {
		if !r.IsSideRequest() {
			n++
		}
	}
	return n
}

// nthMain returns the i-th (from 0) main request.
func nthMain(reqs []demomodel.Request, i int) demomodel.Request {
	for _, r := range reqs {
		if r.IsSideRequest() {
			continue
		}
		if i == 0 {
			return r
		}
		i--
	}
	return demomodel.Request{}
}

// ---- familiar, through its JSON-RPC socket ----

// familiarContender is one familiar task driven by a JSON-RPC client over
// the unix socket, as an editor drives it: the question is "seen" when its
// task/question notification arrives at the client.
type familiarContender struct {
	ws     *workspace.Workspace
	ln     *jsonrpc.Listener
	client *rpcclient.Client
	driver protocol.Driver
	notes  *queue[clientNote]
	next   int
	taskID string
	qid    string // the pending question
	cold   bool   // follow-ups: its claude is let go when a turn ends
	// serve, for one driven through familiar serve --stdio (ws nil), ends
	// it and stops its background familiar.
	serve       func()
	daemonState string // its background familiar's XDG_STATE_HOME
}

type clientNote struct {
	method string
	params json.RawMessage
	at     time.Time
}

func (r *runner) startFamiliar(ctx context.Context, api *demomodel.Server, driver protocol.Driver) (contender, error) {
	repo, err := newRepo(ctx, r.tmp, 0, 0)
	if err != nil {
		return nil, err
	}
	data, err := os.MkdirTemp(r.tmp, "cmp-")
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.DiscardHandler)
	if r.startLog != nil {
		log = slog.New(r.startLog)
	}
	hub := jsonrpc.NewHub(log, 0)
	ws, err := workspace.Open(ctx, repo, workspace.Options{
		DataDir: filepath.Join(data, "d"), WorktreesRoot: filepath.Join(data, "w"),
		ClaudePath: r.claude.Path, Notifier: hub, Logger: log, Version: "bench",
		StartHook: func(_ context.Context, o *agent.Options) {
			o.Nice = 0 // the peers' priority: like for like
			if o.ExtraEnv == nil {
				o.ExtraEnv = map[string]string{}
			}
			for k, v := range api.Env() {
				o.ExtraEnv[k] = v
			}
		},
	})
	if err != nil {
		return nil, err
	}
	c := &familiarContender{ws: ws, driver: driver, notes: newQueue[clientNote]()}
	srv := jsonrpc.NewServer(workspace.NewService(nil, ws, "bench"), hub, log)
	if c.ln, err = srv.Listen(ctx, "unix:"+filepath.Join(data, "s")); err != nil {
		c.close()
		return nil, err
	}
	c.client, err = rpcclient.Dial(ctx, c.ln.Path(), protocol.InitializeParams{WorkspaceRoot: repo,
		ClientInfo: &protocol.ClientInfo{Name: "familiar bench", Version: "bench"}},
		func(method string, params json.RawMessage) {
			c.notes.add(clientNote{method: method, params: params, at: time.Now()})
		})
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// question waits for the next task/question of kind.
func (c *familiarContender) question(ctx context.Context, kind protocol.QuestionKind) (time.Time, error) {
	var n clientNote
	var err error
	n, c.next, err = c.notes.wait(ctx, c.next, "task/question "+string(kind), func(n clientNote) bool {
		if n.method != protocol.NotifyTaskQuestion {
			return false
		}
		var q protocol.TaskQuestionNotification
		return json.Unmarshal(n.params, &q) == nil && q.Question.Kind == kind
	})
	if err != nil {
		return time.Time{}, err
	}
	var q protocol.TaskQuestionNotification
	_ = json.Unmarshal(n.params, &q)
	c.qid = q.Question.ID
	return n.at, nil
}

func (c *familiarContender) ask(ctx context.Context, i int) (time.Time, error) {
	if c.taskID == "" {
		t, err := c.client.TaskCreate(ctx, &protocol.TaskCreateParams{
			Title: "compare", Description: comparePrompt(i), Driver: c.driver})
		if err != nil {
			return time.Time{}, err
		}
		c.taskID = t.ID
	} else if _, err := c.client.TaskRespond(ctx, &protocol.TaskRespondParams{
		ID: c.taskID, QuestionID: c.qid, Text: comparePrompt(i)}); err != nil {
		// The previous turn ended with a question in prose; the answer is
		// the next prompt.
		return time.Time{}, err
	}
	return c.question(ctx, protocol.QuestionPermission)
}

func (c *familiarContender) allow(ctx context.Context) (time.Time, error) {
	sent := time.Now()
	_, err := c.client.TaskRespond(ctx, &protocol.TaskRespondParams{
		ID: c.taskID, QuestionID: c.qid, OptionID: protocol.OptionAllow})
	return sent, err
}

func (c *familiarContender) finish(ctx context.Context) error {
	_, err := c.question(ctx, protocol.QuestionQuestion)
	return err
}

func (c *familiarContender) close() {
	if c.client != nil {
		c.client.Close()
	}
	if c.ln != nil {
		c.ln.Close()
	}
	if c.ws != nil {
		c.ws.Close()
	}
	if c.serve != nil {
		c.serve()
	}
}

// ---- the floor: a direct stream-json client of claude ----

// streamFloor is the least any client of claude can do: claude -p in
// stream-json mode with the control protocol on stdio, read line by line.
type streamFloor struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *queue[floorLine]
	next  int
	reqID string
	done  chan struct{}
}

type floorLine struct {
	typ, subtype, requestID string
	at                      time.Time
}

// floorDirs makes a repository and a seeded claude config dir for a floor,
// which runs claude with no familiar.
func (r *runner) floorDirs(ctx context.Context) (repo, cfg string, err error) {
	if repo, err = newRepo(ctx, r.tmp, 0, 0); err != nil {
		return "", "", err
	}
	if cfg, err = os.MkdirTemp(r.tmp, "floor-"); err != nil {
		return "", "", err
	}
	return repo, cfg, agent.SeedConfigDir(cfg, repo, demomodel.APIKey)
}

func (r *runner) startStreamFloor(ctx context.Context, api *demomodel.Server) (contender, error) {
	repo, cfg, err := r.floorDirs(ctx)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(r.claude.Path, "-p", "--input-format", "stream-json", "--output-format", "stream-json",
		"--verbose", "--permission-prompt-tool", "stdio", "--permission-mode", "default")
	cmd.Dir = repo
	cmd.Env = agent.SessionEnv(os.Environ(), cfg, api.Env())
	f := &streamFloor{cmd: cmd, lines: newQueue[floorLine]()}
	f.stdin, f.done, err = startLines(cmd, func(line []byte, at time.Time) {
		var m struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype string `json:"subtype"`
			} `json:"request"`
		}
		if json.Unmarshal(line, &m) == nil {
			f.lines.add(floorLine{typ: m.Type, subtype: m.Request.Subtype, requestID: m.RequestID, at: at})
		}
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (f *streamFloor) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = f.stdin.Write(append(b, '\n'))
	return err
}

func (f *streamFloor) ask(ctx context.Context, i int) (time.Time, error) {
	if err := f.write(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": comparePrompt(i)}}); err != nil {
		return time.Time{}, err
	}
	var l floorLine
	var err error
	l, f.next, err = f.lines.wait(ctx, f.next, "can_use_tool", func(l floorLine) bool {
		return l.typ == "control_request" && l.subtype == "can_use_tool"
	})
	f.reqID = l.requestID
	return l.at, err
}

func (f *streamFloor) allow(context.Context) (time.Time, error) {
	sent := time.Now()
	return sent, f.write(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": f.reqID, "response": map[string]any{"behavior": "allow"}}})
}

func (f *streamFloor) finish(ctx context.Context) error {
	var err error
	_, f.next, err = f.lines.wait(ctx, f.next, "the result", func(l floorLine) bool { return l.typ == "result" })
	return err
}

func (f *streamFloor) close() { stopChild(f.cmd, f.stdin, f.done) }

// startLines starts cmd with pipes on its stdin and stdout and calls
// onLine with each stdout line and the time it was read, from one goroutine,
// until stdout ends (then done is closed).
func startLines(cmd *exec.Cmd, onLine func(line []byte, at time.Time)) (stdin io.WriteCloser, done chan struct{}, err error) {
	if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	// A group of its own, so stopChild also waits for what it started: the
	// adapter's claude outlived the adapter and wrote its session into the
	// test's temporary directory as it was being removed.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	done = make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			onLine(sc.Bytes(), time.Now())
		}
	}()
	return stdin, done, nil
}

// stopChild ends a child that reads its stdin: EOF first, then a kill if it
// lingers; then waits for it and its reader.
func stopChild(cmd *exec.Cmd, stdin io.Closer, readerDone <-chan struct{}) {
	_ = stdin.Close()
	exited := make(chan struct{})
	go func() {
		<-readerDone
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	// Then the rest of its group (startLines made it one): the processes it
	// started end once their parent has, or are killed after a while. The
	// next measurement and the directory's removal then find none of them.
	pgid := cmd.Process.Pid
	gone := func(wait time.Duration) bool {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		deadline := time.Now().Add(wait)
		for syscall.Kill(-pgid, 0) == nil {
			if time.Now().After(deadline) {
				return false
			}
			<-tick.C
		}
		return true
	}
	if !gone(10 * time.Second) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		gone(2 * time.Second) // an unreaped zombie stays a member: not waited for longer
	}
}

// ---- the ACP adapter (Zed's claude-code-acp, now claude-agent-acp) ----

// acpContender drives claude-code-acp as an ACP client (an editor) does:
// JSON-RPC 2.0, one message a line, on the adapter's stdio.
type acpContender struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	done    chan struct{}
	msgs    *queue[acpMsg]
	next    int
	mu      sync.Mutex // guards lastID and writes
	lastID  int
	session string
	prompt  int             // id of the pending session/prompt
	permID  json.RawMessage // id of the pending session/request_permission
	allowID string
}

type acpMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	at     time.Time
}

// acpEntry is the adapter's entry point: installed under one of its dirs
// in the tools dir, the configured tools dir first, then the source tree's
// .tools, and only at its pinned version (npm may leave another).
func (r *runner) acpEntry(ad acpAdapter) (string, error) {
	for _, tools := range []string{r.opts.ToolsDir, filepath.Join(r.moduleRoot, ".tools")} {
		if tools == "" {
			continue
		}
		for _, dir := range ad.dirs {
			pkg := filepath.Join(tools, dir, "node_modules", filepath.FromSlash(ad.pkg))
			b, err := os.ReadFile(filepath.Join(pkg, "package.json"))
			if err != nil {
				continue
			}
			var p struct {
				Version string `json:"version"`
			}
			if json.Unmarshal(b, &p) != nil || p.Version != ad.version {
				continue
			}
			return filepath.Join(pkg, "dist", "index.js"), nil
		}
	}
	return "", errSkip(ad.pkg + " " + ad.version + " is not installed (bash .ci/run-acp-tools)")
}

func (r *runner) startACP(ad acpAdapter) func(ctx context.Context, api *demomodel.Server) (contender, error) {
	return func(ctx context.Context, api *demomodel.Server) (contender, error) {
		entry, err := r.acpEntry(ad)
		if err != nil {
			return nil, err
		}
		node, err := exec.LookPath("node")
		if err != nil {
			return nil, errSkip("node is not installed")
		}
		repo, err := newRepo(ctx, r.tmp, 0, 0)
		if err != nil {
			return nil, err
		}
		cfg, err := os.MkdirTemp(r.tmp, "acp-")
		if err != nil {
			return nil, err
		}
		if err := agent.SeedConfigDir(cfg, repo, demomodel.APIKey); err != nil {
			return nil, err
		}
		if ad.defaultMode != "" {
			// The user's settings as the adapter and claude both read them
			// (CLAUDE_CONFIG_DIR/settings.json).
			b, _ := json.Marshal(map[string]any{"permissions": map[string]any{"defaultMode": ad.defaultMode}})
			if err := os.WriteFile(filepath.Join(cfg, "settings.json"), b, 0o600); err != nil {
				return nil, fmt.Errorf("the adapter's settings: %w", err)
			}
		}
		cmd := exec.Command(node, entry)
		cmd.Dir = repo
		extra := api.Env()
		extra["CLAUDE_CODE_EXECUTABLE"] = r.claude.Path // the same claude as familiar's
		extra["IS_SANDBOX"] = "1"                       // lets the adapter run as root
		cmd.Env = agent.SessionEnv(os.Environ(), cfg, extra)
		a := &acpContender{cmd: cmd, msgs: newQueue[acpMsg]()}
		a.stdin, a.done, err = startLines(cmd, func(line []byte, at time.Time) {
			m := acpMsg{at: at}
			if json.Unmarshal(line, &m) == nil {
				a.msgs.add(m)
			}
		})
		if err != nil {
			return nil, err
		}
		if _, err := a.call(ctx, "initialize", map[string]any{"protocolVersion": 1,
			"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false}}); err != nil {
			a.close()
			return nil, fmt.Errorf("initialize: %w", err)
		}
		res, err := a.call(ctx, "session/new", map[string]any{"cwd": repo, "mcpServers": []any{}})
		if err != nil {
			a.close()
			return nil, fmt.Errorf("session/new: %w", err)
		}
		var s struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(res, &s); err != nil || s.SessionID == "" {
			a.close()
			return nil, fmt.Errorf("session/new answered %s", res)
		}
		a.session = s.SessionID
		return a, nil
	}
}

func (a *acpContender) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, err = a.stdin.Write(append(b, '\n'))
	return err
}

func (a *acpContender) request(method string, params any) (int, error) {
	a.mu.Lock()
	a.lastID++
	id := a.lastID
	a.mu.Unlock()
	return id, a.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

// response waits for the response to request id.
func (a *acpContender) response(ctx context.Context, id int) (json.RawMessage, error) {
	want := fmt.Sprint(id)
	var m acpMsg
	var err error
	m, a.next, err = a.msgs.wait(ctx, a.next, "the response to request "+want, func(m acpMsg) bool {
		return m.Method == "" && string(m.ID) == want
	})
	if err != nil {
		return nil, err
	}
	if len(m.Error) > 0 && string(m.Error) != "null" {
		return nil, errors.New(string(m.Error))
	}
	return m.Result, nil
}

func (a *acpContender) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	from := a.next
	id, err := a.request(method, params)
	if err != nil {
		return nil, err
	}
	a.next = from
	return a.response(ctx, id)
}

func (a *acpContender) ask(ctx context.Context, i int) (time.Time, error) {
	id, err := a.request("session/prompt", map[string]any{"sessionId": a.session,
		"prompt": []any{map[string]any{"type": "text", "text": comparePrompt(i)}}})
	if err != nil {
		return time.Time{}, err
	}
	a.prompt = id
	var m acpMsg
	m, a.next, err = a.msgs.wait(ctx, a.next, "session/request_permission", func(m acpMsg) bool {
		return m.Method == "session/request_permission"
	})
	if err != nil {
		return time.Time{}, err
	}
	var p struct {
		Options []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return time.Time{}, err
	}
	a.permID, a.allowID = m.ID, ""
	for _, o := range p.Options {
		if o.Kind == "allow_once" {
			a.allowID = o.OptionID
		}
	}
	if a.allowID == "" {
		return time.Time{}, fmt.Errorf("no allow_once option in %s", m.Params)
	}
	return m.at, nil
}

func (a *acpContender) allow(context.Context) (time.Time, error) {
	sent := time.Now()
	return sent, a.send(map[string]any{"jsonrpc": "2.0", "id": a.permID,
		"result": map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": a.allowID}}})
}

func (a *acpContender) finish(ctx context.Context) error {
	_, err := a.response(ctx, a.prompt)
	return err
}

func (a *acpContender) close() { stopChild(a.cmd, a.stdin, a.done) }

// shuffled is the systems' order for round i: a permutation of its own
// (seeded by i, so a rerun has the same orders), so that no system always
// follows the same one. What a system does after its turn ended (familiar's
// turn-end git work, a TUI's repaint) lands in the next one's round: in a
// fixed order familiar stream always ran in familiar pty's wake.
func shuffled[T any](entries []T, i int) []T {
	out := make([]T, 0, len(entries))
	for _, k := range rand.New(rand.NewPCG(29, uint64(i))).Perm(len(entries)) {
		out = append(out, entries[k])
	}
	return out
}
