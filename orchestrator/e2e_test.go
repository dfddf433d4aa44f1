package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/orchestrator"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
	"github.com/familiar-dev/familiar/workspace"
)

// notes records notifications and lets a test wait for one.
type notes struct {
	mu      sync.Mutex
	list    []note
	changed chan struct{}
}

type note struct {
	method string
	params json.RawMessage
	at     time.Time // when it arrived
}

func (n *notes) Notify(method string, params any) {
	b, _ := params.(json.RawMessage)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, note{method: method, params: b, at: time.Now()})
	close(n.changed)
	n.changed = make(chan struct{})
}

func (n *notes) wait(t testing.TB, what string, match func(note) bool) note {
	t.Helper()
	deadline := time.NewTimer(90 * time.Second)
	defer deadline.Stop()
	for {
		n.mu.Lock()
		for _, x := range n.list {
			if match(x) {
				n.mu.Unlock()
				return x
			}
		}
		ch := n.changed
		n.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; notifications:\n%s", what, n.dump())
		}
	}
}

func (n *notes) all() []note {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]note(nil), n.list...)
}

func (n *notes) dump() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var b strings.Builder
	for _, x := range n.list {
		if x.method != protocol.NotifyTaskOutput {
			b.WriteString("  " + x.method + " " + string(x.params) + "\n")
		}
	}
	return b.String()
}

func is(method string, contains ...string) func(note) bool {
	return func(x note) bool {
		if x.method != method {
			return false
		}
		for _, c := range contains {
			if !strings.Contains(string(x.params), c) {
				return false
			}
		}
		return true
	}
}

func statusIs(id string, s protocol.Status) func(note) bool {
	return is(protocol.NotifyTaskUpdated, `"id":"`+id+`"`, `"status":"`+string(s)+`"`)
}

type env struct {
	ws    *workspace.Workspace
	o     *orchestrator.Orchestrator
	notes *notes
	repo  string
	api   *fakeapi.Server
	home  string // the fake HOME of every task
	// startHook, when set before a task starts, adjusts its agent's options.
	startHook func(*agent.Options)
}

func gitRepo(t testing.TB) string { return testenv.GitRepo(t, nil) }

func open(t *testing.T, clk clock.Clock, settings *protocol.SettingsUpdate) *env {
	t.Helper()
	return openWith(t, clk, settings, fakeapi.PromptScript())
}

func openWith(t testing.TB, clk clock.Clock, settings *protocol.SettingsUpdate, script fakeapi.Script) *env {
	t.Helper()
	claude := testenv.Claude(t)
	api := fakeapi.Start(script)
	t.Cleanup(api.Close)
	e := &env{notes: &notes{changed: make(chan struct{})}, repo: gitRepo(t), api: api, home: t.TempDir()}
	home := e.home
	ws, err := workspace.Open(context.Background(), e.repo, workspace.Options{
		DataDir:       t.TempDir(),
		WorktreesRoot: t.TempDir(),
		ClaudePath:    claude,
		Notifier:      e.notes,
		Clock:         clk,
		StartHook: func(ctx context.Context, o *agent.Options) {
			if o.ExtraEnv == nil {
				o.ExtraEnv = map[string]string{}
			}
			for k, v := range api.Env() {
				o.ExtraEnv[k] = v
			}
			// A fake HOME: tasks read the user's own claude config from it.
			if _, ok := o.ExtraEnv["HOME"]; !ok {
				o.ExtraEnv["HOME"] = home
			}
			if e.startHook != nil {
				e.startHook(o)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ws.Close(); err != nil {
			t.Errorf("close workspace: %v", err)
		}
	})
	e.ws, e.o = ws, ws.Orch
	// Agents run at nice 0 here, the priority of the go test and the other
	// sessions they share the machine with (as in familiar bench), unless a
	// test sets agentNice: at the default 10 a PTY agent's session group got
	// a tenth of an equal share, and at load 21 on 2 cores the pty variant of
	// TestArchitectModeWriteRefusedByClaude took 16-63 s against 2.6-3.8 s
	// at 0 (the stream agent shares the test's own group and was never held).
	nice := protocol.SettingsUpdate{}
	if settings != nil {
		nice = *settings
	}
	if nice.AgentNice == nil {
		nice.AgentNice = intp(0)
	}
	if _, err := e.o.UpdateSettings(context.Background(), &nice); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) create(t testing.TB, title, script string, priority int) *protocol.Task {
	t.Helper()
	task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{Title: title, Description: script, Priority: priority})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// output reads a task's whole raw output log, page by page, and returns it
// with the last page.
func (e *env) output(t *testing.T, id string) (string, *protocol.TaskOutputResult) {
	t.Helper()
	var all strings.Builder
	offset := int64(0)
	for {
		page, err := e.o.TaskOutput(context.Background(), &protocol.TaskOutputParams{ID: id, Offset: offset, Limit: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(page.Data)
		if page.NextOffset >= page.Size {
			return all.String(), page
		}
		offset = page.NextOffset
	}
}

func (e *env) get(t testing.TB, id string) *protocol.Task {
	t.Helper()
	task, err := e.o.TaskGet(context.Background(), &protocol.TaskIDParams{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func askBash(file string) string {
	return "go\n@@TOOL Bash {\"command\":\"touch " + file + "\"}\n@@TEXT Done with " + file + "."
}

func intp(i int) *int { return &i }

func TestQueueOrderReorderAndCancel(t *testing.T) {
	e := open(t, nil, &protocol.SettingsUpdate{MaxConcurrent: intp(1)})
	a := e.create(t, "first", askBash("a.txt"), 0)
	// a holds the only slot while it waits on its question.
	e.notes.wait(t, "a waiting", statusIs(a.ID, protocol.StatusWaiting))
	b := e.create(t, "second", askBash("b.txt"), 0)
	c := e.create(t, "urgent", askBash("c.txt"), 5)
	if got := e.get(t, c.ID); got.Status != protocol.StatusQueued || got.QueuePosition == nil || *got.QueuePosition != 1 {
		t.Fatalf("c = %+v", got)
	}
	// No task has finished yet: no estimates (a guess is worse than none),
	// only the places.
	if got := e.get(t, b.ID); *got.QueuePosition != 2 || got.EstimatedStartSec != nil || !got.EstimatedStartAt.IsZero() {
		t.Fatalf("b = %+v", got)
	}
	if got := e.get(t, a.ID); got.EstimatedRemainingSec != nil || !got.EstimatedEndAt.IsZero() {
		t.Fatalf("a = %+v", got)
	}
	if _, err := e.o.TaskReorder(context.Background(), &protocol.TaskReorderParams{ID: b.ID, Before: c.ID}); err != nil {
		t.Fatal(err)
	}
	if got := e.get(t, b.ID); *got.QueuePosition != 1 {
		t.Fatalf("after reorder b is at %d", *got.QueuePosition)
	}
	if got, err := e.o.TaskCancel(context.Background(), &protocol.TaskIDParams{ID: c.ID}); err != nil || got.Status != protocol.StatusCancelled {
		t.Fatalf("cancel queued = %+v, %v", got, err)
	}
	if _, err := e.o.TaskReorder(context.Background(), &protocol.TaskReorderParams{ID: c.ID, Priority: intp(1)}); err == nil {
		t.Fatal("reordered a cancelled task")
	}
	// Answer a; it completes and b gets the slot.
	q := e.get(t, a.ID).PendingQuestion
	if _, err := e.o.TaskRespond(context.Background(), &protocol.TaskRespondParams{ID: a.ID, QuestionID: q.ID, OptionID: "allow"}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "a completed", is(protocol.NotifyTaskCompleted, a.ID))
	e.notes.wait(t, "b waiting", statusIs(b.ID, protocol.StatusWaiting))
	if got := e.get(t, a.ID); got.Status != protocol.StatusMerging || got.Result == nil || len(got.Result.ChangedFiles) != 1 {
		t.Fatalf("a = %+v", got)
	}
}

func TestCancelRunningKeepsWorktree(t *testing.T) {
	e := open(t, nil, nil)
	a := e.create(t, "to cancel", askBash("x.txt"), 0)
	e.notes.wait(t, "waiting", statusIs(a.ID, protocol.StatusWaiting))
	running := e.get(t, a.ID)
	got, err := e.o.TaskCancel(context.Background(), &protocol.TaskIDParams{ID: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "cancelled", statusIs(a.ID, protocol.StatusCancelled))
	got = e.get(t, a.ID)
	if got.Blocked == nil || got.Blocked.Reason != protocol.BlockedCancelledByUser {
		t.Errorf("cancelled task = %+v", got)
	}
	if _, err := os.Stat(running.Worktree.Path); err != nil {
		t.Errorf("worktree gone after cancel: %v", err)
	}
	if err := processGone(running.Agent.PID); err != nil {
		t.Error(err)
	}
	if _, err := e.o.TaskCancel(context.Background(), &protocol.TaskIDParams{ID: a.ID}); err == nil {
		t.Error("cancelling twice succeeded")
	}
}

func processGone(pid int) error {
	// Polling /proc: no event says another process's child exited.
	if testenv.Eventually(10*time.Second, func() bool {
		if _, err := os.Stat(filepath.Join("/proc", itoa(pid))); os.IsNotExist(err) {
			return true
		}
		b, _ := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
		return strings.Contains(string(b), ") Z ")
	}) {
		return nil
	}
	return &os.PathError{Op: "agent still alive", Path: itoa(pid)}
}

func itoa(i int) string { return formatInt(i) }

func formatInt(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// The approval timeout runs on the injected clock: five minutes in no time.
func TestApprovalTimeoutDenies(t *testing.T) {
	clk := clock.NewFake(time.Now())
	e := open(t, clk, nil)
	a := e.create(t, "nobody answers", askBash("late.txt"), 0)
	e.notes.wait(t, "waiting", statusIs(a.ID, protocol.StatusWaiting))
	q := e.get(t, a.ID).PendingQuestion
	if q.ExpiresAt.IsZero() {
		t.Fatal("permission question without expiresAt")
	}
	clk.Advance(301 * time.Second)
	e.notes.wait(t, "resolved by timeout", is(protocol.NotifyTaskQuestionResolved, a.ID, `"decidedBy":"timeout"`))
	e.notes.wait(t, "completed", is(protocol.NotifyTaskCompleted, a.ID))
	if _, err := os.Stat(filepath.Join(e.get(t, a.ID).Worktree.Path, "late.txt")); err == nil {
		t.Error("the timed-out command ran")
	}
	reqs := e.api.MainRequests()
	found := false
	for _, b := range reqs[len(reqs)-1].ToolResults() {
		found = found || strings.Contains(b.Content, "approval timeout")
	}
	if !found {
		t.Error("the agent was not told nobody answered in time")
	}
}

func TestNoProgressBlocksTask(t *testing.T) {
	e := open(t, nil, nil)
	// The fake model takes a minute to answer; one second without progress
	// is enough to give up.
	task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{
		Title: "stuck", Description: "hang\n@@DELAY 60s\n@@TEXT too late", NoProgressTimeoutSec: intp(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "blocked", statusIs(task.ID, protocol.StatusBlocked))
	got := e.get(t, task.ID)
	if got.Blocked == nil || got.Blocked.Reason != protocol.BlockedTimeout {
		t.Fatalf("blocked = %+v", got.Blocked)
	}
}

func TestCreateRefusesBadInput(t *testing.T) {
	e := open(t, nil, nil)
	for _, tc := range []struct {
		p     protocol.TaskCreateParams
		field string
	}{
		{protocol.TaskCreateParams{Title: "x", Description: "d", BaseRef: "--upload-pack=touch x"}, "baseRef"},
		{protocol.TaskCreateParams{Title: "x", Description: "d", BaseRef: "no-such-branch"}, "baseRef"},
		{protocol.TaskCreateParams{Title: "x", Description: "d", Hints: &protocol.Hints{Files: []string{"../../etc/passwd"}}}, "hints.files[0]"},
		// Passed to claude as --model: never an option of its own.
		{protocol.TaskCreateParams{Title: "x", Description: "d", Model: "--dangerously-skip-permissions"}, "model"},
		{protocol.TaskCreateParams{Title: "x", Description: "d", Model: "opus --x"}, "model"},
	} {
		_, err := e.o.TaskCreate(context.Background(), &tc.p)
		pe, ok := err.(*protocol.Error)
		if !ok || pe.Code != protocol.CodeInvalidParams || !strings.Contains(formatData(pe.Data), tc.field) {
			t.Errorf("create %+v = %v", tc.p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(e.repo, "x")); err == nil {
		t.Error("a hostile baseRef ran a command")
	}
}

func formatData(d any) string {
	b, _ := json.Marshal(d)
	return string(b)
}

func TestPauseAndResumeContinueTheSession(t *testing.T) {
	e := open(t, nil, nil)
	a := e.create(t, "pausable", askBash("p.txt"), 0)
	e.notes.wait(t, "waiting", statusIs(a.ID, protocol.StatusWaiting))
	defer func() {
		// What claude said before it exited, when the resume failed.
		if t.Failed() {
			if page, err := e.o.TaskOutput(context.Background(), &protocol.TaskOutputParams{ID: a.ID, Limit: 1 << 20}); err == nil {
				t.Logf("the output's end: %q", page.Data[max(0, len(page.Data)-6000):])
			}
			files, _ := filepath.Glob(filepath.Join(e.ws.DataDir, "tasks", a.ID, "claude", "projects", "*", "*.jsonl"))
			for _, f := range files {
				b, _ := os.ReadFile(f)
				t.Logf("%s: %d bytes: %.3000s", f, len(b), b)
			}
		}
	}()
	before := e.get(t, a.ID)
	if _, err := e.o.TaskPause(context.Background(), &protocol.TaskIDParams{ID: a.ID}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "paused", statusIs(a.ID, protocol.StatusPaused))
	if err := processGone(before.Agent.PID); err != nil {
		t.Fatal(err)
	}
	// claude may not have saved the conversation when the pause stopped it
	// (2.1.200 under load had written bookkeeping lines only): then the
	// turn starts again in a new session, and asks again.
	saved := agent.SessionSaved(filepath.Join(e.ws.DataDir, "tasks", a.ID, "claude"), before.Agent.SessionID)
	resumedAt := time.Now()
	if _, err := e.o.TaskResume(context.Background(), &protocol.TaskIDParams{ID: a.ID}); err != nil {
		t.Fatal(err)
	}
	if !saved {
		t.Logf("claude had not saved the conversation: the turn starts again")
		asked := is(protocol.NotifyTaskQuestion, a.ID)
		e.notes.wait(t, "the question asked again", func(x note) bool { return x.at.After(resumedAt) && asked(x) })
		q := e.get(t, a.ID).PendingQuestion
		if _, err := e.o.TaskRespond(context.Background(), &protocol.TaskRespondParams{ID: a.ID, QuestionID: q.ID, OptionID: "allow"}); err != nil {
			t.Fatal(err)
		}
	}
	e.notes.wait(t, "completed after resume", is(protocol.NotifyTaskCompleted, a.ID))
	after := e.get(t, a.ID)
	if after.Worktree.Path != before.Worktree.Path || saved != (after.Agent.SessionID == before.Agent.SessionID) {
		t.Errorf("resumed (saved %v) with session %s in %s; before: %s in %s", saved,
			after.Agent.SessionID, after.Worktree.Path, before.Agent.SessionID, before.Worktree.Path)
	}
}

func TestRetryStartsAFreshAttempt(t *testing.T) {
	e := open(t, nil, nil)
	a := e.create(t, "fails", "try\n@@TEXT BLOCKED: the build server is down", 0)
	e.notes.wait(t, "blocked", statusIs(a.ID, protocol.StatusBlocked))
	first := e.get(t, a.ID)
	if first.Blocked.Reason != protocol.BlockedAgentFailed || !strings.Contains(first.Blocked.Detail, "build server is down") {
		t.Fatalf("blocked = %+v", first.Blocked)
	}
	retry, err := e.o.TaskRetry(context.Background(), &protocol.TaskRetryParams{ID: a.ID})
	if err != nil {
		t.Fatal(err)
	}
	if retry.Attempt != 2 || retry.PreviousAttemptID != a.ID || retry.ID == a.ID {
		t.Fatalf("retry = %+v", retry)
	}
	e.notes.wait(t, "retry blocked too", statusIs(retry.ID, protocol.StatusBlocked))
	second := e.get(t, retry.ID)
	if second.Worktree.Path == first.Worktree.Path || second.Worktree.BaseCommit != first.Worktree.BaseCommit {
		t.Errorf("retry worktree %+v, first %+v", second.Worktree, first.Worktree)
	}
	// The previous attempt's blocked reason reached the model in the prompt.
	found := false
	for _, r := range e.api.MainRequests() {
		found = found || strings.Contains(r.LastUserText(), "build server is down") && strings.Contains(r.LastUserText(), "Previous attempt")
	}
	if !found {
		t.Error("the retry prompt did not carry the previous attempt")
	}
}

// familiar stops (or dies) while an agent works: the task is blocked
// {interrupted}; a familiar started with ResumeInterrupted continues it.
func TestRestartResumesInterruptedTasks(t *testing.T) {
	claude := testenv.Claude(t)
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo, dataDir, wtRoot := gitRepo(t), t.TempDir(), t.TempDir()
	openWS := func(n *notes, resume bool) *workspace.Workspace {
		ws, err := workspace.Open(context.Background(), repo, workspace.Options{
			DataDir: dataDir, WorktreesRoot: wtRoot, ClaudePath: claude, Notifier: n, ResumeInterrupted: resume,
			StartHook: func(ctx context.Context, o *agent.Options) {
				o.ExtraEnv = api.Env()
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	n1 := &notes{changed: make(chan struct{})}
	ws := openWS(n1, false)
	task, err := ws.Orch.TaskCreate(context.Background(), &protocol.TaskCreateParams{Title: "survive", Description: askBash("s.txt")})
	if err != nil {
		t.Fatal(err)
	}
	n1.wait(t, "waiting", statusIs(task.ID, protocol.StatusWaiting))
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	n2 := &notes{changed: make(chan struct{})}
	ws = openWS(n2, true)
	defer ws.Close()
	// The resumed session goes on from where it stopped. Built with
	// portableprocs (macOS's process core) and the sandbox off, the resumed
	// claude asks the question it was waiting on again (its transcript has
	// no end of that call): the person answers it once more. Either way the
	// task continues and completes.
	first := n2.wait(t, "completed, or asked again, after restart", func(x note) bool {
		return is(protocol.NotifyTaskCompleted, task.ID)(x) || is(protocol.NotifyTaskQuestion, task.ID)(x)
	})
	if first.method == protocol.NotifyTaskQuestion {
		var qn protocol.TaskQuestionNotification
		if err := json.Unmarshal(first.params, &qn); err != nil {
			t.Fatal(err)
		}
		t.Logf("after the restart the task asked again: %s", qn.Question.Text)
		if _, err := ws.Orch.TaskRespond(context.Background(), &protocol.TaskRespondParams{ID: task.ID, QuestionID: qn.Question.ID, OptionID: protocol.OptionAllow}); err != nil {
			t.Fatal(err)
		}
		n2.wait(t, "completed after restart", is(protocol.NotifyTaskCompleted, task.ID))
	}
	evs, err := ws.Orch.TaskEvents(context.Background(), &protocol.TaskEventsParams{ID: task.ID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	sawInterrupted := false
	for _, ev := range evs.Events {
		sawInterrupted = sawInterrupted || strings.Contains(string(ev.Params), `"reason":"interrupted"`)
	}
	if !sawInterrupted {
		t.Error("the replayed events do not show the interruption")
	}
}

// Architect mode is enforced by claude's own flags, not the prompt: a Write
// the model attempts is refused by the CLI.
func TestArchitectModeWriteRefusedByClaude(t *testing.T) {
	drivers := []protocol.Driver{protocol.DriverPTY, protocol.DriverStream}
	for _, d := range drivers {
		t.Run(string(d), func(t *testing.T) {
			e := open(t, nil, nil)
			task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{
				Title: "plan only", Mode: protocol.ModeArchitect, Driver: d,
				Description: "plan\n@@TOOL Write {\"file_path\":\"plan.txt\",\"content\":\"x\"}\n@@TEXT Here is my plan.",
			})
			if err != nil {
				t.Fatal(err)
			}
			if task.Mode != protocol.ModeArchitect {
				t.Fatalf("mode = %q", task.Mode)
			}
			e.notes.wait(t, "finished", func(x note) bool {
				return is(protocol.NotifyTaskCompleted, task.ID)(x) || statusIs(task.ID, protocol.StatusBlocked)(x)
			})
			got := e.get(t, task.ID)
			if got.Worktree != nil {
				if _, err := os.Stat(filepath.Join(got.Worktree.Path, "plan.txt")); err == nil {
					t.Fatal("architect mode wrote a file")
				}
			}
			refused := false
			for _, r := range e.api.MainRequests() {
				for _, b := range r.ToolResults() {
					refused = refused || (b.IsError && strings.Contains(b.Content, "Write"))
				}
			}
			if !refused {
				t.Error("the model was not told the Write was refused")
			}
		})
	}
}

func TestSkillsReloadWithoutRestart(t *testing.T) {
	e := open(t, nil, nil)
	dir := filepath.Join(e.repo, ".familiar", "skills", "review")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(desc string) {
		tmp := filepath.Join(dir, ".SKILL.md.tmp")
		os.WriteFile(tmp, []byte("---\nname: review\ndescription: "+desc+"\n---\nLook for bugs.\n"), 0o644)
		if err := os.Rename(tmp, filepath.Join(dir, "SKILL.md")); err != nil { // saved by rename, as editors do
			t.Fatal(err)
		}
	}
	write("first")
	e.notes.wait(t, "skill added", is(protocol.NotifySkillsChanged, `"added":["review"]`))
	list, _ := e.o.SkillsList(context.Background())
	if len(list) != 1 || list[0].Description != "first" {
		t.Fatalf("skills = %+v", list)
	}
	write("second")
	e.notes.wait(t, "skill updated", is(protocol.NotifySkillsChanged, `"updated":["review"]`))
	if s, _ := e.o.SkillsGet(context.Background(), "review"); s == nil || s.Description != "second" {
		t.Fatalf("skill = %+v", s)
	}
	// A broken skill's error names its file and line (issue 26).
	broken := filepath.Join(e.repo, ".familiar", "skills", "broken")
	os.MkdirAll(broken, 0o755)
	tmp := filepath.Join(broken, ".SKILL.md.tmp")
	os.WriteFile(tmp, []byte("---\nname: broken\ndescription: d\nmode: wizard\n---\nBody.\n"), 0o644)
	if err := os.Rename(tmp, filepath.Join(broken, "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	n := e.notes.wait(t, "the skill's error", is(protocol.NotifySkillsChanged, `"line":4`))
	if !strings.Contains(string(n.params), filepath.Join("broken", "SKILL.md")) {
		t.Errorf("skills/changed = %s", n.params)
	}
	os.RemoveAll(broken)
	os.RemoveAll(dir)
	e.notes.wait(t, "skill removed", is(protocol.NotifySkillsChanged, `"removed":["review"]`))
	if _, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{Title: "t", Description: "d", Skills: []string{"review"}}); err == nil {
		t.Error("a removed skill was accepted")
	}
}

func TestMcpCheckNamesTheMissingCommand(t *testing.T) {
	e := open(t, nil, nil)
	res, err := e.o.McpCheck(context.Background(), map[string]protocol.McpServer{
		"broken": {Type: "stdio", Command: "definitely-not-installed-mcp"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Servers) != 1 || res.Servers[0].Available || !strings.Contains(res.Servers[0].Problem, "definitely-not-installed-mcp") {
		t.Fatalf("check = %+v", res)
	}
}

func TestSetModeContinuesTheSession(t *testing.T) {
	e := open(t, nil, nil)
	a := e.create(t, "switch", askBash("m.txt"), 0)
	e.notes.wait(t, "waiting", statusIs(a.ID, protocol.StatusWaiting))
	before := e.get(t, a.ID)
	got, err := e.o.TaskSetMode(context.Background(), &protocol.TaskSetModeParams{ID: a.ID, Mode: protocol.ModeAuditor})
	if err != nil || got.Mode != protocol.ModeAuditor {
		t.Fatalf("setMode = %+v, %v", got, err)
	}
	e.notes.wait(t, "finished after switch", func(x note) bool {
		return is(protocol.NotifyTaskCompleted, a.ID)(x) || statusIs(a.ID, protocol.StatusBlocked)(x)
	})
	after := e.get(t, a.ID)
	if after.Agent.SessionID != before.Agent.SessionID {
		t.Error("the mode switch started a new session")
	}
	// The resumed conversation reached the model with its history and the notice.
	var sawNotice bool
	for _, r := range e.api.MainRequests() {
		if strings.Contains(r.LastUserText(), "auditor") && len(r.Messages) > 2 {
			sawNotice = true
		}
	}
	if !sawNotice {
		t.Error("the model never heard of the mode switch in the same conversation")
	}
	// The Bash that waited on its permission when the switch restarted
	// claude is in no session file: familiar closed it when its agent
	// exited, in the transcript and in task/get's steps (it stayed pending
	// for ever).
	last := map[string]string{}
	for _, n := range e.notes.all() {
		var p protocol.TaskTranscriptNotification
		if n.method != protocol.NotifyTaskTranscript || json.Unmarshal(n.params, &p) != nil || p.ID != a.ID || p.Entry.ToolCall == nil {
			continue
		}
		last[p.Entry.ToolCall.Name+" "+p.Entry.ToolCall.ID] = p.Entry.ToolCall.Status
	}
	if len(last) == 0 {
		t.Error("no tool call in the transcript")
	}
	for call, status := range last {
		if status == "pending" || status == "running" {
			t.Errorf("%s is still %s in the transcript after its agent was restarted", call, status)
		}
	}
	for _, tc := range after.Steps {
		if tc.Status == "pending" || tc.Status == "running" {
			t.Errorf("step %s %s is still %s", tc.Name, tc.ID, tc.Status)
		}
	}
}

func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(testenv.Git(t), append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func finish(t *testing.T, e *env, title, file string) *protocol.Task {
	t.Helper()
	a := e.create(t, title, "go\n@@TOOL Bash {\"command\":\"echo from the task > "+file+"\"}\n@@TEXT Wrote "+file+".", 0)
	e.notes.wait(t, "waiting", statusIs(a.ID, protocol.StatusWaiting))
	q := e.get(t, a.ID).PendingQuestion
	if _, err := e.o.TaskRespond(context.Background(), &protocol.TaskRespondParams{ID: a.ID, QuestionID: q.ID, OptionID: "allow"}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "completed", is(protocol.NotifyTaskCompleted, a.ID))
	return e.get(t, a.ID)
}

func TestDiffMergeUndoMergeAgain(t *testing.T) {
	e := open(t, nil, nil)
	ctx := context.Background()
	a := finish(t, e, "feature", "feature.txt")
	d, err := e.o.TaskDiff(ctx, &protocol.TaskDiffParams{ID: a.ID})
	if err != nil || len(d.Files) != 1 || d.Files[0].Path != "feature.txt" || !strings.Contains(d.Patch, "feature.txt") {
		t.Fatalf("diff = %+v, %v", d, err)
	}
	before := gitIn(t, e.repo, "rev-parse", "HEAD")
	m, err := e.o.TaskMerge(ctx, &protocol.TaskMergeParams{ID: a.ID, Strategy: protocol.MergeSquash})
	if err != nil || m.Status != protocol.StatusMerged {
		t.Fatalf("merge = %+v, %v", m, err)
	}
	if _, err := os.Stat(filepath.Join(e.repo, "feature.txt")); err != nil {
		t.Fatal("the merge did not reach the user's checkout")
	}
	u, err := e.o.TaskUndo(ctx, &protocol.TaskIDParams{ID: a.ID})
	if err != nil || u.Status != protocol.StatusMerging {
		t.Fatalf("undo = %+v, %v", u, err)
	}
	if gitIn(t, e.repo, "rev-parse", "HEAD") != before {
		t.Fatal("undo did not restore the base")
	}
	if _, err := e.o.TaskMerge(ctx, &protocol.TaskMergeParams{ID: a.ID, Strategy: protocol.MergeSquash}); err != nil {
		t.Fatalf("merge again: %v", err)
	}
	// The publisher writes audit entries behind the replies: wait for them
	// (under load the second merge's entry was not yet there when read at
	// once).
	var got string
	ok := testenv.Eventually(30*time.Second, func() bool {
		entries, _, err := e.ws.Store.Audit(storeAuditFilter(a.ID))
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		merges := 0
		for _, en := range entries {
			actions = append(actions, en.Action)
			if en.Action == "task.merged" {
				merges++
			}
		}
		got = strings.Join(actions, ",")
		return merges == 2 && strings.Contains(got, "task.undone") && strings.Contains(got, "permission.decided")
	})
	if !ok {
		t.Errorf("audit log lacks two task.merged, a task.undone and a permission.decided: %s", got)
	}
}

func TestMergeRefusesDirtyBaseAndReportsConflicts(t *testing.T) {
	e := open(t, nil, nil)
	ctx := context.Background()
	a := finish(t, e, "conflicting", "same.txt")
	// The user has uncommitted work in the base checkout.
	os.WriteFile(filepath.Join(e.repo, "wip.txt"), []byte("mine\n"), 0o644)
	_, err := e.o.TaskMerge(ctx, &protocol.TaskMergeParams{ID: a.ID})
	pe, ok := err.(*protocol.Error)
	if !ok || pe.Code != protocol.CodeFailedPrecondition || !strings.Contains(pe.Message, "wip.txt") {
		t.Fatalf("merge into a dirty checkout = %v", err)
	}
	// The user commits a different same.txt: a conflict, base untouched.
	os.WriteFile(filepath.Join(e.repo, "same.txt"), []byte("user's\n"), 0o644)
	gitIn(t, e.repo, "add", "-A")
	gitIn(t, e.repo, "commit", "-qm", "user")
	before := gitIn(t, e.repo, "rev-parse", "HEAD")
	_, err = e.o.TaskMerge(ctx, &protocol.TaskMergeParams{ID: a.ID})
	pe, ok = err.(*protocol.Error)
	if !ok || pe.Code != protocol.CodeConflict || !strings.Contains(formatData(pe.Data), "same.txt") {
		t.Fatalf("conflicting merge = %v", err)
	}
	if gitIn(t, e.repo, "rev-parse", "HEAD") != before || gitIn(t, e.repo, "status", "--porcelain") != "" {
		t.Error("the conflicting merge touched the base")
	}
	if got := e.get(t, a.ID); got.Status != protocol.StatusMerging {
		t.Errorf("status after conflict = %s", got.Status)
	}
}

func storeAuditFilter(taskID string) store.AuditFilter {
	return store.AuditFilter{TaskID: taskID, Limit: 1000}
}

// A 5 MB tool input: the question event keeps at most 30 KB, while
// task/output pages still return the whole of it.
func TestHugeToolInputIsClippedInEventsNotInOutput(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 5<<20/16)
	e := openWith(t, nil, nil, fakeapi.Sequence(
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Write", Input: map[string]string{"file_path": "big.txt", "content": big}}}},
		fakeapi.Reply{Text: "Wrote it."},
	))
	ctx := context.Background()
	task, err := e.o.TaskCreate(ctx, &protocol.TaskCreateParams{Title: "big", Description: "write a big file", Driver: protocol.DriverStream})
	if err != nil {
		t.Fatal(err)
	}
	q := e.notes.wait(t, "question", is(protocol.NotifyTaskQuestion, task.ID))
	if len(q.params) > 40<<10 {
		t.Errorf("task/question is %d bytes", len(q.params))
	}
	var qn protocol.TaskQuestionNotification
	json.Unmarshal(q.params, &qn)
	if !qn.Question.Truncated || qn.Question.OriginalSize < 5<<20 {
		t.Errorf("question truncated=%v size=%d", qn.Question.Truncated, qn.Question.OriginalSize)
	}
	got := e.get(t, task.ID)
	if b, _ := json.Marshal(got); len(b) > 40<<10 {
		var m map[string]json.RawMessage
		json.Unmarshal(b, &m)
		sizes := map[string]int{}
		for k, v := range m {
			sizes[k] = len(v)
		}
		t.Errorf("the stored task is %d bytes: %v", len(b), sizes)
	}
	// The whole input is in the raw output, page by page.
	if all, _ := e.output(t, task.ID); !strings.Contains(all, big) {
		t.Errorf("task/output (%d bytes) lacks the 5 MB input", len(all))
	}
	if _, err := e.o.TaskCancel(ctx, &protocol.TaskIDParams{ID: task.ID}); err != nil {
		t.Fatal(err)
	}
}

// A finished task's agent still draws its exit screen (and the masking
// writer lets its held-back tail go) after the task is merging: task/output's
// ended tells a client when the log is final. While the agent lives it is
// false; once set, the log holds every byte the task/output notifications
// carried, and it never grows again.
func TestOutputEndedOnceTheAgentIsGone(t *testing.T) {
	e := open(t, nil, nil)
	ctx := context.Background()
	task := e.create(t, "talk", askBash("t.txt"), 0)
	e.notes.wait(t, "waiting", statusIs(task.ID, protocol.StatusWaiting))
	readAll := func() (string, *protocol.TaskOutputResult) { return e.output(t, task.ID) }
	if _, page := readAll(); page.Ended {
		t.Fatalf("task/output ended while the agent waits on a question: %+v", page)
	}
	q := e.get(t, task.ID).PendingQuestion
	if _, err := e.o.TaskRespond(ctx, &protocol.TaskRespondParams{ID: task.ID, QuestionID: q.ID, OptionID: "allow"}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "completed", is(protocol.NotifyTaskCompleted, task.ID))
	var final string
	// Polling familiar's answer; nothing to wait on.
	if !testenv.Eventually(60*time.Second, func() bool {
		all, page := readAll()
		final = all
		return page.Ended
	}) {
		t.Fatalf("task/output never ended after the task finished (status %s)", e.get(t, task.ID).Status)
	}
	notified := func() string {
		var b strings.Builder
		for _, n := range e.notes.all() {
			var o protocol.TaskOutputNotification
			if n.method == protocol.NotifyTaskOutput && json.Unmarshal(n.params, &o) == nil && o.ID == task.ID {
				b.WriteString(o.Data)
			}
		}
		return b.String()
	}
	// The notifications go out through the publisher's queue: wait for them
	// to carry as much as the log holds.
	if !testenv.Eventually(60*time.Second, func() bool { return len(notified()) >= len(final) }) {
		t.Fatalf("the output notifications carried %d bytes, the ended log %d", len(notified()), len(final))
	}
	if got := notified(); got != final {
		i := 0
		for i < len(got) && i < len(final) && got[i] == final[i] {
			i++
		}
		t.Errorf("the notifications carried %d bytes, the ended log %d: they differ from byte %d: %q vs %q",
			len(got), len(final), i, got[max(0, i-20):min(len(got), i+20)], final[max(0, i-20):min(len(final), i+20)])
	}
	if again, _ := readAll(); again != final {
		t.Errorf("the log grew after ended: %d bytes, then %d", len(final), len(again))
	}
}

func TestOutputRetentionRemovesOnlyOldFinishedLogs(t *testing.T) {
	clk := clock.NewFake(time.Now())
	e := open(t, clk, nil)
	a := e.create(t, "old", "hi\n@@TEXT Hi.", 0)
	e.notes.wait(t, "done", is(protocol.NotifyTaskCompleted, a.ID))
	running := e.create(t, "running", askBash("r.txt"), 0)
	e.notes.wait(t, "waiting", statusIs(running.ID, protocol.StatusWaiting))
	logs, _ := filepath.Glob(filepath.Join(e.ws.DataDir, "tasks", "*", "output-*.log"))
	if len(logs) != 2 {
		t.Fatalf("logs = %v", logs)
	}
	old := clk.Now().Add(-8 * 24 * time.Hour)
	for _, l := range logs {
		os.Chtimes(l, old, old)
	}
	clk.Advance(25 * time.Hour) // the daily pass
	// The pass runs on its own goroutine; nothing to wait on.
	var left []string
	testenv.Await(t, 30*time.Second, "the old log of the finished task to be removed", func() bool {
		left, _ = filepath.Glob(filepath.Join(e.ws.DataDir, "tasks", "*", "output-*.log"))
		return len(left) == 1
	})
	if !strings.Contains(left[0], running.ID) {
		t.Fatalf("kept %v, want the running task's log", left)
	}
}

func TestMcpServerThatFailsBecomesAWarning(t *testing.T) {
	e := open(t, nil, nil)
	task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{
		Title: "with a broken server", Description: "hi\n@@TEXT Hi.", Driver: protocol.DriverStream,
		McpServers: map[string]protocol.McpServer{"broken": {Type: "stdio", Command: "/nonexistent/mcp-binary"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "pre-start warning", is(protocol.NotifyServerMessage, "broken", `"level":"warning"`, task.ID))
	e.notes.wait(t, "warning from claude", is(protocol.NotifyServerMessage, "failed to start in claude", "broken"))
	e.notes.wait(t, "completed", is(protocol.NotifyTaskCompleted, task.ID))
}

// A server whose command exists (familiar's check before the start passes)
// but exits at once fails inside claude: the person hears of it whatever
// the driver. The stream driver says what claude's system/init reports;
// under the PTY, whose screen says nothing of it, familiar's own probe
// (issue 26).
func TestMcpServerFailingInsideClaudeIsReportedByBothDrivers(t *testing.T) {
	for _, driver := range []protocol.Driver{protocol.DriverPTY, protocol.DriverStream} {
		t.Run(string(driver), func(t *testing.T) {
			e := open(t, nil, nil)
			task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{
				Title: "with a server that exits", Description: "hi\n@@TEXT Hi.", Driver: driver,
				McpServers: map[string]protocol.McpServer{"quits": {Type: "stdio", Command: "false"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			said := map[protocol.Driver]string{protocol.DriverStream: "failed to start in claude", protocol.DriverPTY: "did not start: quits (exited with status 1"}[driver]
			e.notes.wait(t, "the failure said", is(protocol.NotifyServerMessage, `"level":"warning"`, task.ID, "quits", said))
			e.notes.wait(t, "completed", is(protocol.NotifyTaskCompleted, task.ID))
		})
	}
}

// A task's skills are installed where claude reads them: claude lists them.
// Named in task/create, or (issue 26) a profile's default skills when
// task/create names none; skills/list marks those, profiles/list lists them.
func TestTaskSkillsReachClaude(t *testing.T) {
	for _, fromProfile := range []bool{false, true} {
		t.Run(fmt.Sprintf("fromProfile=%v", fromProfile), func(t *testing.T) { taskSkillsReachClaude(t, fromProfile) })
	}
}

func taskSkillsReachClaude(t *testing.T, fromProfile bool) {
	e := open(t, nil, nil)
	dir := filepath.Join(e.repo, ".familiar", "skills", "release-notes")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: release-notes\ndescription: Write release notes\n---\nList user-visible changes.\n"), 0o644)
	e.notes.wait(t, "skill loaded", is(protocol.NotifySkillsChanged, "release-notes"))
	params := &protocol.TaskCreateParams{Title: "notes", Description: "hi\n@@TEXT Hi.", Driver: protocol.DriverStream, Skills: []string{"release-notes"}}
	if fromProfile {
		os.MkdirAll(filepath.Join(e.repo, ".familiar", "profiles"), 0o755)
		os.WriteFile(filepath.Join(e.repo, ".familiar", "profiles", "writer.md"),
			[]byte("---\ndescription: writes docs\nskills: [release-notes]\n---\n{{.Title}}\n\n{{.Description}}\n"), 0o644)
		params.Profile, params.Skills = "writer", nil
		skills, _ := e.o.SkillsList(context.Background())
		if len(skills) != 1 || !slices.Equal(skills[0].DefaultFor, []string{"writer"}) {
			t.Errorf("skills/list = %+v", skills)
		}
		profs, _ := e.o.ProfilesList(context.Background())
		if i := slices.IndexFunc(profs, func(p protocol.Profile) bool { return p.Name == "writer" }); i < 0 || !slices.Equal(profs[i].Skills, []string{"release-notes"}) {
			t.Errorf("profiles/list = %+v", profs)
		}
	}
	task, err := e.o.TaskCreate(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "completed", is(protocol.NotifyTaskCompleted, task.ID))
	out, err := e.o.TaskOutput(context.Background(), &protocol.TaskOutputParams{ID: task.ID, Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, line := range strings.Split(out.Data, "\n") {
		var m struct {
			Subtype string   `json:"subtype"`
			Skills  []string `json:"skills"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Subtype == "init" {
			for _, s := range m.Skills {
				listed = listed || s == "release-notes"
			}
		}
	}
	if !listed {
		t.Error("claude's init does not list the task's skill")
	}
	if _, err := os.Stat(filepath.Join(e.get(t, task.ID).Worktree.Path, ".claude")); err == nil {
		t.Error("the skill was written into the worktree")
	}
}

// Cancelling a task whose Bash tool left `sleep 600 &` behind (claude runs
// each command in a session of its own): nothing of it is left afterwards.
//
// With the sandbox off: in it (issue 37), each command runs in a PID
// namespace of its own, and the kernel ends the backgrounded sleep with the
// command, before familiar has anything to cancel.
func TestCancelKillsBackgroundedToolProcesses(t *testing.T) {
	off := protocol.SandboxOff
	e := open(t, nil, &protocol.SettingsUpdate{PermissionPolicy: &protocol.Policy{Default: protocol.PolicyAllow}, Sandbox: &off})
	task := e.create(t, "background", "go\n@@TOOL Bash {\"command\":\"(sleep 600 >/dev/null 2>&1 &); echo started\"}\n@@DELAY 60s\n@@TEXT late", 0)
	e.notes.wait(t, "running", statusIs(task.ID, protocol.StatusRunning))
	wt := ""
	var sleeper int
	// Polling /proc: no event says a process started.
	testenv.Await(t, 60*time.Second, "the tool's sleep to start", func() bool {
		if wt == "" {
			if got := e.get(t, task.ID); got.Worktree != nil {
				wt = got.Worktree.Path
			}
		}
		sleeper = findProcess("sleep", wt)
		return sleeper != 0
	})
	if _, err := e.o.TaskCancel(context.Background(), &protocol.TaskIDParams{ID: task.ID}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "cancelled", statusIs(task.ID, protocol.StatusCancelled))
	if err := processGone(sleeper); err != nil {
		t.Fatalf("the backgrounded sleep survived the cancel: %v", err)
	}
}

// findProcess returns a live process named comm whose working directory is
// dir, or 0.
func findProcess(comm, dir string) int {
	if dir == "" {
		return 0
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid := 0
		if err := json.Unmarshal([]byte(e.Name()), &pid); err != nil || pid <= 0 {
			continue
		}
		c, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if strings.TrimSpace(string(c)) != comm {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			return pid
		}
	}
	return 0
}

// A task the API fails for ends blocked with the API's error; one task/send
// continues it in the same session and worktree, with its history: the
// model sees the first prompt and the person's message in one conversation.
func TestBlockedByAPIErrorContinuesWithSend(t *testing.T) {
	e := openWith(t, nil, nil, fakeapi.Sequence(
		fakeapi.Reply{Status: 400, Error: "prompt is malformed in some way"},
		fakeapi.Reply{Text: "Fixed it and finished."},
	))
	ctx := context.Background()
	task, err := e.o.TaskCreate(ctx, &protocol.TaskCreateParams{Title: "flaky api", Description: "first words of the task"})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "blocked", statusIs(task.ID, protocol.StatusBlocked))
	blocked := e.get(t, task.ID)
	if blocked.Blocked == nil || blocked.Blocked.Reason == protocol.BlockedInterrupted {
		t.Fatalf("blocked = %+v", blocked.Blocked)
	}
	t.Logf("blocked: %s %q", blocked.Blocked.Reason, blocked.Blocked.Detail)
	if _, err := e.o.TaskSend(ctx, &protocol.TaskSendParams{ID: task.ID, Text: "please try once more"}); err != nil {
		t.Fatal(err)
	}
	// The block was announced too (success false): wait for the success.
	e.notes.wait(t, "completed", is(protocol.NotifyTaskCompleted, task.ID, `"success":true`))
	done := e.get(t, task.ID)
	if done.Worktree == nil || blocked.Worktree == nil || done.Worktree.Path != blocked.Worktree.Path {
		t.Errorf("continued in another worktree: %+v then %+v", blocked.Worktree, done.Worktree)
	}
	if done.Agent == nil || blocked.Agent == nil || done.Agent.SessionID != blocked.Agent.SessionID {
		t.Errorf("continued in another session: %+v then %+v", blocked.Agent, done.Agent)
	}
	// The request that finished it carried the whole conversation.
	var last string
	for _, r := range e.api.MainRequests() {
		last = string(r.Raw)
	}
	if !strings.Contains(last, "first words of the task") || !strings.Contains(last, "please try once more") {
		t.Errorf("the continued turn lost its history:\n%.2000s", last)
	}
}

// TestSkillShellCommandThroughPolicy: a shell command written in a skill
// (its `!` line, let through by the skill's allowed-tools) goes through the
// task's policy like a Bash call: under a policy that asks for Bash, the
// person is asked with the skill's name, denies, the command does not run,
// and the audit has the decision with the skill (claude 2.1.332). An older
// claude runs it under the skill's allowed-tools, and the person is told so
// (issue 27).
func TestSkillShellCommandThroughPolicy(t *testing.T) {
	for _, driver := range []protocol.Driver{protocol.DriverPTY, protocol.DriverStream} {
		t.Run(string(driver), func(t *testing.T) {
			e := open(t, nil, &protocol.SettingsUpdate{PermissionPolicy: &protocol.Policy{Default: protocol.PolicyAsk, Allow: []string{"Skill"}}})
			dir := filepath.Join(e.repo, ".familiar", "skills", "marker")
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: marker\ndescription: makes a marker file\n"+
				"allowed-tools: Bash(touch:*)\n---\nThe marker: !`touch skill-ran.txt`\n"), 0o644)
			e.notes.wait(t, "skill loaded", is(protocol.NotifySkillsChanged, "marker"))
			task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{
				Title: "marker", Description: "use it\n@@TOOL Skill {\"skill\":\"marker\"}\n@@TEXT Used it.", Driver: driver, Skills: []string{"marker"},
			})
			if err != nil {
				t.Fatal(err)
			}
			cli, err := agent.FindCLI(context.Background(), testenv.Claude(t), "")
			if err != nil {
				t.Fatal(err)
			}
			if !agent.HasSkillShellHook(cli.Version) {
				e.notes.wait(t, "the notice", is(protocol.NotifyServerMessage, task.ID, "allowed-tools", "skill /marker"))
				e.notes.wait(t, "completed", is(protocol.NotifyTaskCompleted, task.ID))
				if _, err := os.Stat(filepath.Join(e.get(t, task.ID).Worktree.Path, "skill-ran.txt")); err != nil {
					t.Error("the skill's command did not run under its allowed-tools")
				}
				return
			}
			e.notes.wait(t, "waiting", statusIs(task.ID, protocol.StatusWaiting))
			q := e.get(t, task.ID).PendingQuestion
			if q == nil || q.Tool != "Bash" || !strings.Contains(string(q.Input), "touch skill-ran.txt") || q.Skill == nil || q.Skill.Name != "marker" || q.Skill.InvokedBy != "claude" {
				t.Fatalf("question = %+v", q)
			}
			if _, err := e.o.TaskRespond(context.Background(), &protocol.TaskRespondParams{ID: task.ID, QuestionID: q.ID, OptionID: agent.OptionDeny}); err != nil {
				t.Fatal(err)
			}
			e.notes.wait(t, "completed", is(protocol.NotifyTaskCompleted, task.ID))
			if _, err := os.Stat(filepath.Join(e.get(t, task.ID).Worktree.Path, "skill-ran.txt")); err == nil {
				t.Error("the denied command ran")
			}
			entries, _, err := e.ws.Store.Audit(storeAuditFilter(task.ID))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, en := range entries {
				b, _ := json.Marshal(en)
				found = found || (en.Action == "permission.decided" && strings.Contains(string(b), `"name":"marker"`) &&
					strings.Contains(string(b), "touch skill-ran.txt") && strings.Contains(string(b), `"option":"deny"`))
			}
			if !found {
				t.Errorf("the audit lacks the skill command's decision: %+v", entries)
			}
		})
	}
}

func listIDs(t *testing.T, e *env, p protocol.TaskListParams) []string {
	t.Helper()
	res, err := e.o.TaskList(context.Background(), &p)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range res.Tasks {
		ids = append(ids, x.ID)
	}
	slices.Sort(ids)
	return ids
}

// Archived tasks leave task/list (issue 26): by id, in bulk by end time, by
// task/remove {archive}; the store keeps them and task/list shows them when
// asked; a task that works again leaves the archive.
func TestArchiveHidesFinishedTasks(t *testing.T) {
	e := open(t, nil, &protocol.SettingsUpdate{MaxConcurrent: intp(1)})
	ctx := context.Background()
	a := e.create(t, "holds the slot", askBash("a.txt"), 0)
	e.notes.wait(t, "a waiting", statusIs(a.ID, protocol.StatusWaiting))
	b := e.create(t, "second", askBash("b.txt"), 0)
	c := e.create(t, "third", askBash("c.txt"), 0)
	d := e.create(t, "fourth", askBash("d.txt"), 0)
	for _, x := range []*protocol.Task{b, c} {
		if _, err := e.o.TaskCancel(ctx, &protocol.TaskIDParams{ID: x.ID}); err != nil {
			t.Fatal(err)
		}
	}
	// A waiting or queued task cannot be archived; the error names it.
	for _, x := range []*protocol.Task{a, d} {
		_, err := e.o.TaskArchive(ctx, &protocol.TaskArchiveParams{IDs: []string{x.ID}})
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != protocol.CodeFailedPrecondition || !strings.Contains(pe.Message, x.ID) {
			t.Errorf("archive %s = %v", x.Title, err)
		}
	}
	res, err := e.o.TaskArchive(ctx, &protocol.TaskArchiveParams{IDs: []string{b.ID}})
	if err != nil || !slices.Equal(res.IDs, []string{b.ID}) {
		t.Fatalf("archive b = %+v, %v", res, err)
	}
	all := []string{a.ID, b.ID, c.ID, d.ID}
	slices.Sort(all)
	without := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return id == b.ID })
	if got := listIDs(t, e, protocol.TaskListParams{}); !slices.Equal(got, without) {
		t.Errorf("list = %v, want %v", got, without)
	}
	if got := listIDs(t, e, protocol.TaskListParams{Archived: protocol.ArchivedInclude}); !slices.Equal(got, all) {
		t.Errorf("list with the archive = %v", got)
	}
	// In bulk: every merged or cancelled task that ended before now (c;
	// b is archived already, a and d have not ended).
	res, err = e.o.TaskArchive(ctx, &protocol.TaskArchiveParams{FinishedBefore: protocol.Time{Time: time.Now().Add(time.Second)}})
	if err != nil || !slices.Equal(res.IDs, []string{c.ID}) {
		t.Fatalf("archive finished = %+v, %v", res, err)
	}
	want := []string{b.ID, c.ID}
	slices.Sort(want)
	if got := listIDs(t, e, protocol.TaskListParams{Archived: protocol.ArchivedOnly}); !slices.Equal(got, want) {
		t.Errorf("archive = %v, want %v", got, want)
	}
	if got := e.get(t, c.ID); got.ArchivedAt.IsZero() {
		t.Errorf("task/get of an archived task = %+v", got)
	}
	// Shown again, then archived by task/remove {archive}.
	if res, err = e.o.TaskArchive(ctx, &protocol.TaskArchiveParams{IDs: []string{b.ID}, Unarchive: true}); err != nil || len(res.IDs) != 1 {
		t.Fatalf("unarchive = %+v, %v", res, err)
	}
	if err := e.o.TaskRemove(ctx, &protocol.TaskRemoveParams{ID: b.ID, Archive: true}); err != nil {
		t.Fatal(err)
	}
	if got := e.get(t, b.ID); got.ArchivedAt.IsZero() {
		t.Errorf("b after remove {archive} = %+v", got)
	}
}

// An auditor is given the repository's test commands (issue 26: TestCommands
// was never set, so an auditor could run only familiar's defaults): from
// .familiar/config.yaml here, with the real claude. Its write is refused
// without a question (dontAsk), and its check runs. (With `testCommands: []`
// the check is refused and this test fails.)
func TestAuditorRunsTheRepositorysTestCommands(t *testing.T) {
	e := open(t, nil, nil)
	check := filepath.Join(e.repo, "check.sh")
	if err := os.WriteFile(check, []byte("#!/bin/sh\necho CHECKS PASSED\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, e.repo, "add", "check.sh")
	gitIn(t, e.repo, "commit", "-qm", "a check")
	if err := os.MkdirAll(filepath.Join(e.repo, ".familiar"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.repo, ".familiar", "config.yaml"), []byte("testCommands:\n  - ./check.sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{Title: "audit", Mode: protocol.ModeAuditor,
		Description: "review\n@@TOOL Write {\"file_path\":\"audit.txt\",\"content\":\"found nothing\"}\n@@TOOL Bash {\"command\":\"./check.sh\"}\n@@TEXT Audited: the checks pass."})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "the audit completed", func(x note) bool {
		return is(protocol.NotifyTaskCompleted, task.ID)(x) || statusIs(task.ID, protocol.StatusWaiting)(x)
	})
	got := e.get(t, task.ID)
	if got.Status != protocol.StatusMerging {
		t.Fatalf("the auditor ended %s (question %+v, blocked %+v)", got.Status, got.PendingQuestion, got.Blocked)
	}
	var write, run *fakeapi.Block
	for _, r := range e.api.MainRequests() {
		for _, b := range r.ToolResults() {
			switch {
			case write == nil && strings.Contains(b.Content, "audit.txt") || write == nil && b.IsError:
				write = &b
			case strings.Contains(b.Content, "CHECKS PASSED"):
				run = &b
			}
		}
	}
	if write == nil || !write.IsError {
		t.Errorf("the auditor's write was not refused: %+v", write)
	}
	if run == nil || run.IsError {
		t.Errorf("the repository's test command did not run: %+v", run)
	}
	if _, err := os.Stat(filepath.Join(got.Worktree.Path, "audit.txt")); err == nil {
		t.Error("the auditor wrote audit.txt")
	}
}

// TestWarmAgentTakesFollowUp: with warmAgentSec, the claude of a finished
// task stays, and task/send types the follow-up into that same process
// (no new claude resuming the session), with the conversation whole; both
// drivers. Closing familiar stops the warm claude like any other.
func TestWarmAgentTakesFollowUp(t *testing.T) {
	for _, driver := range []protocol.Driver{protocol.DriverPTY, protocol.DriverStream} {
		t.Run(string(driver), func(t *testing.T) {
			warm := 600
			e := open(t, nil, &protocol.SettingsUpdate{WarmAgentSec: &warm, DefaultDriver: &driver})
			ctx := context.Background()
			task := e.create(t, "warm", "first words\n@@TEXT First answer.", 0)
			t0 := time.Now()
			e.notes.wait(t, "first completed", is(protocol.NotifyTaskCompleted, task.ID, "First answer"))
			t.Logf("first turn done after %v", time.Since(t0))
			first := e.get(t, task.ID)
			if first.Status != protocol.StatusMerging || first.Agent == nil || first.Agent.PID == 0 {
				t.Fatalf("after the first turn: status %s agent %+v", first.Status, first.Agent)
			}
			if err := syscall.Kill(first.Agent.PID, 0); err != nil {
				t.Fatalf("the warm claude (pid %d) is gone: %v", first.Agent.PID, err)
			}
			if _, err := e.o.TaskSend(ctx, &protocol.TaskSendParams{ID: task.ID, Text: "one more thing\n@@TEXT Second answer."}); err != nil {
				scr, _ := e.o.TaskScreen(ctx, &protocol.TaskIDParams{ID: task.ID})
				t.Fatalf("%v; screen: %+v", err, scr)
			}
			t.Logf("follow-up taken after %v", time.Since(t0))
			e.notes.wait(t, "second completed", is(protocol.NotifyTaskCompleted, task.ID, "Second answer"))
			t.Logf("follow-up done after %v", time.Since(t0))
			second := e.get(t, task.ID)
			if second.Agent == nil || second.Agent.PID != first.Agent.PID {
				t.Errorf("the follow-up ran in another claude: %+v, first %+v", second.Agent, first.Agent)
			}
			var last string
			for _, r := range e.api.MainRequests() {
				last = string(r.Raw)
			}
			if !strings.Contains(last, "first words") || !strings.Contains(last, "one more thing") {
				t.Errorf("the follow-up's request lost the conversation:\n%.2000s", last)
			}
		})
	}
}

// TestSideloadRefusal: an administrator's disableSideloadFlags (given here
// with --managed-settings) makes claude 2.1.331+ refuse a start that names
// MCP servers on its command line, as familiar passes them. A task with
// servers of its own is blocked{sideload_flags_disabled} with claude's words
// and the fix; a task that has none of its own (the settings' only) starts
// again without them and says what it lost (issue 27).
func TestSideloadRefusal(t *testing.T) {
	cli, err := agent.FindCLI(context.Background(), testenv.Claude(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if agent.CompareVersions(cli.Version, "2.1.331") < 0 {
		t.Skipf("claude %s has no disableSideloadFlags (2.1.331 and newer)", cli.Version)
	}
	server := protocol.McpServer{Type: "stdio", Command: "true"}
	e := open(t, nil, &protocol.SettingsUpdate{McpServers: map[string]protocol.McpServer{"shared": server}})
	e.startHook = func(o *agent.Options) {
		o.ExtraArgs = append(o.ExtraArgs, "--managed-settings", `{"disableSideloadFlags":true}`)
	}
	t.Run("the task's own servers: blocked", func(t *testing.T) {
		task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{
			Title: "own server", Description: "hi\n@@TEXT Hi.", McpServers: map[string]protocol.McpServer{"own": server},
		})
		if err != nil {
			t.Fatal(err)
		}
		e.notes.wait(t, "blocked", statusIs(task.ID, protocol.StatusBlocked))
		b := e.get(t, task.ID).Blocked
		if b == nil || b.Reason != protocol.BlockedSideloadDisabled || !strings.Contains(b.Detail, "--mcp-config is disabled") ||
			!strings.Contains(b.Detail, "ask your administrator") {
			t.Fatalf("blocked = %+v", b)
		}
	})
	t.Run("none of its own: starts without them", func(t *testing.T) {
		task := e.create(t, "no server of its own", "hi\n@@TEXT Hi.", 0)
		e.notes.wait(t, "what it lost", is(protocol.NotifyServerMessage, task.ID, "disableSideloadFlags", "shared"))
		e.notes.wait(t, "completed", is(protocol.NotifyTaskCompleted, task.ID, `"status":"merging"`))
	})
}

// TestArchitectPlanApprovedGoesOn: an architect task plans in claude's plan
// mode; the person approves the plan by switching the task to executor and
// saying go, and the same conversation goes on and edits, on every
// supported claude and both drivers. Approval never passes through an
// ExitPlanMode answer, which claude ignores from a PermissionRequest hook
// since 2.1.199 (anthropics/claude-code#74256): architect mode removes the
// tool, and the switch restarts claude out of plan mode (issue 27).
func TestArchitectPlanApprovedGoesOn(t *testing.T) {
	for _, d := range []protocol.Driver{protocol.DriverPTY, protocol.DriverStream} {
		t.Run(string(d), func(t *testing.T) {
			e := open(t, nil, &protocol.SettingsUpdate{PermissionPolicy: &protocol.Policy{Default: protocol.PolicyAllow}})
			ctx := context.Background()
			task, err := e.o.TaskCreate(ctx, &protocol.TaskCreateParams{
				Title: "plan first", Mode: protocol.ModeArchitect, Driver: d,
				Description: "plan it\n@@TEXT Plan: write approved.txt with the word yes.",
			})
			if err != nil {
				t.Fatal(err)
			}
			e.notes.wait(t, "the plan", is(protocol.NotifyTaskCompleted, task.ID))
			session := e.get(t, task.ID).Agent.SessionID
			if _, err := e.o.TaskSetMode(ctx, &protocol.TaskSetModeParams{ID: task.ID, Mode: protocol.ModeExecutor}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.o.TaskSend(ctx, &protocol.TaskSendParams{ID: task.ID,
				Text: "The plan is approved: go.\n@@TOOL Write {\"file_path\":\"approved.txt\",\"content\":\"yes\\n\"}\n@@TEXT Wrote approved.txt."}); err != nil {
				t.Fatal(err)
			}
			e.notes.wait(t, "done after approval", func(x note) bool {
				return is(protocol.NotifyTaskCompleted, task.ID, "Wrote approved.txt")(x) || statusIs(task.ID, protocol.StatusBlocked)(x)
			})
			got := e.get(t, task.ID)
			if b, err := os.ReadFile(filepath.Join(got.Worktree.Path, "approved.txt")); err != nil || string(b) != "yes\n" {
				t.Fatalf("approved.txt = %q, %v (task %s, blocked %+v)", b, err, got.Status, got.Blocked)
			}
			if got.Agent.SessionID != session {
				t.Error("the approval started a new conversation")
			}
		})
	}
}
