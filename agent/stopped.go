package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/familiar-dev/familiar/procs"
)

// A claude stopped by a signal (SIGSTOP, SIGTSTP, a debugger) makes no
// progress whatever it was doing, yet the watchdogs excuse the two things it
// is most often doing: a command running (the turn's watchdog is paused and
// the command's own one is fed by the command's processes, which may go on
// or end without claude noticing) and a question waiting on a person (both
// are paused). So the session looks at claude's process state every
// stopPoll: while it is stopped the activity says so, the command's
// watchdog waits, and the turn's watchdog runs whatever pauses it, so the
// no-progress timeout ends a stopped session as it ends a hung one, with a
// problem that says why.

// ProblemStopped starts the Problem text of the no-progress watchdog firing
// while claude is stopped by a signal.
const ProblemStopped = "claude is stopped by a signal"

// stopPoll is how often claude's process state is read.
var stopPoll = time.Second

// stoppedDetail is the activity detail of a stopped claude.
func stoppedDetail(pid int) string {
	return fmt.Sprintf("claude (pid %d) is stopped by a signal (SIGSTOP); SIGCONT continues it", pid)
}

// stoppedError refuses an answer to a stopped claude.
type stoppedError struct{ pid int }

func (e stoppedError) Error() string {
	return fmt.Sprintf("%s: claude (pid %d) is stopped by a signal; continue it (SIGCONT) first", ErrNotReady, e.pid)
}

func (e stoppedError) Unwrap() error { return ErrNotReady }

// isStopped reports whether the session last saw claude stopped.
func (s *Session) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// watchStopped follows claude's process state until the session ends.
func (s *Session) watchStopped() {
	defer s.wg.Done()
	pid := s.proc.PID()
	for {
		t := s.opts.Clock.NewTimer(stopPoll)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		now := procs.Stopped(pid)
		if now != s.isStopped() {
			s.stoppedChanged(now, pid)
		}
	}
}

// stoppedChanged records that claude was stopped or continued.
func (s *Session) stoppedChanged(stopped bool, pid int) {
	s.mu.Lock()
	s.stopped = stopped
	var a Activity
	if stopped {
		s.beforeStop = s.activity
		a = Activity{State: ActivityStopped, Detail: stoppedDetail(pid)}
	} else {
		a = s.beforeStop
	}
	s.mu.Unlock()
	if stopped {
		s.logger.Info("claude is stopped by a signal", "pid", pid)
	} else {
		s.logger.Info("claude was continued", "pid", pid)
	}
	s.setActivity(a)
	s.gate.setStopped(s.watchdog, stopped)
	s.cmdMu.Lock()
	if s.cmd != nil {
		s.gate.mu.Lock()
		asking := s.gate.questions > 0
		s.gate.mu.Unlock()
		if stopped || asking {
			s.cmd.dog.Pause()
		} else {
			s.cmd.dog.Resume()
		}
	}
	s.cmdMu.Unlock()
	if !stopped {
		s.watchdog.Kick() // continued: the time it was stopped is over
	}
}

// noProgress is what the turn's watchdog reports when it fires.
func (s *Session) noProgress() string {
	if s.isStopped() {
		return fmt.Sprintf("%s (pid %d) and made no progress for the no-progress timeout (%s)",
			ProblemStopped, s.proc.PID(), s.opts.NoProgress)
	}
	return ProblemNoProgress
}

// AnswerDecided answers a question familiar decided by itself (the approval
// timeout, the policy) as Answer does, except that a claude stopped by a
// signal gets the answer once it is continued instead of a refusal: the
// decision is made and recorded, and a refused one would leave the question
// pending in the session for good (and with it, the watchdogs paused). It
// returns when the answer is given or the session has ended.
func (s *Session) AnswerDecided(questionID string, a Answer) error {
	for {
		err := s.Answer(questionID, a)
		if !errors.As(err, new(stoppedError)) {
			return err
		}
		t := s.opts.Clock.NewTimer(stopPoll)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return err
		case <-t.C():
		}
	}
}
