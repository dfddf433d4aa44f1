package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/familiar-dev/familiar/sandbox"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/mask"
	"github.com/familiar-dev/familiar/mergequeue"
	"github.com/familiar-dev/familiar/plan"
	"github.com/familiar-dev/familiar/profiles"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
	"github.com/familiar-dev/familiar/worktree"
)

// Notifier sends a notification to every connected client (jsonrpc.Hub).
type Notifier interface {
	Notify(method string, params any)
}

// Config wires an Orchestrator to the repository it serves.
type Config struct {
	Repo      Repository
	Store     *store.Store
	DataDir   string // per-repository state: config dirs, output logs
	Hooks     *agent.HookServer
	CLI       agent.CLI
	CLIErr    error // why claude is unavailable; task/create then fails
	Notifier  Notifier
	Settings  protocol.Settings
	Clock     clock.Clock
	Logger    *slog.Logger
	Version   string
	GitVer    string
	StartHook func(ctx context.Context, opts *agent.Options) // tests adjust agent options (fake API env)
	// SandboxCheck says whether this machine has claude's sandbox; nil is
	// sandbox.Check (tests pretend one is missing).
	SandboxCheck func(ctx context.Context) sandbox.Availability
	// ResumeInterrupted queues tasks a crash left blocked{interrupted} so
	// they continue their sessions (familiar serve --resume-interrupted).
	ResumeInterrupted bool
	// Masker hides secrets in what familiar stores and sends; nil = one
	// built from familiar's own environment.
	Masker *mask.Masker
	// Skills are the workspace's skills (watched); nil loads them per use.
	Skills *profiles.Skills
	// Headless means nobody can answer questions (familiar run): every
	// question times out after the approval timeout.
	Headless bool
	// StartBackoff is the first wait before retrying a failed agent start;
	// it doubles each time (default 1 s).
	StartBackoff time.Duration
	// Start starts an agent; nil means agent.Start (tests of the runner
	// pass a fake).
	Start StartFunc
	// Resident, if set, is the resident memory of a process tree in bytes
	// (tests); else it is read from the process table (warmcache.go).
	Resident func(pid int) uint64
}

// Orchestrator owns the tasks of one repository. Each task is an actor
// (actor.go); the orchestrator keeps the map of them, the queue's order and
// the slots, and never does I/O under its lock.
type Orchestrator struct {
	cfg    Config
	logger *slog.Logger
	clk    clock.Clock
	pub    *publisher
	// sandboxFound is the machine's sandbox once a check found one.
	sandboxFound atomic.Pointer[sandbox.Availability]

	ctx     context.Context // cancelled by Close once every agent has gone
	cancel  context.CancelFunc
	closing chan struct{} // closed when Close starts: waiting requests give up
	// startCtx is cancelled when Close starts: worktree creation and agent
	// starts in progress are called off.
	startCtx    context.Context
	startCancel context.CancelFunc
	wg          sync.WaitGroup // scheduler, actors' mailboxes and effects
	agents      agentCount     // agents starting or running

	kick chan struct{} // 1-buffered: the queue may be able to start something
	fc   *forecaster   // the conflict forecast; nil when the repository has none
	// settingsMu serialises settings/update: each applies to the last,
	// saved before it applies. Never held with mu while saving.
	settingsMu sync.Mutex
	trimMu     sync.Mutex        // one check of the idle claudes at a time (warmcache.go)
	mq         *mergequeue.Queue // the merge queue (package mergequeue; queue.go)
	plans      *plan.Planner     // the plans (package plan; plans.go)
	masker     *mask.Masker
	dirs       profiles.Dirs // where workspace and global profiles and skills live

	// settings are replaced whole (settings/update) and read without a
	// lock: every step of every task reads them.
	settings atomic.Pointer[protocol.Settings]

	mu      sync.Mutex
	tasks   map[string]*actor   // guarded by mu
	order   map[string]queueKey // guarded by mu; queue order of every task
	nextSeq int64               // guarded by mu
	// queueCache is the queue in start order and the number of live tasks,
	// for the queue fields of views; rebuilt when invalidated.
	queueCache   []*actor                  // guarded by mu
	queueIndex   map[string]int            // guarded by mu
	queueRunning int                       // guarded by mu
	queueValid   bool                      // guarded by mu
	durations    []time.Duration           // guarded by mu; recent run times, for server/stats
	history      durationHistory           // guarded by mu; successful run times, for the estimates
	queueStarts  map[string]time.Time      // guarded by mu; queued tasks' expected starts
	queueEnds    map[string]time.Time      // guarded by mu; live tasks' expected ends
	queueBuiltAt time.Time                 // guarded by mu; when the above were estimated
	approvals    []time.Duration           // guarded by mu; response times of people to questions
	toolUses     map[string]int            // guarded by mu; tool calls by name
	warned       map[string]bool           // guarded by mu; autonomy warnings sent (autonomy.go)
	closed       bool                      // guarded by mu
	limit        usageLimit                // guarded by mu; a known usage limit (limits.go)
	prepared     map[string]*preparedAgent // guarded by mu; task/prepare's pool (prepared.go)
}

// queueKey orders queued tasks: priority (higher first), then FIFO.
type queueKey struct {
	priority int
	seq      int64
}

// New loads the tasks of the store and starts the scheduler. Tasks that were
// live when familiar last stopped are marked blocked{interrupted}: their
// agents did not survive.
func New(cfg Config) (*Orchestrator, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Settings.MaxConcurrent == 0 {
		cfg.Settings = protocol.DefaultSettings()
	}
	if cfg.StartBackoff <= 0 {
		cfg.StartBackoff = time.Second
	}
	if cfg.Start == nil {
		cfg.Start = startClaude
	}
	o := &Orchestrator{
		cfg:      cfg,
		logger:   cfg.Logger,
		clk:      cfg.Clock,
		kick:     make(chan struct{}, 1),
		closing:  make(chan struct{}),
		tasks:    map[string]*actor{},
		order:    map[string]queueKey{},
		toolUses: map[string]int{},
		dirs:     profiles.DirsFor(cfg.Repo.Root()),
	}
	o.agents.init()
	o.settings.Store(&cfg.Settings)
	o.masker = cfg.Masker
	if o.masker == nil {
		o.masker = mask.NewMasker(os.Environ())
	}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	o.startCtx, o.startCancel = context.WithCancel(o.ctx)
	o.pub = newPublisher(cfg.Store, cfg.Notifier, cfg.Logger)
	o.mq = mergequeue.New(mergequeue.Config{Host: mergeQueueHost{o}, Repo: cfg.Repo, Store: cfg.Store, DataDir: cfg.DataDir,
		Clock: o.clk, Logger: o.logger, Ctx: o.startCtx, NotUndoable: notUndoable})
	if err := o.load(); err != nil {
		o.cancel()
		o.wg.Wait()
		o.pub.close()
		return nil, err
	}
	o.recoverLeftovers(cfg.ResumeInterrupted)
	o.reconcileMerges()
	o.mq.Load(o.mq.StopLeftoverVerifies(time.Duration(o.settingsNow().TermGraceSec) * time.Second))
	o.plans = plan.New(plan.Config{Host: planHost{o}, Store: cfg.Store, Clock: o.clk, Logger: o.logger, Ctx: o.startCtx})
	o.wg.Add(2)
	go o.schedule()
	go o.retentionLoop()
	if o.fc = newForecaster(o); o.fc != nil {
		o.wg.Add(1)
		go o.fc.loop()
		o.fc.touchAll()
	}
	o.poke()
	return o, nil
}

// load reads every task back and settles what the last run left live.
func (o *Orchestrator) load() error {
	recs, unreadable, err := o.cfg.Store.AllTasks()
	if err != nil {
		return fmt.Errorf("load tasks: %w", err)
	}
	for _, id := range unreadable {
		o.logger.Error("skipping unreadable task", "id", id)
	}
	var (
		loaded []*actor
		done   []protocol.Task // for the estimates' history
	)
	o.mu.Lock()
	for _, rec := range recs {
		var p persisted
		if err := json.Unmarshal(rec.Data, &p); err != nil {
			o.logger.Error("skipping unreadable task", "id", rec.ID, "err", err)
			continue
		}
		done = append(done, p.T)
		a := newActor(o, p)
		o.tasks[p.T.ID] = a
		o.order[p.T.ID] = queueKey{priority: p.T.Priority, seq: p.Seq}
		o.nextSeq = max(o.nextSeq, p.Seq)
		loaded = append(loaded, a)
	}
	o.history = historyOf(done)
	o.mu.Unlock()
	for _, a := range loaded {
		if _, err := a.call(context.Background(), inLoaded{}); err != nil {
			o.logger.Error("load task", "id", a.id, "err", err)
		}
	}
	return nil
}

// Close stops every agent gracefully (they stay resumable: blocked
// {interrupted}), waits for every goroutine and flushes notifications. The
// tasks stay in the store. Requests still waiting on a task are answered
// with an error at once.
func (o *Orchestrator) Close() error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	o.stopLimitTimerLocked()
	actors := o.actorsLocked()
	o.mu.Unlock()
	close(o.closing)
	o.startCancel()
	o.dropAllPrepared()
	for _, a := range actors {
		a.post(envelope{in: cmdShutdown{}})
	}
	o.agents.Wait()
	for _, a := range actors {
		a.close()
	}
	o.cancel()
	o.mq.Wait()
	o.plans.Wait()
	o.wg.Wait()
	o.pub.close()
	return nil
}

// actors is a snapshot of the tasks' actors, to visit without holding mu:
// what is done with each (a cancel, a git forecast, a post) may take mu
// itself or take long.
func (o *Orchestrator) actors() []*actor {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.actorsLocked()
}

func (o *Orchestrator) actorsLocked() []*actor {
	out := make([]*actor, 0, len(o.tasks))
	for _, a := range o.tasks {
		out = append(out, a)
	}
	return out
}

// poke wakes the scheduler.
func (o *Orchestrator) poke() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// env is what the state machine may know of the world.
func (o *Orchestrator) env() env {
	s := o.settingsNow()
	return env{
		now:              o.clk.Now(),
		approvalTimeout:  time.Duration(s.ApprovalTimeoutSec) * time.Second,
		headless:         o.cfg.Headless,
		startBackoff:     o.cfg.StartBackoff,
		maxStartFailures: maxStartFailures,
		repoRoot:         o.cfg.Repo.Root(),
		dataDir:          o.cfg.DataDir,
		maxBudgetUSD:     s.MaxBudgetUsd,
		sessionMCP:       slices.Sorted(maps.Keys(s.McpServers)),

		resumeAfterUsageLimit: s.ResumeAfterUsageLimit,
		warmFor:               time.Duration(s.WarmAgentSec) * time.Second,
	}
}

// maxStartFailures is how many transient start failures (spawn errors, an
// API that stays overloaded until claude gives up) a task survives.
const maxStartFailures = 3

func (o *Orchestrator) settingsNow() protocol.Settings { return *o.settings.Load() }

func newTaskID() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return "t" + hex.EncodeToString(b)
}

// taskDir holds a task's claude config dir and output logs.
func (o *Orchestrator) taskDir(id string) string {
	return filepath.Join(o.cfg.DataDir, "tasks", id)
}

func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

// get returns a task's actor or NotFound.
func (o *Orchestrator) get(id string) (*actor, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	a := o.tasks[id]
	if a == nil {
		return nil, protocol.NotFound("task", id)
	}
	return a, nil
}

// queueLocked returns the queued tasks in start order.
func (o *Orchestrator) queueLocked() []*actor {
	var q []*actor
	for _, a := range o.tasks {
		// A task a git operation owns is skipped (it cannot start then).
		if v := a.view(); v.T.Status == protocol.StatusQueued && v.op == opNone {
			q = append(q, a)
		}
	}
	sort.Slice(q, func(i, j int) bool {
		ki, kj := o.order[q[i].id], o.order[q[j].id]
		if ki.priority != kj.priority {
			return ki.priority > kj.priority
		}
		return ki.seq < kj.seq
	})
	return q
}

// slotsLocked counts the slots taken: live tasks, and finished ones whose
// claude is kept warm for a follow-up (warm lists those, oldest finished
// first, the ones to let go when the queue needs a slot).
func (o *Orchestrator) slotsLocked() (n int, warm []*actor) {
	for _, a := range o.tasks {
		v := a.view()
		switch {
		case v.T.Status.Live():
			n++
		case v.warm:
			n++
			warm = append(warm, a)
		}
	}
	slices.SortFunc(warm, func(a, b *actor) int { return a.view().T.FinishedAt.Compare(b.view().T.FinishedAt) })
	return n, warm
}

// queueChanged invalidates the cached queue order.
func (o *Orchestrator) queueChanged() {
	o.mu.Lock()
	o.queueValid = false
	o.mu.Unlock()
}

// fillEstimates sets the queue fields on a snapshot: queuePosition,
// estimatedStartSec and estimatedStartAt while queued, estimatedRemainingSec
// and estimatedEndAt while live (estimate.go).
func (o *Orchestrator) fillEstimates(snap *protocol.Task) {
	queued := snap.Status == protocol.StatusQueued
	if !queued && !snap.Status.Live() {
		return
	}
	now := o.clk.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	// Rebuilt when the queue changed, and every estimateRefresh: a task
	// past its expected length moves the ones after it.
	if !o.queueValid || now.Sub(o.queueBuiltAt) > estimateRefresh || now.Before(o.queueBuiltAt) {
		o.rebuildQueueLocked(now)
	}
	if !queued {
		if end, ok := o.queueEnds[snap.ID]; ok && !end.IsZero() { // zero: no history to estimate it from
			snap.EstimatedEndAt = end
			rem := max(int(end.Sub(now).Seconds()), 0)
			snap.EstimatedRemainingSec = &rem
		}
		return
	}
	q := o.queueCache
	pos, ok := o.queueIndex[snap.ID] // 0-based here; clients see 1 for the next task to start
	if !ok {
		pos = len(q) // not yet among the views (its transition is in progress)
	}
	p := pos + 1
	snap.QueuePosition = &p
	at, ok := o.queueStarts[snap.ID]
	if !ok {
		// Not among the views yet: after the last one known.
		at = now
		if n := len(q); n > 0 {
			at = time.Time{}
			last, d := o.queueStarts[q[n-1].id], o.history.expected(q[n-1].view().T.Profile, q[n-1].view().T.Type)
			if !last.IsZero() && d > 0 {
				at = last.Add(d)
			}
		}
	}
	if at.IsZero() {
		return // no history to estimate it from: no estimate rather than a guess
	}
	est := max(int(at.Sub(now).Seconds()), 0)
	if est == 0 {
		at = now
	}
	snap.EstimatedStartSec = &est
	snap.EstimatedStartAt = at
}

// estimateRefresh is how long the queue's estimates are reused.
const estimateRefresh = 15 * time.Second

func (o *Orchestrator) rebuildQueueLocked(now time.Time) {
	o.queueCache = o.queueLocked()
	o.queueIndex = make(map[string]int, len(o.queueCache))
	for i, a := range o.queueCache {
		o.queueIndex[a.id] = i
	}
	var (
		liveIDs []string
		runs    []liveRun
	)
	for id, a := range o.tasks {
		if t := a.view().T; t.Status.Live() {
			liveIDs = append(liveIDs, id)
			runs = append(runs, liveRun{startedAt: t.StartedAt, expected: o.history.expected(t.Profile, t.Type)})
		}
	}
	o.queueRunning = len(runs)
	queued := make([]time.Duration, len(o.queueCache))
	for i, a := range o.queueCache {
		t := a.view().T
		queued[i] = o.history.expected(t.Profile, t.Type)
	}
	ends, starts := estimateQueue(now, o.settingsNow().MaxConcurrent, runs, queued)
	o.queueEnds = make(map[string]time.Time, len(ends))
	for i, id := range liveIDs {
		o.queueEnds[id] = ends[i]
	}
	o.queueStarts = make(map[string]time.Time, len(starts))
	for i, a := range o.queueCache {
		o.queueStarts[a.id] = starts[i]
	}
	o.queueBuiltAt = now
	o.queueValid = true
}

// viewOf is the protocol view of a task with its queue fields.
func (o *Orchestrator) viewOf(v *taskView) *protocol.Task {
	snap := v.T
	o.fillEstimates(&snap)
	snap.UndoableUntil = undoableUntil(snap, v.merge, time.Duration(o.settingsNow().UndoWindowSec)*time.Second, o.clk.Now())
	return &snap
}

// slotFreed records a finished run's duration and lets the queue move.
func (o *Orchestrator) slotFreed(eff effSlotFreed) {
	ran := eff.ranFor
	o.mu.Lock()
	if eff.succeeded {
		o.history.add(eff.profile, eff.typ, ran)
	}
	if ran > 0 {
		o.durations = append(o.durations, ran)
		if len(o.durations) > 20 {
			o.durations = o.durations[1:]
		}
	}
	o.queueValid = false
	o.mu.Unlock()
	o.poke()
}

func (o *Orchestrator) countTool(tool string) {
	o.mu.Lock()
	o.toolUses[tool]++
	o.mu.Unlock()
}

// liveTitles are the titles of the other live tasks (the prompt mentions
// them so agents don't step on each other).
func (o *Orchestrator) liveTitles(except string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for id, a := range o.tasks {
		if id != except && a.view().T.Status.Live() {
			out = append(out, a.view().T.Title)
		}
	}
	sort.Strings(out)
	return out
}

// stopSession terminates an agent (SIGTERM → grace → SIGKILL of its tree)
// and waits for it; now skips the grace.
func (o *Orchestrator) stopSession(sess Session, now bool) {
	grace := time.Duration(o.settingsNow().TermGraceSec) * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), grace+30*time.Second)
	defer cancel()
	if now {
		c, cancelNow := context.WithCancel(ctx)
		cancelNow() // a done context: procs goes straight to SIGKILL
		ctx = c
	}
	if err := sess.Stop(ctx); err != nil && ctx.Err() == nil {
		o.logger.Warn("stop agent", "pid", sess.PID(), "err", err)
	}
}

// goStopSession stops an agent in the background; its exit event settles
// the task.
func (o *Orchestrator) goStopSession(sess Session, now bool) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		o.stopSession(sess, now)
	}()
}

func (o *Orchestrator) worktreeOf(p *persisted) (worktree.Worktree, bool) {
	w := p.T.Worktree
	if w == nil {
		return worktree.Worktree{TaskID: p.T.ID}, false
	}
	return worktree.Worktree{Path: w.Path, Branch: w.Branch, BaseRef: w.BaseRef, BaseCommit: w.BaseCommit, RepoRoot: o.cfg.Repo.Root(), TaskID: p.T.ID}, true
}
