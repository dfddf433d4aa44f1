package orchestrator

import (
	"context"
	"fmt"
	"github.com/familiar-dev/familiar/sandbox"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// schedule starts queued tasks while slots are free, and tells queued tasks
// when their place may have changed. It is the only place that gives a task
// a slot.
func (o *Orchestrator) schedule() {
	defer o.wg.Done()
	// Places are announced at most every announceEvery: a queue of 200
	// draining would otherwise announce 200 × 200 places.
	var (
		due  <-chan time.Time
		last time.Time
	)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-o.ctx.Done():
			return
		case <-due:
			due = nil
			o.announceQueue()
			last = time.Now()
			continue
		case <-o.kick:
		}
		if !o.startQueued() || due != nil {
			continue
		}
		if wait := announceEvery - time.Since(last); wait > 0 {
			timer.Reset(wait)
			due = timer.C
			continue
		}
		o.announceQueue()
		last = time.Now()
	}
}

// announceEvery throttles queue place announcements (a display detail, so
// real time rather than the injected clock).
const announceEvery = 100 * time.Millisecond

// startQueued gives free slots to the head of the queue. Each start is
// confirmed by the task's actor before the next slot is counted, so a task
// cancelled meanwhile never holds a slot. It reports whether the queue
// changed.
func (o *Orchestrator) startQueued() (moved bool) {
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return moved
		}
		taken, warm := o.slotsLocked()
		pool := o.preparedLocked()
		free := o.settingsNow().MaxConcurrent - taken - len(pool)
		limited := o.limitedLocked()
		if limited {
			// Claude's usage limit: a task started now would only meet it.
			free = 0
		}
		queue := o.queueLocked()
		o.mu.Unlock()
		if free <= 0 && !limited && len(queue) > 0 {
			// Prepared agents, then warm ones, give way to queued work, the
			// oldest and the longest idle first; each one's exit pokes the
			// scheduler again (dropPrepared, effWarmGone).
			need := len(queue)
			for _, pa := range pool[:min(need, len(pool))] {
				o.releasePrepared(pa.id, "a queued task needs its slot")
			}
			need -= min(need, len(pool))
			for _, a := range warm[:min(need, len(warm))] {
				o.logger.Info("idle claude evicted", "task", a.id, "why", "a queued task needs its slot")
				a.post(envelope{in: cmdCool{}})
			}
		}
		if free <= 0 || len(queue) == 0 {
			return moved || len(queue) > 0
		}
		started := 0
		for _, a := range queue[:min(free, len(queue))] {
			if _, err := a.callEarly(o.ctx, inStart{}); err == nil {
				started++
			}
		}
		moved = true
		if started == 0 && len(queue) <= free {
			return moved
		}
	}
}

// announceQueue lets every queued task publish its (new) place.
func (o *Orchestrator) announceQueue() {
	o.mu.Lock()
	queue := o.queueLocked()
	o.mu.Unlock()
	for _, a := range queue {
		a.post(envelope{in: inQueueMoved{}})
	}
}

// startAgent makes the worktree if needed, builds the agent's options and
// starts claude. It runs on its own goroutine, never on the actor's.
func (o *Orchestrator) startAgent(gen int, p *persisted, logPath string, others []string, a *actor, size *atomic.Int64) (Session, protocol.AgentInfo, error) {
	ctx := o.startCtx
	laps := newStartLaps(o.clk)
	defer laps.log(o.logger, p.T.ID)
	if o.cfg.CLIErr != nil {
		// Without claude there is nothing to start: no worktree either.
		return nil, protocol.AgentInfo{}, o.cfg.CLIErr
	}
	var tracked []string // listed by Create, when it made the worktree now
	if pa := o.takePrepared(p.T.ID); pa != nil {
		sess, info, err, ok := o.adoptPrepared(pa, gen, p, logPath, others, a, laps)
		if ok {
			return sess, info, err
		}
		// Started otherwise, or not at all: a claude of the task's own
		// follows, in the worktree made for the prepared one if it was.
		tracked = pa.tracked
	}
	if p.T.Worktree == nil {
		w, err := o.cfg.Repo.Create(ctx, worktree.CreateOptions{TaskID: p.T.ID, Title: p.T.Title, BaseRef: p.BaseRef})
		if err != nil {
			return nil, protocol.AgentInfo{}, fmt.Errorf("%w: %v", errWorktree, err)
		}
		wt := &protocol.Worktree{Path: w.Path, Branch: w.Branch, BaseRef: w.BaseRef, BaseCommit: w.BaseCommit}
		p.T.Worktree = wt
		a.post(envelope{in: inWorktree{worktree: *wt}, gen: gen})
		laps.lap("worktree")
		// Submodules come from the main checkout's copies; one that could
		// not is an empty directory to the agent: say so on the task.
		var subs []worktree.Submodule
		if w.Listing != nil {
			subs, tracked = w.Listing.Submodules, w.Listing.Tracked
		} else {
			subs, err = o.cfg.Repo.Submodules(ctx, w)
		}
		if err == nil {
			for _, sm := range subs {
				if !sm.Initialised {
					o.pub.publish(p.T.ID, protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: fmt.Sprintf(
						"task %s: submodule %s is not in its worktree (%s): the agent sees an empty directory there, and changes in it are not reported",
						p.T.ID, sm.Path, sm.Problem)})
				}
			}
		}
	}
	laps.lap("submodules")
	plan, err := o.sandboxPlan(ctx)
	if err != nil {
		return nil, protocol.AgentInfo{}, err
	}
	laps.lap("sandbox")
	opts, err := o.agentOptions(ctx, p, logPath, others, tracked, laps, plan)
	if err != nil {
		return nil, protocol.AgentInfo{}, err
	}
	if plan.Warn {
		o.pub.publish(p.T.ID, protocol.ServerMessageNotification{Level: protocol.LevelWarning,
			Text: fmt.Sprintf("task %s runs unconfined: %s", p.T.ID, plan.Unconfined)})
	}
	// The terminal goes out masked as a terminal shows it: one masking
	// stream per start, so a key split by colour codes, cursor moves or two
	// writes is still one key. It holds back at most a word, for a moment.
	// The log and the clients get the same masked bytes (terminalOutput),
	// and procs flushes it before the agent reports its exit.
	opts.LogFilter = func(w io.Writer) io.WriteCloser {
		pub := outputPublisher{o: o, id: a.id}
		return newTerminalOutput(o.masker, w, func(b []byte) { _, _ = pub.Write(b) }, size, o.clk)
	}
	opts.NoOutputEvents = true
	opts.OnEvent = func(ev agent.Event) {
		if ev.Kind == agent.EventExited {
			_ = procs.RemoveRecord(o.taskDir(a.id))
		}
		a.onAgentEvent(gen, ev)
	}
	if o.cfg.StartHook != nil {
		o.cfg.StartHook(ctx, &opts)
	}
	// No login at all: claude would only answer "Not logged in". The task
	// is blocked{auth} at once, with the fix, and no process is spawned.
	if auth := agent.DetectAuth(sessionEnv(opts), o.clk.Now()); auth.Method == agent.AuthNone {
		return nil, protocol.AgentInfo{}, &authError{problem: auth.Problem}
	}
	laps.lap("auth")
	sess, err := o.cfg.Start(ctx, opts)
	if err != nil {
		return nil, protocol.AgentInfo{}, err
	}
	laps.lap("spawn")
	id := sess.Identity()
	a.post(envelope{in: inProcess{identity: id}, gen: gen})
	// Also in the task's dir, so a restart can stop it without the store.
	if err := procs.WriteRecord(o.taskDir(a.id), procs.Record{Identity: id, Started: o.clk.Now().UTC()}); err != nil {
		o.logger.Warn("cannot record the agent's process in its task dir", "task", a.id, "err", err)
	}
	return sess, protocol.AgentInfo{PID: sess.PID(), SessionID: sess.SessionID(), ClaudeVersion: o.cfg.CLI.Version,
		Unconfined: plan.Unconfined, Sandbox: plan.Note}, nil
}

// sandboxPlan decides whether the task's claude runs its Bash commands in
// claude's sandbox (the sandbox setting, and what the machine has). A
// required sandbox the machine lacks refuses the start, saying why.
func (o *Orchestrator) sandboxPlan(ctx context.Context) (sandbox.Plan, error) {
	mode := sandbox.Mode(o.settingsNow().Sandbox)
	if mode == "" {
		mode = sandbox.On // settings stored before issue 37
	}
	var a sandbox.Availability
	if mode != sandbox.Off {
		a = o.sandboxAvailability(ctx)
	}
	return sandbox.Decide(mode, a)
}

// sandboxAvailability checks the machine once while it has a sandbox (the
// check runs bubblewrap), and again at each start while it has none, so
// that installing bubblewrap is seen at the next task.
func (o *Orchestrator) sandboxAvailability(ctx context.Context) sandbox.Availability {
	if a := o.sandboxFound.Load(); a != nil {
		return *a
	}
	check := o.cfg.SandboxCheck
	if check == nil {
		check = sandbox.Check
	}
	a := check(ctx)
	if a.OK {
		o.sandboxFound.Store(&a)
	}
	return a
}

// authError is a start refused for want of any login.
type authError struct{ problem string }

func (e *authError) Error() string { return e.problem }

// sessionEnv is the environment the agent's claude will have, for telling
// how it will log in: familiar's, with the session's extras over it.
func sessionEnv(opts agent.Options) []string {
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	env = append([]string(nil), env...)
	for k, v := range opts.ExtraEnv {
		env = append(env, k+"="+v)
	}
	return env
}

// transientAPIFailure reports whether a failure the CLI reported is worth
// trying the turn again for: the API was overloaded, rate limited, failing
// on its side or unreachable, rather than refusing the request.
func transientAPIFailure(f *agent.Failure) bool {
	if f == nil || f.Kind != agent.FailureAPI {
		return false
	}
	switch {
	case f.Status == 0, f.Status == 408, f.Status == 409, f.Status == 429, f.Status >= 500:
		return true
	}
	return false
}

// transientFailure reports whether a failed first turn was the API being
// overloaded or unreachable rather than the task failing.
func transientFailure(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"overloaded", "529", "503", "rate limit", "connection error", "econnrefused", "timed out"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// agentOptions builds the agent's options from the task and the settings.
// tracked, if not nil, is the worktree's tracked paths, listed as it was
// made.
func (o *Orchestrator) agentOptions(ctx context.Context, p *persisted, logPath string, others, tracked []string, laps *startLaps, plan sandbox.Plan) (agent.Options, error) {
	if o.cfg.CLIErr != nil {
		return agent.Options{}, o.cfg.CLIErr
	}
	s := o.settingsNow()
	id := p.T.ID
	dir := o.taskDir(id)
	if err := ensureDir(dir); err != nil {
		return agent.Options{}, err
	}
	if tracked == nil {
		var err error
		if tracked, err = o.cfg.Repo.ListTracked(ctx, p.T.Worktree.Path); err != nil {
			o.logger.Warn("list tracked files for hints", "task", id, "err", err)
		}
	}
	laps.lap("tracked")
	spec, err := o.buildSpec(p, others, tracked)
	if err != nil {
		return agent.Options{}, err
	}
	laps.lap("spec")
	configDir := filepath.Join(dir, "claude")
	if err := o.installSkills(configDir, p.Skills); err != nil {
		return agent.Options{}, err
	}
	laps.lap("skills")
	sessionMCP := s.McpServers
	if p.NoSideload {
		sessionMCP = nil // claude refused them; the task has none of its own
	}
	mcpPath, err := o.prepareMCP(ctx, id, dir, p.T.Worktree.Path, sessionMCP, p.McpServers)
	if err != nil {
		return agent.Options{}, err
	}
	laps.lap("mcp")
	noProgress := s.NoProgressTimeoutSec
	if p.NoProgressTimeoutSec != nil {
		noProgress = *p.NoProgressTimeoutSec
	}
	commandTimeout := s.CommandTimeoutSec
	if p.CommandTimeoutSec != nil {
		commandTimeout = *p.CommandTimeoutSec
	}
	grace := time.Duration(s.TermGraceSec) * time.Second
	if grace <= 0 {
		grace = time.Nanosecond // 0 means kill at once; procs reads 0 as its default
	}
	opts := agent.Options{
		CLI:                o.cfg.CLI,
		Driver:             string(p.T.Driver),
		Dir:                p.T.Worktree.Path,
		RepoRoot:           o.cfg.Repo.Root(),
		ConfigDir:          configDir,
		LogPath:            logPath,
		Prompt:             spec.Prompt.Text,
		AppendSystemPrompt: spec.Prompt.AppendSystemPrompt,
		PermissionMode:     spec.Flags.PermissionMode,
		AllowedTools:       spec.Flags.AllowedTools,
		DisallowedTools:    spec.Flags.DisallowedTools,
		ExtraArgs:          withModel(spec.Flags.ExtraArgs, p.T.Model),
		Sandbox:            sandbox.Settings(plan, spec.Network),
		MCPConfigPath:      mcpPath,
		NoSideload:         p.NoSideload,
		Hooks:              o.cfg.Hooks,
		// The CLI fails open when a hook times out: keep it well above the
		// approval timeout, which familiar enforces itself.
		HookTimeout:  time.Duration(s.ApprovalTimeoutSec)*time.Second + time.Hour,
		GraceTimeout: grace,
		Nice:         s.AgentNice,
		NoProgress:   time.Duration(noProgress) * time.Second,
		// A command that writes nothing falls under its own, longer limit.
		CommandTimeout: time.Duration(commandTimeout) * time.Second,
		VerboseHooks:   p.Directives != nil && p.Directives.Verbose,
		Clock:          o.clk,
		Logger:         o.logger.With("task", id),
	}
	if p.T.Agent != nil && p.T.Agent.SessionID != "" {
		opts.SessionID = p.T.Agent.SessionID
		if agent.SessionSaved(configDir, opts.SessionID) {
			// The conversation goes on where it stopped (task/send on a
			// finished task, resume after a pause or a restart, a mode
			// switch, a blocked task continued).
			opts.Resume = true
			if p.FollowUp != "" {
				opts.Prompt = p.FollowUp
			} else {
				opts.Prompt = resumePrompt
			}
		} else {
			// Stopped before claude saved anything (a pause in its first
			// seconds), or saved where this check does not look: the turn
			// starts again in a new session (reusing the id makes claude
			// exit with code 1), with what the person added.
			opts.SessionID = ""
			if p.FollowUp != "" && p.FollowUp != resumePrompt {
				opts.Prompt = spec.Prompt.Text + "\n\n" + p.FollowUp
			}
		}
	}
	return opts, nil
}

// resumePrompt starts the next turn of a resumed session: the previous one
// was cut off, and claude waits for a prompt after --resume.
const resumePrompt = "familiar stopped you before you finished (a pause or a restart). Continue the task where you left off."

// summarize takes the summary from the agent's final message: the profile
// asks for a short summary, and a "BLOCKED:" line reports that it could not
// finish.
func summarize(msg string) (summary, blocked string) {
	msg = strings.TrimSpace(msg)
	for _, line := range strings.Split(msg, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "BLOCKED:"); ok {
			return msg, strings.TrimSpace(rest)
		}
	}
	return msg, ""
}

// outputPublisher sends masked terminal output to the task's clients.
type outputPublisher struct {
	o  *Orchestrator
	id string
}

func (p outputPublisher) Write(b []byte) (int, error) {
	p.o.pub.publish(p.id, protocol.TaskOutputNotification{ID: p.id, Data: string(b)})
	return len(b), nil
}

// withModel adds the task's --model to the profile's flags.
func withModel(args []string, model string) []string {
	if model == "" {
		return args
	}
	return append(slices.Clone(args), "--model", model)
}

// startLaps times the steps of an agent's start, for the debug record
// "agent start" that `familiar bench --only firstrequest` splits the start
// into (StartStepsRecord).
type startLaps struct {
	clk   clock.Clock
	began time.Time
	last  time.Time
	attrs []any
}

// StartStepsRecord is the message of the debug record with the durations
// of an agent start's steps, in order, and "began", when it began.
const StartStepsRecord = "agent start"

func newStartLaps(clk clock.Clock) *startLaps {
	now := clk.Now()
	return &startLaps{clk: clk, began: now, last: now}
}

// lap ends the step called name.
func (l *startLaps) lap(name string) {
	now := l.clk.Now()
	l.attrs = append(l.attrs, slog.Duration(name, now.Sub(l.last)))
	l.last = now
}

func (l *startLaps) log(logger *slog.Logger, task string) {
	logger.Debug(StartStepsRecord, append([]any{"task", task, slog.Time("began", l.began)}, l.attrs...)...)
}
