package mergequeue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/protocol"
)

// maxQueueAttempts: a task that fails the queue this often is set aside
// (blocked{merge}).
const maxQueueAttempts = 2

// verifyShown is how much of a verify command's output the queue shows and
// hands back (its end: where test runners say what failed).
const verifyShown = 4000

// hunkLines bounds the conflicting hunks a hand-back prompt carries.
const hunkLines = 120

// Config is what a Queue is made of.
type Config struct {
	Host  Host
	Repo  Integration
	Store Store
	// DataDir is familiar's data dir of the repository: running verify
	// commands are recorded under DataDir/verify.
	DataDir string
	Clock   clock.Clock
	Logger  *slog.Logger
	// Ctx ends when familiar shuts down: a running queue stops after its
	// step, its verify commands' trees with it.
	Ctx context.Context
	// NotUndoable is what an undo cannot take back, said with queue/undo.
	NotUndoable string
}

// Queue is the repository's merge queue: the running one, or the last.
type Queue struct {
	host        Host
	repo        Integration
	store       Store
	dataDir     string
	clk         clock.Clock
	logger      *slog.Logger
	ctx         context.Context
	closing     <-chan struct{}
	notUndoable string
	// wg: the queue's goroutine and its verify commands.
	wg sync.WaitGroup

	mu      sync.Mutex
	q       *protocol.Queue // guarded by mu
	running bool            // guarded by mu
	cancel  bool            // guarded by mu
	// merged are the queue's merges in order, for queue/undo.
	merged []string // guarded by mu: task ids
	// moved are the task branches the queue caused to move (a conflict
	// handed to the agent, resolved by a commit of its own), with where
	// each was before: queue/undo puts them back.
	moved map[string]string // guarded by mu
	// verify is the running queue's verify command as written (Queue.Verify
	// is what is shown of it: masked).
	verify string // guarded by mu
	// wake: a task handed back may be ready again.
	wake chan struct{}
	// handedBack counts tasks working on a hand-back (actors poke wake
	// only then).
	handedBack int // guarded by mu
	// added are tasks joined to the running queue (Join) that its
	// goroutine has not taken yet; ending: the goroutine found nothing
	// left and is ending, so nothing may join.
	added  []string // guarded by mu
	ending bool     // guarded by mu
	// told: a queue familiar stopped has been said (store.go);
	// notice is that, for the first client to initialize.
	told   bool   // guarded by mu
	notice string // guarded by mu
}

// New makes the repository's queue; Load reads back the last one.
func New(cfg Config) *Queue {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Queue{host: cfg.Host, repo: cfg.Repo, store: cfg.Store, dataDir: cfg.DataDir, clk: cfg.Clock,
		logger: cfg.Logger, ctx: cfg.Ctx, closing: cfg.Ctx.Done(), notUndoable: cfg.NotUndoable,
		wake: make(chan struct{}, 1), moved: map[string]string{}}
}

// Wait waits for the queue's goroutine once Ctx has ended.
func (m *Queue) Wait() { m.wg.Wait() }

// Start is the start of queue/merge, once the orchestrator has checked the
// tasks (ready, their bases clean): ids in that order, into base.
type Start struct {
	ID       string
	IDs      []string
	Titles   []string
	Base     string
	Strategy protocol.MergeStrategy
	Verify   string
}

// Run starts a queue (one at a time).
func (m *Queue) Run(st Start) (*protocol.Queue, error) {
	// What is shown and kept of the command is masked; the queue runs it
	// as written.
	shownVerify := m.host.Mask(st.Verify)
	parallel := m.parallel()
	m.mu.Lock()
	if m.running {
		m.mu.Unlock()
		return nil, protocol.FailedPrecondition("a merge queue is running; queue/cancel stops it", "")
	}
	if m.ctx.Err() != nil {
		m.mu.Unlock()
		return nil, protocol.Unavailable("familiar is shutting down")
	}
	q := &protocol.Queue{ID: st.ID, State: protocol.QueueRunning, Strategy: st.Strategy, Verify: shownVerify,
		BaseRef: st.Base, StartedAt: m.clk.Now().UTC(), Items: []protocol.QueueItem{}, Parallel: parallel}
	for i, id := range st.IDs {
		q.Items = append(q.Items, protocol.QueueItem{TaskID: id, Title: st.Titles[i], State: protocol.QueueItemWaiting})
	}
	m.q, m.running, m.cancel, m.merged, m.handedBack, m.moved = q, true, false, nil, 0, map[string]string{}
	m.added, m.ending = nil, false
	m.verify = st.Verify
	m.mu.Unlock()
	m.host.Audit("", "queue.started", "user", map[string]any{"queueId": q.ID, "ids": st.IDs, "strategy": st.Strategy, "verify": shownVerify})
	snap := m.update(nil)
	m.wg.Add(1)
	go m.run(slices.Clone(st.IDs))
	return snap, nil
}

// Status is the running queue, else the last one; nil when none ran.
func (m *Queue) Status() *protocol.Queue {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snapshotLocked()
}

func (m *Queue) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// TaskChanged is told of every task/updated: a task handed back that
// is ready again (or ended otherwise) wakes the queue.
func (m *Queue) TaskChanged() {
	m.mu.Lock()
	n := m.handedBack
	m.mu.Unlock()
	if n > 0 {
		m.poke()
	}
}

// snapshot copies the queue for a reply or a notification.
func (m *Queue) snapshotLocked() *protocol.Queue {
	if m.q == nil {
		return nil
	}
	c := *m.q
	c.Items = slices.Clone(m.q.Items)
	for i := range c.Items {
		c.Items[i].Files = slices.Clone(c.Items[i].Files)
		c.Items[i].HandBacks = slices.Clone(c.Items[i].HandBacks)
	}
	return &c
}

// update changes the queue under its lock and announces it.
func (m *Queue) update(change func(q *protocol.Queue)) *protocol.Queue {
	m.mu.Lock()
	if change != nil {
		change(m.q)
	}
	snap := m.snapshotLocked()
	m.saveLocked()
	m.mu.Unlock()
	m.host.Publish("", protocol.QueueUpdatedNotification{Queue: *snap})
	return snap
}

func itemOf(q *protocol.Queue, id string) *protocol.QueueItem {
	for i := range q.Items {
		if q.Items[i].TaskID == id {
			return &q.Items[i]
		}
	}
	return nil
}

// verifyOutput is what the queue shows of a verify command's output: masked,
// its end when long, with the reference of the whole.
func (m *Queue) verifyOutput(id, out string) (shown, ref string) {
	out = m.host.Mask(strings.ToValidUTF8(out, "\uFFFD"))
	if len(out) <= verifyShown {
		return out, ""
	}
	_, ref = m.host.ClipText(id, out)
	cut := len(out) - verifyShown
	for cut < len(out) && !utf8.RuneStart(out[cut]) {
		cut++
	}
	return "…" + out[cut:], ref
}

// Cancel is queue/cancel: the queue stops after its current step.
func (m *Queue) Cancel() (*protocol.Queue, error) {
	m.mu.Lock()
	if !m.running {
		m.mu.Unlock()
		return nil, protocol.FailedPrecondition("no merge queue is running", "")
	}
	m.cancel = true
	snap := m.snapshotLocked()
	m.mu.Unlock()
	m.poke()
	return snap, nil
}

// Undo is queue/undo: the last queue's merges undone in reverse
// order, each as task/undo does it.
func (m *Queue) Undo(ctx context.Context) (*protocol.Queue, error) {
	m.mu.Lock()
	if m.running {
		m.mu.Unlock()
		return nil, protocol.FailedPrecondition("the merge queue is running; queue/cancel stops it first", "")
	}
	if m.q == nil {
		m.mu.Unlock()
		return nil, protocol.FailedPrecondition("no merge queue has run since familiar started", "")
	}
	merged := slices.Clone(m.merged)
	moved := maps.Clone(m.moved)
	m.mu.Unlock()
	for i := len(merged) - 1; i >= 0; i-- {
		id := merged[i]
		if err := m.host.UndoMerge(ctx, id); err != nil {
			var pe *protocol.Error
			msg := err.Error()
			if errors.As(err, &pe) {
				msg = pe.Message
			}
			m.update(nil)
			return nil, protocol.FailedPrecondition(fmt.Sprintf("undoing the queue's merge of %s: %s (the merges after it are undone)", id, msg), "")
		}
		m.mu.Lock()
		m.merged = m.merged[:i]
		m.mu.Unlock()
		m.update(func(q *protocol.Queue) {
			if it := itemOf(q, id); it != nil {
				it.State = protocol.QueueItemUndone
			}
		})
	}
	// The branches the queue moved (a conflict handed to the agent, and
	// its resolution) go back too: each task's change is its own again.
	var restoreErrs []string
	for _, id := range slices.Sorted(maps.Keys(moved)) {
		if err := m.host.RestoreBranch(ctx, id, moved[id]); err != nil {
			restoreErrs = append(restoreErrs, fmt.Sprintf("%s: %s", id, errorWords(err)))
			continue
		}
		m.mu.Lock()
		delete(m.moved, id)
		m.mu.Unlock()
	}
	snap := m.update(func(q *protocol.Queue) { q.State = protocol.QueueUndone })
	if len(restoreErrs) > 0 {
		return nil, protocol.FailedPrecondition("the queue's merges are undone, but these task branches could not be put back where they were before the queue: "+strings.Join(restoreErrs, "; "), "")
	}
	if len(merged) > 0 {
		// One warning for the queue: one per task (task/undo's) buried the
		// editor in as many notifications saying the same.
		m.host.Publish("", protocol.ServerMessageNotification{Level: protocol.LevelWarning,
			Text: fmt.Sprintf("Undid the merge queue's %s into %s, but %s Each task's undone work is kept under refs/familiar/undo/.",
				map[bool]string{true: "merge", false: fmt.Sprintf("%d merges", len(merged))}[len(merged) == 1], snap.BaseRef, m.notUndoable)})
	}
	return snap, nil
}

// Running: a queue is running.
func (m *Queue) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running
}

// MovedBranches are the task branches the running or last queue moved (a
// conflict handed to the agent, resolved by a commit of its own), with
// where each was before: a plan's undo puts them back as queue/undo does.
func (m *Queue) MovedBranches() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.moved)
}

// ItemState is the task's state in the running queue ("" when it is not
// in one).
func (m *Queue) ItemState(id string) protocol.QueueItemState {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.running || m.q == nil {
		return ""
	}
	if it := itemOf(m.q, id); it != nil {
		return it.State
	}
	return ""
}

// Join adds ready tasks to the running queue, behind the tasks it has, when
// it merges into base by strategy with the same verify command (as
// written): a plan's step that is ready while the queue runs need not wait
// for its end to be merged. False when no queue runs, or it is ending, or
// merges elsewhere or otherwise; the caller then starts one when it ends.
// A task already in the queue is left as it is.
func (m *Queue) Join(ids, titles []string, base string, strategy protocol.MergeStrategy, verify string) bool {
	m.mu.Lock()
	if !m.running || m.cancel || m.ending || m.q == nil || m.q.BaseRef != base || m.q.Strategy != strategy || m.verify != verify {
		m.mu.Unlock()
		return false
	}
	var joined []string
	for i, id := range ids {
		if itemOf(m.q, id) != nil {
			continue
		}
		m.q.Items = append(m.q.Items, protocol.QueueItem{TaskID: id, Title: titles[i], State: protocol.QueueItemWaiting})
		m.added = append(m.added, id)
		joined = append(joined, id)
	}
	queueID := m.q.ID
	m.mu.Unlock()
	if len(joined) > 0 {
		m.host.Audit("", "queue.joined", "familiar", map[string]any{"queueId": queueID, "ids": joined})
		m.update(nil)
		m.poke()
	}
	return true
}

// takeAdded is the tasks joined since the goroutine last looked.
func (m *Queue) takeAdded() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.added
	m.added = nil
	return a
}

// finishing ends the queue's intake: false (and nothing changes) when
// tasks joined meanwhile.
func (m *Queue) finishing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.added) > 0 {
		return false
	}
	m.ending = true
	return true
}
