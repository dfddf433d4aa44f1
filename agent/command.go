package agent

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/procs"
)

// Long work is not "no progress". While a tool command runs, the turn's
// no-progress watchdog is paused and the command gets a watchdog of its own,
// CommandTimeout long, kicked whenever the command's processes write
// something or start or end (procs.DescendantProgress, sampled every
// commandPoll). A command that keeps printing is never stopped; a silent one
// is reported with ProblemCommandTimeout; a turn that hangs with no command
// running is still caught by the no-progress watchdog.

// ProblemCommandTimeout starts the Problem text of a command that ran
// without any progress for CommandTimeout.
const ProblemCommandTimeout = "a command made no progress for the command timeout"

// DefaultCommandTimeout is the command timeout when Options leave it 0.
const DefaultCommandTimeout = time.Hour

// commandPoll is how often a running command's processes are sampled.
var commandPoll = 5 * time.Second

// commandTools are the tools whose call runs a command of the agent's.
var commandTools = map[string]bool{"Bash": true}

// commandWatch is the command running now, if any.
type commandWatch struct {
	id      string // tool_use id ("" when the hook did not say)
	command string
	dog     *procs.Watchdog
	stop    chan struct{} // closed to end the sampler
	done    chan struct{} // closed when the sampler returned
}

// progressGate pauses the turn's watchdog while anything it should not
// count is going on: a question waits on a person, or a command runs.
// A claude stopped by a signal is excused by neither.
type progressGate struct {
	mu        sync.Mutex
	questions int
	command   bool
	stopped   bool
}

func (g *progressGate) pausedLocked() bool {
	return (g.questions > 0 || g.command) && !g.stopped
}

// setStopped records whether claude is stopped and pauses or resumes w to
// match.
func (g *progressGate) setStopped(w *procs.Watchdog, stopped bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	wasPaused := g.pausedLocked()
	g.stopped = stopped
	switch paused := g.pausedLocked(); {
	case paused && !wasPaused:
		w.Pause()
	case !paused && wasPaused:
		w.Resume()
	}
}

// set records one reason and pauses or resumes w to match.
func (g *progressGate) set(w *procs.Watchdog, questions *int, command *bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	wasPaused := g.pausedLocked()
	if questions != nil {
		g.questions = *questions
	}
	if command != nil {
		g.command = *command
	}
	switch paused := g.pausedLocked(); {
	case paused && !wasPaused:
		w.Pause()
	case !paused && wasPaused:
		w.Resume()
	}
}

// commandStarted is called when the agent starts a tool call. Only commands
// get a watch.
func (s *Session) commandStarted(id, tool string, input json.RawMessage) {
	if !commandTools[tool] || s.watchdog == nil {
		return
	}
	var in struct {
		Command    string `json:"command"`
		Background bool   `json:"run_in_background"`
	}
	_ = json.Unmarshal(input, &in)
	if in.Background {
		return // the call returns at once; the shell runs on its own
	}
	s.commandEnded("") // one command at a time in a turn
	timeout := s.opts.CommandTimeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	w := &commandWatch{id: id, command: in.Command, stop: make(chan struct{}), done: make(chan struct{})}
	started := s.opts.Clock.Now()
	w.dog = procs.NewWatchdog(s.opts.Clock, timeout, func() {
		s.emit(Event{Kind: EventProblem, Problem: fmt.Sprintf("%s (%s): `%s` has run for %s and printed nothing for %s",
			ProblemCommandTimeout, timeout, clip(w.command, 200), s.opts.Clock.Now().Sub(started).Round(time.Second), timeout)})
	})
	s.cmdMu.Lock()
	s.cmd = w
	s.gate.mu.Lock()
	if s.gate.questions > 0 || s.gate.stopped {
		w.dog.Pause() // a permission for this very command may be pending
	}
	s.gate.mu.Unlock()
	s.cmdMu.Unlock()
	running := true
	s.gate.set(s.watchdog, nil, &running)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.sampleCommand(w)
	}()
}

// questionsChanged pauses both watchdogs while a question waits on a person
// (the command of a permission question has not started yet). It is called
// under the questions' lock.
func (s *Session) questionsChanged(n int) {
	s.gate.set(s.watchdog, &n, nil)
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	if s.cmd == nil {
		return
	}
	s.gate.mu.Lock()
	stopped := s.gate.stopped
	s.gate.mu.Unlock()
	if n > 0 || stopped {
		s.cmd.dog.Pause()
	} else {
		s.cmd.dog.Resume()
	}
}

// commandEnded ends the watch of the command with tool_use id (any command
// when id is "").
func (s *Session) commandEnded(id string) {
	s.cmdMu.Lock()
	w := s.cmd
	if w == nil || (id != "" && w.id != "" && w.id != id) {
		s.cmdMu.Unlock()
		return
	}
	s.cmd = nil
	s.cmdMu.Unlock()
	close(w.stop)
	<-w.done
	w.dog.Stop()
	running := false
	s.gate.set(s.watchdog, nil, &running)
	// The command's time does not count against the turn.
	s.watchdog.Kick()
}

// sampleCommand kicks the command's watchdog whenever its processes show
// progress, until the command ends or the session does.
func (s *Session) sampleCommand(w *commandWatch) {
	defer close(w.done)
	pid := 0
	if s.proc != nil {
		pid = s.proc.PID()
	}
	var last procs.TreeProgress
	if pid > 0 {
		last, _ = procs.DescendantProgress(pid)
	}
	for {
		t := s.opts.Clock.NewTimer(commandPoll)
		select {
		case <-w.stop:
			t.Stop()
			return
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if pid <= 0 {
			continue
		}
		p, err := procs.DescendantProgress(pid)
		if err != nil {
			continue
		}
		if p != last {
			last = p
			w.dog.Kick()
		}
	}
}

// stopCommandWatch ends any watch when the session ends.
func (s *Session) stopCommandWatch() { s.commandEnded("") }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
