package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/demomodel"
	"github.com/familiar-dev/familiar/protocol"
)

// Kinds of idle session.
const (
	KindFake   = "fake"   // internal/fakeagent, redrawing its spinner
	KindClaude = "claude" // the real CLI, idle at its prompt after a turn
)

// OverheadResult is what familiar itself (one process: orchestrator, store,
// agents' PTY readers and screen models, hooks) costs with some idle
// sessions, measured from /proc/self in a process of its own.
type OverheadResult struct {
	Kind     string `json:"kind"`
	Sessions int    `json:"sessions"`
	// CPUPercent is familiar's CPU time over the window, in % of one core.
	CPUPercent float64 `json:"cpuPercent"`
	RSSMiB     float64 `json:"rssMiB"`
	HWMMiB     float64 `json:"peakRssMiB"`
	Goroutines int     `json:"goroutines"`
	// Per session, above the 0-session baseline of the same kind of run.
	CPUPercentPerSession float64 `json:"cpuPercentPerSession,omitempty"`
	RSSMiBPerSession     float64 `json:"rssMiBPerSession,omitempty"`
	// What the agents themselves use, for scale (not familiar's).
	AgentCPUPercent float64 `json:"agentCpuPercent"`
	AgentRSSMiB     float64 `json:"agentRssMiB"`
	// OutputKiBps is task/output notifications (JSON) per second, all
	// sessions: how much the agents drew.
	OutputKiBps float64 `json:"outputKiBps"`
	WindowSec   float64 `json:"windowSec"`
}

// overhead runs each configuration in a process of its own, so that RSS is
// the configuration's and not what earlier scenarios left in the heap.
func (r *runner) overhead(ctx context.Context) error {
	if len(r.opts.Self) == 0 {
		return errSkip("no way to re-run this program for a clean process (Options.Self)")
	}
	configs := []struct {
		kind     string
		sessions int
	}{{KindFake, 0}, {KindFake, 1}, {KindFake, 10}, {KindFake, 30}, {KindClaude, 5}}
	var base OverheadResult
	for _, c := range configs {
		if c.kind == KindClaude && r.claude.Path == "" {
			r.skip("overhead with claude sessions: the claude CLI is not installed (" + r.claudeErr + ")")
			continue
		}
		res, err := r.overheadChild(ctx, c.kind, c.sessions)
		if err != nil {
			return fmt.Errorf("%d %s sessions: %w", c.sessions, c.kind, err)
		}
		if c.sessions == 0 {
			base = res
		} else if base.WindowSec > 0 {
			res.CPUPercentPerSession = round((res.CPUPercent - base.CPUPercent) / float64(c.sessions))
			res.RSSMiBPerSession = round((res.RSSMiB - base.RSSMiB) / float64(c.sessions))
		}
		r.report.Overhead = append(r.report.Overhead, res)
		r.logf("overhead %d %s: familiar %.1f%% CPU, %.1f MiB RSS; agents %.1f%% CPU, %.1f MiB", c.sessions, c.kind, res.CPUPercent, res.RSSMiB, res.AgentCPUPercent, res.AgentRSSMiB)
	}
	return nil
}

func (r *runner) overheadChild(ctx context.Context, kind string, sessions int) (OverheadResult, error) {
	args := append([]string(nil), r.opts.Self[1:]...)
	args = append(args, "-child", "overhead", "-kind", kind, "-sessions", strconv.Itoa(sessions),
		"-window", r.opts.Window.String(), "-fakeagent", r.fake)
	if r.claude.Path != "" {
		args = append(args, "-claude", r.claude.Path)
	}
	cmd := exec.CommandContext(ctx, r.opts.Self[0], args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = r.opts.Log
	if err := cmd.Run(); err != nil {
		return OverheadResult{}, fmt.Errorf("child %v: %w", cmd.Args, err)
	}
	var res OverheadResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return res, fmt.Errorf("child output %q: %w", out.String(), err)
	}
	return res, nil
}

// ChildOptions configure one overhead measurement in a child process.
type ChildOptions struct {
	Kind      string
	Sessions  int
	Window    time.Duration
	FakeAgent string
	Claude    string
}

// RunOverheadChild measures one configuration in this process and writes
// the OverheadResult as JSON to stdout.
func RunOverheadChild(ctx context.Context, o ChildOptions) error {
	tmp, err := os.MkdirTemp("", "familiar-bench-child-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	repo, err := newRepo(ctx, tmp, 0, 0)
	if err != nil {
		return err
	}
	var (
		claude = o.FakeAgent
		edit   = fakeEnv(o.FakeAgent, map[string]string{"FAKEAGENT_MODE": "idle"})
		prompt = "idle"
		idleAs = protocol.StatusRunning
	)
	if o.Kind == KindClaude {
		// One turn that ends with a question: the task waits on the person
		// and the CLI sits at its prompt.
		api := demomodel.Start(demomodel.PromptScript())
		defer api.Close()
		claude = o.Claude
		edit = func(opts *agent.Options) {
			if opts.ExtraEnv == nil {
				opts.ExtraEnv = map[string]string{}
			}
			for k, v := range api.Env() {
				opts.ExtraEnv[k] = v
			}
		}
		prompt = "@@TEXT Which file should I look at first?"
		idleAs = protocol.StatusWaiting
	}
	w, err := openWorkspace(ctx, tmp, repo, claude, edit, nil)
	if err != nil {
		return err
	}
	defer w.close()
	watch, stop := newStatusWatch(w.notes)
	defer stop()
	var output int64
	stopOut := w.notes.handle(func(x note) {
		if x.method == protocol.NotifyTaskOutput {
			output += int64(len(x.params))
		}
	})
	defer stopOut()
	if err := w.settings(ctx, protocol.SettingsUpdate{MaxConcurrent: intp(max(1, o.Sessions))}); err != nil {
		return err
	}
	var ids []string
	for i := range o.Sessions {
		t, err := w.ws.Orch.TaskCreate(ctx, &protocol.TaskCreateParams{Title: fmt.Sprintf("idle %d", i), Description: prompt})
		if err != nil {
			return err
		}
		ids = append(ids, t.ID)
	}
	if err := watch.wait(ctx, 3*time.Minute, fmt.Sprintf("%d sessions to be %s", o.Sessions, idleAs), func(at map[string]map[protocol.Status]time.Time) bool {
		return countIn(at, idleAs) == o.Sessions
	}); err != nil {
		return err
	}
	// Let start-up work (first paints, the store's writes, the CLI's own
	// start) finish before the window.
	time.Sleep(3 * time.Second)
	var pids []int
	for _, id := range ids {
		t, err := w.ws.Orch.TaskGet(ctx, &protocol.TaskIDParams{ID: id})
		if err != nil {
			return err
		}
		if t.Status != idleAs || t.Agent == nil {
			return fmt.Errorf("task %s is %s, not %s, before the window", id, t.Status, idleAs)
		}
		pids = append(pids, t.Agent.PID)
	}
	agentCPU := func() time.Duration {
		var sum time.Duration
		for _, pid := range pids {
			c, _ := cpuTime(pid)
			sum += c
		}
		return sum
	}
	cpu0, err := cpuTime(0)
	if err != nil {
		return err
	}
	acpu0 := agentCPU()
	w.notes.mu.Lock()
	out0 := output
	w.notes.mu.Unlock()
	start := time.Now()
	time.Sleep(o.Window)
	cpu1, err := cpuTime(0)
	if err != nil {
		return err
	}
	took := time.Since(start)
	acpu1 := agentCPU()
	w.notes.mu.Lock()
	out1 := output
	w.notes.mu.Unlock()
	mem, err := memoryOf(0)
	if err != nil {
		return err
	}
	var agentRSS int64
	for _, pid := range pids {
		m, _ := memoryOf(pid)
		agentRSS += m.RSS
	}
	res := OverheadResult{
		Kind:            o.Kind,
		Sessions:        o.Sessions,
		CPUPercent:      round(100 * float64(cpu1-cpu0) / float64(took)),
		RSSMiB:          mib(mem.RSS),
		HWMMiB:          mib(mem.HWM),
		Goroutines:      runtime.NumGoroutine(),
		AgentCPUPercent: round(100 * float64(acpu1-acpu0) / float64(took)),
		AgentRSSMiB:     mib(agentRSS),
		OutputKiBps:     round(float64(out1-out0) / 1024 / took.Seconds()),
		WindowSec:       round(took.Seconds()),
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}
