package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/demomodel"
	"github.com/familiar-dev/familiar/orchestrator"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/rpcclient"
)

// startFamiliarDaemon starts familiar as an editor does (issue 40 item 3):
// `familiar serve --stdio` in a new repository, which starts the
// repository's background familiar and forwards to it, with default
// settings but agentNice 0 (the peers' priority: like for like). Each
// start is a new background familiar, as the first task of an editor's
// day is; it is stopped (familiar stop) when the contender closes.
func (r *runner) startFamiliarDaemon(driver protocol.Driver) func(ctx context.Context, api *demomodel.Server) (contender, error) {
	return func(ctx context.Context, api *demomodel.Server) (contender, error) {
		if r.opts.Familiar == "" {
			return nil, errSkip("no familiar binary to run serve --stdio with (Options.Familiar)")
		}
		repo, err := newRepo(ctx, r.tmp, 0, 0)
		if err != nil {
			return nil, err
		}
		state, err := os.MkdirTemp(r.tmp, "daemon-")
		if err != nil {
			return nil, err
		}
		// FAMILIAR_LOG=debug: the background familiar logs its start's
		// steps (daemonStartSteps). Its state is its own, but every start
		// shares one XDG_DATA_HOME, as a person's starts do: claude, which
		// inherits it, registers its URL handler there (a .desktop file and
		// xdg-mime, three processes beside its start) only when none is
		// there. A new one per start made every familiar start pay for that
		// and no floor's (TUI floors keep the user's).
		env := append(os.Environ(), "FAMILIAR_CLAUDE="+r.claude.Path, "FAMILIAR_LOG=debug",
			"XDG_STATE_HOME="+filepath.Join(state, "state"), "XDG_DATA_HOME="+filepath.Join(r.tmp, "xdg-data"))
		for k, v := range api.Env() {
			env = append(env, k+"="+v)
		}
		cmd := exec.Command(r.opts.Familiar, "serve", "--stdio")
		cmd.Dir, cmd.Env = repo, env
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("familiar serve --stdio: %w", err)
		}
		c := &familiarContender{driver: driver, notes: newQueue[clientNote](), daemonState: filepath.Join(state, "state")}
		c.serve = func() {
			_ = stdin.Close()
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			stop := exec.Command(r.opts.Familiar, "stop")
			stop.Dir, stop.Env = repo, env
			if out, err := stop.CombinedOutput(); err != nil {
				r.logf("familiar stop in %s: %v: %s", repo, err, strings.TrimSpace(string(out)))
			}
		}
		c.client = rpcclient.New(stdioConn{stdout, stdin}, func(method string, params json.RawMessage) {
			c.notes.add(clientNote{method: method, params: params, at: time.Now()})
		})
		nice := 0
		if _, err := c.client.Initialize(ctx, &protocol.InitializeParams{WorkspaceRoot: repo,
			ClientInfo: &protocol.ClientInfo{Name: "familiar bench", Version: "bench"},
			Settings:   &protocol.SettingsUpdate{AgentNice: &nice}}); err != nil {
			c.close()
			return nil, fmt.Errorf("initialize through familiar serve --stdio: %w\n%s", err, stderr.String())
		}
		return c, nil
	}
}

// daemonStartSteps reads the steps of the last agent start from the log of
// the background familiar under state (XDG_STATE_HOME): its "agent start"
// and "agent spawned" debug records, the durations in the order logged.
func daemonStartSteps(state string) (began time.Time, steps, spawn []stepDuration) {
	logs, _ := filepath.Glob(filepath.Join(state, "familiar", "*", "familiar.log"))
	for _, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			msg, at, durs := readStepRecord(line)
			switch msg {
			case orchestrator.StartStepsRecord:
				began, steps = at, durs
			case agent.SpawnRecord:
				spawn = durs
			}
		}
	}
	return began, steps, spawn
}

// readStepRecord reads one JSON log line: its message, its "began" time
// and its number fields (slog's durations, in ns) in order, other than the
// pid it names.
func readStepRecord(line string) (msg string, began time.Time, durs []stepDuration) {
	if !strings.Contains(line, `"`+orchestrator.StartStepsRecord+`"`) && !strings.Contains(line, `"`+agent.SpawnRecord+`"`) {
		return "", time.Time{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", time.Time{}, nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", time.Time{}, nil
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return "", time.Time{}, nil
		}
		key, _ := k.(string)
		switch val := v.(type) {
		case string:
			switch key {
			case "msg":
				msg = val
			case "began":
				began, _ = time.Parse(time.RFC3339Nano, val)
			}
		case json.Number:
			if n, err := val.Int64(); err == nil && key != "daemon" && key != "pid" {
				durs = append(durs, stepDuration{key, time.Duration(n)})
			}
		}
	}
	return msg, began, durs
}

// stdioConn is a child's stdout and stdin as one connection.
type stdioConn struct {
	io.ReadCloser
	w io.WriteCloser
}

func (c stdioConn) Write(b []byte) (int, error) { return c.w.Write(b) }
func (c stdioConn) Close() error {
	_ = c.w.Close()
	return c.ReadCloser.Close()
}

// lockedBuffer is a child's stderr, written by os/exec's copier.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
