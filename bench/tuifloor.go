package bench

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/creack/pty"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/agent/screen"
	"github.com/familiar-dev/familiar/demomodel"
)

// tuiFloor is interactive claude under a PTY with no familiar: its hooks
// reach a bare HTTP handler in the bench, which answers the permission at
// once. It is the floor of any design built on the interactive CLI's hooks,
// as streamFloor is the stream driver's. answerAt says which hook answers:
// "PermissionRequest" (where familiar's PTY driver asks today) or
// "PreToolUse" (the earliest hook, before claude's own permission check).
// With allHooks it subscribes to every event familiar's PTY driver does,
// each answered at once, which shows what the subscriptions cost.
type tuiFloor struct {
	cmd      *exec.Cmd
	tty      *os.File
	srv      *http.Server
	ln       net.Listener
	answerAt string
	hooks    *queue[hookCall]
	next     int
	pending  chan struct{} // closed by allow: the held hook answers
	readDone chan struct{}
	mu       sync.Mutex
}

type hookCall struct {
	event string
	at    time.Time
}

// floorHooks says which hooks a TUI floor subscribes to.
type floorHooks int

const (
	// floorMinimal: UserPromptSubmit, Stop and the hook that answers.
	floorMinimal floorHooks = iota
	// floorFamiliar: every hook familiar's PTY driver takes, as it takes
	// them (PreToolUse by the async command hook into a spool).
	floorFamiliar
	// floorHTTPPreToolUse: the same with PreToolUse over HTTP, which
	// claude waits for (familiar's design until issue 29).
	floorHTTPPreToolUse
)

func (r *runner) startTUIFloor(answerAt string, hooks floorHooks) func(ctx context.Context, api *demomodel.Server) (contender, error) {
	return func(ctx context.Context, api *demomodel.Server) (contender, error) {
		repo, cfg, err := r.floorDirs(ctx)
		if err != nil {
			return nil, err
		}
		f := &tuiFloor{answerAt: answerAt, hooks: newQueue[hookCall](), pending: make(chan struct{}), readDone: make(chan struct{})}
		if f.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
		f.srv = &http.Server{Handler: http.HandlerFunc(f.serve)}
		go func() { _ = f.srv.Serve(f.ln) }()
		// familiar's own hook settings, so the floor subscribes to exactly
		// what familiar does; the minimal floors keep only the hooks they
		// need.
		all := agent.HookSettings("http://"+f.ln.Addr().String()+"/hook", "floor", 600)
		switch hooks {
		case floorHTTPPreToolUse:
		case floorFamiliar:
			// As familiar's PTY driver: PreToolUse by an async command hook
			// into a spool (agent.ToolStartHook), which the floor leaves
			// unread.
			starts := filepath.Join(cfg, "tool-starts")
			if err := os.MkdirAll(starts, 0o700); err != nil {
				f.close()
				return nil, err
			}
			all = agent.WithToolStartHook(all, starts)
		default:
			hooks := all["hooks"].(map[string]any)
			for e := range hooks {
				if e != "UserPromptSubmit" && e != answerAt && e != "Stop" {
					delete(hooks, e)
				}
			}
		}
		settings, _ := json.Marshal(all)
		settingsPath := filepath.Join(cfg, "floor-settings.json")
		if err := os.WriteFile(settingsPath, settings, 0o600); err != nil {
			f.close()
			return nil, err
		}
		// Round 0's prompt is positional, as familiar passes it: the CLI
		// submits it itself, with no typing race against its first paint.
		// It starts with round 0, so that its first request is counted as
		// that round's.
		f.cmd = exec.Command(r.claude.Path, "--permission-mode", "default", "--settings", settingsPath, "--", comparePrompt(0))
		f.cmd.Dir = repo
		f.cmd.Env = agent.SessionEnv(os.Environ(), cfg, mergeEnv(api.Env(), screen.RendererEnv()))
		return f, nil
	}
}

func mergeEnv(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func (f *tuiFloor) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	var head struct {
		Event string `json:"hook_event_name"`
	}
	_ = json.NewDecoder(req.Body).Decode(&head)
	event := head.Event
	// The answer this call waits for, taken before the bench can see the
	// call and answer it.
	f.mu.Lock()
	pending := f.pending
	f.mu.Unlock()
	f.hooks.add(hookCall{event: event, at: at})
	w.Header().Set("Content-Type", "application/json")
	if event != f.answerAt {
		_, _ = w.Write([]byte("{}"))
		return
	}
	select {
	case <-pending:
	case <-req.Context().Done():
		return
	}
	out := map[string]any{"hookEventName": "PermissionRequest", "decision": map[string]any{"behavior": "allow"}}
	if event == "PreToolUse" {
		out = map[string]any{"hookEventName": "PreToolUse", "permissionDecision": "allow"}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"hookSpecificOutput": out})
}

func (f *tuiFloor) ask(ctx context.Context, i int) (time.Time, error) {
	if err := f.prompt(ctx, i, comparePrompt(i)); err != nil {
		return time.Time{}, err
	}
	c, next, err := f.hooks.wait(ctx, f.next, f.answerAt, func(c hookCall) bool { return c.event == f.answerAt })
	f.next = next
	return c.at, err
}

// prompt starts claude with text as its positional prompt (i == 0), or
// types text into its prompt box as a person would.
func (f *tuiFloor) prompt(ctx context.Context, i int, text string) error {
	if i == 0 {
		f.cmd.Args[len(f.cmd.Args)-1] = text
		var err error
		if f.tty, err = pty.StartWithSize(f.cmd, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
			return err
		}
		go func() {
			defer close(f.readDone)
			_, _ = io.Copy(io.Discard, f.tty)
		}()
		return nil
	}
	// The previous turn ended (Stop): the prompt box takes input. The
	// prompt has newlines, so it goes as a bracketed paste; Enter is
	// pressed again until the CLI says the prompt was submitted.
	if _, err := f.tty.Write([]byte("\x1b[200~" + text + "\x1b[201~")); err != nil {
		return err
	}
	for {
		if _, err := f.tty.Write([]byte("\r")); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		_, next, err := f.hooks.wait(wctx, f.next, "UserPromptSubmit", func(c hookCall) bool { return c.event == "UserPromptSubmit" })
		cancel()
		if err == nil {
			f.next = next
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// followUp types a follow-up into the TUI, as familiar's PTY driver does
// into a warm claude: the floor of a warm follow-up on the interactive CLI.
func (f *tuiFloor) followUp(ctx context.Context, i int, text string) (time.Time, error) {
	sent := time.Now()
	return sent, f.prompt(ctx, i, text)
}

func (f *tuiFloor) turnDone(ctx context.Context) error { return f.finish(ctx) }

func (f *tuiFloor) heldPIDs(context.Context) []int {
	if f.cmd == nil || f.cmd.Process == nil {
		return nil
	}
	return []int{f.cmd.Process.Pid}
}

func (f *tuiFloor) allow(context.Context) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sent := time.Now()
	close(f.pending)
	f.pending = make(chan struct{})
	return sent, nil
}

func (f *tuiFloor) finish(ctx context.Context) error {
	var err error
	_, f.next, err = f.hooks.wait(ctx, f.next, "Stop", func(c hookCall) bool { return c.event == "Stop" })
	return err
}

func (f *tuiFloor) close() {
	if f.cmd != nil && f.cmd.Process != nil {
		_ = f.cmd.Process.Kill()
		_ = f.cmd.Wait()
	}
	if f.tty != nil {
		_ = f.tty.Close()
		<-f.readDone
	}
	if f.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = f.srv.Shutdown(ctx)
		_ = f.srv.Close()
	}
	if f.ln != nil {
		_ = f.ln.Close()
	}
}
