package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/workspace"
)

// BuildFakeAgent builds internal/fakeagent into dir with the go tool and
// returns the binary's path. moduleRoot is familiar's source tree.
func BuildFakeAgent(ctx context.Context, moduleRoot, dir string) (string, error) {
	bin := filepath.Join(dir, "fakeagent")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./internal/fakeagent")
	cmd.Dir = moduleRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the fake agent (go build ./internal/fakeagent in %s): %v\n%s", moduleRoot, err, out)
	}
	return bin, nil
}

// ModuleRoot returns the directory holding familiar's go.mod, looking up
// from the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/familiar-dev/familiar\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside familiar's source tree (no go.mod of github.com/familiar-dev/familiar above the working directory)")
		}
		dir = parent
	}
}

// gitEnv makes git in the throwaway repositories independent of the user's
// configuration.
var gitEnv = []string{
	"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null", "LC_ALL=C",
	"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@familiar.invalid",
	"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@familiar.invalid",
}

func git(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// newRepo makes a repository in a new directory under parent with one
// commit: dirs directories of filesPerDir small files each (none when 0).
func newRepo(ctx context.Context, parent string, dirs, filesPerDir int) (string, error) {
	dir, err := os.MkdirTemp(parent, "repo-")
	if err != nil {
		return "", err
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return "", err
	}
	if err := git(ctx, dir, "init", "-q", "-b", "main"); err != nil {
		return "", err
	}
	for d := range dirs {
		sub := filepath.Join(dir, fmt.Sprintf("dir%03d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			return "", err
		}
		for f := range filesPerDir {
			content := fmt.Sprintf("package p%d\n\n// file %d of dir %d\n", d, f, d)
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%03d.go", f)), []byte(content), 0o644); err != nil {
				return "", err
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("bench repository\n"), 0o644); err != nil {
		return "", err
	}
	if err := git(ctx, dir, "add", "-A"); err != nil {
		return "", err
	}
	if err := git(ctx, dir, "commit", "-q", "-m", "bench files"); err != nil {
		return "", err
	}
	return dir, nil
}

// notifier is the client side of the orchestrator: it calls each handler
// with every notification, as it arrives, with the time it arrived. Handlers
// run on the publisher's goroutine and must be quick.
type notifier struct {
	mu       sync.Mutex
	handlers map[int]func(note)
	next     int
}

type note struct {
	method string
	params json.RawMessage
	at     time.Time
}

func (n *notifier) Notify(method string, params any) {
	at := time.Now()
	b, _ := params.(json.RawMessage)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, h := range n.handlers {
		h(note{method: method, params: b, at: at})
	}
}

// handle adds h and returns a func that removes it.
func (n *notifier) handle(h func(note)) func() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.handlers == nil {
		n.handlers = map[int]func(note){}
	}
	id := n.next
	n.next++
	n.handlers[id] = h
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.handlers, id)
	}
}

// statusWatch collects the status each task reaches, from task/updated.
type statusWatch struct {
	mu      sync.Mutex
	at      map[string]map[protocol.Status]time.Time // first time each status was seen
	changed chan struct{}
}

func newStatusWatch(n *notifier) (*statusWatch, func()) {
	w := &statusWatch{at: map[string]map[protocol.Status]time.Time{}, changed: make(chan struct{})}
	return w, n.handle(func(x note) {
		if x.method != protocol.NotifyTaskUpdated {
			return
		}
		var u struct {
			Task struct {
				ID     string          `json:"id"`
				Status protocol.Status `json:"status"`
			} `json:"task"`
		}
		if json.Unmarshal(x.params, &u) != nil {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		m := w.at[u.Task.ID]
		if m == nil {
			m = map[protocol.Status]time.Time{}
			w.at[u.Task.ID] = m
		}
		if _, seen := m[u.Task.Status]; !seen {
			m[u.Task.Status] = x.at
		}
		close(w.changed)
		w.changed = make(chan struct{})
	})
}

// wait waits until cond holds for the statuses seen so far.
func (w *statusWatch) wait(ctx context.Context, timeout time.Duration, what string, cond func(map[string]map[protocol.Status]time.Time) bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		w.mu.Lock()
		ok := cond(w.at)
		ch := w.changed
		w.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// reached returns when task id first reached status s.
func (w *statusWatch) reached(id string, s protocol.Status) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.at[id][s]
	return t, ok
}

// countIn counts the tasks that have reached any of the statuses.
func countIn(at map[string]map[protocol.Status]time.Time, statuses ...protocol.Status) int {
	n := 0
	for _, m := range at {
		for _, s := range statuses {
			if _, ok := m[s]; ok {
				n++
				break
			}
		}
	}
	return n
}

// benchWorkspace is a familiar workspace on a throwaway repository.
type benchWorkspace struct {
	ws    *workspace.Workspace
	notes *notifier
}

// openWorkspace opens repo with claude at claudePath; edit adjusts every
// agent's options (the fake agent's environment, the fake API). log may be
// nil.
func openWorkspace(ctx context.Context, tmp, repo, claudePath string, edit func(*agent.Options), log *slog.Logger) (*benchWorkspace, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	data, err := os.MkdirTemp(tmp, "data-")
	if err != nil {
		return nil, err
	}
	wts, err := os.MkdirTemp(tmp, "worktrees-")
	if err != nil {
		return nil, err
	}
	w := &benchWorkspace{notes: &notifier{}}
	w.ws, err = workspace.Open(ctx, repo, workspace.Options{
		DataDir:       data,
		WorktreesRoot: wts,
		ClaudePath:    claudePath,
		Notifier:      w.notes,
		Logger:        log,
		Version:       "bench",
		StartHook: func(ctx context.Context, o *agent.Options) {
			// Measured at the priority the peers and the raw PTY run at:
			// agentNice only matters when something else wants the CPU.
			o.Nice = 0
			if edit != nil {
				edit(o)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if w.ws.CLIErr != nil {
		w.ws.Close()
		return nil, w.ws.CLIErr
	}
	return w, nil
}

func (w *benchWorkspace) settings(ctx context.Context, u protocol.SettingsUpdate) error {
	_, err := w.ws.Orch.UpdateSettings(ctx, &u)
	return err
}

func (w *benchWorkspace) create(ctx context.Context, title string) (*protocol.Task, error) {
	return w.ws.Orch.TaskCreate(ctx, &protocol.TaskCreateParams{Title: title, Description: "benchmark task", PromptOverride: title})
}

// close stops the agents (the fake ones exit on SIGTERM at once).
func (w *benchWorkspace) close() error { return w.ws.Close() }

// fakeEnv returns an options editor that runs the fake agent at bin with the
// given FAKEAGENT_* environment.
func fakeEnv(bin string, env map[string]string) func(*agent.Options) {
	return func(o *agent.Options) {
		o.CLI.Path = bin
		if o.ExtraEnv == nil {
			o.ExtraEnv = map[string]string{}
		}
		// The fake agent needs no login, but familiar checks for one before
		// a start (blocked{auth} otherwise): give it a dummy key.
		o.ExtraEnv["ANTHROPIC_API_KEY"] = "sk-ant-api03-bench-fake-agent"
		for k, v := range env {
			o.ExtraEnv[k] = v
		}
	}
}

func intp(i int) *int { return &i }

// gitAdds is a slog.Handler that keeps how long each `git worktree add` took,
// from the debug records of package worktree's git runner, and drops every
// other record. What familiar spends besides its own git is measured inside
// the same call that way, and so is immune to the machine's load changing
// between calls.
type gitAdds struct {
	mu   sync.Mutex
	took []time.Duration // guarded by mu
}

func (h *gitAdds) Enabled(_ context.Context, l slog.Level) bool { return l == slog.LevelDebug }
func (h *gitAdds) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *gitAdds) WithGroup(string) slog.Handler                { return h }

func (h *gitAdds) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "git" {
		return nil
	}
	var args []string
	var took time.Duration
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "args":
			args, _ = a.Value.Any().([]string)
		case "took":
			took = a.Value.Duration()
		}
		return true
	})
	if len(args) >= 2 && args[0] == "worktree" && args[1] == "add" {
		h.mu.Lock()
		h.took = append(h.took, took)
		h.mu.Unlock()
	}
	return nil
}

// last returns the duration of the latest `git worktree add`, 0 if none.
func (h *gitAdds) last() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.took) == 0 {
		return 0
	}
	return h.took[len(h.took)-1]
}
