package orchestrator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/agent/transcript"
	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// Prepared agents (task/prepare, issue 40): a claude started before its
// task exists, in the worktree and config dir the task will have, waiting
// for its first prompt. An ACP editor asks for one at session/new, so the
// first prompt finds claude up instead of starting it (~0.3–0.5 s of
// claude's own start, which the ACP adapter does at session/new too).
//
// A prepared agent holds a slot of maxConcurrent and gives it up first: the
// queue takes it back (the oldest first), the pool holds at most
// preparedMax (a newer prepare lets the oldest go), and one no task took
// within preparedFor goes. task/release, familiar acp's session/close and
// its editor's exit let it go at once.

// preparedMax bounds the agents prepared and not yet taken: an editor opens
// one session at a time, and each costs a claude's memory (~200 MiB).
const preparedMax = 2

// preparedFor is how long a prepared agent waits for its task.
const preparedFor = 10 * time.Minute

// preparedTitle names the prepared worktree's branch: the task's title is
// its first prompt, not known yet.
const preparedTitle = "session"

// preparedAgent is one agent of the pool.
type preparedAgent struct {
	id    string
	asked time.Time // when task/prepare asked for it; the oldest goes first

	ready chan struct{} // closed once the start ended; the fields below are then set
	sess  Session       // nil when the start failed
	err   error
	opts  agent.Options // as started (no prompt), to compare with the task's
	mcp   []byte        // the --mcp-config file it started with
	// skills are the skills installed in its config dir.
	skills []string
	wt     *protocol.Worktree
	// tracked are the worktree's tracked files, listed as it was made.
	tracked []string
	logPath string
	size    atomic.Int64 // bytes of its output log (the task's outputSize once taken)

	mu      sync.Mutex
	events  []agent.Event     // guarded by mu: what the agent said before a task took it
	onEvent func(agent.Event) // guarded by mu: the task's, once it took it
	publish func([]byte)      // guarded by mu: the task's output, once it took it
	exited  bool              // guarded by mu

	// Guarded by the orchestrator's mu.
	claimed bool        // task/create named it: its task takes it at its start
	expiry  clock.Timer // preparedFor
}

// event hands the agent's events to its task, or keeps them until a task
// takes the agent; it reports whether a task had.
func (pa *preparedAgent) event(ev agent.Event) bool {
	pa.mu.Lock()
	if ev.Kind == agent.EventExited {
		pa.exited = true
	}
	if pa.onEvent == nil {
		pa.events = append(pa.events, ev)
		pa.mu.Unlock()
		return false
	}
	f := pa.onEvent
	pa.mu.Unlock()
	f(ev)
	return true
}

// output publishes the agent's masked output once a task took it; before,
// it goes to the log alone (a claude waiting for its prompt says nothing).
func (pa *preparedAgent) output(b []byte) {
	pa.mu.Lock()
	f := pa.publish
	pa.mu.Unlock()
	if f != nil {
		f(b)
	}
}

// attach gives the agent to its task: what it said so far first, in order.
func (pa *preparedAgent) attach(onEvent func(agent.Event), publish func([]byte)) {
	pa.mu.Lock()
	defer pa.mu.Unlock()
	for _, ev := range pa.events {
		if ev.Kind == agent.EventProblem && ev.Problem == agent.ProblemNoProgress {
			continue // it had no prompt: nothing was expected of it
		}
		onEvent(ev)
	}
	pa.events = nil
	pa.onEvent, pa.publish = onEvent, publish
}

// TaskPrepare starts an agent for a task not yet created (see above). It
// answers at once; the worktree and claude come up in the background.
func (o *Orchestrator) TaskPrepare(ctx context.Context, p *protocol.TaskPrepareParams) (*protocol.TaskPrepareResult, error) {
	c := p.TaskCreateParams
	c.Title, c.Description = preparedTitle, ""
	t, err := o.newTask(ctx, &c)
	if err != nil {
		return nil, err
	}
	if t.T.Driver == protocol.DriverPTY {
		// Its first prompt is given at exec, where a prepared claude would
		// have it typed into its screen as it comes up.
		return &protocol.TaskPrepareResult{Reason: "the pty driver gives claude its first prompt as it starts: the agent starts at the first prompt"}, nil
	}
	t.T.ID = newTaskID()
	pa := &preparedAgent{id: t.T.ID, asked: o.clk.Now(), ready: make(chan struct{})}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil, protocol.Unavailable("familiar is shutting down")
	}
	taken, _ := o.slotsLocked()
	pool := o.preparedLocked()
	var evict *preparedAgent
	switch {
	case len(pool) >= preparedMax:
		evict = pool[0]
	case taken+len(pool) >= o.settingsNow().MaxConcurrent || len(o.queueLocked()) > 0:
		if len(pool) == 0 {
			o.mu.Unlock()
			return &protocol.TaskPrepareResult{Reason: "every slot of maxConcurrent is taken: the agent starts at the first prompt"}, nil
		}
		evict = pool[0]
	}
	if evict != nil {
		delete(o.prepared, evict.id)
	}
	if o.prepared == nil {
		o.prepared = map[string]*preparedAgent{}
	}
	o.prepared[pa.id] = pa
	pa.expiry = o.clk.AfterFunc(preparedFor, func() { o.expirePrepared(pa.id) })
	o.wg.Add(1)
	o.mu.Unlock()
	if evict != nil {
		o.dropPrepared(evict, "a newer session asked for one and the pool is full")
	}
	go func() {
		defer o.wg.Done()
		o.startPrepared(pa, t)
		if pa.sess == nil {
			// Nothing to wait for: its slot is free (a task that claimed
			// it starts its own claude).
			o.releasePrepared(pa.id, fmt.Sprintf("its start failed: %v", pa.err))
			return
		}
		o.trimWarm() // one more idle claude, its memory now known
	}()
	return &protocol.TaskPrepareResult{ID: pa.id}, nil
}

// TaskRelease lets a prepared agent go: its claude stops and its worktree
// goes. An id the pool does not hold (taken, let go, never made) is not an
// error.
func (o *Orchestrator) TaskRelease(ctx context.Context, p *protocol.TaskReleaseParams) error {
	o.releasePrepared(p.ID, "released by its client")
	return nil
}

// releasePrepared lets the pool's agent id go, unless a task claimed it.
func (o *Orchestrator) releasePrepared(id, why string) {
	o.mu.Lock()
	pa := o.prepared[id]
	if pa == nil || pa.claimed {
		o.mu.Unlock()
		return
	}
	delete(o.prepared, id)
	o.mu.Unlock()
	o.dropPrepared(pa, why)
}

// expirePrepared lets an agent go that no task took in preparedFor, claimed
// or not: a task that claimed it and is still queued (or was cancelled
// before it started) starts its own claude.
func (o *Orchestrator) expirePrepared(id string) {
	o.mu.Lock()
	pa := o.prepared[id]
	if pa != nil {
		delete(o.prepared, id)
	}
	o.mu.Unlock()
	if pa != nil {
		o.dropPrepared(pa, "no task took it within "+preparedFor.String())
	}
}

// preparedLocked lists the agents of the pool no task claimed, the oldest
// first: each holds a slot.
func (o *Orchestrator) preparedLocked() []*preparedAgent {
	var out []*preparedAgent
	for _, pa := range o.prepared {
		if !pa.claimed {
			out = append(out, pa)
		}
	}
	slices.SortFunc(out, func(a, b *preparedAgent) int { return a.asked.Compare(b.asked) })
	return out
}

// claimPrepared marks the pool's agent id as its task's (task/create with
// prepared): it no longer counts as a slot of its own, since the task's
// start takes it. False if the pool does not hold it.
func (o *Orchestrator) claimPrepared(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	pa := o.prepared[id]
	if pa == nil || pa.claimed {
		return false
	}
	if _, exists := o.tasks[id]; exists {
		return false
	}
	pa.claimed = true
	return true
}

// preparedFor returns the agent claimed for task id, if any, leaving it in
// the pool.
func (o *Orchestrator) preparedFor(id string) *preparedAgent {
	o.mu.Lock()
	defer o.mu.Unlock()
	if pa := o.prepared[id]; pa != nil && pa.claimed {
		return pa
	}
	return nil
}

// takePrepared takes the agent claimed for task id out of the pool.
func (o *Orchestrator) takePrepared(id string) *preparedAgent {
	o.mu.Lock()
	defer o.mu.Unlock()
	pa := o.prepared[id]
	if pa == nil || !pa.claimed {
		return nil
	}
	delete(o.prepared, id)
	if pa.expiry != nil {
		pa.expiry.Stop()
	}
	return pa
}

// dropPrepared stops an agent of the pool and removes what was made for
// it: its worktree (made for it, untouched: claude had no prompt) and its
// task dir.
func (o *Orchestrator) dropPrepared(pa *preparedAgent, why string) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		o.mu.Lock()
		if pa.expiry != nil {
			pa.expiry.Stop()
		}
		o.mu.Unlock()
		<-pa.ready
		if pa.sess != nil {
			o.stopSession(pa.sess, false)
		}
		if pa.wt != nil {
			// Not o.ctx: familiar's Close cancels it before it waits for this.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := o.cfg.Repo.Remove(ctx, pa.wt.Path, worktree.RemoveOptions{DeleteBranch: true}); err != nil {
				o.logger.Warn("prepared agent's worktree not removed", "task", pa.id, "err", err)
			}
		}
		if err := os.RemoveAll(o.taskDir(pa.id)); err != nil {
			o.logger.Warn("prepared agent's dir not removed", "task", pa.id, "err", err)
		}
		o.logger.Info("prepared agent let go", "task", pa.id, "why", why)
		o.poke()
	}()
}

// dropAllPrepared lets every agent of the pool go (familiar closes).
func (o *Orchestrator) dropAllPrepared() {
	o.mu.Lock()
	pool := make([]*preparedAgent, 0, len(o.prepared))
	for _, pa := range o.prepared {
		pool = append(pool, pa)
	}
	o.prepared = nil
	o.mu.Unlock()
	for _, pa := range pool {
		o.dropPrepared(pa, "familiar is shutting down")
	}
}

// startPrepared makes the worktree and starts claude with no prompt, as
// startAgent would for the task's first start.
func (o *Orchestrator) startPrepared(pa *preparedAgent, t *persisted) {
	defer close(pa.ready)
	ctx := o.startCtx
	laps := newStartLaps(o.clk)
	defer laps.log(o.logger, pa.id)
	w, err := o.cfg.Repo.Create(ctx, worktree.CreateOptions{TaskID: pa.id, Title: preparedTitle, BaseRef: t.BaseRef})
	if err != nil {
		pa.err = fmt.Errorf("%w: %v", errWorktree, err)
		return
	}
	pa.wt = &protocol.Worktree{Path: w.Path, Branch: w.Branch, BaseRef: w.BaseRef, BaseCommit: w.BaseCommit}
	if w.Listing != nil {
		pa.tracked = w.Listing.Tracked
	}
	t.T.Worktree = pa.wt
	laps.lap("worktree")
	plan, err := o.sandboxPlan(ctx)
	if err != nil {
		pa.err = err
		return
	}
	// The task's first start writes output-1.log (beginStart).
	pa.logPath = filepath.Join(o.cfg.DataDir, "tasks", pa.id, "output-1.log")
	opts, err := o.agentOptions(ctx, t, pa.logPath, nil, pa.tracked, laps, plan)
	if err != nil {
		pa.err = err
		return
	}
	opts.Prompt = ""
	// Its start is what the person waits for at the first prompt (at load
	// 17, started at agentNice 10 it was not up 2 s later in 7 of 12
	// rounds, and the first text took 15 s at p50 against the ACP adapter's
	// 0.8 s, whose claude runs at 0): it starts at the editor's priority and
	// takes agentNice when its task takes it (adoptPrepared).
	opts.Nice = 0
	// And in a session of its own: in the background familiar's it would
	// share that session's autogroup, lowered to agentNice too
	// (procs.SetOwnSessionNice), and at load 3 it was not up 2 s after
	// session/new in 2 of 12 rounds (first text 2.1–3.0 s against the
	// adapter's 0.34 s p50).
	opts.OwnSession = true
	opts.LogFilter = func(w io.Writer) io.WriteCloser {
		return newTerminalOutput(o.masker, w, pa.output, &pa.size, o.clk)
	}
	opts.NoOutputEvents = true
	opts.OnEvent = func(ev agent.Event) {
		if ev.Kind != agent.EventExited {
			pa.event(ev)
			return
		}
		_ = procs.RemoveRecord(o.taskDir(pa.id))
		if !pa.event(ev) {
			// Gone before any task took it: its slot is free.
			o.releasePrepared(pa.id, "its claude exited")
		}
	}
	if o.cfg.StartHook != nil {
		o.cfg.StartHook(ctx, &opts)
	}
	if auth := agent.DetectAuth(sessionEnv(opts), o.clk.Now()); auth.Method == agent.AuthNone {
		pa.err = &authError{problem: auth.Problem}
		return
	}
	pa.mcp, _ = os.ReadFile(opts.MCPConfigPath)
	pa.opts, pa.skills = opts, slices.Clone(t.Skills)
	sess, err := o.cfg.Start(ctx, opts)
	if err != nil {
		pa.err = err
		return
	}
	laps.lap("spawn")
	pa.sess = sess
	if err := procs.WriteRecord(o.taskDir(pa.id), procs.Record{Identity: sess.Identity(), Started: o.clk.Now().UTC()}); err != nil {
		o.logger.Warn("cannot record the prepared agent's process in its task dir", "task", pa.id, "err", err)
	}
}

// adoptPrepared gives the task the agent prepared for it, when it is up
// and everything that shaped its claude (command line, environment,
// config dir, MCP servers, skills, settings) is what the task's own start
// would give; its first prompt is then sent to it. ok is false when the
// task must start a claude of its own: p's worktree is then the prepared
// one, if it was made.
func (o *Orchestrator) adoptPrepared(pa *preparedAgent, gen int, p *persisted, logPath string, others []string, a *actor, laps *startLaps) (sess Session, info protocol.AgentInfo, err error, ok bool) {
	ctx := o.startCtx
	select {
	case <-pa.ready:
	case <-ctx.Done():
		o.dropPrepared(pa, "familiar is shutting down")
		return nil, protocol.AgentInfo{}, ctx.Err(), true
	}
	laps.lap("prepared")
	if pa.wt != nil && p.T.Worktree == nil {
		p.T.Worktree = pa.wt
		a.post(envelope{in: inWorktree{worktree: *pa.wt}, gen: gen})
	}
	stop := func(why string) {
		o.logger.Info("prepared agent not used", "task", pa.id, "why", why)
		if pa.sess != nil {
			o.stopSession(pa.sess, true)
		}
	}
	if pa.sess == nil {
		stop(fmt.Sprintf("its start failed: %v", pa.err))
		return nil, protocol.AgentInfo{}, nil, false
	}
	pa.mu.Lock()
	exited := pa.exited
	pa.mu.Unlock()
	if exited {
		stop("its claude exited")
		return nil, protocol.AgentInfo{}, nil, false
	}
	plan, err := o.sandboxPlan(ctx)
	if err != nil {
		stop("the sandbox check failed")
		return nil, protocol.AgentInfo{}, err, true
	}
	opts, err := o.agentOptions(ctx, p, logPath, others, pa.tracked, laps, plan)
	if err != nil {
		stop("the task's options failed")
		return nil, protocol.AgentInfo{}, err, true
	}
	opts.NoOutputEvents = true // as startAgent's
	if o.cfg.StartHook != nil {
		o.cfg.StartHook(ctx, &opts)
	}
	mcp, _ := os.ReadFile(opts.MCPConfigPath)
	if why := startDiffers(pa.opts, opts); why != "" || logPath != pa.logPath || !bytes.Equal(mcp, pa.mcp) || !slices.Equal(pa.skills, p.Skills) {
		if why == "" {
			why = "its MCP servers, skills or output log"
		}
		stop("the task's start differs: " + why)
		return nil, protocol.AgentInfo{}, nil, false
	}
	if plan.Warn {
		o.pub.publish(p.T.ID, protocol.ServerMessageNotification{Level: protocol.LevelWarning,
			Text: fmt.Sprintf("task %s runs unconfined: %s", p.T.ID, plan.Unconfined)})
	}
	// The prompt first: what claude answers is kept until the task takes
	// it, in order, and a claude that did not take it is not the task's.
	if err := pa.sess.SendPrompt(opts.Prompt); err != nil {
		stop(fmt.Sprintf("it did not take the prompt: %v", err))
		return nil, protocol.AgentInfo{}, nil, false
	}
	// It takes agentNice once its answer begins: until then the person
	// waits for it as for its start. Lowered as its prompt was typed, the
	// first text took 0.59 s p50 / 1.9 s p95 at load 7 against the ACP
	// adapter's 0.44 / 0.53 s (its claude at nice 0), claude being up.
	var lower sync.Once
	onEvent := func(ev agent.Event) {
		if answerBegan(ev) {
			lower.Do(func() {
				if err := pa.sess.LowerPriority(opts.Nice); err != nil {
					o.logger.Warn("the prepared agent's priority is not lowered", "task", pa.id, "nice", opts.Nice, "err", err)
				}
			})
		}
		a.onAgentEvent(gen, ev)
	}
	pub := outputPublisher{o: o, id: a.id}
	pa.attach(onEvent, func(b []byte) { _, _ = pub.Write(b) })
	a.post(envelope{in: inProcess{identity: pa.sess.Identity()}, gen: gen})
	laps.lap("prompt")
	o.logger.Info("prepared agent taken", "task", pa.id, "waited", o.clk.Now().Sub(pa.asked).Round(time.Millisecond))
	return pa.sess, protocol.AgentInfo{PID: pa.sess.PID(), SessionID: pa.sess.SessionID(), ClaudeVersion: o.cfg.CLI.Version,
		Unconfined: plan.Unconfined, Sandbox: plan.Note}, nil, true
}

// answerBegan reports whether ev is the start of an answer to the first
// prompt: what the model said, thought or called, a question, or the turn's
// end.
func answerBegan(ev agent.Event) bool {
	switch ev.Kind {
	case agent.EventQuestion, agent.EventTurnEnded:
		return true
	case agent.EventTranscript:
		return ev.Transcript != nil && ev.Transcript.Kind != transcript.KindPrompt && ev.Transcript.Kind != transcript.KindUsage
	}
	return false
}

// startDiffers names what of two starts' options differs beyond the first
// prompt and what is per start (callbacks, logger), "" if nothing does.
func startDiffers(prepared, task agent.Options) string {
	norm := func(o agent.Options) agent.Options {
		// Nice, OwnSession: a prepared claude starts at 0 in a session of
		// its own and is lowered when taken.
		o.Prompt, o.LogFilter, o.OnEvent, o.Logger, o.Clock, o.Nice, o.OwnSession = "", nil, nil, nil, nil, 0, false
		return o
	}
	a, b := reflect.ValueOf(norm(prepared)), reflect.ValueOf(norm(task))
	for i := range a.NumField() {
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			return a.Type().Field(i).Name
		}
	}
	return ""
}
