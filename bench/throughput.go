package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/protocol"
)

// ThroughputResult is a child writing lines to its terminal as fast as it
// can, read through one of familiar's paths.
type ThroughputResult struct {
	Path  string  `json:"path"`
	Lines string  `json:"lines"` // plain, or colour (SGR in every line)
	MB    float64 `json:"mb"`    // bytes read from the PTY (the child's, with CR added to each LF), in 10^6
	Sec   float64 `json:"sec"`   // from start to the last byte through the path
	MBps  float64 `json:"mbPerSec"`
	// CPUSec is familiar's CPU time (this process) for the run.
	CPUSec float64 `json:"cpuSec"`
	// Dropped is output the path's consumer did not get (a subscriber
	// overflowing): a sign it was the bottleneck.
	Dropped int64 `json:"droppedBytes"`
	// LastLine is the last line of the screen model at the end, to show it
	// kept up with the stream.
	LastLine string `json:"lastScreenLine,omitempty"`
}

// Paths of the throughput scenario.
const (
	PathPTY          = "pty reader (limit)"
	PathProcs        = "procs (log + tail + subscriber)"
	PathAgent        = "agent (procs + screen model + events)"
	PathOrchestrator = "orchestrator (agent + store + notifier)"
)

func (r *runner) throughput(ctx context.Context) error {
	n := int64(r.opts.FloodMB) << 20
	runs := []struct {
		path  string
		color bool
		f     func(context.Context, int64, bool) (ThroughputResult, error)
	}{
		{PathPTY, false, r.floodPTY},
		{PathProcs, false, r.floodProcs},
		{PathAgent, false, r.floodAgent},
		{PathAgent, true, r.floodAgent},
		{PathOrchestrator, false, r.floodOrchestrator},
	}
	for _, run := range runs {
		cpu0, _ := cpuTime(0)
		res, err := run.f(ctx, n, run.color)
		if err != nil {
			return fmt.Errorf("%s: %w", run.path, err)
		}
		cpu1, _ := cpuTime(0)
		res.Path = run.path
		res.Lines = "plain"
		if run.color {
			res.Lines = "colour"
		}
		res.CPUSec = round((cpu1 - cpu0).Seconds())
		res.MB = round(res.MB)
		res.MBps = round(res.MB / res.Sec)
		res.Sec = round(res.Sec)
		r.report.Throughput = append(r.report.Throughput, res)
		r.logf("throughput %s, %s lines: %.1f MB in %.2f s = %.1f MB/s (CPU %.2f s, dropped %d)", res.Path, res.Lines, res.MB, res.Sec, res.MBps, res.CPUSec, res.Dropped)
	}
	return r.screenModel(ctx)
}

// droppedRE reads the agent's problem report of output its driver missed.
var droppedRE = regexp.MustCompile(`(\d+) bytes of output were not seen`)

func (r *runner) floodEnv(n int64, color bool) []string {
	env := []string{"FAKEAGENT_MODE=flood", "FAKEAGENT_BYTES=" + strconv.FormatInt(n, 10)}
	if color {
		env = append(env, "FAKEAGENT_COLOR=1")
	}
	return env
}

// floodPTY is the limit: a PTY and one loop reading it into nothing.
func (r *runner) floodPTY(ctx context.Context, n int64, color bool) (ThroughputResult, error) {
	cmd := exec.CommandContext(ctx, r.fake)
	cmd.Env = append(os.Environ(), r.floodEnv(n, color)...)
	start := time.Now()
	master, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		return ThroughputResult{}, err
	}
	defer master.Close()
	buf := make([]byte, 32<<10)
	var got int64
	for {
		k, err := master.Read(buf)
		got += int64(k)
		if err != nil {
			// EIO: every writer of the terminal has closed it.
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, io.EOF) {
				return ThroughputResult{}, err
			}
			break
		}
	}
	took := time.Since(start)
	if err := cmd.Wait(); err != nil {
		return ThroughputResult{}, fmt.Errorf("fake agent: %w", err)
	}
	return ThroughputResult{MB: float64(got) / 1e6, Sec: took.Seconds()}, nil
}

// floodProcs is procs alone: the log file, the tail and one subscriber that
// takes everything.
func (r *runner) floodProcs(ctx context.Context, n int64, color bool) (ThroughputResult, error) {
	dir, err := os.MkdirTemp(r.tmp, "procs-")
	if err != nil {
		return ThroughputResult{}, err
	}
	start := time.Now()
	p, err := procs.Start(procs.Config{
		Argv:    []string{r.fake},
		Env:     append(os.Environ(), r.floodEnv(n, color)...),
		Size:    procs.Size{Rows: 40, Cols: 120},
		LogPath: filepath.Join(dir, "out.log"),
	})
	if err != nil {
		return ThroughputResult{}, err
	}
	defer p.Close()
	sub := p.Output().Subscribe(procs.SubscribeOptions{MaxQueued: 64 << 20})
	defer sub.Close()
	var got, dropped int64
	for {
		c, err := sub.Next(ctx)
		got += int64(len(c.Data))
		dropped += c.Dropped
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return ThroughputResult{}, err
			}
			break
		}
	}
	took := time.Since(start)
	return ThroughputResult{MB: float64(got) / 1e6, Sec: took.Seconds(), Dropped: dropped}, nil
}

// floodAgent is the PTY driver: procs, the screen model and the event
// emitter, to an event handler that only counts.
func (r *runner) floodAgent(ctx context.Context, n int64, color bool) (ThroughputResult, error) {
	dir, err := os.MkdirTemp(r.tmp, "agent-")
	if err != nil {
		return ThroughputResult{}, err
	}
	hooks, err := agent.NewHookServer(nil)
	if err != nil {
		return ThroughputResult{}, err
	}
	defer hooks.Close()
	var got, dropped atomic.Int64
	exited := make(chan struct{})
	env := map[string]string{}
	for _, kv := range r.floodEnv(n, color) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	start := time.Now()
	sess, err := agent.Start(ctx, agent.Options{
		CLI:       agent.CLI{Path: r.fake, Version: agent.NewestTested},
		Dir:       dir,
		ConfigDir: filepath.Join(dir, "claude"),
		LogPath:   filepath.Join(dir, "out.log"),
		ExtraEnv:  env,
		Hooks:     hooks,
		OnEvent: func(ev agent.Event) {
			switch ev.Kind {
			case agent.EventOutput:
				got.Add(int64(len(ev.Output)))
			case agent.EventProblem:
				if m := droppedRE.FindStringSubmatch(ev.Problem); m != nil {
					k, _ := strconv.ParseInt(m[1], 10, 64)
					dropped.Add(k)
				}
			case agent.EventExited:
				close(exited)
			}
		},
	})
	if err != nil {
		return ThroughputResult{}, err
	}
	select {
	case <-exited:
	case <-ctx.Done():
		_ = sess.Stop(context.Background())
		return ThroughputResult{}, ctx.Err()
	}
	took := time.Since(start)
	res := ThroughputResult{MB: float64(got.Load()) / 1e6, Sec: took.Seconds(), Dropped: dropped.Load()}
	lines := sess.Screen().Lines
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			res.LastLine = lines[i]
			break
		}
	}
	return res, nil
}

// floodOrchestrator is a task whose agent floods its terminal: the agent
// path plus the orchestrator's events, the store (every task/output is an
// event in bbolt) and a notifier that takes the notifications and does
// nothing with them.
func (r *runner) floodOrchestrator(ctx context.Context, n int64, color bool) (ThroughputResult, error) {
	repo, err := newRepo(ctx, r.tmp, 0, 0)
	if err != nil {
		return ThroughputResult{}, err
	}
	env := map[string]string{}
	for _, kv := range r.floodEnv(n, color) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	w, err := openWorkspace(ctx, r.tmp, repo, r.fake, fakeEnv(r.fake, env), nil)
	if err != nil {
		return ThroughputResult{}, err
	}
	defer w.close()
	watch, stop := newStatusWatch(w.notes)
	defer stop()
	var dropped int64
	stopDrops := w.notes.handle(func(x note) {
		if x.method != protocol.NotifyServerMessage {
			return
		}
		if m := droppedRE.FindSubmatch(x.params); m != nil {
			n, _ := strconv.ParseInt(string(m[1]), 10, 64)
			dropped += n
		}
	})
	defer stopDrops()
	start := time.Now()
	t, err := w.create(ctx, "flood")
	if err != nil {
		return ThroughputResult{}, err
	}
	if err := watch.wait(ctx, 10*time.Minute, "the flooding task to end", func(at map[string]map[protocol.Status]time.Time) bool {
		_, ok := at[t.ID][protocol.StatusBlocked]
		return ok
	}); err != nil {
		return ThroughputResult{}, err
	}
	end, _ := watch.reached(t.ID, protocol.StatusBlocked)
	fi, err := os.Stat(filepath.Join(w.ws.DataDir, "tasks", t.ID, "output-1.log"))
	if err != nil {
		return ThroughputResult{}, err
	}
	return ThroughputResult{MB: float64(fi.Size()) / 1e6, Sec: end.Sub(start).Seconds(), Dropped: dropped}, nil
}
