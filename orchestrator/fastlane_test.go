package orchestrator

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// The fast lane: the engine's behaviour (the queue's order, approvals and
// their timeout, stats, merge and undo in real git) against the scripted
// fake Session, in milliseconds. The end-to-end tests with the real claude
// stay for what the CLI itself must do.

// finish ends session s's turn with a report: the task goes to merging.
func finish(t *testing.T, r *runnerEnv, s *fakeSession, id string) {
	t.Helper()
	s.opts.OnEvent(agent.Event{Kind: agent.EventTurnEnded, Turn: &agent.TurnEnded{LastMessage: "Done."}})
	r.status(t, id, protocol.StatusMerging)
}

// TestFastQueueRunsByPriorityThenOrder: with one slot, the queued task of
// the higher priority starts first, then those of one priority in the
// order they came; the queue positions say so while they wait.
func TestFastQueueRunsByPriorityThenOrder(t *testing.T) {
	settings := protocol.DefaultSettings()
	settings.MaxConcurrent = 1
	r := newRunner(t, settings)
	ctx := context.Background()
	first, s0 := r.running(t, "first", 0)
	low, err := r.o.TaskCreate(ctx, &protocol.TaskCreateParams{Title: "low", Description: "x"})
	if err != nil {
		t.Fatal(err)
	}
	low2, err := r.o.TaskCreate(ctx, &protocol.TaskCreateParams{Title: "low2", Description: "x"})
	if err != nil {
		t.Fatal(err)
	}
	high, err := r.o.TaskCreate(ctx, &protocol.TaskCreateParams{Title: "high", Description: "x", Priority: 5})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int{high.ID: 1, low.ID: 2, low2.ID: 3} {
		if q := r.status(t, id, protocol.StatusQueued); q.QueuePosition == nil || *q.QueuePosition != want {
			t.Errorf("%s: queue position %v, want %d", q.Title, q.QueuePosition, want)
		}
	}
	order := []string{high.ID, low.ID, low2.ID}
	prev, prevID := s0, first.ID
	for i, id := range order {
		finish(t, r, prev, prevID)
		s := r.session(t, i+1)
		if !strings.HasSuffix(s.opts.Dir, id) {
			t.Fatalf("start %d ran in %s, want task %s's worktree", i+1, s.opts.Dir, id)
		}
		r.status(t, id, protocol.StatusRunning)
		prev, prevID = s, id
	}
}

// TestFastApprovalTimeoutDenies: a question nobody answers is denied at
// the approval timeout, on the clock, and the task goes on.
func TestFastApprovalTimeoutDenies(t *testing.T) {
	clk := clock.NewFake(time.Now())
	settings := protocol.DefaultSettings()
	settings.ApprovalTimeoutSec = 20
	r := newRunnerWith(t, settings, runnerOptions{clk: clk})
	task, s := r.running(t, "asks", 0)
	armed := clk.Pending()
	s.opts.OnEvent(agent.Event{Kind: agent.EventQuestion, Question: &agent.Question{ID: "q1", Kind: agent.KindPermission, Tool: "Bash", Text: "Run rm"}})
	w := r.status(t, task.ID, protocol.StatusWaiting)
	if want := clk.Now().Add(20 * time.Second); w.PendingQuestion == nil || !w.PendingQuestion.ExpiresAt.Equal(want.UTC()) {
		t.Fatalf("pending %+v, want it to expire at %v", w.PendingQuestion, want)
	}
	// Not yet: a second short of the timeout nothing is answered.
	testenv.AdvanceArmed(t, clk, armed+1, 19*time.Second)
	if got := r.status(t, task.ID, protocol.StatusWaiting); got.PendingQuestion == nil {
		t.Fatal("the question went before its timeout")
	}
	clk.Advance(time.Second)
	r.status(t, task.ID, protocol.StatusRunning)
	// The deny reaches the session on the actor's goroutine.
	var answers []agent.Answer
	testenv.Await(t, 10*time.Second, "the deny to reach claude", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		answers = append([]agent.Answer(nil), s.answers...)
		return len(answers) > 0
	})
	if len(answers) != 1 || answers[0].OptionID != protocol.OptionDeny {
		t.Fatalf("answers %+v, want one deny", answers)
	}
	// The person's late answer finds nothing to answer.
	if _, err := r.o.TaskRespond(context.Background(), &protocol.TaskRespondParams{ID: task.ID, QuestionID: "q1", OptionID: "allow"}); !errors.Is(err, errNotFound) {
		t.Errorf("late answer: %v", err)
	}
}

// TestFastStatsCountTheQueue: server/stats counts queued, running and
// finished tasks; a cancel is no failure.
func TestFastStatsCountTheQueue(t *testing.T) {
	settings := protocol.DefaultSettings()
	settings.MaxConcurrent = 1
	r := newRunner(t, settings)
	ctx := context.Background()
	a, s := r.running(t, "a", 0)
	b := create(t, r.o, "b")
	r.status(t, b.ID, protocol.StatusQueued)
	st, err := r.o.ServerStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Running != 1 || st.QueueDepth != 1 || st.Tasks.ByStatus[protocol.StatusQueued] != 1 {
		t.Errorf("while one runs: %+v", st)
	}
	if _, err := r.o.TaskCancel(ctx, &protocol.TaskIDParams{ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	r.status(t, b.ID, protocol.StatusCancelled)
	finish(t, r, s, a.ID)
	st, err = r.o.ServerStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Running != 0 || st.QueueDepth != 0 || st.SuccessRate != 1 {
		t.Errorf("after: %+v", st)
	}
}

// git runs git in dir and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestFastMergeAndUndoInGit: the fake claude writes a file in its real
// worktree; the finished task merges into the base branch, and task/undo
// takes the merge back, leaving the base as it was.
func TestFastMergeAndUndoInGit(t *testing.T) {
	testenv.Git(t)
	root := testenv.GitRepo(t, map[string]string{"README": "hello\n"})
	ctx := context.Background()
	repo, err := worktree.Open(ctx, root, worktree.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := newRunnerWith(t, protocol.DefaultSettings(), runnerOptions{repo: repo, onStart: func(opts agent.Options) {
		_ = os.WriteFile(filepath.Join(opts.Dir, "made.txt"), []byte("by the agent\n"), 0o644)
	}})
	before := git(t, root, "rev-parse", "main")
	task, s := r.running(t, "make a file", 0)
	finish(t, r, s, task.ID)
	done := r.status(t, task.ID, protocol.StatusMerging)
	if done.Result == nil || len(done.Result.ChangedFiles) != 1 || done.Result.ChangedFiles[0].Path != "made.txt" {
		t.Fatalf("result %+v", done.Result)
	}
	<-s.Done()
	if _, err := r.o.TaskMerge(ctx, &protocol.TaskMergeParams{ID: task.ID}); err != nil {
		t.Fatal(err)
	}
	merged := r.status(t, task.ID, protocol.StatusMerged)
	if got := git(t, root, "show", "main:made.txt"); got != "by the agent" {
		t.Errorf("main's made.txt %q", got)
	}
	if merged.UndoableUntil.IsZero() {
		t.Error("a fresh merge is not undoable")
	}
	if _, err := r.o.TaskUndo(ctx, &protocol.TaskUndoParams{ID: task.ID}); err != nil {
		t.Fatal(err)
	}
	testenv.Await(t, 10*time.Second, "main back where it was", func() bool {
		return git(t, root, "rev-parse", "main") == before
	})
	if _, err := exec.Command("git", "-C", root, "cat-file", "-e", "main:made.txt").CombinedOutput(); err == nil {
		t.Error("made.txt is still on main after the undo")
	}
}

// TestFastUsageLimitHoldsTheQueueAndResumes: a turn that hits the usage
// limit blocks its task until the reset; meanwhile the queue starts
// nothing, and at the reset (on the clock) the task continues its session.
func TestFastUsageLimitHoldsTheQueueAndResumes(t *testing.T) {
	clk := clock.NewFake(time.Now())
	settings := protocol.DefaultSettings()
	settings.MaxConcurrent = 2
	r := newRunnerWith(t, settings, runnerOptions{clk: clk})
	a, s := r.running(t, "limited", 0)
	resets := clk.Now().Add(time.Hour)
	armed := clk.Pending()
	s.opts.OnEvent(agent.Event{Kind: agent.EventTurnEnded, Turn: &agent.TurnEnded{Failed: true, Error: "limit",
		Failure: &agent.Failure{Kind: agent.FailureUsageLimit, Message: "You've hit your limit", ResetsAt: resets}}})
	blocked := r.status(t, a.ID, protocol.StatusBlocked)
	if blocked.Blocked == nil || blocked.Blocked.Reason != protocol.BlockedUsageLimit || !blocked.Blocked.ResetsAt.Equal(resets.UTC()) {
		t.Fatalf("blocked %+v", blocked.Blocked)
	}
	b := create(t, r.o, "waits for the reset")
	r.status(t, b.ID, protocol.StatusQueued)
	testenv.AdvanceArmed(t, clk, armed+1, time.Hour+resetSlack)
	r.status(t, a.ID, protocol.StatusRunning)
	r.status(t, b.ID, protocol.StatusRunning)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sessions) != 3 {
		t.Fatalf("%d starts, want the first, the resumed one and the queued task's", len(r.sessions))
	}
	for _, again := range r.sessions[1:] {
		if strings.HasSuffix(again.opts.Dir, a.ID) && again.opts.SessionID != s.SessionID() {
			t.Errorf("resumed as %q, want session %q", again.opts.SessionID, s.SessionID())
		}
	}
}

// TestFastRetentionRemovesOldFinishedLogs: the daily pass (on the clock)
// removes a finished task's output log older than outputRetentionDays and
// keeps a live task's, however old.
func TestFastRetentionRemovesOldFinishedLogs(t *testing.T) {
	clk := clock.NewFake(time.Now())
	settings := protocol.DefaultSettings()
	settings.OutputRetentionDays = 7
	// The fake claude writes its output log where claude's would be.
	r := newRunnerWith(t, settings, runnerOptions{clk: clk, onStart: func(opts agent.Options) {
		_ = os.WriteFile(opts.LogPath, []byte("output\n"), 0o600)
	}})
	done, s := r.running(t, "done", 0)
	finish(t, r, s, done.ID)
	<-s.Done()
	live := create(t, r.o, "live")
	r.session(t, 1)
	r.status(t, live.ID, protocol.StatusRunning)
	logs, _ := filepath.Glob(filepath.Join(r.o.cfg.DataDir, "tasks", "*", "output-*.log"))
	if len(logs) != 2 {
		t.Fatalf("logs %v, want one per task", logs)
	}
	old := clk.Now().Add(-8 * 24 * time.Hour)
	for _, l := range logs {
		if err := os.Chtimes(l, old, old); err != nil {
			t.Fatal(err)
		}
	}
	testenv.AdvanceArmed(t, clk, 1, retentionEvery)
	var left []string
	testenv.Await(t, 10*time.Second, "the finished task's old log to go", func() bool {
		left, _ = filepath.Glob(filepath.Join(r.o.cfg.DataDir, "tasks", "*", "output-*.log"))
		return len(left) == 1
	})
	if !strings.Contains(left[0], live.ID) {
		t.Errorf("kept %v, want the live task's log", left)
	}
}

// TestFastValidationNamesTheField: a bad request is refused with
// -32602 naming the field, and queues nothing (baseRef against real git).
func TestFastValidationNamesTheField(t *testing.T) {
	testenv.Git(t)
	root := testenv.GitRepo(t, nil)
	ctx := context.Background()
	repo, err := worktree.Open(ctx, root, worktree.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := newRunnerWith(t, protocol.DefaultSettings(), runnerOptions{repo: repo})
	for field, p := range map[string]*protocol.TaskCreateParams{
		"baseRef": {Title: "x", Description: "x", BaseRef: "no-such-branch"},
		"model":   {Title: "x", Description: "x", Model: "--dangerously-skip-permissions"},
	} {
		_, err := r.o.TaskCreate(ctx, p)
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams {
			t.Errorf("%s: %v, want -32602", field, err)
			continue
		}
		if d, _ := pe.Data.(*protocol.ErrorData); d == nil || d.Field != field {
			t.Errorf("%s: data %+v", field, pe.Data)
		}
	}
	if _, err := r.o.TaskReorder(ctx, &protocol.TaskReorderParams{ID: "nope"}); !errors.Is(err, errNotFound) {
		t.Errorf("reorder of an unknown task: %v", err)
	}
	list, err := r.o.TaskList(ctx, &protocol.TaskListParams{})
	if err != nil || len(list.Tasks) != 0 {
		t.Errorf("tasks after refusals: %v %v", list, err)
	}
}
