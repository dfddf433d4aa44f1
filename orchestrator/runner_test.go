package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/agent/screen"
	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
	"github.com/familiar-dev/familiar/worktree"
)

// The runner with fakes for git and claude: the actor, its effects and the
// scheduler, wired as in production, in milliseconds. The end-to-end tests
// do the same with the real claude and git.

type fakeRepo struct {
	mu      sync.Mutex
	created int
	merges  int
}

func (r *fakeRepo) Root() string                                  { return "/repo" }
func (r *fakeRepo) CurrentBranch(context.Context) (string, error) { return "main", nil }
func (r *fakeRepo) Create(ctx context.Context, o worktree.CreateOptions) (worktree.Worktree, error) {
	r.mu.Lock()
	r.created++
	r.mu.Unlock()
	return worktree.Worktree{Path: "/wt/" + o.TaskID, Branch: "familiar/" + o.TaskID, BaseRef: "main", BaseCommit: "abc"}, nil
}
func (r *fakeRepo) CheckRef(context.Context, string) error { return nil }
func (r *fakeRepo) UndoRefs(context.Context, string) ([]worktree.Undone, error) {
	return nil, nil
}
func (r *fakeRepo) CheckRefAt(context.Context, string, string) error      { return nil }
func (r *fakeRepo) CheckPath(string) error                                { return nil }
func (r *fakeRepo) ListTracked(context.Context, string) ([]string, error) { return nil, nil }
func (r *fakeRepo) Checkpoint(context.Context, worktree.Worktree, string) (worktree.Commit, bool, error) {
	return worktree.Commit{}, false, nil
}
func (r *fakeRepo) Submodules(context.Context, worktree.Worktree) ([]worktree.Submodule, error) {
	return nil, nil
}
func (r *fakeRepo) ChangedFiles(context.Context, worktree.Worktree) ([]worktree.FileChange, error) {
	return []worktree.FileChange{{Path: "a.txt", Status: "added"}}, nil
}
func (r *fakeRepo) Commits(context.Context, worktree.Worktree) ([]worktree.Commit, error) {
	return []worktree.Commit{{SHA: "def", Subject: "familiar: x"}}, nil
}
func (r *fakeRepo) Diff(context.Context, worktree.Worktree, string) (string, error) { return "", nil }
func (r *fakeRepo) FileTexts(context.Context, worktree.Worktree, worktree.FileChange) (string, string, bool, error) {
	return "", "", false, nil
}
func (r *fakeRepo) UndoMerge(context.Context, string, worktree.MergeResult) error { return nil }
func (r *fakeRepo) StepBack(context.Context, worktree.Worktree) (string, error)   { return "abc", nil }
func (r *fakeRepo) Remove(context.Context, string, worktree.RemoveOptions) error  { return nil }
func (r *fakeRepo) KeepOnly(_ context.Context, _, after string, _ []string, _ string) (string, error) {
	return after, nil
}

// The merge queue's git is not the runner's business.
func (r *fakeRepo) Tip(context.Context, string) (string, error) { return "abc", nil }
func (r *fakeRepo) Candidate(context.Context, string, worktree.Worktree, worktree.Strategy, string) (string, error) {
	return "def", nil
}
func (r *fakeRepo) LeftoverMarkers(context.Context, string, string) ([]worktree.Marker, error) {
	return nil, nil
}
func (r *fakeRepo) Advance(ctx context.Context, base, before, after string) (worktree.MergeResult, error) {
	r.mu.Lock()
	r.merges++
	r.mu.Unlock()
	select { // slow enough for a second request to overlap
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done():
	}
	return worktree.MergeResult{Base: base, Before: before, After: after}, nil
}
func (r *fakeRepo) Contains(context.Context, string, string) (bool, error)       { return false, nil }
func (r *fakeRepo) RemoveScratch(context.Context) error                          { return nil }
func (r *fakeRepo) Scratch(context.Context, int, string) (string, error)         { return "", nil }
func (r *fakeRepo) CheckBaseClean(context.Context, string) error                 { return nil }
func (r *fakeRepo) AbortBringBase(context.Context, worktree.Worktree) error      { return nil }
func (r *fakeRepo) BranchTip(context.Context, worktree.Worktree) (string, error) { return "abc", nil }
func (r *fakeRepo) RestoreBranch(context.Context, worktree.Worktree, string) error {
	return nil
}
func (r *fakeRepo) BringBase(context.Context, worktree.Worktree, string, worktree.Strategy) error {
	return nil
}
func (r *fakeRepo) ConflictHunks(worktree.Worktree, []string, int) string { return "" }

// fakeSession is an agent whose events the test sends.
type fakeSession struct {
	opts    agent.Options
	done    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	answers []agent.Answer
	prompts []string
	lowered int // the niceness LowerPriority gave it
}

func (s *fakeSession) SessionID() string        { return "sess-1" }
func (s *fakeSession) PID() int                 { return 4242 }
func (s *fakeSession) Identity() procs.Identity { return procs.Identity{PID: 4242} }
func (s *fakeSession) Done() <-chan struct{}    { return s.done }
func (s *fakeSession) Answer(id string, a agent.Answer) error {
	s.mu.Lock()
	s.answers = append(s.answers, a)
	s.mu.Unlock()
	s.opts.OnEvent(agent.Event{Kind: agent.EventQuestionResolved, Resolved: &agent.Resolution{QuestionID: id, By: "user", OptionID: a.OptionID}})
	return nil
}
func (s *fakeSession) AnswerDecided(id string, a agent.Answer) error { return s.Answer(id, a) }
func (s *fakeSession) SendPrompt(text string) error {
	s.mu.Lock()
	s.prompts = append(s.prompts, text)
	s.mu.Unlock()
	return nil
}
func (s *fakeSession) LowerPriority(nice int) error {
	s.mu.Lock()
	s.lowered = nice
	s.mu.Unlock()
	return nil
}
func (s *fakeSession) Interrupt() error           { return nil }
func (s *fakeSession) Input([]byte) error         { return nil }
func (s *fakeSession) Resize(int, int) error      { return nil }
func (s *fakeSession) Screen() screen.Snapshot    { return screen.Snapshot{} }
func (s *fakeSession) Stop(context.Context) error { s.exit(143, ""); return nil }
func (s *fakeSession) exit(code int, sig string) {
	s.once.Do(func() {
		s.opts.OnEvent(agent.Event{Kind: agent.EventExited, Exit: &agent.Exited{Code: code, Signal: sig}})
		close(s.done)
	})
}

type fakeNotifier struct {
	mu  sync.Mutex
	got []string
}

func (n *fakeNotifier) Notify(method string, params any) {
	n.mu.Lock()
	n.got = append(n.got, method)
	n.mu.Unlock()
}

type runnerEnv struct {
	o        *Orchestrator
	repo     *fakeRepo
	mu       sync.Mutex
	sessions []*fakeSession
	failNext bool
	failedAt time.Time // when the failing start was refused
}

func newRunner(t *testing.T, settings protocol.Settings) *runnerEnv {
	t.Helper()
	return newRunnerWith(t, settings, runnerOptions{})
}

// newRunnerClock is newRunner on the given clock (nil: the real one).
func newRunnerClock(t *testing.T, settings protocol.Settings, clk clock.Clock) *runnerEnv {
	t.Helper()
	return newRunnerWith(t, settings, runnerOptions{clk: clk})
}

// runnerOptions change what newRunnerWith wires in: a fake clock, a real
// git repository, what each fake claude does when it starts.
type runnerOptions struct {
	clk      clock.Clock
	repo     Repository
	onStart  func(opts agent.Options)
	resident func(pid int) uint64
}

func newRunnerWith(t *testing.T, settings protocol.Settings, ro runnerOptions) *runnerEnv {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &runnerEnv{repo: &fakeRepo{}}
	var repo Repository = r.repo
	if ro.repo != nil {
		repo = ro.repo
	}
	o, err := New(Config{
		Repo: repo, Store: st, Clock: ro.clk, DataDir: dir, Notifier: &fakeNotifier{}, Settings: settings,
		CLI: agent.CLI{Path: "/fake/claude", Version: "2.1.330"}, StartBackoff: time.Millisecond, Resident: ro.resident,
		// A login, so the check before a start lets it through.
		StartHook: func(ctx context.Context, opts *agent.Options) {
			opts.ExtraEnv = map[string]string{"ANTHROPIC_API_KEY": "sk-ant-api03-runner-test"}
		},
		Start: func(ctx context.Context, opts agent.Options) (Session, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.failNext {
				r.failNext = false
				r.failedAt = time.Now()
				return nil, &agent.StartError{Transient: true, Err: errors.New("exec: no such file")}
			}
			// The fake "claude" saves its conversation where claude does,
			// so a later start resumes it.
			saved := filepath.Join(opts.ConfigDir, "projects", "p", "sess-1.jsonl")
			if err := os.MkdirAll(filepath.Dir(saved), 0o700); err == nil {
				_ = os.WriteFile(saved, []byte(`{"type":"user","message":{"role":"user","content":"go"}}`+"\n"), 0o600)
			}
			if ro.onStart != nil {
				ro.onStart(opts)
			}
			s := &fakeSession{opts: opts, done: make(chan struct{})}
			r.sessions = append(r.sessions, s)
			return s, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.o = o
	t.Cleanup(func() {
		o.Close()
		st.Close()
	})
	return r
}

func (r *runnerEnv) session(t *testing.T, i int) *fakeSession {
	t.Helper()
	var s *fakeSession
	testenv.Await(t, 10*time.Second, "session started", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.sessions) > i {
			s = r.sessions[i]
			return true
		}
		return false
	})
	return s
}

func (r *runnerEnv) status(t *testing.T, id string, want protocol.Status) *protocol.Task {
	t.Helper()
	var got *protocol.Task
	testenv.Await(t, 10*time.Second, "status "+string(want), func() bool {
		got, _ = r.o.TaskGet(context.Background(), &protocol.TaskIDParams{ID: id})
		return got != nil && got.Status == want
	})
	return got
}

// running creates a task and waits for it to run on the runner's i-th
// claude.
func (r *runnerEnv) running(t *testing.T, title string, i int) (*protocol.Task, *fakeSession) {
	t.Helper()
	task := create(t, r.o, title)
	s := r.session(t, i)
	r.status(t, task.ID, protocol.StatusRunning)
	return task, s
}

// warm: the task's finished claude is kept for a follow-up.
func (r *runnerEnv) warm(id string) bool {
	a, err := r.o.get(id)
	return err == nil && a.view().warm
}

// finishWarm: the turn the task runs on s ends, and (warmAgentSec set)
// the finished task keeps its claude.
func (r *runnerEnv) finishWarm(t *testing.T, id string, s *fakeSession) {
	t.Helper()
	s.opts.OnEvent(agent.Event{Kind: agent.EventTurnEnded, Turn: &agent.TurnEnded{LastMessage: "Done."}})
	r.status(t, id, protocol.StatusMerging)
	testenv.Await(t, 10*time.Second, "task "+id+" warm", func() bool { return r.warm(id) })
}

// awaitGone waits for s's claude to be let go; failure says what it means
// when it is not.
func awaitGone(t *testing.T, s *fakeSession, failure string) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal(failure)
	}
}

func create(t *testing.T, o *Orchestrator, title string) *protocol.Task {
	t.Helper()
	task, err := o.TaskCreate(context.Background(), &protocol.TaskCreateParams{Title: title, Description: "do it"})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestRunnerQuestionCompletionMergeSingleFlight(t *testing.T) {
	settings := protocol.DefaultSettings()
	r := newRunner(t, settings)
	ctx := context.Background()
	task, s := r.running(t, "first", 0)

	s.opts.OnEvent(agent.Event{Kind: agent.EventQuestion, Question: &agent.Question{ID: "q1", Kind: agent.KindPermission, Tool: "Bash", Text: "Run ls"}})
	w := r.status(t, task.ID, protocol.StatusWaiting)
	if w.PendingQuestion == nil || w.PendingQuestion.ExpiresAt.IsZero() {
		t.Fatalf("pending %+v", w.PendingQuestion)
	}
	if _, err := r.o.TaskRespond(ctx, &protocol.TaskRespondParams{ID: task.ID, QuestionID: "q1", OptionID: "allow"}); err != nil {
		t.Fatal(err)
	}
	// A second window answering the same question: not found.
	if _, err := r.o.TaskRespond(ctx, &protocol.TaskRespondParams{ID: task.ID, QuestionID: "q1", OptionID: "allow"}); !errors.Is(err, errNotFound) {
		t.Errorf("second answer: %v", err)
	}
	r.status(t, task.ID, protocol.StatusRunning)
	s.opts.OnEvent(agent.Event{Kind: agent.EventTurnEnded, Turn: &agent.TurnEnded{LastMessage: "All done."}})
	done := r.status(t, task.ID, protocol.StatusMerging)
	if done.Result == nil || done.Result.Summary != "All done." || len(done.Result.ChangedFiles) != 1 {
		t.Fatalf("result %+v", done.Result)
	}
	// The finished agent is let go.
	awaitGone(t, s, "the finished agent was not stopped")
	// Two merges at once: one wins, the other is refused naming the state.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.o.TaskMerge(ctx, &protocol.TaskMergeParams{ID: task.ID})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else if !errors.Is(err, errPrecondition) {
			t.Errorf("second merge: %v", err)
		}
	}
	if ok != 1 || r.repo.merges != 1 {
		t.Errorf("%d merges succeeded, %d ran in git; want 1 and 1 (%v)", ok, r.repo.merges, errs)
	}
	r.status(t, task.ID, protocol.StatusMerged)
}

func TestRunnerPauseWhileStartingAndContinueBlocked(t *testing.T) {
	r := newRunner(t, protocol.DefaultSettings())
	ctx := context.Background()
	task, s := r.running(t, "p", 0)
	if _, err := r.o.TaskPause(ctx, &protocol.TaskIDParams{ID: task.ID}); err != nil {
		t.Fatal(err)
	}
	r.status(t, task.ID, protocol.StatusPaused)
	<-s.Done()
	if _, err := r.o.TaskResume(ctx, &protocol.TaskIDParams{ID: task.ID}); err != nil {
		t.Fatal(err)
	}
	s2 := r.session(t, 1)
	r.status(t, task.ID, protocol.StatusRunning)
	if s2.opts.SessionID != "sess-1" {
		t.Errorf("resumed with session %q", s2.opts.SessionID)
	}
	// The model side fails: blocked, the agent let go; a message continues
	// the same session.
	s2.opts.OnEvent(agent.Event{Kind: agent.EventTurnEnded, Turn: &agent.TurnEnded{Failed: true, Error: "invalid request"}})
	r.status(t, task.ID, protocol.StatusBlocked)
	<-s2.Done()
	if _, err := r.o.TaskSend(ctx, &protocol.TaskSendParams{ID: task.ID, Text: "try once more"}); err != nil {
		t.Fatal(err)
	}
	s3 := r.session(t, 2)
	r.status(t, task.ID, protocol.StatusRunning)
	if s3.opts.SessionID != "sess-1" || r.repo.created != 1 {
		t.Errorf("continued with session %q, %d worktrees made", s3.opts.SessionID, r.repo.created)
	}
}

func TestRunnerCancelQueuedAndShutdownLeavesNoAgent(t *testing.T) {
	settings := protocol.DefaultSettings()
	settings.MaxConcurrent = 1
	r := newRunner(t, settings)
	ctx := context.Background()
	a := create(t, r.o, "a")
	b := create(t, r.o, "b")
	s := r.session(t, 0)
	r.status(t, a.ID, protocol.StatusRunning)
	if q := r.status(t, b.ID, protocol.StatusQueued); q.QueuePosition == nil || *q.QueuePosition != 1 {
		t.Errorf("queue position %v", q.QueuePosition)
	}
	if _, err := r.o.TaskPause(ctx, &protocol.TaskIDParams{ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	r.status(t, b.ID, protocol.StatusPaused)
	if _, err := r.o.TaskCancel(ctx, &protocol.TaskIDParams{ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	r.status(t, b.ID, protocol.StatusCancelled)
	r.o.Close()
	select {
	case <-s.Done():
	default:
		t.Fatal("Close returned with an agent running")
	}
	got, _ := r.o.TaskGet(ctx, &protocol.TaskIDParams{ID: a.ID})
	if got.Status != protocol.StatusBlocked || got.Blocked.Reason != protocol.BlockedInterrupted {
		t.Errorf("after shutdown %s %+v", got.Status, got.Blocked)
	}
}

func TestRunnerTransientStartFailureRetries(t *testing.T) {
	r := newRunner(t, protocol.DefaultSettings())
	r.mu.Lock()
	r.failNext = true
	r.mu.Unlock()
	task := create(t, r.o, "flaky")
	r.session(t, 0)
	got := r.status(t, task.ID, protocol.StatusRunning)
	if got.Blocked != nil {
		t.Errorf("blocked %+v", got.Blocked)
	}
	// familiar's own retry continues the task's time (issue 22).
	r.mu.Lock()
	failedAt := r.failedAt
	r.mu.Unlock()
	if got.StartedAt.IsZero() || got.StartedAt.After(failedAt) {
		t.Errorf("startedAt %v is after the first start failed (%v): the retry reset the task's time", got.StartedAt, failedAt)
	}
}

// Issue 22: a retry from the branch waits for a git operation on it.
func TestRunnerRetryFromBranchWaitsForAnOperation(t *testing.T) {
	r := newRunner(t, protocol.DefaultSettings())
	ctx := context.Background()
	task, s := r.running(t, "first", 0)
	s.opts.OnEvent(agent.Event{Kind: agent.EventTurnEnded, Turn: &agent.TurnEnded{LastMessage: "All done."}})
	r.status(t, task.ID, protocol.StatusMerging)
	<-s.Done()
	a, v, err := r.o.beginOp(ctx, task.ID, opUndo)
	if err != nil {
		t.Fatal(err)
	}
	if v.op != opUndo {
		t.Fatalf("op %q", v.op)
	}
	_, err = r.o.TaskRetry(ctx, &protocol.TaskRetryParams{ID: task.ID, FromBranch: true})
	if !errors.Is(err, errPrecondition) || !strings.Contains(err.Error(), "undo of this task is in progress") {
		t.Errorf("retry from the branch during an undo: %v", err)
	}
	if _, err := a.call(ctx, cmdEndOp{op: opUndo}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.o.TaskRetry(ctx, &protocol.TaskRetryParams{ID: task.ID, FromBranch: true}); err != nil {
		t.Errorf("retry after the undo: %v", err)
	}
}

// TestRunnerWarmAgentTakesFollowUpsAndGivesWay: with warmAgentSec a
// finished task keeps its claude; a follow-up goes to that claude at once
// (no new start), the slot it holds goes to a queued task first, git's
// merge lets it go before it runs, and the warm time's end lets it go too.
func TestRunnerWarmAgentTakesFollowUpsAndGivesWay(t *testing.T) {
	settings := protocol.DefaultSettings()
	settings.MaxConcurrent = 1
	settings.WarmAgentSec = 60
	clk := clock.NewFake(time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC))
	r := newRunnerClock(t, settings, clk)
	ctx := context.Background()
	sessions := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.sessions)
	}

	a, s0 := r.running(t, "a", 0)
	r.finishWarm(t, a.ID, s0)

	// The follow-up goes to the claude that is there.
	if _, err := r.o.TaskSend(ctx, &protocol.TaskSendParams{ID: a.ID, Text: "one more thing"}); err != nil {
		t.Fatal(err)
	}
	got := r.status(t, a.ID, protocol.StatusRunning)
	s0.mu.Lock()
	prompts := append([]string(nil), s0.prompts...)
	s0.mu.Unlock()
	if len(prompts) != 1 || prompts[0] != "one more thing" || sessions() != 1 || got.Result != nil {
		t.Fatalf("follow-up: prompts %q, %d claudes started, result %+v; want it typed into the first", prompts, sessions(), got.Result)
	}
	select {
	case <-s0.Done():
		t.Fatal("the warm claude was stopped by its follow-up")
	default:
	}
	r.finishWarm(t, a.ID, s0)

	// A queued task needs the one slot: the warm claude goes first.
	b := create(t, r.o, "b")
	awaitGone(t, s0, "the warm claude kept the slot a queued task needs")
	s1 := r.session(t, 1)
	r.status(t, b.ID, protocol.StatusRunning)
	if r.warm(a.ID) {
		t.Error("a still counted warm after its claude exited")
	}

	// b finishes warm; a merge lets its claude go before git runs.
	r.finishWarm(t, b.ID, s1)
	if _, err := r.o.TaskMerge(ctx, &protocol.TaskMergeParams{ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s1.Done():
	default:
		t.Fatal("merged with the warm claude still running in the worktree")
	}
	r.status(t, b.ID, protocol.StatusMerged)

	// a, continued cold (a new claude resuming its session), finishes warm
	// and is let go when the warm time is over.
	if _, err := r.o.TaskSend(ctx, &protocol.TaskSendParams{ID: a.ID, Text: "last"}); err != nil {
		t.Fatal(err)
	}
	s2 := r.session(t, 2)
	r.status(t, a.ID, protocol.StatusRunning)
	if s2.opts.SessionID != "sess-1" {
		t.Errorf("the cold follow-up resumed session %q", s2.opts.SessionID)
	}
	r.finishWarm(t, a.ID, s2)
	// The timer is armed by the actor's effect right after the view shows
	// warm: advance until it has fired rather than once.
	testenv.Await(t, 10*time.Second, "the warm claude let go after warmAgentSec", func() bool {
		clk.Advance(61 * time.Second)
		select {
		case <-s2.Done():
			return true
		default:
			return false
		}
	})
	r.status(t, a.ID, protocol.StatusMerging)
}

// TestRunnerWarmAgentLetGoWhenBlocked: a warm claude whose task is blocked
// (its idle claude reports a refused login) is let go and its slot is
// free for the next task at once; a task blocked at the end of its own turn
// with warmAgentSec set is not kept warm either: blocked tasks hold no
// claude, and nothing of theirs counts against maxConcurrent.
func TestRunnerWarmAgentLetGoWhenBlocked(t *testing.T) {
	settings := protocol.DefaultSettings()
	settings.MaxConcurrent = 1
	settings.WarmAgentSec = 600
	r := newRunner(t, settings)
	holdsNone := func(id string) {
		t.Helper()
		r.status(t, id, protocol.StatusBlocked)
		testenv.Await(t, 10*time.Second, "the blocked task's agent gone", func() bool {
			a, err := r.o.get(id)
			return err == nil && a.view().agentPhase == agentNone
		})
		if r.warm(id) {
			t.Errorf("the blocked task %s still counts a warm claude", id)
		}
	}

	a, s0 := r.running(t, "a", 0)
	r.finishWarm(t, a.ID, s0)

	// The idle claude's login is refused: blocked{auth}, the claude let go.
	s0.opts.OnEvent(agent.Event{Kind: agent.EventTurnEnded, Turn: &agent.TurnEnded{Failed: true, Error: "Not logged in",
		Failure: &agent.Failure{Kind: agent.FailureAuth, Status: 401, Message: "Not logged in"}}})
	awaitGone(t, s0, "the warm task blocked kept its claude")
	holdsNone(a.ID)
	if b := r.status(t, a.ID, protocol.StatusBlocked).Blocked; b == nil || b.Reason != protocol.BlockedAuth {
		t.Errorf("blocked = %+v, want auth", b)
	}

	// The one slot is free: the next task starts without a cool-down.
	b, s1 := r.running(t, "b", 1)

	// b's own turn fails: blocked, and not kept warm despite the setting.
	s1.opts.OnEvent(agent.Event{Kind: agent.EventTurnEnded, Turn: &agent.TurnEnded{Failed: true, Error: "bad request",
		Failure: &agent.Failure{Kind: agent.FailureAPI, Status: 400, Message: "bad request"}}})
	awaitGone(t, s1, "the task blocked at its turn's end kept its claude")
	holdsNone(b.ID)
	c := create(t, r.o, "c")
	r.session(t, 2)
	r.status(t, c.ID, protocol.StatusRunning)
}

// TestRunnerWarmAgentLetGoWhenArchived: a finished task put away (Remove's
// archive, Clear Finished) is not followed up: its warm claude goes.
func TestRunnerWarmAgentLetGoWhenArchived(t *testing.T) {
	settings := protocol.DefaultSettings()
	settings.WarmAgentSec = 600
	r := newRunner(t, settings)
	a, s0 := r.running(t, "a", 0)
	r.finishWarm(t, a.ID, s0)
	if _, err := r.o.TaskArchive(context.Background(), &protocol.TaskArchiveParams{IDs: []string{a.ID}}); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, s0, "the archived task kept its warm claude")
	if got := r.status(t, a.ID, protocol.StatusMerging); got.ArchivedAt.IsZero() {
		t.Error("not archived")
	}
}

// A task's own warmAgentSec (what familiar acp asks for its sessions)
// keeps its claude with the setting at 0; another task's goes.
func TestRunnerTaskWarmAgentSecOverridesTheSetting(t *testing.T) {
	r := newRunner(t, protocol.DefaultSettings()) // warmAgentSec 0
	ctx := context.Background()
	warmSec := 600
	a, err := r.o.TaskCreate(ctx, &protocol.TaskCreateParams{Title: "acp", Description: "do it", WarmAgentSec: &warmSec})
	if err != nil {
		t.Fatal(err)
	}
	s0 := r.session(t, 0)
	r.status(t, a.ID, protocol.StatusRunning)
	b, s1 := r.running(t, "plain", 1)
	s0.opts.OnEvent(agent.Event{Kind: agent.EventTurnEnded, Turn: &agent.TurnEnded{LastMessage: "Done."}})
	s1.opts.OnEvent(agent.Event{Kind: agent.EventTurnEnded, Turn: &agent.TurnEnded{LastMessage: "Done."}})
	r.status(t, a.ID, protocol.StatusMerging)
	r.status(t, b.ID, protocol.StatusMerging)
	awaitGone(t, s1, "the plain task's claude was kept")
	select {
	case <-s0.Done():
		t.Fatal("the task that asked for warmAgentSec lost its claude")
	default:
	}
	if _, err := r.o.TaskSend(ctx, &protocol.TaskSendParams{ID: a.ID, Text: "more"}); err != nil {
		t.Fatal(err)
	}
	r.status(t, a.ID, protocol.StatusRunning)
	r.mu.Lock()
	n := len(r.sessions)
	r.mu.Unlock()
	if n != 2 {
		t.Errorf("%d claudes started, want the warm one to take the follow-up", n)
	}
	// Checked where every request's params are (jsonrpc's method table).
	bad := -1
	if err := (&protocol.TaskCreateParams{Title: "x", Description: "y", WarmAgentSec: &bad}).Validate(); err == nil || !strings.Contains(err.Error(), "warmAgentSec") {
		t.Errorf("a negative warmAgentSec: %v, want an error naming the field", err)
	}
}

// TestRunnerModeSwitchCountsTheOldAgentOut: a mode switch stops the agent
// and starts the next in the step that handles the exit; the old one is
// counted out all the same, so Close, which waits for every agent, returns
// (it waited for ever when the count followed the phase reaching none).
func TestRunnerModeSwitchCountsTheOldAgentOut(t *testing.T) {
	r := newRunner(t, protocol.DefaultSettings())
	task := create(t, r.o, "switch")
	r.session(t, 0)
	r.status(t, task.ID, protocol.StatusRunning)
	if _, err := r.o.TaskSetMode(context.Background(), &protocol.TaskSetModeParams{ID: task.ID, Mode: protocol.ModeArchitect}); err != nil {
		t.Fatal(err)
	}
	r.session(t, 1)
	r.status(t, task.ID, protocol.StatusRunning)
	agents := func() int {
		r.o.agents.mu.Lock()
		defer r.o.agents.mu.Unlock()
		return r.o.agents.n
	}
	if !testenv.Eventually(10*time.Second, func() bool { return agents() == 1 }) {
		n := agents()
		for range n - 1 {
			r.o.agents.Done() // so that the cleanup's Close returns and the failure is said
		}
		t.Fatalf("%d agents counted after a mode switch, want 1: Close would wait for ever", n)
	}
	closed := make(chan error, 1)
	go func() { closed <- r.o.Close() }()
	testenv.Await(t, 10*time.Second, "Close returned", func() bool { return len(closed) == 1 })
	if n := agents(); n != 0 {
		t.Errorf("%d agents counted after Close, want 0", n)
	}
}

// Issue 40: task/pause of a finished task whose claude is kept warm lets
// that claude go at once (an ACP session closed, its editor gone), and the
// task stays ready; a pause of a finished task with no warm claude is
// refused as before.
func TestRunnerPauseLetsAWarmClaudeGo(t *testing.T) {
	settings := protocol.DefaultSettings()
	settings.WarmAgentSec = 600
	r := newRunnerClock(t, settings, clock.NewFake(time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)))
	ctx := context.Background()
	a, s0 := r.running(t, "a", 0)
	r.finishWarm(t, a.ID, s0)
	got, err := r.o.TaskPause(ctx, &protocol.TaskIDParams{ID: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	awaitGone(t, s0, "task/pause kept the warm claude")
	if got.Status != protocol.StatusMerging {
		t.Errorf("after task/pause the task is %s, want still ready", got.Status)
	}
	// The actor hears of the exit after the process is gone.
	testenv.Await(t, 10*time.Second, "the task no longer warm", func() bool { return !r.warm(a.ID) })
	if _, err := r.o.TaskPause(ctx, &protocol.TaskIDParams{ID: a.ID}); !errors.Is(err, errPrecondition) {
		t.Errorf("task/pause of a finished task with no claude: %v", err)
	}
}
