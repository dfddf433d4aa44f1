package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// The state machine alone: each transition as a table row, without claude,
// git or the store. The end-to-end tests prove the wiring.

var testEnv = env{
	now:              time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC),
	approvalTimeout:  5 * time.Minute,
	startBackoff:     time.Second,
	maxStartFailures: 3,
	repoRoot:         "/repo",
	dataDir:          "/data",
}

// mk builds a state: status, agent phase, and options.
func mk(status protocol.Status, phase agentPhase, opts ...func(*state)) state {
	var s state
	s.T = protocol.Task{ID: "t1", Title: "task", Status: status, Activity: protocol.ActivityIdle,
		StartedAt: testEnv.now.Add(-time.Minute)}
	s.agent = phase
	for _, o := range opts {
		o(&s)
	}
	return s
}

func withStop(k stopKind) func(*state) { return func(s *state) { s.stop = stopIntent{kind: k} } }
func withSession() func(*state) {
	return func(s *state) { s.T.Agent = &protocol.AgentInfo{SessionID: "sess", PID: 42} }
}
func withQuestion(kind protocol.QuestionKind) func(*state) {
	return func(s *state) { s.T.PendingQuestion = &protocol.Question{ID: "q1", Kind: kind, Text: "ok?"} }
}
func withBlocked(r protocol.BlockedReason) func(*state) {
	return func(s *state) { s.T.Blocked = &protocol.Blocked{Reason: r, Detail: "x"} }
}
func withOp(op opKind) func(*state)   { return func(s *state) { s.op = op } }
func withFailures(n int) func(*state) { return func(s *state) { s.StartFailures = n } }
func completing() func(*state)        { return func(s *state) { s.completing = true } }
func withTurns(n int) func(*state)    { return func(s *state) { s.Turns = n } }
func withBudget(usd float64) func(*state) {
	return func(s *state) { s.MaxBudgetUsd = &usd }
}
func withActivity(a protocol.Activity) func(*state) { return func(s *state) { s.T.Activity = a } }
func withAnswer(a personAnswer) func(*state)        { return func(s *state) { s.answer = a } }

// kindName is an input's or effect's name, from its type: inStartFailed is
// "start failed", cmdSetMode "set mode", effStopAgent "stop agent".
func kindName(v any) string {
	n := fmt.Sprintf("%T", v)
	n = n[strings.LastIndex(n, ".")+1:]
	for _, p := range []string{"in", "cmd", "eff"} {
		if rest, ok := strings.CutPrefix(n, p); ok && rest != "" && unicode.IsUpper(rune(rest[0])) {
			n = rest
			break
		}
	}
	var words []string
	start := 0
	for i := 1; i <= len(n); i++ {
		// A word ends before an upper-case letter that follows a lower-case
		// one, or that starts a word after an acronym (APIRetry: API Retry).
		if i == len(n) || unicode.IsUpper(rune(n[i])) && (unicode.IsLower(rune(n[i-1])) || i+1 < len(n) && unicode.IsLower(rune(n[i+1]))) {
			words = append(words, strings.ToLower(n[start:i]))
			start = i
		}
	}
	return strings.Join(words, " ")
}

// names lists effect names, for compact expectations.
func names(effs []effect) []string {
	var out []string
	for _, e := range effs {
		switch e := e.(type) {
		case effAudit:
			continue // every status change audits; checked separately
		case effPublish:
			out = append(out, "publish "+e.n.Method())
		case effStopAgent:
			if e.now {
				out = append(out, "stop agent now")
			} else {
				out = append(out, "stop agent")
			}
		default:
			out = append(out, kindName(e))
		}
	}
	return out
}

func TestTransitions(t *testing.T) {
	running := protocol.StatusRunning
	tests := []struct {
		name    string
		from    state
		in      input
		status  protocol.Status
		phase   agentPhase // 0: not checked
		gone    bool       // the agent phase must be none
		effects []string   // nil: not checked
		wantErr error
		check   func(t *testing.T, s state)
	}{
		// Starting.
		{name: "queued starts", from: mk(protocol.StatusQueued, agentNone), in: inStart{},
			status: protocol.StatusStarting, phase: agentStarting,
			effects: []string{"queue changed", "persist", "updated", "start agent"}},
		{name: "only queued tasks start", from: mk(protocol.StatusPaused, agentNone), in: inStart{},
			status: protocol.StatusPaused, wantErr: errPrecondition},
		{name: "agent up: running, thinking", from: mk(protocol.StatusStarting, agentStarting), in: inStarted{agent: protocol.AgentInfo{PID: 7, SessionID: "s"}},
			status: running, phase: agentUp, effects: []string{"persist", "updated"},
			check: func(t *testing.T, s state) {
				if s.T.Activity != protocol.ActivityThinking || s.T.Agent.PID != 7 {
					t.Errorf("activity %s agent %+v", s.T.Activity, s.T.Agent)
				}
			}},
		{name: "cancelled while starting: stopped once up", from: mk(protocol.StatusStarting, agentStarting, withStop(stopCancel)), in: inStarted{},
			status: protocol.StatusStarting, phase: agentStopping, effects: []string{"stop agent", "persist", "updated"}},
		{name: "transient start failure backs off", from: mk(protocol.StatusStarting, agentStarting), in: inStartFailed{detail: "start claude: boom", transient: true},
			status: protocol.StatusStarting, gone: true, effects: []string{"agent gone", "persist", "backoff"},
			check: func(t *testing.T, s state) {
				if s.StartFailures != 1 {
					t.Errorf("failures %d", s.StartFailures)
				}
			}},
		{name: "third transient failure blocks", from: mk(protocol.StatusStarting, agentStarting, withFailures(2)), in: inStartFailed{detail: "start claude: boom", transient: true},
			status: protocol.StatusBlocked, gone: true,
			check: func(t *testing.T, s state) {
				if s.T.Blocked.Reason != protocol.BlockedStartFailed || !strings.Contains(s.T.Blocked.Detail, "after 3 attempts") {
					t.Errorf("blocked %+v", s.T.Blocked)
				}
			}},
		{name: "worktree failure blocks at once", from: mk(protocol.StatusStarting, agentStarting), in: inStartFailed{detail: "create worktree: bad"},
			status: protocol.StatusBlocked, effects: []string{"agent gone", "slot freed", "persist", "updated", "publish task/completed"}},
		{name: "start failure after a pause: paused", from: mk(protocol.StatusStarting, agentStarting, withStop(stopPause)), in: inStartFailed{detail: "x"},
			status: protocol.StatusPaused},
		{name: "backoff over: back to the queue", from: mk(protocol.StatusStarting, agentNone), in: inBackoffDone{},
			status: protocol.StatusQueued, effects: []string{"slot freed", "queue changed", "persist", "updated"}},
		{name: "backoff over after cancel: nothing", from: mk(protocol.StatusCancelled, agentNone), in: inBackoffDone{},
			status: protocol.StatusCancelled, effects: []string{}},

		// Issue 17: a prose question marked done; allow-always grants.
		{name: "prose question marked done completes", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionQuestion)), in: cmdMarkDone{},
			status: running, effects: []string{"disarm approval", "persist", "updated", "publish task/questionResolved", "persist", "complete"},
			check: func(t *testing.T, s state) {
				if !s.completing || s.T.PendingQuestion != nil {
					t.Errorf("completing %v pending %+v", s.completing, s.T.PendingQuestion)
				}
			}},
		{name: "a permission cannot be marked done", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission)), in: cmdMarkDone{},
			status: protocol.StatusWaiting, wantErr: errPrecondition},
		{name: "allow-always for the task is kept with it", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission),
			withAnswer(personAnswer{questionID: "q1", optionID: agent.OptionAllowAlways, taken: true, grant: &protocol.Grant{Rule: "Bash(npm test:*)", Scope: protocol.GrantTask}})),
			in:     inResolved{questionID: "q1", by: protocol.DecidedByUser, optionID: agent.OptionAllowAlways, taken: true},
			status: running,
			check: func(t *testing.T, s state) {
				if len(s.T.Grants) != 1 || s.T.Grants[0].Rule != "Bash(npm test:*)" {
					t.Errorf("grants %+v", s.T.Grants)
				}
			}},
		{name: "allow-always for the repository goes to its file", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission),
			withAnswer(personAnswer{questionID: "q1", optionID: agent.OptionAllowAlways, taken: true, grant: &protocol.Grant{Rule: "Read", Scope: protocol.GrantRepository}})),
			in:     inResolved{questionID: "q1", by: protocol.DecidedByUser, optionID: agent.OptionAllowAlways, taken: true},
			status: running, effects: []string{"responded", "save grant", "disarm approval", "persist", "updated", "publish task/questionResolved", "answered"},
			check: func(t *testing.T, s state) {
				if len(s.T.Grants) != 0 {
					t.Errorf("a repository grant was kept with the task: %+v", s.T.Grants)
				}
			}},
		{name: "a task grant is revoked", from: mk(running, agentUp, func(s *state) { s.T.Grants = []protocol.Grant{{Rule: "Read"}, {Rule: "Edit"}} }),
			in: cmdRevoke{rule: "Read"}, status: running, effects: []string{"persist", "updated"},
			check: func(t *testing.T, s state) {
				if len(s.T.Grants) != 1 || s.T.Grants[0].Rule != "Edit" {
					t.Errorf("grants %+v", s.T.Grants)
				}
			}},

		// Activity and questions.
		{name: "activity is announced, not persisted", from: mk(running, agentUp), in: inActivity{activity: protocol.ActivityWriting},
			status: running, effects: []string{"updated"}},
		{name: "permission waits on a person with a timeout", from: mk(running, agentUp), in: inQuestion{q: protocol.Question{ID: "q1", Kind: protocol.QuestionPermission}},
			status: protocol.StatusWaiting, effects: []string{"arm approval", "persist", "updated", "publish task/question"},
			check: func(t *testing.T, s state) {
				if s.T.PendingQuestion == nil || !s.T.PendingQuestion.ExpiresAt.Equal(testEnv.now.Add(5*time.Minute)) {
					t.Errorf("question %+v", s.T.PendingQuestion)
				}
			}},
		{name: "a choice has no timeout", from: mk(running, agentUp), in: inQuestion{q: protocol.Question{ID: "q1", Kind: protocol.QuestionChoice}},
			status: protocol.StatusWaiting, effects: []string{"persist", "updated", "publish task/question"}},
		{name: "policy decides: shown, settled, answered", from: mk(running, agentUp),
			in:     inQuestion{q: protocol.Question{ID: "q1", Kind: agent.KindPermission}, decided: &decision{option: agent.OptionAllow, tool: "Bash"}},
			status: running, effects: []string{"publish task/question", "publish task/questionResolved", "tell"}},
		{name: "a stopping agent's question is dropped", from: mk(running, agentStopping), in: inQuestion{q: protocol.Question{ID: "q1", Kind: agent.KindPermission}},
			status: running, effects: []string{}},
		// A person's answer: told to the agent by the actor (effTell),
		// settled by the agent's resolution, task/respond answered once
		// both that and the agent's outcome are in, in either order.
		{name: "a person's answer goes to the agent", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission)),
			in: cmdRespond{questionID: "q1", answer: agent.Answer{OptionID: "allow"}}, status: protocol.StatusWaiting, effects: []string{"tell"},
			check: func(t *testing.T, s state) {
				if s.answer.questionID != "q1" || s.answer.audit["responseSec"] == nil || s.T.PendingQuestion == nil {
					t.Errorf("answer %+v pending %+v", s.answer, s.T.PendingQuestion)
				}
			}},
		{name: "a permission answer needs an option", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission)),
			in: cmdRespond{questionID: "q1", answer: agent.Answer{Text: "why not"}}, status: protocol.StatusWaiting, wantErr: &protocol.Error{Code: protocol.CodeInvalidParams}},
		{name: "answer to another question: not found", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission)),
			in: cmdRespond{questionID: "q2", answer: agent.Answer{OptionID: "allow"}}, status: protocol.StatusWaiting, wantErr: errNotFound},
		{name: "a second answer while the first is on its way: not found", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission),
			withAnswer(personAnswer{questionID: "q1", optionID: "allow"})),
			in: cmdRespond{questionID: "q1", answer: agent.Answer{OptionID: "deny"}}, status: protocol.StatusWaiting, wantErr: errNotFound},
		{name: "an answer to a stopping agent is refused", from: mk(protocol.StatusWaiting, agentStopping, withQuestion(protocol.QuestionPermission)),
			in: cmdRespond{questionID: "q1", answer: agent.Answer{OptionID: "allow"}}, status: protocol.StatusWaiting, wantErr: errPrecondition},
		{name: "taken, then settled: running again, audited, answered", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission),
			withAnswer(personAnswer{questionID: "q1", optionID: "allow", taken: true})),
			in: inResolved{questionID: "q1", by: protocol.DecidedByUser, optionID: "allow", taken: true}, status: running,
			effects: []string{"responded", "disarm approval", "persist", "updated", "publish task/questionResolved", "answered"},
			check: func(t *testing.T, s state) {
				if s.answer.questionID != "" {
					t.Errorf("answer still on its way: %+v", s.answer)
				}
			}},
		{name: "settled before the agent's outcome: recorded, answered with the outcome", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission),
			withAnswer(personAnswer{questionID: "q1", optionID: "allow"})),
			in: inResolved{questionID: "q1", by: protocol.DecidedByUser, optionID: "allow", taken: true}, status: running,
			effects: []string{"responded", "disarm approval", "persist", "updated", "publish task/questionResolved"},
			check: func(t *testing.T, s state) {
				if !s.answer.settled {
					t.Errorf("answer %+v", s.answer)
				}
			}},
		{name: "the agent's outcome after the settlement answers", from: mk(running, agentUp, withAnswer(personAnswer{questionID: "q1", settled: true})),
			in: inAnswerOutcome{questionID: "q1"}, status: running, effects: []string{"answered"},
			check: func(t *testing.T, s state) {
				if s.answer.questionID != "" {
					t.Errorf("answer still on its way: %+v", s.answer)
				}
			}},
		{name: "the agent's outcome before the settlement waits for it", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission),
			withAnswer(personAnswer{questionID: "q1"})),
			in: inAnswerOutcome{questionID: "q1"}, status: protocol.StatusWaiting, effects: []string{},
			check: func(t *testing.T, s state) {
				if !s.answer.taken {
					t.Errorf("answer %+v", s.answer)
				}
			}},
		{name: "refused by the agent: answered with the refusal, still pending", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission),
			withAnswer(personAnswer{questionID: "q1"})),
			in: inAnswerOutcome{questionID: "q1", err: agent.ErrNoQuestion}, status: protocol.StatusWaiting, effects: []string{"answered"},
			check: func(t *testing.T, s state) {
				if s.answer.questionID != "" || s.T.PendingQuestion == nil {
					t.Errorf("answer %+v pending %+v", s.answer, s.T.PendingQuestion)
				}
			}},
		{name: "answered in the terminal while a person's answer was on its way: settled, not recorded as theirs", from: mk(protocol.StatusWaiting, agentUp,
			withQuestion(protocol.QuestionPermission), withAnswer(personAnswer{questionID: "q1"})),
			in: inResolved{questionID: "q1", by: protocol.DecidedByUser}, status: running,
			effects: []string{"disarm approval", "persist", "updated", "publish task/questionResolved"}},
		{name: "timeout denies a permission", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission)),
			in: inApprovalTimer{questionID: "q1"}, status: running,
			check: func(t *testing.T, s state) {
				if s.T.PendingQuestion != nil {
					t.Error("question still pending")
				}
			}},
		{name: "an unanswered dialog blocks", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionDialog)),
			in: inApprovalTimer{questionID: "q1"}, status: protocol.StatusBlocked, phase: agentStopping},
		{name: "a stale timer does nothing", from: mk(running, agentUp), in: inApprovalTimer{questionID: "q1"}, status: running, effects: []string{}},

		// Turns.
		{name: "a clean turn end completes", from: mk(running, agentUp), in: inTurnEnded{turn: agent.TurnEnded{LastMessage: "done"}},
			status: running, effects: []string{"persist", "complete"}},
		{name: "a turn with background tasks is not the end", from: mk(running, agentUp), in: inTurnEnded{turn: agent.TurnEnded{BackgroundTasks: 1}},
			status: running, effects: []string{}},
		{name: "a turn ending on a question checkpoints", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionQuestion)), in: inTurnEnded{turn: agent.TurnEnded{Asks: "q1"}},
			status: protocol.StatusWaiting, effects: []string{"checkpoint", "persist"}},
		{name: "overloaded API on the first turn restarts the turn", from: mk(running, agentUp), in: inTurnEnded{turn: agent.TurnEnded{Failed: true, Error: "API Error: 529 overloaded"}},
			status: running, phase: agentStopping, effects: []string{"stop agent", "persist"},
			check: func(t *testing.T, s state) {
				if s.stop.kind != stopRetry || s.FollowUp == "" {
					t.Errorf("stop %v followUp %q: the restart must carry a prompt", s.stop.kind, s.FollowUp)
				}
			}},
		{name: "a failed turn blocks and lets the agent go", from: mk(running, agentUp), in: inTurnEnded{turn: agent.TurnEnded{Failed: true, Error: "bad request"}},
			status: protocol.StatusBlocked, phase: agentStopping},
		// The model side failing (issue 13 §2) and the user's login (issue 14).
		{name: "API unreachable on a later turn: the turn is retried", from: mk(running, agentUp, withTurns(3)),
			in:     inTurnEnded{turn: agent.TurnEnded{Failed: true, Error: "x", Failure: &agent.Failure{Kind: agent.FailureAPI, Message: "API Error: Connection refused"}}},
			status: running, phase: agentStopping, effects: []string{"stop agent", "persist"},
			check: func(t *testing.T, s state) {
				if s.stop.kind != stopRetry || s.FollowUp != resumePrompt {
					t.Errorf("stop %v followUp %q", s.stop.kind, s.FollowUp)
				}
			}},
		{name: "API still overloaded after the retries: blocked{api_error} with the status", from: mk(running, agentUp, withFailures(2)),
			in:     inTurnEnded{turn: agent.TurnEnded{Failed: true, Failure: &agent.Failure{Kind: agent.FailureAPI, Status: 529, Message: "API Error: 529 overloaded"}}},
			status: protocol.StatusBlocked, phase: agentStopping,
			check: func(t *testing.T, s state) {
				b := s.T.Blocked
				if b.Reason != protocol.BlockedAPIError || b.Status != 529 || !strings.Contains(b.Detail, "529 overloaded") {
					t.Errorf("blocked %+v", b)
				}
			}},
		// Issue 22: failures in seconds. An error claude retried itself is
		// not retried again by familiar.
		{name: "an API error claude retried blocks at once with the status", from: mk(running, agentUp),
			in:     inTurnEnded{turn: agent.TurnEnded{Failed: true, Failure: &agent.Failure{Kind: agent.FailureAPI, Status: 500, Message: "API Error: 500 boom", Retries: 2}}},
			status: protocol.StatusBlocked, phase: agentStopping,
			check: func(t *testing.T, s state) {
				b := s.T.Blocked
				if b.Reason != protocol.BlockedAPIError || b.Status != 500 || !strings.Contains(b.Detail, "500 boom") || !strings.Contains(b.Detail, "2 retries") {
					t.Errorf("blocked %+v", b)
				}
				if s.stop.kind == stopRetry {
					t.Error("familiar restarts claude on an error claude already retried")
				}
			}},
		{name: "a refused login at claude's first retry: nothing yet (it may refresh)", from: mk(running, agentUp),
			in:     inAPIRetry{retry: agent.APIRetry{Attempt: 1, MaxAttempts: 10, Status: 401, Message: "401 invalid x-api-key"}},
			status: running, phase: agentUp, effects: []string{}},
		{name: "a refused login at claude's second retry blocks{auth} with the fix", from: mk(running, agentUp),
			in:     inAPIRetry{retry: agent.APIRetry{Attempt: 2, MaxAttempts: 10, Status: 401, Message: "401 invalid x-api-key"}},
			status: protocol.StatusBlocked, phase: agentStopping,
			check: func(t *testing.T, s state) {
				b := s.T.Blocked
				if b.Reason != protocol.BlockedAuth || !strings.Contains(b.Detail, agent.AuthFix) || !strings.Contains(b.Detail, "401") {
					t.Errorf("blocked %+v", b)
				}
			}},
		{name: "a 403 retried is refused credentials too", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission)),
			in:     inAPIRetry{retry: agent.APIRetry{Attempt: 3, Status: 403, Message: "403 forbidden"}},
			status: protocol.StatusBlocked, phase: agentStopping},
		{name: "a server error retried changes nothing (the activity says it)", from: mk(running, agentUp),
			in:     inAPIRetry{retry: agent.APIRetry{Attempt: 5, MaxAttempts: 10, Status: 500, Message: "500 boom"}},
			status: running, phase: agentUp, effects: []string{}},
		{name: "a stopped claude past the no-progress timeout blocks saying so", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionPermission)),
			in:     inNoProgress{detail: agent.ProblemStopped + " (pid 42) and made no progress for the no-progress timeout (30s)"},
			status: protocol.StatusWaiting, phase: agentStopping, effects: []string{"stop agent"},
			check: func(t *testing.T, s state) {
				if s.stop.kind != stopBlock || s.stop.reason != protocol.BlockedTimeout || !strings.Contains(s.stop.detail, "stopped by a signal") {
					t.Errorf("stop %+v", s.stop)
				}
			}},
		{name: "a refused request is not retried: blocked{api_error}", from: mk(running, agentUp),
			in:     inTurnEnded{turn: agent.TurnEnded{Failed: true, Failure: &agent.Failure{Kind: agent.FailureAPI, Status: 400, Message: "API Error: 400 bad"}}},
			status: protocol.StatusBlocked, phase: agentStopping,
			check: func(t *testing.T, s state) {
				if s.T.Blocked.Reason != protocol.BlockedAPIError || s.T.Blocked.Status != 400 {
					t.Errorf("blocked %+v", s.T.Blocked)
				}
			}},
		{name: "not logged in: blocked{auth} with the fix", from: mk(running, agentUp),
			in:     inTurnEnded{turn: agent.TurnEnded{Failed: true, Failure: &agent.Failure{Kind: agent.FailureAuth, Status: 401, Message: "Not logged in · Please run /login"}}},
			status: protocol.StatusBlocked, phase: agentStopping,
			check: func(t *testing.T, s state) {
				if s.T.Blocked.Reason != protocol.BlockedAuth || !strings.Contains(s.T.Blocked.Detail, "claude auth login") {
					t.Errorf("blocked %+v", s.T.Blocked)
				}
			}},
		{name: "no login at all: blocked{auth} before claude starts", from: mk(protocol.StatusStarting, agentStarting),
			in:     inStartFailed{detail: "claude is not logged in; run `claude login`", auth: true},
			status: protocol.StatusBlocked, gone: true,
			check: func(t *testing.T, s state) {
				if s.T.Blocked.Reason != protocol.BlockedAuth || s.StartFailures != 0 {
					t.Errorf("blocked %+v failures %d", s.T.Blocked, s.StartFailures)
				}
			}},
		{name: "usage limit: blocked{usage_limit} with the reset time, queue told", from: mk(running, agentUp),
			in:     inTurnEnded{turn: agent.TurnEnded{Failed: true, Failure: &agent.Failure{Kind: agent.FailureUsageLimit, Status: 429, Message: "You've hit your 5-hour limit", ResetsAt: testEnv.now.Add(2 * time.Hour)}}},
			status: protocol.StatusBlocked, phase: agentStopping,
			effects: []string{"slot freed", "persist", "updated", "stop agent", "usage limit", "publish task/completed"},
			check: func(t *testing.T, s state) {
				b := s.T.Blocked
				if b.Reason != protocol.BlockedUsageLimit || !b.ResetsAt.Equal(testEnv.now.Add(2*time.Hour)) || s.FollowUp != resumePrompt {
					t.Errorf("blocked %+v followUp %q", b, s.FollowUp)
				}
			}},
		{name: "over budget after a turn that goes on: blocked{budget}", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionQuestion), withBudget(1)),
			in:     inTurnEnded{turn: agent.TurnEnded{CostUSD: 1.25, Asks: "q1"}},
			status: protocol.StatusBlocked, phase: agentStopping,
			check: func(t *testing.T, s state) {
				if s.T.Blocked.Reason != protocol.BlockedBudget || !strings.Contains(s.T.Blocked.Detail, "$1.25 of its $1.00") {
					t.Errorf("blocked %+v", s.T.Blocked)
				}
			}},
		{name: "over budget mid-turn (transcript usage): stopped, blocked{budget}", from: mk(running, agentUp, withBudget(0.5)),
			in: inTranscript{entry: protocol.TranscriptEntry{Usage: &protocol.Usage{OutputTokens: 10, CostUSD: 0.75}}}, status: running, phase: agentStopping,
			check: func(t *testing.T, s state) {
				if s.stop.kind != stopBlock || s.stop.reason != protocol.BlockedBudget || !strings.Contains(s.stop.detail, "$0.75 of its $0.50") {
					t.Errorf("stop %+v", s.stop)
				}
			}},
		{name: "under budget mid-turn: runs on", from: mk(running, agentUp, withBudget(1)),
			in: inTranscript{entry: protocol.TranscriptEntry{Usage: &protocol.Usage{CostUSD: 0.25}}}, status: running, phase: agentUp},
		{name: "over budget on the turn that finishes: completes", from: mk(running, agentUp, withBudget(1)),
			in: inTurnEnded{turn: agent.TurnEnded{CostUSD: 1.25, LastMessage: "done"}}, status: running, effects: []string{"persist", "complete"}},
		{name: "a silent command: blocked{timeout} naming the command", from: mk(running, agentUp),
			in: inCommandTimeout{detail: agent.ProblemCommandTimeout + ": `sleep 1200`"}, status: running, phase: agentStopping,
			check: func(t *testing.T, s state) {
				if s.stop.reason != protocol.BlockedTimeout || !strings.Contains(s.stop.detail, "sleep 1200") {
					t.Errorf("stop %+v", s.stop)
				}
			}},
		{name: "activity detail is announced", from: mk(running, agentUp, withActivity(protocol.ActivityThinking)),
			in: inActivity{activity: protocol.ActivityThinking, detail: "model error 529, retrying (3 of 10)"}, status: running, effects: []string{"updated"},
			check: func(t *testing.T, s state) {
				if s.T.ActivityDetail != "model error 529, retrying (3 of 10)" {
					t.Errorf("detail %q", s.T.ActivityDetail)
				}
			}},
		{name: "completed: merging, announced, agent released", from: mk(running, agentUp, completing()), in: inCompleted{result: protocol.TaskResult{Summary: "s"}},
			status: protocol.StatusMerging, phase: agentStopping,
			effects: []string{"slot freed", "forecast", "persist", "updated", "stop agent", "publish task/completed"}},
		{name: "completed with BLOCKED: blocked", from: mk(running, agentUp, completing()), in: inCompleted{blocked: "no access"},
			status: protocol.StatusBlocked, phase: agentStopping},
		{name: "completed after a cancel: ignored", from: mk(protocol.StatusCancelled, agentNone, completing()), in: inCompleted{},
			status: protocol.StatusCancelled, effects: []string{}},
		{name: "no progress stops with timeout", from: mk(running, agentUp), in: inNoProgress{},
			status: running, phase: agentStopping, effects: []string{"stop agent"},
			check: func(t *testing.T, s state) {
				if s.stop.kind != stopBlock || s.stop.reason != protocol.BlockedTimeout {
					t.Errorf("stop %+v", s.stop)
				}
			}},

		// Exits: the stop intent decides.
		{name: "exit after cancel: cancelled", from: mk(running, agentStopping, withStop(stopCancel)), in: inExited{code: 143},
			status: protocol.StatusCancelled, gone: true},
		{name: "exit after pause: paused, resumable", from: mk(running, agentStopping, withStop(stopPause)), in: inExited{},
			status: protocol.StatusPaused, check: func(t *testing.T, s state) {
				if s.FollowUp != resumePrompt {
					t.Errorf("followUp %q", s.FollowUp)
				}
			}},
		{name: "exit after a mode switch: starts again, same slot", from: mk(running, agentStopping, withStop(stopSwitch)), in: inExited{},
			status: protocol.StatusStarting, phase: agentStarting, effects: []string{"agent gone", "persist", "updated", "start agent"}},
		{name: "exit after a transient failure: backs off", from: mk(running, agentStopping, withStop(stopRetry)), in: inExited{},
			status: protocol.StatusStarting, gone: true},
		{name: "exit after shutdown: interrupted", from: mk(protocol.StatusWaiting, agentStopping, withStop(stopShutdown), withQuestion(protocol.QuestionPermission)), in: inExited{},
			status: protocol.StatusBlocked, check: func(t *testing.T, s state) {
				if s.T.Blocked.Reason != protocol.BlockedInterrupted || s.T.PendingQuestion != nil {
					t.Errorf("blocked %+v question %+v", s.T.Blocked, s.T.PendingQuestion)
				}
			}},
		{name: "exit of a released agent changes nothing", from: mk(protocol.StatusMerging, agentStopping, withStop(stopRelease)), in: inExited{},
			status: protocol.StatusMerging, gone: true},
		// Startup refusals (claude 2.1.331+): their own reasons, the fix in words.
		{name: "refused: session held by claude's background agents", from: mk(running, agentUp),
			in:     inExited{code: 1, refusal: &agent.StartupRefusal{Reason: agent.RefusalSessionHeld, Message: "That session is running in the background (j1)."}},
			status: protocol.StatusBlocked, check: func(t *testing.T, s state) {
				if s.T.Blocked.Reason != protocol.BlockedSessionHeld || !strings.Contains(s.T.Blocked.Detail, "running in the background (j1)") ||
					!strings.Contains(s.T.Blocked.Detail, "claude stop") {
					t.Errorf("blocked %+v", s.T.Blocked)
				}
			}},
		{name: "refused sideloading, the task needs none of its own: starts again without", from: mk(running, agentUp),
			in:     inExited{code: 1, refusal: &agent.StartupRefusal{Reason: agent.RefusalSideload, Message: "--mcp-config is disabled"}},
			status: protocol.StatusStarting, phase: agentStarting, check: func(t *testing.T, s state) {
				if !s.NoSideload {
					t.Error("the next start still sideloads")
				}
			}},
		{name: "refused sideloading again: blocked", from: mk(running, agentUp, func(s *state) { s.NoSideload = true }),
			in:     inExited{code: 1, refusal: &agent.StartupRefusal{Reason: agent.RefusalSideload, Message: "--mcp-config is disabled"}},
			status: protocol.StatusBlocked, check: func(t *testing.T, s state) {
				if s.T.Blocked.Reason != protocol.BlockedSideloadDisabled || !strings.Contains(s.T.Blocked.Detail, "disableSideloadFlags") {
					t.Errorf("blocked %+v", s.T.Blocked)
				}
			}},
		{name: "refused sideloading a task's own MCP servers: blocked", from: mk(running, agentUp, func(s *state) {
			s.McpServers = map[string]protocol.McpServer{"db": {Command: "db-mcp"}}
		}),
			in:     inExited{code: 1, refusal: &agent.StartupRefusal{Reason: agent.RefusalSideload, Message: "--mcp-config is disabled"}},
			status: protocol.StatusBlocked, check: func(t *testing.T, s state) {
				if s.T.Blocked.Reason != protocol.BlockedSideloadDisabled || s.NoSideload {
					t.Errorf("blocked %+v, noSideload %v", s.T.Blocked, s.NoSideload)
				}
			}},
		{name: "unexpected exit names the signal", from: mk(running, agentUp), in: inExited{signal: "SIGKILL"},
			status: protocol.StatusBlocked, check: func(t *testing.T, s state) {
				if s.T.Blocked.Reason != protocol.BlockedAgentExited || s.T.Blocked.Detail != "claude was killed by signal SIGKILL" {
					t.Errorf("blocked %+v", s.T.Blocked)
				}
			}},

		// Commands.
		{name: "cancel a queued task", from: mk(protocol.StatusQueued, agentNone), in: cmdCancel{}, status: protocol.StatusCancelled},
		{name: "cancel a running task stops it", from: mk(running, agentUp), in: cmdCancel{}, status: running, phase: agentStopping, effects: []string{"stop agent"}},
		{name: "cancel during a pause wins", from: mk(running, agentStopping, withStop(stopPause)), in: cmdCancel{}, status: running, phase: agentStopping,
			check: func(t *testing.T, s state) {
				if s.stop.kind != stopCancel {
					t.Errorf("stop %v", s.stop.kind)
				}
			}},
		{name: "cancel a merged task: refused", from: mk(protocol.StatusMerged, agentNone), in: cmdCancel{}, status: protocol.StatusMerged, wantErr: errPrecondition},
		{name: "pause a queued task: held", from: mk(protocol.StatusQueued, agentNone), in: cmdPause{}, status: protocol.StatusPaused},
		{name: "pause while starting: waits for the agent", from: mk(protocol.StatusStarting, agentStarting), in: cmdPause{}, status: protocol.StatusStarting, phase: agentStarting,
			check: func(t *testing.T, s state) {
				if s.stop.kind != stopPause {
					t.Errorf("stop %v", s.stop.kind)
				}
			}},
		{name: "pause a merged task: refused", from: mk(protocol.StatusMerged, agentNone), in: cmdPause{}, status: protocol.StatusMerged, wantErr: errPrecondition},
		{name: "resume a paused task", from: mk(protocol.StatusPaused, agentNone, withSession()), in: cmdResume{}, status: protocol.StatusQueued},
		{name: "continue a blocked task with a message", from: mk(protocol.StatusBlocked, agentNone, withSession(), withBlocked(protocol.BlockedTimeout)), in: cmdSend{text: "try again"},
			status: protocol.StatusQueued, check: func(t *testing.T, s state) {
				if s.FollowUp != "try again" || s.T.Blocked != nil {
					t.Errorf("followUp %q blocked %+v", s.FollowUp, s.T.Blocked)
				}
			}},
		{name: "resume a blocked task whose agent is still stopping: refused", from: mk(protocol.StatusBlocked, agentStopping, withBlocked(protocol.BlockedTimeout)), in: cmdResume{},
			status: protocol.StatusBlocked, wantErr: errPrecondition},
		{name: "resume a cancelled task: refused", from: mk(protocol.StatusCancelled, agentNone, withBlocked(protocol.BlockedCancelledByUser)), in: cmdResume{},
			status: protocol.StatusCancelled, wantErr: errPrecondition},
		{name: "send to a running agent types it", from: mk(running, agentUp), in: cmdSend{text: "also"}, status: running, effects: []string{"send prompt"}},
		{name: "send to finished work resumes it", from: mk(protocol.StatusMerging, agentNone, withSession()), in: cmdSend{text: "more"}, status: protocol.StatusQueued},
		{name: "send to a merged task: refused", from: mk(protocol.StatusMerged, agentNone), in: cmdSend{text: "x"}, status: protocol.StatusMerged, wantErr: errPrecondition},
		{name: "mode switch restarts a live agent", from: mk(running, agentUp, withSession()), in: cmdSetMode{mode: protocol.ModeArchitect, notice: "now architect"},
			status: running, phase: agentStopping, check: func(t *testing.T, s state) {
				if s.stop.kind != stopSwitch || s.FollowUp != "now architect" || s.T.Mode != protocol.ModeArchitect {
					t.Errorf("stop %v followUp %q mode %s", s.stop.kind, s.FollowUp, s.T.Mode)
				}
			}},
		{name: "shutdown stops a live agent as interrupted", from: mk(running, agentUp), in: cmdShutdown{}, status: running, phase: agentStopping,
			effects: []string{"stop agent"}},
		{name: "shutdown of a start in progress: stopped once up", from: mk(protocol.StatusStarting, agentStarting), in: cmdShutdown{}, status: protocol.StatusStarting, phase: agentStarting,
			check: func(t *testing.T, s state) {
				if s.stop.kind != stopShutdown {
					t.Errorf("stop %v", s.stop.kind)
				}
			}},
		{name: "kill skips the grace", from: mk(running, agentUp), in: cmdKill{}, status: running, phase: agentStopping, effects: []string{"stop agent now"}},

		// Single-flight git operations.
		{name: "merge claimed", from: mk(protocol.StatusMerging, agentNone), in: cmdBeginOp{op: opMerge}, status: protocol.StatusMerging,
			check: func(t *testing.T, s state) {
				if s.op != opMerge {
					t.Errorf("op %q", s.op)
				}
			}},
		{name: "second merge refused", from: mk(protocol.StatusMerging, agentNone, withOp(opMerge)), in: cmdBeginOp{op: opMerge}, status: protocol.StatusMerging, wantErr: errPrecondition},
		{name: "undo during a merge refused", from: mk(protocol.StatusMerging, agentNone, withOp(opMerge)), in: cmdBeginOp{op: opUndo}, status: protocol.StatusMerging, wantErr: errPrecondition},
		{name: "merge of a running task refused", from: mk(running, agentUp), in: cmdBeginOp{op: opMerge}, status: running, wantErr: errPrecondition},
		{name: "merge while the agent is going away refused", from: mk(protocol.StatusMerging, agentStopping), in: cmdBeginOp{op: opMerge}, status: protocol.StatusMerging, wantErr: errPrecondition},
		{name: "merge done: merged", from: mk(protocol.StatusMerging, agentNone, withOp(opMerge)), in: cmdEndOp{op: opMerge, ok: true, merge: &mergeRecord{}},
			status: protocol.StatusMerged, check: func(t *testing.T, s state) {
				if s.op != opNone || s.Merge == nil {
					t.Errorf("op %q merge %v", s.op, s.Merge)
				}
			}},
		{name: "merge failed: still merging, claim released", from: mk(protocol.StatusMerging, agentNone, withOp(opMerge)), in: cmdEndOp{op: opMerge},
			status: protocol.StatusMerging, effects: []string{}},
		{name: "undo of a merge: merging again", from: mk(protocol.StatusMerged, agentNone, withOp(opUndo)), in: cmdEndOp{op: opUndo, ok: true, undone: true},
			status: protocol.StatusMerging},

		// Start-up.
		{name: "a live task read back is interrupted", from: mk(running, agentUp), in: inLoaded{}, status: protocol.StatusBlocked, gone: true,
			check: func(t *testing.T, s state) {
				if s.T.Blocked.Reason != protocol.BlockedInterrupted {
					t.Errorf("blocked %+v", s.T.Blocked)
				}
			}},
		{name: "a running task read back continues by itself", from: mk(running, agentUp, withSession()), in: inLoaded{}, status: protocol.StatusBlocked,
			check: func(t *testing.T, s state) {
				if !s.resumeOnLoad {
					t.Error("not marked to resume")
				}
			}},
		{name: "a task waiting on a person read back waits for them", from: mk(protocol.StatusWaiting, agentUp, withSession(), withQuestion(protocol.QuestionPermission)),
			in: inLoaded{}, status: protocol.StatusBlocked,
			check: func(t *testing.T, s state) {
				if s.resumeOnLoad || !strings.Contains(s.T.Blocked.Detail, "waited for an answer") {
					t.Errorf("resumeOnLoad %v, blocked %+v", s.resumeOnLoad, s.T.Blocked)
				}
			}},
		{name: "a finished task read back stays", from: mk(protocol.StatusMerging, agentNone), in: inLoaded{}, status: protocol.StatusMerging, effects: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, effs, err := step(tc.from, tc.in, testEnv)
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if !reflect.DeepEqual(next, tc.from) || len(effs) != 0 {
					t.Fatalf("a refused input changed the state or ran effects: %v", names(effs))
				}
			case err != nil:
				t.Fatalf("err = %v", err)
			}
			if next.T.Status != tc.status {
				t.Errorf("status %s, want %s", next.T.Status, tc.status)
			}
			if tc.phase != agentNone && next.agent != tc.phase {
				t.Errorf("agent phase %d, want %d", next.agent, tc.phase)
			}
			if tc.gone && next.agent != agentNone {
				t.Errorf("agent phase %d, want none", next.agent)
			}
			if tc.effects != nil {
				got := names(effs)
				if got == nil {
					got = []string{}
				}
				if !reflect.DeepEqual(got, tc.effects) {
					t.Errorf("effects %q, want %q", got, tc.effects)
				}
			}
			if tc.check != nil {
				tc.check(t, next)
			}
			// Every status change is audited.
			if next.T.Status != tc.from.T.Status {
				audited := false
				for _, e := range effs {
					if a, ok := e.(effAudit); ok && a.action == "task.status" {
						audited = true
					}
				}
				if !audited {
					t.Error("status changed without an audit entry")
				}
			}
		})
	}
}

var (
	errPrecondition = &protocol.Error{Code: protocol.CodeFailedPrecondition}
	errNotFound     = &protocol.Error{Code: protocol.CodeNotFound}
)

// completedOf returns the task/completed notifications among effs.
func completedOf(effs []effect) []protocol.TaskCompletedNotification {
	var out []protocol.TaskCompletedNotification
	for _, e := range effs {
		if p, ok := e.(effPublish); ok {
			if n, ok := p.n.(protocol.TaskCompletedNotification); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// Issue 22: every end of a task is announced with task/completed, saying
// what a person can do; the person's own cancel is not (they know).
func TestEndsAreAnnounced(t *testing.T) {
	resets := testEnv.now.Add(2*time.Hour + 5*time.Minute)
	tests := []struct {
		name   string
		from   state
		in     input
		env    func(*env)
		none   bool // no task/completed
		status protocol.Status
		reason protocol.BlockedReason
		detail []string // each in the detail
		check  func(t *testing.T, n protocol.TaskCompletedNotification)
	}{
		{name: "success: merging, with the result", from: mk(protocol.StatusRunning, agentUp, completing()),
			in: inCompleted{result: protocol.TaskResult{Summary: "done", NoChanges: true}}, status: protocol.StatusMerging,
			check: func(t *testing.T, n protocol.TaskCompletedNotification) {
				if !n.Result.Success || n.Result.Summary != "done" || !n.Result.NoChanges || n.Detail != "" {
					t.Errorf("%+v", n)
				}
			}},
		{name: "API error: the status and message", from: mk(protocol.StatusRunning, agentUp),
			in:     inTurnEnded{turn: agent.TurnEnded{Failed: true, Failure: &agent.Failure{Kind: agent.FailureAPI, Status: 400, Message: "API Error: 400 prompt too long"}}},
			status: protocol.StatusBlocked, reason: protocol.BlockedAPIError, detail: []string{"HTTP 400", "prompt too long"}},
		{name: "no login: the fix", from: mk(protocol.StatusStarting, agentStarting),
			in:     inStartFailed{detail: "claude is not logged in (no ANTHROPIC_API_KEY)", auth: true},
			status: protocol.StatusBlocked, reason: protocol.BlockedAuth, detail: []string{"claude auth login", "ANTHROPIC_API_KEY"}},
		{name: "a refused login: the fix once", from: mk(protocol.StatusRunning, agentUp),
			in:     inTurnEnded{turn: agent.TurnEnded{Failed: true, Failure: &agent.Failure{Kind: agent.FailureAuth, Status: 401, Message: "Invalid API key"}}},
			status: protocol.StatusBlocked, reason: protocol.BlockedAuth, detail: []string{"Invalid API key", agent.AuthFix},
			check: func(t *testing.T, n protocol.TaskCompletedNotification) {
				if strings.Count(n.Detail, agent.AuthFix) != 1 {
					t.Errorf("detail %q", n.Detail)
				}
			}},
		{name: "usage limit: the reset in words and as resetsAt", from: mk(protocol.StatusRunning, agentUp),
			in:     inTurnEnded{turn: agent.TurnEnded{Failed: true, Failure: &agent.Failure{Kind: agent.FailureUsageLimit, Status: 429, Message: "You've hit your limit", ResetsAt: resets}}},
			env:    func(e *env) { e.resumeAfterUsageLimit = true },
			status: protocol.StatusBlocked, reason: protocol.BlockedUsageLimit, detail: []string{"14:05 UTC on Nov 23", "in 2 h 5 min", "continues the task by itself"},
			check: func(t *testing.T, n protocol.TaskCompletedNotification) {
				if !n.ResetsAt.Equal(resets) {
					t.Errorf("resetsAt %v", n.ResetsAt)
				}
			}},
		{name: "budget", from: mk(protocol.StatusWaiting, agentUp, withQuestion(protocol.QuestionQuestion), withBudget(1)),
			in:     inTurnEnded{turn: agent.TurnEnded{CostUSD: 1.25, Asks: "q1"}},
			status: protocol.StatusBlocked, reason: protocol.BlockedBudget, detail: []string{"$1.25 of its $1.00", "maxBudgetUsd"},
			check: func(t *testing.T, n protocol.TaskCompletedNotification) {
				if n.Result.Success || n.Result.CostUSD == nil || *n.Result.CostUSD != 1.25 {
					t.Errorf("result %+v", n.Result)
				}
			}},
		{name: "no progress: blocked{timeout} when the agent is gone", from: mk(protocol.StatusRunning, agentStopping, func(s *state) {
			s.stop = stopIntent{kind: stopBlock, reason: protocol.BlockedTimeout, detail: "no progress for the no-progress timeout"}
		}), in: inExited{signal: "SIGTERM"}, status: protocol.StatusBlocked, reason: protocol.BlockedTimeout, detail: []string{"No progress"}},
		{name: "an unexpected exit", from: mk(protocol.StatusRunning, agentUp), in: inExited{code: 3},
			status: protocol.StatusBlocked, reason: protocol.BlockedAgentExited, detail: []string{"code 3"}},
		{name: "shutdown: interrupted, resumable", from: mk(protocol.StatusRunning, agentStopping, withStop(stopShutdown)), in: inExited{},
			status: protocol.StatusBlocked, reason: protocol.BlockedInterrupted, detail: []string{"Continue"}},
		{name: "read back after a crash, waiting on a person: announced", from: mk(protocol.StatusWaiting, agentUp, withSession(), withQuestion(protocol.QuestionPermission)),
			in: inLoaded{}, status: protocol.StatusBlocked, reason: protocol.BlockedInterrupted},
		{name: "read back after a crash and continued by familiar: not announced", from: mk(protocol.StatusRunning, agentUp, withSession()),
			in: inLoaded{}, none: true},
		{name: "familiar's cancel of a queued task", from: mk(protocol.StatusQueued, agentNone), in: cmdCancel{detail: "familiar run stopped"},
			status: protocol.StatusCancelled, reason: protocol.BlockedCancelled, detail: []string{"familiar run stopped"}},
		{name: "familiar's cancel of a running task, once its agent is gone", from: mk(protocol.StatusRunning, agentStopping, func(s *state) {
			s.stop = stopIntent{kind: stopCancel, detail: "familiar run stopped"}
		}), in: inExited{}, status: protocol.StatusCancelled, reason: protocol.BlockedCancelled},
		{name: "the person's cancel: not announced", from: mk(protocol.StatusQueued, agentNone), in: cmdCancel{}, none: true},
		{name: "the person's cancel of a running task: not announced", from: mk(protocol.StatusRunning, agentStopping, withStop(stopCancel)), in: inExited{}, none: true},
		{name: "a retry is no end", from: mk(protocol.StatusRunning, agentStopping, withStop(stopRetry)), in: inExited{}, none: true},
		{name: "a pause is no end", from: mk(protocol.StatusRunning, agentStopping, withStop(stopPause)), in: inExited{}, none: true},
		{name: "an undone merge is no end", from: mk(protocol.StatusMerged, agentNone, withOp(opUndo)), in: cmdEndOp{op: opUndo, ok: true, undone: true}, none: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := testEnv
			if tc.env != nil {
				tc.env(&e)
			}
			next, effs, err := step(tc.from, tc.in, e)
			if err != nil {
				t.Fatal(err)
			}
			got := completedOf(effs)
			if tc.none {
				if len(got) != 0 {
					t.Fatalf("announced %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d task/completed (status %s): %v", len(got), next.T.Status, names(effs))
			}
			n := got[0]
			if n.ID != "t1" || n.Status != tc.status || next.T.Status != tc.status || n.Reason != tc.reason {
				t.Errorf("id %q status %s (task %s) reason %q, want %s %q", n.ID, n.Status, next.T.Status, n.Reason, tc.status, tc.reason)
			}
			if tc.status != protocol.StatusMerging && (n.Result.Success || n.Detail == "") {
				t.Errorf("a failed end: success %v detail %q", n.Result.Success, n.Detail)
			}
			for _, want := range tc.detail {
				if !strings.Contains(n.Detail, want) {
					t.Errorf("detail %q lacks %q", n.Detail, want)
				}
			}
			if tc.check != nil {
				tc.check(t, n)
			}
		})
	}
}

// Issue 22: while a merge, undo or remove runs, nothing starts claude in
// the task's worktree.
func TestGitOperationsOwnTheTask(t *testing.T) {
	blocked := func(r protocol.BlockedReason) state {
		return mk(protocol.StatusBlocked, agentNone, withSession(), withBlocked(r))
	}
	for _, op := range []opKind{opMerge, opUndo, opRemove} {
		from := blocked(protocol.BlockedTimeout)
		if op == opMerge {
			from = mk(protocol.StatusMerging, agentNone, withSession())
		}
		from.op = op
		for _, in := range []input{cmdResume{}, cmdSend{text: "more"}} {
			_, _, err := step(from, in, testEnv)
			if !errors.Is(err, errPrecondition) || !strings.Contains(err.Error(), string(op)+" of this task is in progress") {
				t.Errorf("%s during a %s: %v", kindName(in), op, err)
			}
		}
	}
	// The scheduler cannot start a task an operation owns.
	q := mk(protocol.StatusQueued, agentNone, withOp(opUndo))
	if _, _, err := step(q, inStart{}, testEnv); !errors.Is(err, errPrecondition) {
		t.Errorf("start during an undo: %v", err)
	}
	// A queued task is not removed: it would start in the removed worktree.
	if _, _, err := step(mk(protocol.StatusQueued, agentNone), cmdBeginOp{op: opRemove}, testEnv); !errors.Is(err, errPrecondition) || !strings.Contains(err.Error(), "cancel it first") {
		t.Errorf("remove of a queued task: %v", err)
	}
	// The usage limit's reset during an undo: kept, then the task continues.
	s := blocked(protocol.BlockedUsageLimit)
	s.op = opUndo
	s, effs, err := step(s, cmdResume{auto: true}, testEnv)
	if err != nil || s.T.Status != protocol.StatusBlocked || !s.resumeAfterOp || len(effs) != 0 {
		t.Fatalf("auto-resume during an undo: err %v status %s kept %v effects %v", err, s.T.Status, s.resumeAfterOp, names(effs))
	}
	s, _, err = step(s, cmdEndOp{op: opUndo, ok: true}, testEnv)
	if err != nil || s.T.Status != protocol.StatusQueued || s.resumeAfterOp || s.op != opNone {
		t.Fatalf("after the undo: err %v status %s kept %v op %q", err, s.T.Status, s.resumeAfterOp, s.op)
	}
	// … but not once its worktree is removed.
	s = blocked(protocol.BlockedUsageLimit)
	s.op, s.resumeAfterOp = opRemove, true
	s, _, err = step(s, cmdEndOp{op: opRemove, ok: true}, testEnv)
	if err != nil || s.T.Status != protocol.StatusBlocked || s.resumeAfterOp || s.T.Worktree != nil {
		t.Fatalf("after the remove: err %v status %s kept %v", err, s.T.Status, s.resumeAfterOp)
	}
	// A follow-up waits for a finished agent to be gone.
	if _, _, err := step(mk(protocol.StatusMerging, agentStopping, withStop(stopRelease)), cmdSend{text: "x"}, testEnv); !errors.Is(err, errPrecondition) {
		t.Errorf("send while the finished agent stops: %v", err)
	}
}

// Issue 22: familiar's own retry of a start continues the task's time; a
// start the person asked for begins it.
func TestRetriedStartKeepsTheTaskTime(t *testing.T) {
	first := testEnv.now.Add(-time.Hour)
	s := mk(protocol.StatusRunning, agentStopping, withStop(stopRetry), func(s *state) { s.T.StartedAt = first })
	later := testEnv
	for _, in := range []input{inExited{}, inBackoffDone{}, inStart{}} {
		later.now = later.now.Add(time.Minute)
		var err error
		if s, _, err = step(s, in, later); err != nil {
			t.Fatalf("%s: %v", kindName(in), err)
		}
	}
	if s.T.Status != protocol.StatusStarting || !s.T.StartedAt.Equal(first) {
		t.Fatalf("status %s startedAt %v, want starting since %v", s.T.Status, s.T.StartedAt, first)
	}
	// A resume by the person is a new run.
	p := mk(protocol.StatusPaused, agentNone, withSession(), func(s *state) { s.T.StartedAt = first })
	p, _, _ = step(p, cmdResume{}, later)
	p, _, _ = step(p, inStart{}, later)
	if !p.T.StartedAt.Equal(later.now.UTC()) {
		t.Errorf("resumed: startedAt %v, want %v", p.T.StartedAt, later.now)
	}
}

// TestTransientStartIsTyped: a start is retried when agent.Start says its
// spawn failed, whatever the text; a start called off, a worktree that
// could not be made, or an error that only reads like a spawn is not.
func TestTransientStartIsTyped(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&agent.StartError{Transient: true, Err: errors.New("fork/exec: resource temporarily unavailable")}, true},
		{fmt.Errorf("task x: %w", &agent.StartError{Transient: true, Err: errors.New("exec: no such file")}), true},
		{&agent.StartError{Err: context.Canceled}, false},
		{fmt.Errorf("%w: disk full", errWorktree), false},
		{errors.New("start claude: exec: no such file"), false},
	} {
		if got := isTransientStart(c.err); got != c.want {
			t.Errorf("isTransientStart(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestKindName(t *testing.T) {
	for v, want := range map[any]string{
		inStart{}: "start", inAPIRetry{}: "api retry", cmdSetMode{}: "set mode", effStopAgent{}: "stop agent",
		inStartFailed{}: "start failed", effSlotFreed{}: "slot freed",
	} {
		if got := kindName(v); got != want {
			t.Errorf("kindName(%T) = %q, want %q", v, got, want)
		}
	}
}

// A tool call the exiting agent left pending (a Bash waiting on its
// permission when a mode switch restarted claude) or running is closed as
// failed and published again: the next agent's transcript never mentions
// it. Calls already over are left as they are, and a second exit finds
// nothing open.
func TestExitClosesOpenToolCalls(t *testing.T) {
	at := testEnv.now.Add(-30 * time.Second)
	withSteps := func(s *state) {
		s.steps = []protocol.ToolCall{
			{ID: "done", Name: "Read", Status: "completed", Result: "file", StartedAt: at},
			{ID: "asks", Name: "Bash", Status: "pending", Input: []byte(`{"command":"rm -rf build"}`), StartedAt: at},
			{ID: "runs", Name: "Bash", Status: "running", StartedAt: at},
			{ID: "denied", Name: "Write", Status: "failed", Result: "denied", StartedAt: at},
		}
	}
	s, effs, err := step(mk(protocol.StatusRunning, agentStopping, withStop(stopSwitch), withSteps), inExited{}, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	var closed []string
	for _, e := range effs {
		p, ok := e.(effPublish)
		if !ok {
			continue
		}
		n, ok := p.n.(protocol.TaskTranscriptNotification)
		if !ok {
			continue
		}
		tc := n.Entry.ToolCall
		if n.Entry.Kind != "tool_call" || tc == nil || tc.Status != "failed" || tc.Result != interruptedCall || tc.EndedAt == nil || !tc.EndedAt.Equal(testEnv.now) {
			t.Errorf("published %+v", n.Entry)
			continue
		}
		closed = append(closed, tc.ID)
	}
	if want := []string{"asks", "runs"}; !reflect.DeepEqual(closed, want) {
		t.Errorf("closed %v, want %v", closed, want)
	}
	want := map[string]string{"done": "completed", "asks": "failed", "runs": "failed", "denied": "failed"}
	for _, tc := range s.steps {
		if tc.Status != want[tc.ID] {
			t.Errorf("step %s is %s, want %s", tc.ID, tc.Status, want[tc.ID])
		}
	}
	if s.steps[3].Result != "denied" || s.steps[1].Input == nil {
		t.Errorf("a closed call lost what it had: %+v", s.steps)
	}
	if len(openCalls(s.steps)) != 0 {
		t.Errorf("still open: %+v", openCalls(s.steps))
	}
	// The restarted agent's exit closes nothing more.
	s.agent, s.stop = agentStopping, stopIntent{kind: stopSwitch}
	_, effs, _ = step(s, inExited{}, testEnv)
	for _, e := range effs {
		if p, ok := e.(effPublish); ok {
			if _, ok := p.n.(protocol.TaskTranscriptNotification); ok {
				t.Errorf("second exit published %+v", p.n)
			}
		}
	}
}
