package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/agent/closing"
	"github.com/familiar-dev/familiar/agent/screen"
	"github.com/familiar-dev/familiar/procs"
)

// proc is what a Session needs of its child process (package procs).
type proc interface {
	Write(p []byte) (int, error)
	Resize(cols, rows int) error
	Terminate(ctx context.Context) error
	Done() <-chan struct{}
	PID() int
	exitStatus() Exited
}

// Session is one running Claude Code session, under either driver. Its
// methods are safe for concurrent use.
type Session struct {
	opts   Options
	logger *slog.Logger
	ev     *emitter
	qs     questions
	proc   proc
	ctx    context.Context // cancelled when the process has exited
	cancel context.CancelFunc
	wg     sync.WaitGroup // goroutines the session started (hook holds, classifiers)
	done   chan struct{}  // closed after the Exited event was emitted
	// spawned is what claude was started with that a driver may need
	// after (the PTY driver's MCP probe): the MCP config as written for
	// this start (with the user's servers) and claude's environment.
	spawned struct {
		mcpConfigPath string
		env           []string
	}

	watchdog *procs.Watchdog // nil without NoProgress (its methods are nil-safe)
	gate     progressGate    // what pauses watchdog

	cmdMu sync.Mutex
	cmd   *commandWatch // guarded by cmdMu; the command running now

	drv driver // the driver Options.Driver names
	tr  *transcriptFeed

	mu        sync.Mutex
	activity  Activity // guarded by mu
	inTurn    bool     // guarded by mu; a prompt was submitted and the turn has not ended
	turnEpoch int      // guarded by mu; counts UserPromptSubmit, to confirm typing
	// stopped: claude was last seen stopped by a signal (watchStopped);
	// beforeStop is the activity it will be back to when continued, and
	// takes what is reported meanwhile.
	stopped    bool     // guarded by mu
	beforeStop Activity // guarded by mu
	// retry is the last API retry reported in this turn: the screen shows
	// one over many redraws, and a failed turn counts claude's retries.
	retry APIRetry // guarded by mu
	// skillNoticeSaid: the person was told that skills' shell commands run
	// outside familiar on this claude (skillUsed).
	skillNoticeSaid bool          // guarded by mu
	changed         chan struct{} // guarded by mu; closed and replaced on every state change
}

// SessionID is the claude session id (for --resume).
func (s *Session) SessionID() string { return s.opts.SessionID }

// PID is the claude process id.
func (s *Session) PID() int { return s.proc.PID() }

// Driver is the name of the session's driver (DriverPTY or DriverStream).
func (s *Session) Driver() string { return s.opts.Driver }

// Done is closed when the process has exited and its Exited event was sent.
func (s *Session) Done() <-chan struct{} { return s.done }

// Activity is what the agent was last seen doing.
func (s *Session) Activity() Activity {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.activity
}

func (s *Session) emit(ev Event) {
	if ev.Kind == EventOutput && s.opts.NoOutputEvents {
		return
	}
	if ev.At.IsZero() {
		ev.At = s.opts.Clock.Now()
	}
	s.ev.emit(ev)
}

// notifyLocked wakes everyone waiting for a state change.
func (s *Session) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitFor blocks until cond() holds (checked under mu), the deadline passes or
// the session ends.
func (s *Session) waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	t := s.opts.Clock.NewTimer(d)
	defer t.Stop()
	for {
		s.mu.Lock()
		ok := cond()
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-t.C():
			return false
		case <-ctx.Done():
			return false
		case <-s.ctx.Done():
			return false
		}
	}
}

// epoch counts the turns started (UserPromptSubmit).
func (s *Session) epoch() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turnEpoch
}

func (s *Session) setActivity(a Activity) {
	s.mu.Lock()
	if s.stopped && a.State != ActivityStopped {
		s.beforeStop = a
		s.mu.Unlock()
		return
	}
	if s.activity == a {
		s.mu.Unlock()
		return
	}
	s.activity = a
	s.notifyLocked()
	s.mu.Unlock()
	s.emit(Event{Kind: EventActivity, Activity: &a})
}

// endTurn reports a finished turn; a final message that asks the person
// something becomes a question answered with text.
func (s *Session) endTurn(t *TurnEnded) {
	s.mu.Lock()
	s.inTurn = false
	if t.Failed && t.Failure == nil && s.retry.Attempt > 0 {
		// No structured failure, but claude was retrying the API.
		f := failureOf(s.retry, t.Error)
		t.Failure = &f
	}
	if f := t.Failure; t.Failed && f != nil && f.Retries == 0 {
		f.Retries = s.retry.Attempt
	}
	s.retry = APIRetry{}
	s.notifyLocked()
	s.mu.Unlock()
	s.setActivity(Activity{State: ActivityIdle})
	// The question goes first, so a consumer that sees TurnEnded already
	// knows the turn ended waiting on the person rather than done.
	if v := closing.Classify(t.LastMessage); !t.Failed && t.BackgroundTasks == 0 && v.Kind.WaitsOnPerson() {
		// Unsure waits too: a question taken for a report would tell the
		// person the work is ready to merge when the agent waits on them.
		p := &pendingQuestion{
			q:      Question{Kind: KindQuestion, Text: t.LastMessage, AllowText: true, Closing: string(v.Kind)},
			source: "prose",
		}
		for _, o := range v.Options {
			p.q.Options = append(p.q.Options, Option{ID: o.ID, Label: o.Label})
		}
		s.qs.add(p)
		s.emit(Event{Kind: EventQuestion, Question: &p.q})
		t.Asks = p.q.ID
	}
	s.emit(Event{Kind: EventTurnEnded, Turn: t})
}

// ask registers a question, emits it and waits for its answer. ok is false
// when it was resolved some other way or the session ended.
func (s *Session) ask(ctx context.Context, p *pendingQuestion) (Answer, bool) {
	s.qs.add(p)
	s.emit(Event{Kind: EventQuestion, Question: &p.q})
	a, ok := waitAnswer(ctx, p)
	if !ok && s.qs.remove(p.q.ID) {
		// The CLI withdrew the request (Esc cancels a held hook) or the
		// session ended: nobody will answer it now.
		s.emit(Event{Kind: EventQuestionResolved, Resolved: &Resolution{QuestionID: p.q.ID, By: "agent"}})
	}
	return a, ok
}

// askChoices puts each question of an AskUserQuestion call to the person in
// turn and returns the decision that answers them all, or nil if the session
// ended first.
func (s *Session) askChoices(ctx context.Context, input []byte, source string) map[string]any {
	qs, err := choiceQuestions(input)
	if err != nil {
		return map[string]any{"behavior": "deny", "message": "familiar could not read the questions: " + err.Error()}
	}
	answers := map[string]string{}
	for i, q := range qs {
		p := &pendingQuestion{q: q, tool: "AskUserQuestion", input: input, source: source}
		a, ok := s.ask(ctx, p)
		if !ok {
			return nil
		}
		answers[q.Text] = choiceAnswer(input, i, a)
	}
	return map[string]any{"behavior": "allow", "updatedInput": withAnswers(input, answers)}
}

// resolveElsewhere settles every pending question from source as answered
// outside familiar (by: "terminal" or "agent").
func (s *Session) resolveElsewhere(match func(*pendingQuestion) bool, by string) {
	for _, p := range s.qs.all() {
		if match(p) && s.qs.remove(p.q.ID) {
			p.resolveElsewhere()
			s.emit(Event{Kind: EventQuestionResolved, Resolved: &Resolution{QuestionID: p.q.ID, By: by}})
		}
	}
}

// apiRetry reports that claude retries a failed API call: the activity
// says so ("model error 500, retrying (3 of 10): boom") and an EventAPIRetry carries
// the details. A retry is progress: claude is not stuck, the API is.
func (s *Session) apiRetry(r APIRetry) {
	s.mu.Lock()
	last := s.retry
	// The screen shows each retry for a while, and a redraw may read it
	// again: a retry counts once, unless the reading knows more (its
	// status).
	if r.Attempt < last.Attempt || r.Attempt == last.Attempt && (last.Status != 0 || r.Status == 0) {
		s.mu.Unlock()
		return
	}
	s.retry = r
	s.notifyLocked()
	s.mu.Unlock()
	s.watchdog.Kick()
	s.setActivity(Activity{State: ActivityThinking, Detail: r.Summary()})
	s.emit(Event{Kind: EventAPIRetry, Retry: &r})
}

// Answer answers a pending question. A claude stopped by a signal (SIGSTOP)
// cannot take the answer: it is refused rather than typed into a frozen
// terminal or handed to a hook nobody reads.
func (s *Session) Answer(questionID string, a Answer) error {
	p := s.qs.get(questionID)
	if p == nil {
		return fmt.Errorf("%w: %s", ErrNoQuestion, questionID)
	}
	if s.proc != nil && procs.Stopped(s.proc.PID()) {
		return stoppedError{pid: s.proc.PID()}
	}
	if err := validate(p.q, a); err != nil {
		return err
	}
	switch p.source {
	case "prose", "interrupted":
		// Answered by the next prompt.
		if !s.qs.remove(questionID) {
			return fmt.Errorf("%w: %s was already settled", ErrNoQuestion, questionID)
		}
		p.resolveElsewhere()
		s.emit(Event{Kind: EventQuestionResolved, Resolved: &Resolution{QuestionID: questionID, By: "user", OptionID: a.OptionID}})
		return s.SendPrompt(proseReply(p.q, a))
	}
	if p.answer != nil {
		return p.answer(a)
	}
	if !s.qs.remove(questionID) {
		return fmt.Errorf("%w: %s was already settled", ErrNoQuestion, questionID)
	}
	p.answers <- a // buffered 1, and only the remover sends
	s.emit(Event{Kind: EventQuestionResolved, Resolved: &Resolution{QuestionID: questionID, By: "user", OptionID: a.OptionID}})
	return nil
}

// SendPrompt gives the agent a prompt (a new turn).
func (s *Session) SendPrompt(text string) error {
	if text == "" {
		return errors.New("empty prompt")
	}
	select {
	case <-s.ctx.Done():
		return ErrExited
	default:
	}
	return s.drv.sendPrompt(text)
}

// Interrupt stops the current turn (Esc in the TUI, an interrupt control
// request in stream mode).
func (s *Session) Interrupt() error { return s.drv.interrupt() }

// Input writes raw keystrokes (the editor's terminal) to the PTY.
func (s *Session) Input(raw []byte) error { return s.drv.input(raw) }

// Resize changes the PTY size (nothing for the stream driver).
func (s *Session) Resize(cols, rows int) error { return s.drv.resize(cols, rows) }

// Screen returns what the terminal shows (empty for the stream driver).
func (s *Session) Screen() screen.Snapshot { return s.drv.screen() }

// Stop terminates the process tree (SIGTERM, grace, SIGKILL) and waits until
// every goroutine of the session has finished.
func (s *Session) Stop(ctx context.Context) error {
	err := s.proc.Terminate(ctx)
	select {
	case <-s.done:
	case <-ctx.Done():
		return fmt.Errorf("stop agent: %w", ctx.Err())
	}
	return err
}

// watchExit waits for the process to end, releases everything the session
// holds, and emits Exited last.
func (s *Session) watchExit(cleanup func()) {
	<-s.proc.Done()
	s.cancel()
	s.stopCommandWatch()
	s.resolveElsewhere(func(*pendingQuestion) bool { return true }, "agent")
	s.wg.Wait()
	if cleanup != nil {
		cleanup()
	}
	x := s.proc.exitStatus()
	s.mu.Lock()
	s.stopped = false // a stopped claude that was killed is not stopped any more
	s.mu.Unlock()
	s.setActivity(Activity{State: ActivityIdle})
	s.emit(Event{Kind: EventExited, Exit: &x})
	s.ev.close()
	close(s.done)
}

// proseReply is the prompt that answers a prose question: the chosen
// suggestion's words (the agent wrote them, so it knows them), then any text.
func proseReply(q Question, a Answer) string {
	var label string
	for _, o := range q.Options {
		if o.ID == a.OptionID {
			label = o.Label
		}
	}
	switch {
	case label == "":
		return a.Text
	case a.Text == "":
		return label
	}
	return label + "\n\n" + a.Text
}
