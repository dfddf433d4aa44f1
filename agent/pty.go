package agent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/familiar-dev/familiar/agent/screen"
	"github.com/familiar-dev/familiar/agent/transcript"
	"github.com/familiar-dev/familiar/mcp"
)

// ptyDriver drives the interactive TUI under a PTY. Hooks are the primary
// signal (prompt submitted, tool use, permission requests, stop); the screen
// model covers what hooks do not (interrupts, CLI dialogs, answers typed in
// the terminal) and is the fallback when hooks are silent.
type ptyDriver struct {
	s   *Session
	scr *screen.Screen

	dirty chan struct{} // 1-buffered: output arrived since the last classification

	mu        sync.Mutex
	class     screen.Classification // guarded by mu; the latest settled classification
	candidate screen.Classification // guarded by mu; the latest reading, settled or not
	classSeq  int                   // guarded by mu; bumps when class.State changes
	fallback  *pendingQuestion      // guarded by mu; a question read from the screen
	typingMu  sync.Mutex            // one prompt typed at a time
	hookHeard bool                  // guarded by mu; any hook arrived (hooks are working)
	// interrupted: an Esc went to claude and its screen has not yet shown
	// the end of the turn (Idle or Interrupted).
	interrupted bool // guarded by mu
	// escInTurn: that Esc went to a claude working on a turn, so the turn's
	// UserPromptSubmit arriving after it (claude shows its spinner while
	// that hook runs) does not make it an earlier turn's.
	escInTurn bool // guarded by mu
	// restoring: an interrupt ended at the idle prompt (interrupted-early),
	// and claude puts the interrupted prompt back into its input box a
	// moment after drawing it (0.1-0.4 s measured at load 1-2), replacing
	// whatever is typed there: the next prompt waits for it and clears it.
	restoring bool // guarded by mu
	// hookAsks counts the questions PermissionRequest hooks asked, and
	// lastHookAsk is when the last one was: a dialog whose hook question
	// was asked (and maybe answered) before the screen was read is no
	// reason for a screen question.
	hookAsks int // guarded by mu
	// hookAnswers counts the hook questions answered: a dialog still on
	// screen after its hook's answer is going away (slowly, under load, or
	// after claude was continued from SIGSTOP), not a question of its own.
	hookAnswers int // guarded by mu
	// answerUnseen: a hook question's answer went back to claude and claude
	// has called no hook since, so it may not have taken the answer in yet
	// (slow under load, or stopped): a dialog on screen meanwhile is most
	// likely the answered one.
	answerUnseen bool // guarded by mu
	// dialogOwners are the hook questions pending when the dialog on
	// screen appeared: the ones it settles when it leaves.
	dialogOwners []string  // guarded by mu
	lastHookAsk  time.Time // guarded by mu

	failed      bool   // guarded by mu; the turn of failedEpoch was reported failed
	failedEpoch int    // guarded by mu
	transcript  string // guarded by mu; the transcript path the hooks gave
	// starts delivers PreToolUse without claude waiting for it; nil when
	// its spool could not be made (PreToolUse then comes over HTTP).
	starts *toolStarts
	// The calls PreToolUse announced and no PostToolUse ended yet, newest
	// last: PermissionRequest carries no tool_use_id of its own, so its
	// call is found among these by tool and input.
	startedCalls []startedCall // guarded by mu
	// endedCalls are the ids of the latest calls that ended: a start
	// read from the spool after its call's end starts nothing.
	endedCalls []string // guarded by mu
}

type startedCall struct {
	id, tool string
	input    json.RawMessage
}

// Bounds of the started and ended calls kept: a turn's parallel calls fit.
const (
	maxStartedCalls = 32
	maxEndedCalls   = 64
)

// toolStartWait bounds how long a permission question waits for its
// call's start from the spool. claude writes the async hook's stdin only
// once its event loop is free, just after it sent PermissionRequest, so
// the start comes a few ms after the permission (1.7–5.6 ms, 12 of 12
// traced); the bound is for a machine so loaded that it never comes, and
// past it the question goes out with the id the session file gives, if any.
const toolStartWait = 2 * time.Second

func newPTYDriver(s *Session) (driver, error) {
	if s.opts.Hooks == nil {
		return nil, errors.New("agent: the pty driver needs a hook server")
	}
	return &ptyDriver{s: s, dirty: make(chan struct{}, 1)}, nil
}

// prepare subscribes the session to every hook: they are the PTY driver's
// primary signal.
func (d *ptyDriver) prepare() (map[string]any, map[string]string, func()) {
	o := &d.s.opts
	url, secret, unregister := o.Hooks.Register(d.hook)
	settings := sessionHookSettings(hookEvents, o.CLI.Version, url, secret, int(o.HookTimeout/time.Second))
	if starts, err := newToolStarts(o.ConfigDir); err != nil {
		d.s.logger.Warn("tool starts come over HTTP, holding claude up", "err", err)
	} else {
		d.starts = starts
		settings = WithToolStartHook(settings, starts.dir)
	}
	env := map[string]string{}
	for k, v := range screen.RendererEnv() {
		env[k] = v
	}
	return settings, env, unregister
}

func (d *ptyDriver) args(settingsPath string) []string {
	o := &d.s.opts
	args := o.commonArgs(settingsPath)
	if o.Prompt != "" && len(o.Prompt) <= maxArgPrompt {
		// A positional prompt is submitted by the CLI itself at start:
		// no typing race with its first paint (CLAUDE-CLI.md §6).
		args = append(args, "--", o.Prompt)
	}
	return args
}

func (d *ptyDriver) pipes() bool { return false }

func (d *ptyDriver) logFilter(f func(io.Writer) io.WriteCloser) func(io.Writer) io.WriteCloser {
	return f
}

// attach follows the session file (the transcript) and starts reading the
// screen.
func (d *ptyDriver) attach() {
	s := d.s
	s.tr.follow(transcript.FilePath(s.opts.ConfigDir, s.opts.Dir, s.opts.SessionID))
	d.scr = screen.New(s.opts.Cols, s.opts.Rows, writerFunc(s.proc.Write))
	s.wg.Add(1)
	go d.classifyLoop()
	if d.starts != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer d.starts.remove()
			if err := d.starts.watch(s.ctx, d.toolStarted); err != nil {
				s.logger.Warn("tool starts read only before other hooks", "err", err)
				<-s.ctx.Done()
			}
		}()
	}
	if s.spawned.mcpConfigPath != "" {
		// The screen says nothing of a server that failed (CLAUDE-CLI.md
		// §5; only /mcp lists it): familiar asks each one itself.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			d.probeMCP(s.spawned.mcpConfigPath, s.opts.Dir, s.spawned.env)
		}()
	}
}

// ProblemMCPNotStarted starts the Problem text of an MCP server that did
// not answer familiar's probe under the PTY driver (the stream driver
// reports claude's own finding, ProblemMCPFailed).
const ProblemMCPNotStarted = "an MCP server did not start"

// probeMCP probes the stdio servers of the session's MCP config as claude
// starts them, and reports each that would not start. It ends with the
// session (its context), stopping what it started.
func (d *ptyDriver) probeMCP(configPath, dir string, env []string) {
	s := d.s
	servers, err := mcp.ConfigServers(configPath)
	if err != nil {
		s.logger.Warn("MCP probe", "err", err)
		return
	}
	mcp.Probe(s.ctx, servers, dir, env, mcp.ProbeTimeout, func(r mcp.ProbeResult) {
		switch {
		case strings.HasPrefix(r.Problem, mcp.ProblemCannotStart):
			// A command that is not there: familiar's check before the
			// start said so already (orchestrator prepareMCP), in words.
			s.logger.Warn("MCP server did not start", "server", r.Name, "problem", r.Problem)
		case r.Problem != "":
			s.emit(Event{Kind: EventProblem, Problem: fmt.Sprintf("%s: %s (%s)", ProblemMCPNotStarted, r.Name, r.Problem)})
		}
	})
}

func (d *ptyDriver) firstPrompt() {
	s := d.s
	if len(s.opts.Prompt) <= maxArgPrompt {
		return // on the command line, or none
	}
	// Too long for one argument (Linux caps one at 128 KiB): typed as a
	// bracketed paste once the prompt is ready.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := d.sendPrompt(s.opts.Prompt); err != nil {
			s.emit(Event{Kind: EventProblem, Problem: "could not type the first prompt: " + err.Error()})
		}
	}()
}

func (d *ptyDriver) output(p []byte) { d.onOutput(p) }

func (d *ptyDriver) exited() { _ = d.scr.Close() }

func (d *ptyDriver) interrupt() error {
	d.interruptSent()
	_, err := d.s.proc.Write([]byte{0x1b})
	return err
}

func (d *ptyDriver) input(raw []byte) error {
	if len(raw) == 1 && raw[0] == 0x1b {
		d.interruptSent() // Esc typed in the editor's terminal
	}
	_, err := d.s.proc.Write(raw)
	return err
}

func (d *ptyDriver) resize(cols, rows int) error {
	if cols <= 0 || rows <= 0 || cols > 1000 || rows > 1000 {
		return fmt.Errorf("invalid size %dx%d", cols, rows)
	}
	d.scr.Resize(cols, rows)
	return d.s.proc.Resize(cols, rows)
}

func (d *ptyDriver) screen() screen.Snapshot { return d.scr.Snapshot() }

// toolUseID is the id of the call a PermissionRequest is about: the
// started call of the same tool and input. A start still on its way from
// the spool is waited for, up to toolStartWait.
func (d *ptyDriver) toolUseID(ctx context.Context, p hookPayload) string {
	if p.ToolUseID != "" {
		return p.ToolUseID
	}
	if d.starts == nil {
		return cmp.Or(d.startedID(p), d.s.tr.pendingID(p.ToolName))
	}
	began := d.s.opts.Clock.Now()
	t := d.s.opts.Clock.NewTimer(toolStartWait)
	defer t.Stop()
	for {
		arrived := d.starts.next() // before looking: a start handled meanwhile closes it
		if id := d.startedID(p); id != "" {
			if waited := d.s.opts.Clock.Now().Sub(began); waited > 0 {
				d.s.logger.Debug("permission waited for its tool start", "waited", waited)
			}
			return id
		}
		select {
		case <-arrived:
		case <-t.C():
			d.s.logger.Warn("no tool start came for a permission", "tool", p.ToolName, "waited", toolStartWait)
			return d.s.tr.pendingID(p.ToolName)
		case <-ctx.Done():
			return ""
		}
	}
}

// startedID takes the newest started call of p's tool and input: a call
// is asked about once, so a later identical call is not taken for it.
func (d *ptyDriver) startedID(p hookPayload) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, c := range slices.Backward(d.startedCalls) {
		if c.tool == p.ToolName && jsonEqual(c.input, p.ToolInput) {
			d.startedCalls = slices.Delete(d.startedCalls, i, i+1)
			return c.id
		}
	}
	return ""
}

// toolStarted handles a PreToolUse payload read from the spool.
func (d *ptyDriver) toolStarted(raw json.RawMessage) { d.hook(d.s.ctx, "PreToolUse", raw) }

// callStarted records a started call; false if it ended already (its
// start was read from the spool after its PostToolUse).
func (d *ptyDriver) callStarted(p hookPayload) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if slices.Contains(d.endedCalls, p.ToolUseID) {
		return false
	}
	d.startedCalls = append(d.startedCalls, startedCall{id: p.ToolUseID, tool: p.ToolName, input: p.ToolInput})
	if n := len(d.startedCalls) - maxStartedCalls; n > 0 {
		d.startedCalls = slices.Delete(d.startedCalls, 0, n)
	}
	return true
}

// callEnded records a call's end.
func (d *ptyDriver) callEnded(id string) {
	if id == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.startedCalls = slices.DeleteFunc(d.startedCalls, func(c startedCall) bool { return c.id == id })
	d.endedCalls = append(d.endedCalls, id)
	if n := len(d.endedCalls) - maxEndedCalls; n > 0 {
		d.endedCalls = slices.Delete(d.endedCalls, 0, n)
	}
}

// hookPayload is the union of the hook payload fields familiar reads.
type hookPayload struct {
	Event           string            `json:"hook_event_name"`
	ToolName        string            `json:"tool_name"`
	ToolInput       json.RawMessage   `json:"tool_input"`
	ToolUseID       string            `json:"tool_use_id"`
	Suggestions     json.RawMessage   `json:"permission_suggestions"`
	LastMessage     string            `json:"last_assistant_message"`
	BackgroundTasks []json.RawMessage `json:"background_tasks"`
	SessionCrons    []json.RawMessage `json:"session_crons"`
	StopHookActive  bool              `json:"stop_hook_active"`
	Error           string            `json:"error"`
	Message         string            `json:"message"`
	AgentType       string            `json:"agent_type"`
	TranscriptPath  string            `json:"transcript_path"`
}

// onOutput is called with every chunk of PTY output, in order.
func (d *ptyDriver) onOutput(p []byte) {
	d.s.emit(Event{Kind: EventOutput, Output: p})
	_, _ = d.scr.Write(p)
	select {
	case d.dirty <- struct{}{}:
	default:
	}
}

// classifyLoop re-reads the screen after output, at most every
// classifyEvery: the emulator snapshot costs a full copy of the screen, and
// a spinner repaints many times a second.
const classifyEvery = 25 * time.Millisecond

func (d *ptyDriver) classifyLoop() {
	defer d.s.wg.Done()
	for {
		select {
		case <-d.s.ctx.Done():
			return
		case <-d.dirty:
		}
		// The CLI does not use synchronized output, so a snapshot can catch a
		// frame half drawn: a new reading counts only once a second look,
		// classifyEvery later, agrees. Look again even if no output comes.
		for !d.classify() {
			t := time.NewTimer(classifyEvery)
			select {
			case <-d.s.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		t := time.NewTimer(classifyEvery)
		select {
		case <-d.s.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// classify reads the screen and reports whether the reading is settled: the
// same as the one before it. Only a settled reading changes what the driver
// believes.
func (d *ptyDriver) classify() bool {
	c := screen.Classify(d.scr.Snapshot())
	d.mu.Lock()
	settled := sameReading(c, d.candidate)
	newState := c.State != d.candidate.State
	d.candidate = c
	prev := d.class
	if !settled {
		d.mu.Unlock()
		if newState {
			// readingWorking's waiters look at unsettled readings.
			d.s.mu.Lock()
			d.s.notifyLocked()
			d.s.mu.Unlock()
		}
		return false
	}
	d.class = c
	changed := prev.State != c.State || prev.Text != c.Text
	if prev.State != c.State {
		d.classSeq++
	}
	d.mu.Unlock()
	if prev.State != c.State {
		d.s.watchdog.Kick()
	}
	if !changed {
		return true
	}
	d.s.mu.Lock()
	d.s.notifyLocked()
	d.s.mu.Unlock()
	d.onScreenChange(prev, c)
	return true
}

func sameReading(a, b screen.Classification) bool {
	if a.State != b.State || a.Text != b.Text || len(a.Options) != len(b.Options) {
		return false
	}
	for i := range a.Options {
		if a.Options[i].Label != b.Options[i].Label {
			return false
		}
	}
	return true
}

// readingWorking reports whether the latest reading, settled or not, shows
// claude working on a turn.
func (d *ptyDriver) readingWorking() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.class.State == screen.Working || d.candidate.State == screen.Working
}

func (d *ptyDriver) current() screen.Classification {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.class
}

// isDialog reports whether the screen shows something waiting on a person.
func isDialog(st screen.State) bool {
	return st == screen.Permission || st == screen.Choice || st == screen.Dialog
}

func (d *ptyDriver) onScreenChange(prev, c screen.Classification) {
	s := d.s
	// A dialog the hook is holding left the screen without familiar's answer:
	// a person answered it in the terminal. The CLI ignores the hook's late
	// answer and tells it nothing, so release the hook ourselves.
	// Only the hook questions pending when the dialog came on screen are
	// its own: the hook of the next call can arrive while the screen still
	// shows the dialog just answered, and that dialog leaving must not
	// settle it (it did, 15 ms after asking, and its dialog was read off the
	// screen without the command). A hook question asked later is settled
	// by its PostToolUse, or by the interrupt a "No" in the terminal makes.
	switch {
	case isDialog(prev.State) && !isDialog(c.State):
		d.mu.Lock()
		owners := d.dialogOwners
		d.dialogOwners, d.fallback = nil, nil
		d.mu.Unlock()
		s.resolveElsewhere(func(p *pendingQuestion) bool { return p.source == "screen" }, "terminal")
		if len(owners) > 0 {
			// A held hook's dialog that leaves is settled only if it stays
			// gone: claude continued from SIGSTOP clears its screen and
			// draws it again, and a question settled in that moment was
			// gone when the person answered it (seen under load). An answer
			// in the terminal is told at once by PostToolUse (allowed) or
			// the Interrupted screen (denied) anyway.
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				if s.waitFor(context.Background(), s.opts.ConfirmWithin, func() bool { return isDialog(d.current().State) }) {
					return // drawn again: still the hook's
				}
				s.resolveElsewhere(func(p *pendingQuestion) bool {
					return p.source == "hook" && slices.Contains(owners, p.q.ID)
				}, "terminal")
			}()
		}
	case !isDialog(prev.State) && isDialog(c.State):
		var owners []string
		for _, p := range s.qs.all() {
			if p.source == "hook" {
				owners = append(owners, p.q.ID)
			}
		}
		d.mu.Lock()
		d.dialogOwners = owners
		d.mu.Unlock()
	}
	if c.Pattern == "api-retry" {
		if r, ok := parseRetryLine(c.Text); ok {
			// The screen is the only word of a retry the TUI gives: it
			// writes none into the session file (CLI 2.1.330), and its
			// line names the status only from the third retry on ("API
			// error · retrying in 1s · attempt 1/10", then "500 boom ·
			// retrying in 2s · attempt 3/10"; testdata api-retry-status).
			s.apiRetry(r)
		}
	}
	switch c.State {
	case screen.Working:
		// Hooks say precisely when a turn starts and ends; the spinner
		// lingers a moment after Stop. Only a session whose hooks are silent
		// takes its activity from the screen.
		d.mu.Lock()
		heard := d.hookHeard
		d.mu.Unlock()
		if !heard {
			s.setActivity(Activity{State: ActivityThinking})
		}
	case screen.Idle:
		// An interrupt that brings back the idle prompt without
		// "Interrupted" (2.1.200 always, newer versions before any answer)
		// ends the turn as "Interrupted" does: no Stop fires on an
		// interrupted turn (CLAUDE-CLI.md Part B §5), so nothing else
		// would. Whether a turn ran is not asked of the hooks (2.1.200
		// sent no UserPromptSubmit for a prompt on its command line) nor of
		// the last settled screen (a spinner's reading may never settle):
		// the Esc was sent while claude worked.
		d.mu.Lock()
		interrupted := d.interrupted
		if interrupted {
			d.interrupted = false
			d.restoring = true
		}
		d.mu.Unlock()
		if interrupted {
			d.interruptedTurn("")
		}
	case screen.Interrupted:
		d.mu.Lock()
		d.interrupted = false
		d.mu.Unlock()
		d.interruptedTurn(c.Text)
	case screen.Permission, screen.Choice, screen.Dialog:
		s.wg.Add(1)
		go d.screenFallback(c)
	case screen.Failed:
		// The turn ended with an error nobody answers on screen. StopFailure
		// normally says so first; without it (hooks silent) the screen does.
		s.wg.Add(1)
		go d.screenFailed(c)
	case screen.Unknown:
		s.mu.Lock()
		inTurn := s.inTurn
		s.mu.Unlock()
		if !inTurn {
			s.setActivity(Activity{State: ActivityUnknown})
		}
	}
}

// answerLingerRounds bounds, in ConfirmWithin, how long a dialog on screen
// waits while claude has not taken in a hook question's answer: a dialog
// that is not the answered one is asked about after it all the same.
const answerLingerRounds = 5

func (d *ptyDriver) unseenAnswer() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.answerUnseen
}

// screenFallback turns a dialog on screen into a question when no hook did
// within ConfirmWithin (dialogs that are not tool permissions, or hooks that
// are silent).
func (d *ptyDriver) screenFallback(c screen.Classification) {
	s := d.s
	defer s.wg.Done()
	if c.State != screen.Dialog {
		hooked := func() bool {
			for _, p := range s.qs.all() {
				if p.source == "hook" {
					return true
				}
			}
			return false
		}
		d.mu.Lock()
		asks, answers := d.hookAsks, d.hookAnswers
		recent := !d.lastHookAsk.IsZero() && s.opts.Clock.Now().Sub(d.lastHookAsk) < s.opts.ConfirmWithin
		d.mu.Unlock()
		// Settled: a hook asked (a question answered at once is pending
		// only for a moment, and dialogs of the same command look alike),
		// the dialog left, or another reading took its place (its own
		// fallback runs).
		settled := func() bool {
			cur := d.current()
			d.mu.Lock()
			asked := d.hookAsks != asks || d.hookAnswers != answers
			d.mu.Unlock()
			return asked || hooked() || !isDialog(cur.State) || !sameReading(cur, c)
		}
		// A hook question asked just before the screen was read was most
		// likely this dialog's, already answered: the CLI, slow under
		// load, may take a while to take the dialog away. Give it longer.
		rounds := 1
		if recent {
			rounds = 2
		}
		for range rounds {
			if s.waitFor(context.Background(), s.opts.ConfirmWithin, settled) {
				return
			}
		}
		// Still there, but claude has not taken in the answer to its
		// hook question (it called no hook since): claude continued from
		// SIGSTOP draws the answered dialog again and, at load ~10, took
		// over 3 s to take it away, and a question asked of it then was
		// answered by keys into the next screen (TestTimeoutDenyReaches-
		// ClaudeAfterSIGCONT). Wait while that holds, up to a bound; a
		// dialog still there once claude calls a hook is asked about.
		for range answerLingerRounds {
			if !d.unseenAnswer() {
				break
			}
			s.waitFor(context.Background(), s.opts.ConfirmWithin, func() bool { return settled() || !d.unseenAnswer() })
			if settled() {
				return
			}
		}
	}
	d.mu.Lock()
	if d.fallback != nil || d.class.State != c.State {
		d.mu.Unlock()
		return
	}
	p := &pendingQuestion{q: Question{Kind: KindDialog, Text: c.Text}, source: "screen", extra: c}
	p.answer = func(a Answer) error { return d.answerOnScreen(p, a) }
	switch c.State {
	case screen.Permission:
		p.q.Kind = KindPermission
		p.q.Tool = c.Title
		p.q.Options = permissionOptions()
	case screen.Choice:
		p.q.Kind = KindChoice
		p.q.AllowText = false
	}
	if p.q.Options == nil {
		for _, o := range c.Options {
			p.q.Options = append(p.q.Options, Option{ID: fmt.Sprint(o.Digit), Label: o.Label})
		}
	}
	if len(p.q.Options) == 0 && !p.q.AllowText {
		// Nobody could answer it: report what is on screen instead of
		// asking (issue 13: a 529 became an unanswerable question).
		d.mu.Unlock()
		s.emit(Event{Kind: EventProblem, Problem: "claude shows a screen familiar cannot answer: " + clip(c.Text, 300)})
		return
	}
	d.fallback = p
	d.mu.Unlock()
	s.logger.Debug("a question read from the screen: no hook asked it", "state", c.State, "text", clip(c.Text, 200))
	s.qs.add(p)
	s.emit(Event{Kind: EventQuestion, Question: &p.q})
}

// screenFailed ends the turn from a failure the screen shows, when no
// StopFailure hook did within ConfirmWithin.
func (d *ptyDriver) screenFailed(c screen.Classification) {
	s := d.s
	defer s.wg.Done()
	epoch := s.epoch()
	if s.waitFor(context.Background(), s.opts.ConfirmWithin, func() bool {
		d.mu.Lock()
		told := d.failed && d.failedEpoch == s.turnEpoch
		st := d.class.State
		d.mu.Unlock()
		return st != screen.Failed || told
	}) {
		return
	}
	if s.ctx.Err() != nil || s.epoch() != epoch {
		return
	}
	d.failTurn(c.Text, "", "", screenFailure(c.Text, c.Detail, s.opts.Clock.Now()))
}

// answerOnScreen answers a question read from the screen with keys, and
// checks that the dialog went away.
func (d *ptyDriver) answerOnScreen(p *pendingQuestion, a Answer) error {
	c, _ := p.extra.(screen.Classification)
	key := a.OptionID
	if p.q.Kind == KindPermission && len(c.Options) > 0 {
		switch a.OptionID {
		case OptionAllow:
			key = fmt.Sprint(c.Options[0].Digit)
		case OptionDeny:
			key = fmt.Sprint(c.Options[len(c.Options)-1].Digit)
		case OptionAllowAlways:
			if len(c.Options) < 3 {
				return fmt.Errorf("%w: this dialog has no allow-always option", ErrBadAnswer)
			}
			key = fmt.Sprint(c.Options[1].Digit)
		}
	}
	s := d.s
	if !s.qs.remove(p.q.ID) {
		return fmt.Errorf("%w: %s was already settled", ErrNoQuestion, p.q.ID)
	}
	p.resolveElsewhere()
	d.mu.Lock()
	d.fallback = nil
	d.mu.Unlock()
	s.emit(Event{Kind: EventQuestionResolved, Resolved: &Resolution{QuestionID: p.q.ID, By: "user", OptionID: a.OptionID}})
	return d.pressUntil(context.Background(), []byte(key), func() bool { return d.current().State != c.State })
}

// pressUntil writes keys and waits for done; if nothing happened it sends
// them once more (the CLI sometimes drops a key sent the instant a dialog
// appears), then reports a problem.
func (d *ptyDriver) pressUntil(ctx context.Context, keys []byte, done func() bool) error {
	s := d.s
	for attempt := 0; attempt < 2; attempt++ {
		if _, err := s.proc.Write(keys); err != nil {
			return fmt.Errorf("write to terminal: %w", err)
		}
		if s.waitFor(ctx, s.opts.ConfirmWithin, done) {
			return nil
		}
	}
	msg := fmt.Sprintf("keystroke %q had no visible effect after a retry", keys)
	s.emit(Event{Kind: EventProblem, Problem: msg})
	return fmt.Errorf("%w: %s", ErrNotReady, msg)
}

// restoreWaits bounds, in ConfirmWithin, the wait for claude to put an
// interrupted prompt back into its input box: it came within 0.4 s at load
// 1-2; the bound is generous because claude and the screen's readings both
// lag under load, and the wait ends as soon as the prompt shows.
const restoreWaits = 3

// clearBatch is how many backspaces clearBox sends before it looks.
const clearBatch = 16

// clearBox backspaces claude's input box empty, a batch at a time, each
// batch confirmed by the box changing: at load 18 one burst of 43 had no
// visible effect within two tries (the VS Code chat scenario), so progress
// is what is waited for, not the whole.
func (d *ptyDriver) clearBox(ctx context.Context) error {
	s := d.s
	misses := 0
	for rounds := 0; rounds < 200; rounds++ {
		c := d.current()
		if c.State != screen.Idle || c.Text == "" {
			return nil
		}
		n := min(utf8.RuneCountInString(c.Text)+strings.Count(c.Text, "\n")+2, clearBatch)
		if _, err := s.proc.Write(bytes.Repeat([]byte{0x7f}, n)); err != nil {
			return fmt.Errorf("write to terminal: %w", err)
		}
		if s.waitFor(ctx, s.opts.ConfirmWithin, func() bool {
			now := d.current()
			return now.State != screen.Idle || now.Text != c.Text
		}) {
			misses = 0
			continue
		}
		if misses++; misses == 2 {
			break
		}
	}
	msg := fmt.Sprintf("backspaces did not empty the input box (it shows %q)", d.current().Text)
	s.emit(Event{Kind: EventProblem, Problem: msg})
	return fmt.Errorf("%w: %s", ErrNotReady, msg)
}

// readyTimeout bounds the wait for the idle prompt before typing.
const readyTimeout = 60 * time.Second

// sendPrompt types a prompt once the idle prompt shows, then submits it and
// confirms the CLI took it (UserPromptSubmit, or the screen starts working).
func (d *ptyDriver) sendPrompt(text string) error {
	d.typingMu.Lock()
	defer d.typingMu.Unlock()
	s := d.s
	// The session's context: a prompt waiting for the idle screen gives up
	// the moment the process is stopped.
	ctx := s.ctx
	// After an interrupt the CLI asks "What should Claude do instead?" with
	// its prompt open: that screen takes a prompt too.
	ready := func() bool {
		st := d.current().State
		return (st == screen.Idle || st == screen.Interrupted) && !s.inTurn
	}
	if !s.waitFor(ctx, readyTimeout, ready) {
		return fmt.Errorf("%w: the idle prompt did not appear within %s (screen: %s)", ErrNotReady, readyTimeout, d.current().State)
	}
	d.mu.Lock()
	restoring := d.restoring
	d.restoring = false
	d.mu.Unlock()
	if restoring {
		// An interrupt before any answer puts the prompt back into the
		// input box (interrupted-early), after the idle prompt shows: typed
		// before it comes, the new prompt is replaced by it; after it, the
		// new prompt joins it. Wait for it, then backspace it away.
		s.waitFor(ctx, restoreWaits*s.opts.ConfirmWithin, func() bool {
			c := d.current()
			return c.State != screen.Idle || c.Text != ""
		})
	}
	if restoring {
		if err := d.clearBox(ctx); err != nil {
			// The next prompt tries again: typed after what is left of the
			// interrupted one, it would be joined to it (the VS Code chat
			// scenario at load 14: "slow 1\n@@DELAY 30s\n@@TE" stayed after
			// one batch of backspaces, and the message sent again followed it).
			d.mu.Lock()
			d.restoring = true
			d.mu.Unlock()
			return fmt.Errorf("clear the interrupted prompt: %w", err)
		}
	}
	s.mu.Lock()
	epoch := s.turnEpoch
	s.mu.Unlock()
	var b bytes.Buffer
	if strings.ContainsAny(text, "\r\n") {
		// Bracketed paste: newlines inside stay newlines; a bare CR outside
		// would submit early (CLAUDE-CLI.md §3).
		b.WriteString("\x1b[200~")
		b.WriteString(strings.ReplaceAll(text, "\x1b[201~", ""))
		b.WriteString("\x1b[201~")
	} else {
		b.WriteString(text)
	}
	if _, err := s.proc.Write(b.Bytes()); err != nil {
		return fmt.Errorf("type prompt: %w", err)
	}
	// Taken once the turn starts: UserPromptSubmit (a hook process claude
	// starts, seconds late at load 16) or the spinner. The spinner is taken
	// from the latest reading, settled or not: its glyph turns faster than
	// two readings classifyEvery apart under load, so a settled Working can
	// take seconds, and the \r was then reported as having no effect
	// although the prompt had gone (issue 36).
	return d.pressUntil(ctx, []byte("\r"), func() bool {
		return s.turnEpoch != epoch || d.readingWorking()
	})
}

// hook handles one hook call from this session's CLI.
func (d *ptyDriver) hook(ctx context.Context, event string, raw json.RawMessage) any {
	s := d.s
	if d.starts != nil && event != "PreToolUse" {
		// Starts written before this hook was sent are handled first, in
		// claude's order: a permission names its call, an end ends a
		// started command.
		d.starts.drain(d.toolStarted)
	}
	var p hookPayload
	_ = json.Unmarshal(raw, &p)
	s.watchdog.Kick()
	d.mu.Lock()
	d.hookHeard = true
	// claude has gone on since any answer it was given (a start read from
	// the spool may have been written before it).
	tookAnswer := d.answerUnseen && event != "PreToolUse"
	if tookAnswer {
		d.answerUnseen = false
	}
	if p.TranscriptPath != "" {
		d.transcript = p.TranscriptPath
	}
	d.mu.Unlock()
	if tookAnswer {
		s.mu.Lock()
		s.notifyLocked() // a screen fallback waiting on that answer
		s.mu.Unlock()
	}
	if s.opts.VerboseHooks {
		s.emit(Event{Kind: EventHook, Hook: &HookEvent{Name: event, Payload: raw}})
	}
	if p.TranscriptPath != "" {
		s.tr.follow(p.TranscriptPath)
	}
	s.tr.poke()
	switch event {
	case "UserPromptSubmit":
		d.mu.Lock()
		if !d.escInTurn {
			d.interrupted = false // an Esc sent before this turn is not this turn's
		}
		d.restoring = false  // a prompt typed in the terminal took the box
		d.startedCalls = nil // calls an interrupt left unended are not this turn's
		d.mu.Unlock()
		s.mu.Lock()
		s.retry = APIRetry{} // a new turn's retries count from 1
		s.inTurn = true
		s.turnEpoch++
		s.notifyLocked()
		s.mu.Unlock()
		s.setActivity(Activity{State: ActivityThinking})
	case "PreToolUse":
		if !d.callStarted(p) {
			return nil
		}
		s.setActivity(toolActivity(p.ToolName, p.ToolInput))
		s.commandStarted(p.ToolUseID, p.ToolName, p.ToolInput)
		s.skillUsed(p.ToolName, p.ToolInput)
	case "PostToolUse", "PostToolUseFailure":
		d.callEnded(p.ToolUseID)
		s.commandEnded(p.ToolUseID)
		// A permission still held for this call was answered in the terminal.
		s.resolveElsewhere(func(q *pendingQuestion) bool {
			return q.source == "hook" && q.tool == p.ToolName && jsonEqual(q.input, p.ToolInput)
		}, "terminal")
		s.setActivity(Activity{State: ActivityThinking})
	case "PermissionRequest":
		return d.permissionRequest(ctx, p)
	case "PreSkillShellCommand":
		return s.skillShellCommand(ctx, raw)
	case "SubagentStart":
		s.setActivity(Activity{State: ActivityThinking, Detail: "subagent " + p.AgentType})
	case "Stop":
		d.mu.Lock()
		d.interrupted = false // an Esc that came too late to stop the turn
		d.mu.Unlock()
		s.commandEnded("")
		// Everything the turn did is reported before its end, and the CLI
		// may write the last lines of its session file only once this hook
		// answered: so the hook answers now and the turn ends once the file
		// caught up.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.tr.settle(p.LastMessage)
			turn := &TurnEnded{LastMessage: p.LastMessage, BackgroundTasks: len(p.BackgroundTasks) + len(p.SessionCrons),
				Usage: s.tr.turnUsage()}
			if turn.BackgroundTasks > 0 {
				// Not done: background work will start another turn when it ends.
				s.emit(Event{Kind: EventTurnEnded, Turn: turn})
				return
			}
			s.endTurn(turn)
		}()
	case "StopFailure":
		s.commandEnded("")
		s.tr.settle("")
		d.failTurn(p.LastMessage, p.Error, p.TranscriptPath, nil)
	}
	return nil
}

// failTurn ends a turn that failed. What failed is read from the session
// transcript (the CLI records the failed call with its status, error code
// and a usage limit's reset time), else from the screen's reading.
func (d *ptyDriver) failTurn(msg, errField, transcript string, fromScreen *Failure) {
	s := d.s
	epoch := s.epoch() // before d.mu: s.mu comes first
	d.mu.Lock()
	if d.failed && d.failedEpoch == epoch {
		d.mu.Unlock()
		return // the hook and the screen both told
	}
	d.failed, d.failedEpoch = true, epoch
	if transcript != "" {
		d.transcript = transcript
	} else {
		transcript = d.transcript
	}
	d.mu.Unlock()
	f := awaitAPIError(s.ctx, transcript)
	if f == nil {
		f = fromScreen
	}
	if f == nil && msg != "" {
		n := messageStatus(msg)
		f = &Failure{Kind: classifyFailure(n, "", errField, msg), Status: n, Message: msg}
	}
	if f != nil && msg == "" {
		msg = f.Message
	}
	if f != nil && f.Kind == FailureUsageLimit && f.ResetsAt.IsZero() {
		f.ResetsAt, _ = parseResetTime(f.Message, s.opts.Clock.Now())
	}
	s.endTurn(&TurnEnded{LastMessage: msg, Failed: true, Error: strings.TrimSpace(strings.TrimPrefix(errField+": "+msg, ": ")), Failure: f})
}

// permissionRequest holds the hook call until the person (or policy) answers,
// the dialog is answered in the terminal, or the CLI gives up.
func (d *ptyDriver) permissionRequest(ctx context.Context, p hookPayload) any {
	s := d.s
	d.mu.Lock()
	d.hookAsks++
	d.lastHookAsk = s.opts.Clock.Now()
	d.mu.Unlock()
	s.mu.Lock()
	s.notifyLocked() // a screen fallback waiting on this dialog stands down
	s.mu.Unlock()
	var decision map[string]any
	if p.ToolName == "AskUserQuestion" {
		decision = s.askChoices(ctx, p.ToolInput, "hook")
	} else {
		q := &pendingQuestion{
			q: Question{
				Kind: KindPermission, Text: permissionText(p.ToolName, p.ToolInput),
				Tool: p.ToolName, Input: p.ToolInput, ToolUseID: d.toolUseID(ctx, p), Options: s.permissionOptions(p.ToolName, p.ToolInput), AllowText: true,
			},
			tool: p.ToolName, input: p.ToolInput, source: "hook",
		}
		a, ok := s.ask(ctx, q)
		if !ok {
			return nil
		}
		decision = permissionDecision(q, a, p.Suggestions)
		if decision["behavior"] == "allow" {
			s.tr.setStatus(q.q.ToolUseID, p.ToolName, "running")
		}
	}
	if decision == nil {
		return nil
	}
	d.mu.Lock()
	d.hookAnswers++
	d.answerUnseen = true
	d.mu.Unlock()
	s.mu.Lock()
	s.notifyLocked() // a screen fallback waiting on this dialog stands down
	s.mu.Unlock()
	if decision["behavior"] == "deny" {
		// No PostToolUse follows a denied call: its command never runs.
		s.commandEnded(p.ToolUseID)
	}
	return map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PermissionRequest",
		"decision":      decision,
	}}
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// interruptSent notes an Esc sent to claude: the idle prompt that follows
// ends the turn.
func (d *ptyDriver) interruptSent() {
	d.s.mu.Lock()
	inTurn := d.s.inTurn
	d.s.mu.Unlock()
	// The screen as it is now: the classifier's readings lag behind it
	// under load, and the first prompt, given on claude's command line, has
	// no UserPromptSubmit before its spinner.
	snap := d.scr.Snapshot()
	now := screen.Classify(snap).State == screen.Working || screen.TitleWorking(snap.Title)
	d.mu.Lock()
	d.interrupted = true
	d.escInTurn = inTurn || now || d.class.State == screen.Working || d.candidate.State == screen.Working
	d.mu.Unlock()
}

// interruptedTurn ends a turn that was interrupted: no hook fires for an
// interrupt (CLAUDE-CLI.md Part B §1.1): the turn is over and the CLI asks
// what to do instead (text is its words, "" where it shows none).
func (d *ptyDriver) interruptedTurn(text string) {
	s := d.s
	s.resolveElsewhere(func(p *pendingQuestion) bool { return p.source != "interrupted" }, "agent")
	s.commandEnded("") // the CLI killed it
	s.mu.Lock()
	s.inTurn = false
	s.notifyLocked()
	s.mu.Unlock()
	s.setActivity(Activity{State: ActivityIdle, Detail: "interrupted"})
	p := &pendingQuestion{
		q:      Question{Kind: KindQuestion, Text: text, AllowText: true},
		source: "interrupted",
	}
	if p.q.Text == "" {
		p.q.Text = "Interrupted · What should Claude do instead?"
	}
	s.qs.add(p)
	s.emit(Event{Kind: EventQuestion, Question: &p.q})
}
