package orchestrator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/agent/transcript"
	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/protocol"
)

// prepare asks for an agent as familiar acp does (the stream driver).
func prepare(t *testing.T, r *runnerEnv, p protocol.TaskCreateParams) string {
	t.Helper()
	if p.Driver == "" {
		p.Driver = protocol.DriverStream
	}
	got, err := r.o.TaskPrepare(context.Background(), &protocol.TaskPrepareParams{TaskCreateParams: p})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID == "" {
		t.Fatalf("no agent prepared: %s", got.Reason)
	}
	return got.ID
}

func (r *runnerEnv) started() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}

// The first prompt goes to the claude task/prepare started, in the
// worktree made for it: no second claude, the task's id is the prepared
// one, and its first prompt is typed, not passed at the start.
func TestRunnerPreparedAgentTakesTheFirstPrompt(t *testing.T) {
	r := newRunner(t, protocol.DefaultSettings())
	ctx := context.Background()
	id := prepare(t, r, protocol.TaskCreateParams{})
	s0 := r.session(t, 0)
	if s0.opts.Prompt != "" {
		t.Errorf("the prepared claude started with a prompt: %q", s0.opts.Prompt)
	}
	task, err := r.o.TaskCreate(ctx, &protocol.TaskCreateParams{Title: "first", Description: "make the widget blue", Driver: protocol.DriverStream, Prepared: id})
	if err != nil {
		t.Fatal(err)
	}
	if task.ID != id {
		t.Errorf("task %s, want the prepared id %s", task.ID, id)
	}
	got := r.status(t, id, protocol.StatusRunning)
	if got.Worktree == nil || got.Worktree.Path != "/wt/"+id {
		t.Errorf("worktree %+v, want the prepared one", got.Worktree)
	}
	s0.mu.Lock()
	prompts := append([]string(nil), s0.prompts...)
	s0.mu.Unlock()
	if len(prompts) != 1 || !strings.Contains(prompts[0], "make the widget blue") {
		t.Errorf("prompts typed into the prepared claude: %q", prompts)
	}
	if n := r.started(); n != 1 {
		t.Errorf("%d claudes started, want the prepared one alone", n)
	}
	// It started at the editor's priority, keeps it until its answer
	// begins (the person waits for that) and works at the agents'.
	lowered := func() int {
		s0.mu.Lock()
		defer s0.mu.Unlock()
		return s0.lowered
	}
	if s0.opts.Nice != 0 || lowered() != 0 {
		t.Errorf("the prepared claude started at nice %d and was lowered to %d before it answered, want 0 and 0", s0.opts.Nice, lowered())
	}
	s0.opts.OnEvent(agent.Event{Kind: agent.EventTranscript, Transcript: &transcript.Entry{TranscriptEntry: protocol.TranscriptEntry{Kind: transcript.KindUsage}}})
	if lowered() != 0 {
		t.Errorf("lowered to %d by a usage entry, want 0 until the answer begins", lowered())
	}
	s0.opts.OnEvent(agent.Event{Kind: agent.EventTranscript, Transcript: &transcript.Entry{TranscriptEntry: protocol.TranscriptEntry{Kind: transcript.KindText, Text: "On it."}}})
	if lowered() != protocol.DefaultAgentNice {
		t.Errorf("lowered to %d once its answer began, want %d", lowered(), protocol.DefaultAgentNice)
	}
	if !s0.opts.OwnSession {
		t.Error("the prepared claude shares the background familiar's session (and its lowered autogroup), want one of its own")
	}
	// Its id is the task's now: task/release leaves it alone.
	if err := r.o.TaskRelease(ctx, &protocol.TaskIDParams{ID: id}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s0.Done():
		t.Fatal("task/release stopped a claude a task took")
	default:
	}
}

// A task that asks for another claude than the one prepared (a model
// chosen after session/new) gets its own, in the prepared worktree; the
// prepared one goes.
func TestRunnerPreparedAgentDiffersStartsItsOwn(t *testing.T) {
	r := newRunner(t, protocol.DefaultSettings())
	id := prepare(t, r, protocol.TaskCreateParams{})
	s0 := r.session(t, 0)
	if _, err := r.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{Title: "t", Description: "do it", Driver: protocol.DriverStream, Model: "opus", Prepared: id}); err != nil {
		t.Fatal(err)
	}
	awaitGone(t, s0, "the prepared claude stayed when the task started its own")
	s1 := r.session(t, 1)
	if !strings.Contains(s1.opts.Prompt, "do it") || s1.opts.Dir != "/wt/"+id {
		t.Errorf("the task's own claude: prompt %q in %s", s1.opts.Prompt, s1.opts.Dir)
	}
	r.status(t, id, protocol.StatusRunning)
}

// Prepared agents are bounded: by maxConcurrent (a queued task takes the
// slot back at once), by the pool (a newer prepare lets the oldest go) and
// by task/release.
func TestRunnerPreparedAgentsAreBounded(t *testing.T) {
	ctx := context.Background()
	t.Run("queue", func(t *testing.T) {
		s := protocol.DefaultSettings()
		s.MaxConcurrent = 1
		r := newRunner(t, s)
		prepare(t, r, protocol.TaskCreateParams{})
		s0 := r.session(t, 0)
		task := create(t, r.o, "queued")
		awaitGone(t, s0, "the prepared claude kept the only slot from a queued task")
		r.session(t, 1)
		r.status(t, task.ID, protocol.StatusRunning)
		got, err := r.o.TaskPrepare(ctx, &protocol.TaskPrepareParams{TaskCreateParams: protocol.TaskCreateParams{Driver: protocol.DriverStream}})
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != "" || got.Reason == "" {
			t.Errorf("prepared with every slot taken: %+v", got)
		}
	})
	t.Run("pool", func(t *testing.T) {
		s := protocol.DefaultSettings()
		s.MaxConcurrent = 8
		r := newRunner(t, s)
		prepare(t, r, protocol.TaskCreateParams{})
		s0 := r.session(t, 0)
		for i := 1; i < preparedMax; i++ {
			prepare(t, r, protocol.TaskCreateParams{})
			r.session(t, i)
		}
		prepare(t, r, protocol.TaskCreateParams{})
		awaitGone(t, s0, "the pool grew past preparedMax")
	})
	t.Run("unused", func(t *testing.T) {
		clk := clock.NewFake(time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC))
		r := newRunnerClock(t, protocol.DefaultSettings(), clk)
		prepare(t, r, protocol.TaskCreateParams{})
		s0 := r.session(t, 0)
		clk.Advance(preparedFor + time.Second)
		awaitGone(t, s0, "a prepared claude no task took stayed past preparedFor")
	})
	t.Run("release", func(t *testing.T) {
		r := newRunner(t, protocol.DefaultSettings())
		id := prepare(t, r, protocol.TaskCreateParams{})
		s0 := r.session(t, 0)
		if err := r.o.TaskRelease(ctx, &protocol.TaskIDParams{ID: id}); err != nil {
			t.Fatal(err)
		}
		awaitGone(t, s0, "task/release kept the prepared claude")
		// A task naming a released agent starts as any other.
		task, err := r.o.TaskCreate(ctx, &protocol.TaskCreateParams{Title: "t", Description: "do it", Driver: protocol.DriverStream, Prepared: id})
		if err != nil {
			t.Fatal(err)
		}
		if task.ID == id {
			t.Error("a released agent's id was given to a task")
		}
		r.session(t, 1)
	})
}

// The PTY driver gives claude its first prompt at exec: nothing is
// prepared for it (typing it into a screen that comes up is what the
// prepared claude would need).
func TestRunnerPreparedNotForThePTYDriver(t *testing.T) {
	r := newRunner(t, protocol.DefaultSettings())
	got, err := r.o.TaskPrepare(context.Background(), &protocol.TaskPrepareParams{TaskCreateParams: protocol.TaskCreateParams{Driver: protocol.DriverPTY}})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "" || !strings.Contains(got.Reason, "pty") || r.started() != 0 {
		t.Errorf("prepared for the pty driver: %+v, %d claudes", got, r.started())
	}
}

// The idle claudes are a cache (issue 40): past warmAgentMax, or past
// warmAgentMemoryMiB among them, the least recently used goes — warm ones
// and prepared ones alike.
func TestRunnerIdleClaudesAreACache(t *testing.T) {
	settings := func(most, mib int) protocol.Settings {
		s := protocol.DefaultSettings()
		s.MaxConcurrent, s.WarmAgentSec, s.WarmAgentMax, s.WarmAgentMemoryMiB = 8, 600, most, mib
		return s
	}
	const claudeRSS = 300 << 20
	rss := func(int) uint64 { return claudeRSS }
	t.Run("number", func(t *testing.T) {
		r := newRunnerWith(t, settings(2, 4096), runnerOptions{resident: rss})
		a, s0 := r.running(t, "a", 0)
		r.finishWarm(t, a.ID, s0)
		b, s1 := r.running(t, "b", 1)
		r.finishWarm(t, b.ID, s1)
		c, s2 := r.running(t, "c", 2)
		r.finishWarm(t, c.ID, s2)
		awaitGone(t, s0, "a third warm claude kept the least recently used with warmAgentMax 2")
		for _, s := range []*fakeSession{s1, s2} {
			select {
			case <-s.Done():
				t.Error("a more recently used warm claude went")
			default:
			}
		}
	})
	t.Run("memory", func(t *testing.T) {
		r := newRunnerWith(t, settings(4, 500), runnerOptions{resident: rss})
		a, s0 := r.running(t, "a", 0)
		r.finishWarm(t, a.ID, s0)
		b, s1 := r.running(t, "b", 1)
		r.finishWarm(t, b.ID, s1)
		awaitGone(t, s0, "two warm claudes of 300 MiB stayed with warmAgentMemoryMiB 500")
		select {
		case <-s1.Done():
			t.Error("the more recently used warm claude went")
		default:
		}
	})
	t.Run("prepared", func(t *testing.T) {
		r := newRunnerWith(t, settings(1, 4096), runnerOptions{resident: rss})
		a, s0 := r.running(t, "a", 0)
		r.finishWarm(t, a.ID, s0)
		prepare(t, r, protocol.TaskCreateParams{})
		awaitGone(t, s0, "a prepared claude and a warm one with warmAgentMax 1")
	})
	t.Run("settings", func(t *testing.T) {
		r := newRunnerWith(t, settings(4, 4096), runnerOptions{resident: rss})
		a, s0 := r.running(t, "a", 0)
		r.finishWarm(t, a.ID, s0)
		mib := 100
		if _, err := r.o.UpdateSettings(context.Background(), &protocol.SettingsUpdate{WarmAgentMemoryMiB: &mib}); err != nil {
			t.Fatal(err)
		}
		awaitGone(t, s0, "a 300 MiB warm claude stayed once warmAgentMemoryMiB was 100")
	})
}
