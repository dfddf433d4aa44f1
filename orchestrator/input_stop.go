package orchestrator

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/agent/transcript"
	"github.com/familiar-dev/familiar/protocol"
)

// Inputs that stop a task's agent or report that it stopped: the person's cancel,
// pause and kill, familiar's shutdown, the watchdogs, the API's refusals, the
// process's exit.

// cmdCancel: by the person, or with a detail by familiar itself
// (announced as an end, as a block is).
type cmdCancel struct{ detail string }

func (in cmdCancel) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	intent := stopIntent{kind: stopCancel, detail: in.detail}
	switch {
	case status == protocol.StatusQueued || status == protocol.StatusPaused || status == protocol.StatusBlocked:
		if err := st.move(protocol.StatusCancelled); err != nil {
			return err
		}
		s.T.Blocked = cancelled(intent)
		st.changed()
		if s.agent != agentNone {
			st.stopAgent(stopIntent{kind: stopRelease}, false)
		}
	case status.Live():
		if status == protocol.StatusStarting && s.agent == agentNone {
			// Between a failed start and its retry.
			st.settleStopped(intent)
			return nil
		}
		st.stopAgent(intent, false)
	default:
		return errTransition("cancel", status)
	}
	return nil
}

// cmdPause is task/pause.
type cmdPause struct{}

func (in cmdPause) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	switch {
	case status == protocol.StatusQueued:
		// Held back in the queue until resumed.
		if err := st.move(protocol.StatusPaused); err != nil {
			return err
		}
		st.changed()
	case status.Live():
		if status == protocol.StatusStarting && s.agent == agentNone {
			st.settleStopped(stopIntent{kind: stopPause})
			return nil
		}
		st.stopAgent(stopIntent{kind: stopPause}, false)
	case s.warm:
		// A finished task's claude kept warm for a follow-up: pausing it
		// lets that claude go now (an ACP session closed, its editor gone);
		// the task stays as it is, and a follow-up resumes its session.
		return st.letWarmGo()
	default:
		return errTransition("pause", status)
	}
	return nil
}

// cmdKill stops the agent at once (SIGKILL), for a stop that took too long.
type cmdKill struct{}

func (cmdKill) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if s.agent == agentNone {
		return nil
	}
	intent := stopIntent{kind: stopCancel}
	if !status.Live() {
		intent = stopIntent{kind: stopRelease}
	}
	if s.agent == agentStopping && s.stop.kind != stopNone {
		intent = s.stop
	}
	st.stopAgent(intent, true)
	return nil
}

// cmdShutdown: familiar stops; a live task becomes blocked{interrupted}.
type cmdShutdown struct{}

func (cmdShutdown) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if s.agent != agentNone {
		st.stopAgent(stopIntent{kind: stopShutdown, reason: protocol.BlockedInterrupted, detail: "familiar shut down"}, false)
	} else if status == protocol.StatusStarting {
		st.settleStopped(stopIntent{kind: stopShutdown})
	}
	return nil
}

type inNoProgress struct{ detail string } // "" = no progress; else why (claude is stopped)

func (in inNoProgress) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if status.Live() && s.agent == agentUp {
		detail := in.detail
		if detail == "" {
			detail = "no progress for the no-progress timeout"
		}
		st.stopAgent(stopIntent{kind: stopBlock, reason: protocol.BlockedTimeout, detail: detail}, false)
	}
	return nil
}

// inCommandTimeout: a command ran the command timeout without output.
type inCommandTimeout struct{ detail string }

func (in inCommandTimeout) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	// A command ran without writing or starting anything for the
	// command timeout: reported as such, not as "no progress".
	if status.Live() && s.agent == agentUp {
		st.stopAgent(stopIntent{kind: stopBlock, reason: protocol.BlockedTimeout, detail: in.detail}, false)
	}
	return nil
}

// inAPIRetry: claude retries a failed API request.
type inAPIRetry struct{ retry agent.APIRetry }

func (in inAPIRetry) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	// claude retries a refused login like an overloaded API (ten times
	// over about three minutes): the same credentials will not do, so
	// the task is blocked at the second refusal. The first may be a
	// login claude refreshes before it retries.
	if r := in.retry; r.Auth() && r.Attempt >= authRetries && status.Live() && s.agent == agentUp {
		// The refusal, not "retrying (2 of 10)": familiar stopped the
		// retries, and a client read it as still retrying (issue 37).
		refusal := fmt.Sprintf("HTTP %d", r.Status)
		if m := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.Message), strconv.Itoa(r.Status))); m != "" {
			refusal += ": " + m
		}
		st.block(protocol.BlockedAuth, fmt.Sprintf("the model API refused the credentials (%s); %s", refusal, agent.AuthFix))
	}
	return nil
}

// inAgentProblem: the agent reports a problem (fatal: the task cannot go on).
type inAgentProblem struct {
	detail string
	fatal  bool
}

func (in inAgentProblem) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if in.fatal && status.Live() && s.agent == agentUp {
		// Without its log a task's record would be silently incomplete:
		// stop it clearly rather than run on.
		st.stopAgent(stopIntent{kind: stopBlock, reason: protocol.BlockedAgentFailed, detail: in.detail}, false)
	}
	st.emit(effPublish{protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: fmt.Sprintf("task %s: %s", s.T.ID, in.detail)}})
	return nil
}

// inExited: the agent's process exited.
type inExited struct {
	code   int
	signal string
	// refusal: claude refused to start (agent.StartupRefusal).
	refusal *agent.StartupRefusal
}

func (in inExited) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if s.agent == agentNone {
		return nil
	}
	s.agent = agentNone
	st.emit(effAgentGone{})
	st.closeOpenCalls()
	s.Process = nil
	if s.warm {
		s.warm = false
		st.emit(effDisarmWarm{}, effWarmGone{})
	}
	if s.T.PendingQuestion != nil {
		st.emit(effDisarmApproval{})
	}
	intent := s.stop
	if intent.kind == stopNone && status.Live() {
		detail := fmt.Sprintf("claude exited with code %d", in.code)
		if in.signal != "" {
			detail = "claude was killed by signal " + in.signal
		}
		intent = stopIntent{kind: stopBlock, reason: protocol.BlockedAgentExited, detail: detail}
		if r := in.refusal; r != nil {
			// A refusal a retry does not fix: its own reason, and what
			// to do about it.
			intent = stopIntent{kind: stopBlock, reason: refusalReasons[r.Reason],
				detail: "claude refused to start: " + r.Message + " — " + r.Fix()}
			if r.Reason == agent.RefusalSideload && !s.NoSideload && len(s.McpServers) == 0 {
				// Only servers the task did not ask for were refused
				// (the settings' and the user's own): it starts again
				// without them, and the person is told what it lost.
				s.NoSideload = true
				intent = stopIntent{kind: stopSwitch}
				st.emit(effPublish{protocol.ServerMessageNotification{Level: protocol.LevelWarning,
					Text: fmt.Sprintf("task %s: %s", s.T.ID, sideloadLost(st.e.sessionMCP))}})
				st.emit(effPersist{})
			}
		}
	}
	st.settleStopped(intent)
	return nil
}

// settleStopped moves a task whose agent has gone (or never came up) to
// where its stop intent says.
func (st *stepper) settleStopped(intent stopIntent) {
	s := &st.s
	s.stop = stopIntent{}
	status := s.T.Status
	switch intent.kind {
	case stopSwitch:
		if status.Live() {
			// A mode switch keeps the slot: start again straight away.
			if status != protocol.StatusStarting {
				_ = st.move(protocol.StatusStarting)
			}
			st.beginStart()
			return
		}
	case stopRetry:
		if status.Live() {
			if status != protocol.StatusStarting {
				_ = st.move(protocol.StatusStarting)
			}
			s.StartFailures++
			st.emit(effBackoff{after: st.e.startBackoff << max(s.StartFailures-1, 0)})
			st.changed()
			return
		}
	case stopCancel:
		if status != protocol.StatusCancelled && st.move(protocol.StatusCancelled) == nil {
			s.T.Blocked = cancelled(intent)
		}
	case stopPause:
		if status.Live() {
			_ = st.move(protocol.StatusPaused)
			if s.FollowUp == "" {
				s.FollowUp = resumePrompt
			}
		}
	case stopBlock, stopShutdown:
		if status.Live() {
			reason, detail := intent.reason, intent.detail
			if intent.kind == stopShutdown {
				reason, detail = protocol.BlockedInterrupted, "familiar shut down"
			}
			if st.move(protocol.StatusBlocked) == nil {
				s.T.Blocked = &protocol.Blocked{Reason: reason, Detail: detail}
				s.LastError = detail
			}
		}
	case stopRelease, stopNone:
	}
	st.changed()
}

// sideloadLost says what a task started without its sideloaded parts has
// lost: the settings' MCP servers (named) and the user's own.
func sideloadLost(settings []string) string {
	lost := "the MCP servers of your own claude configuration"
	if len(settings) > 0 {
		lost = "the MCP servers of familiar's settings (" + strings.Join(settings, ", ") + ") and " + lost
	}
	return "claude refused to start with MCP servers passed on its command line (your organization's managed settings set " +
		"disableSideloadFlags); the task needs none of its own, so it starts again without " + lost
}

// closeOpenCalls ends, as failed, the tool calls the agent that just exited
// left pending or running: a call waiting on a permission when a mode
// switch (or any stop mid-turn) restarted claude is in no session file
// (CLAUDE-CLI.md §6), so the next agent's transcript never mentions it and
// it showed as pending for ever. Each is published again with its end, as
// a call's every change is, so clients replace it and the store replays it
// closed.
func (st *stepper) closeOpenCalls() {
	now := st.e.now.UTC()
	for _, tc := range openCalls(st.s.steps) {
		tc.Status = transcript.StatusFailed
		tc.EndedAt = &now
		if tc.Result == "" {
			tc.Result = interruptedCall
		}
		st.transcript(protocol.TranscriptEntry{Kind: transcript.KindToolCall, At: now, ToolCall: &tc})
	}
}

// interruptedCall is the result of a tool call its agent left unfinished.
const interruptedCall = "interrupted: claude stopped before this call finished"

// openCalls are the steps not yet completed or failed, copies to change.
func openCalls(steps []protocol.ToolCall) []protocol.ToolCall {
	var open []protocol.ToolCall
	for _, tc := range steps {
		if tc.Status == transcript.StatusPending || tc.Status == transcript.StatusRunning {
			open = append(open, tc)
		}
	}
	return open
}
