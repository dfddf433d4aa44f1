package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// toolStarts is how the PTY driver hears of a tool call's start without
// holding claude up. claude waits for every HTTP hook's reply, async or not,
// and a synchronous PreToolUse put 20–30 ms into every permission question
// (CLAUDE-CLI.md Part B §6). An async command hook costs claude a spawn it
// does not wait for: it writes the PreToolUse payload into a private
// directory, and familiar reads it from there — when the directory says a
// file arrived, and before each hook whose meaning depends on the call's
// start (PermissionRequest, PostToolUse, Stop), so that those are handled in
// claude's order.
type toolStarts struct {
	dir string
	// mu is held while payloads are taken and handled, so a hook that
	// drains finds every start written before it handled, not taken by
	// another goroutine and still on its way.
	mu sync.Mutex
	// arrived is closed, and replaced, after a drain handled at least one
	// start: every permission waiting for its start looks again.
	arrived chan struct{} // guarded by mu
}

// toolStartsDir is the spool's name inside the session's claude config dir.
const toolStartsDir = "familiar-tool-starts"

// newToolStarts makes the session's spool, empty: what an earlier run of
// the session left there is over.
func newToolStarts(configDir string) (*toolStarts, error) {
	dir := filepath.Join(configDir, toolStartsDir)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("tool starts: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tool starts: %w", err)
	}
	return &toolStarts{dir: dir, arrived: make(chan struct{})}, nil
}

// ToolStartHook is the async command hook that writes each PreToolUse
// payload (claude gives it on stdin) into dir, under a temporary name
// renamed into place: a reader never sees half a payload. $$ (the shell's
// pid) keeps concurrent calls apart.
func ToolStartHook(dir string) map[string]any {
	q := shellQuote(dir)
	return map[string]any{
		"type":    "command",
		"command": "cat > " + q + "/$$.part && exec mv " + q + "/$$.part " + q + "/$$.json",
		"async":   true,
		"timeout": 30,
	}
}

// shellQuote quotes s for sh: a config dir on a Mac has spaces
// ("Application Support").
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WithToolStartHook returns settings with PreToolUse delivered by the
// spool in dir instead of HTTP.
func WithToolStartHook(settings map[string]any, dir string) map[string]any {
	hooks, _ := settings["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
		settings["hooks"] = hooks
	}
	hooks["PreToolUse"] = []any{map[string]any{"matcher": "*", "hooks": []any{ToolStartHook(dir)}}}
	return settings
}

// drain takes every complete payload in the spool, oldest first, removes
// it and hands it to handle. It holds t.mu throughout.
func (t *toolStarts) drain(handle func(json.RawMessage)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	entries, err := os.ReadDir(t.dir)
	if err != nil {
		return
	}
	type start struct {
		name string
		at   int64
		raw  json.RawMessage
	}
	var starts []start
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue // still being written
		}
		path := filepath.Join(t.dir, e.Name())
		info, ierr := e.Info()
		raw, rerr := os.ReadFile(path)
		_ = os.Remove(path)
		if ierr != nil || rerr != nil || !json.Valid(raw) {
			continue
		}
		starts = append(starts, start{e.Name(), info.ModTime().UnixNano(), raw})
	}
	if len(starts) == 0 {
		return
	}
	slices.SortFunc(starts, func(a, b start) int {
		return cmp.Or(cmp.Compare(a.at, b.at), strings.Compare(a.name, b.name))
	})
	for _, s := range starts {
		handle(s.raw)
	}
	close(t.arrived)
	t.arrived = make(chan struct{})
}

// next returns a channel closed once a start is handled after this call.
func (t *toolStarts) next() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.arrived
}

// watch drains the spool each time a payload lands in it, until ctx ends.
// It returns at once if the directory cannot be watched: the drains before
// the hooks that need a start still deliver it, only later.
func (t *toolStarts) watch(ctx context.Context, handle func(json.RawMessage)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("tool starts: %w", err)
	}
	defer w.Close()
	if err := w.Add(t.dir); err != nil {
		return fmt.Errorf("tool starts: %w", err)
	}
	t.drain(handle) // what landed before the watch began
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if strings.HasSuffix(ev.Name, ".json") && ev.Has(fsnotify.Create) {
				t.drain(handle)
			}
		case _, ok := <-w.Errors:
			if !ok {
				return nil
			}
			t.drain(handle) // an overflow: look rather than trust the events
		}
	}
}

// remove deletes the spool once the session is over.
func (t *toolStarts) remove() { _ = os.RemoveAll(t.dir) }
