package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/mask"
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
	Repo      *worktree.Repo
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
}

// Orchestrator owns the tasks of one repository.
type Orchestrator struct {
	cfg    Config
	logger *slog.Logger
	clk    clock.Clock
	pub    *publisher

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // scheduler and task runners

	kick   chan struct{} // 1-buffered: the queue may be able to start something
	masker *mask.Masker
	dirs   profiles.Dirs // where workspace and global profiles and skills live

	mu        sync.Mutex
	settings  protocol.Settings // guarded by mu
	tasks     map[string]*task  // guarded by mu
	durations []time.Duration   // guarded by mu; recent run times, for estimatedStartSec
	approvals []time.Duration   // guarded by mu; response times of people to questions
	toolUses  map[string]int    // guarded by mu; tool calls by name
	closed    bool              // guarded by mu
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
	o := &Orchestrator{
		cfg:      cfg,
		logger:   cfg.Logger,
		clk:      cfg.Clock,
		kick:     make(chan struct{}, 1),
		settings: cfg.Settings,
		tasks:    map[string]*task{},
		toolUses: map[string]int{},
		dirs:     profiles.DirsFor(cfg.Repo.Root()),
	}
	o.masker = cfg.Masker
	if o.masker == nil {
		o.masker = mask.NewMasker(os.Environ())
	}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	o.pub = newPublisher(cfg.Store, cfg.Notifier, cfg.Logger)
	if err := o.load(); err != nil {
		o.pub.close()
		return nil, err
	}
	if o.cfg.StartBackoff <= 0 {
		o.cfg.StartBackoff = time.Second
	}
	o.recoverLeftovers(cfg.ResumeInterrupted)
	o.wg.Add(2)
	go o.schedule()
	go o.retentionLoop()
	o.poke()
	return o, nil
}

func (o *Orchestrator) load() error {
	cursor := ""
	for {
		recs, _, next, err := o.cfg.Store.ListTasks(store.TaskFilter{Limit: 200, Cursor: cursor})
		if err != nil {
			return fmt.Errorf("load tasks: %w", err)
		}
		for _, rec := range recs {
			var t task
			if err := json.Unmarshal(rec.Data, &t.persisted); err != nil {
				o.logger.Error("skipping unreadable task", "id", rec.ID, "err", err)
				continue
			}
			if live(t.T.Status) {
				t.T.Status = protocol.StatusBlocked
				t.T.Blocked = &protocol.Blocked{Reason: protocol.BlockedInterrupted, Detail: "familiar stopped while the agent was running"}
				t.T.PendingQuestion = nil
				t.T.Activity = protocol.ActivityIdle
				o.save(&t)
			}
			o.tasks[t.T.ID] = &t
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
}

// Close stops every agent gracefully, waits for the task goroutines and
// flushes notifications. The tasks stay in the store.
func (o *Orchestrator) Close() error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	var running []*task
	for _, t := range o.tasks {
		if t.sess != nil {
			running = append(running, t)
		}
	}
	o.mu.Unlock()
	var wg sync.WaitGroup
	for _, t := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.stopAgent(t, protocol.BlockedInterrupted, "familiar shut down")
		}()
	}
	wg.Wait()
	o.cancel()
	o.wg.Wait()
	o.pub.close()
	return nil
}

// poke wakes the scheduler.
func (o *Orchestrator) poke() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

func (o *Orchestrator) settingsNow() protocol.Settings {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.settings
}

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

// mapError turns errors of the packages below into protocol errors.
func mapError(err error, what string) error {
	var pe *protocol.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		return err
	case errors.Is(err, worktree.ErrInvalid):
		return protocol.InvalidParams("baseRef", fmt.Sprintf("%s: %v", what, err))
	case errors.Is(err, worktree.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return protocol.NotFound(what, err.Error())
	case errors.Is(err, worktree.ErrConflict):
		return protocol.Conflict(fmt.Sprintf("%s: %v", what, err), nil)
	case errors.Is(err, agent.ErrCLIUnavailable), errors.Is(err, worktree.ErrUnavailable):
		return protocol.Unavailable(fmt.Sprintf("%s: %v", what, err))
	}
	return fmt.Errorf("%s: %w", what, err)
}

func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}
