package orchestrator

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// TestWalkEveryReachableState walks step breadth-first from a new task over
// every input, in every state it can reach, and checks invariants on each
// state and each edge. Checking edges one at a time (a status × an input)
// cannot see what a sequence does — a merge in progress meeting a resume,
// a send, the scheduler and the usage limit's reset — so the walk does.
//
// A state is identified by what the transitions read (status, agent phase,
// stop intent, operation, question, …), not by counters and timestamps,
// which grow without changing what the task can do next: the first state
// found with a key stands for all.
func TestWalkEveryReachableState(t *testing.T) {
	inputs := walkInputs()
	type node struct {
		s    state
		path []string // inputs from the start, for a failure's message
	}
	edges := map[[2]protocol.Status]bool{}
	reached := map[protocol.Status]bool{protocol.StatusQueued: true}
	var steps, refused, states int
	scenarios := map[string]int{}
	// Walked twice: finished agents let go at once, and kept warm for a
	// follow-up (warmAgentSec), each with its own edges.
	for _, warm := range []time.Duration{0, time.Minute} {
		e := testEnv
		e.maxBudgetUSD = 1
		e.warmFor = warm
		startState := state{}
		startState.T = protocol.Task{ID: "t1", Title: "task", Status: protocol.StatusQueued, Activity: protocol.ActivityIdle, Mode: protocol.ModeExecutor}
		seen := map[walkKey]bool{key(startState): true}
		queue := []node{{s: startState}}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			checkState(t, n.s, n.path)
			for _, in := range inputs {
				steps++
				next, effs, err := step(n.s, in, e)
				path := append(slices.Clip(n.path), kindName(in))
				where := fmt.Sprintf("%s after %s", describe(n.s), strings.Join(path, " → "))
				if err != nil {
					refused++
				}
				checkEdge(t, n.s, in, next, effs, err, where, scenarios)
				if err != nil {
					continue
				}
				if from, to := n.s.T.Status, next.T.Status; from != to {
					edges[[2]protocol.Status{from, to}] = true
					reached[to] = true
				}
				if k := key(next); !seen[k] {
					seen[k] = true
					queue = append(queue, node{s: next, path: path})
				}
			}
			if t.Failed() {
				t.FailNow() // one broken invariant repeats in thousands of states
			}
		}
		states += len(seen)
	}
	// Every edge of the table is taken by some input in some state: an
	// edge nothing takes is either dead or a transition the walk misses.
	for from, tos := range transitions {
		for _, to := range tos {
			if !edges[[2]protocol.Status{from, to}] {
				t.Errorf("the edge %s → %s of the table is never taken", from, to)
			}
		}
	}
	// Every status of the protocol is in the graph and reached: a status
	// added to protocol.Statuses alone fails here, not at run time.
	for _, s := range protocol.Statuses {
		if _, ok := transitions[s]; !ok {
			t.Errorf("the status %s has no row in transitions (machine.go): say where a task may go from it", s)
		}
		if !reached[s] {
			t.Errorf("the status %s is never reached: give it edges in transitions (machine.go) and the inputs that take them (input_*.go)", s)
		}
	}
	for _, want := range []string{"resume during a merge", "send during a merge", "start during a merge", "usage-limit reset during a merge",
		"usage-limit reset during an undo", "usage-limit reset during a remove", "remove of a queued task", "resume during an undo", "send during a remove"} {
		if scenarios[want] == 0 {
			t.Errorf("the walk never met: %s", want)
		}
	}
	if scenarios["follow-up to a warm agent"] == 0 {
		t.Errorf("the walk never sent a follow-up to a warm agent")
	}
	t.Logf("%d states, %d steps (%d refused), %d of the table's edges taken; scenarios %v", states, steps, refused, len(edges), scenarios)
}

// walkKey is what makes two states behave differently for the invariants:
// counters (turns, start failures), texts, the mode and the money spent are
// left out, or the walk would count them up (95,000 states that differ
// only there, 26 s).
type walkKey struct {
	status                                                 protocol.Status
	agent                                                  agentPhase
	stop                                                   stopKind
	stopReason                                             protocol.BlockedReason
	op                                                     opKind
	completing, resumeOnLoad, requeued, resumeLater, retry bool
	interrupting, answering, followUp                      bool
	question                                               protocol.QuestionKind
	blocked                                                protocol.BlockedReason
	session, result, noChanges, overBudget                 bool
	forecast, warm                                         bool
}

func key(s state) walkKey {
	k := walkKey{status: s.T.Status, agent: s.agent, stop: s.stop.kind, stopReason: s.stop.reason,
		op: s.op, completing: s.completing, resumeOnLoad: s.resumeOnLoad, requeued: s.requeued, resumeLater: s.resumeAfterOp,
		retry: s.StartFailures > 0, interrupting: s.interrupting, answering: s.answer.questionID != "", followUp: s.FollowUp != "",
		session: s.T.Agent != nil && s.T.Agent.SessionID != "", result: s.T.Result != nil,
		forecast: len(s.T.Conflicts)+len(s.T.Overlaps) > 0, warm: s.warm}
	if q := s.T.PendingQuestion; q != nil {
		k.question = q.Kind
	}
	if b := s.T.Blocked; b != nil {
		k.blocked = b.Reason
	}
	if r := s.T.Result; r != nil {
		k.noChanges = r.NoChanges
	}
	st := stepper{s: s, e: testEnv}
	st.e.maxBudgetUSD = 1
	k.overBudget = st.overBudget()
	return k
}

func describe(s state) string {
	return fmt.Sprintf("[%s agent %d stop %d op %q]", s.T.Status, s.agent, s.stop.kind, s.op)
}

// walkInputs is one of every input, with the variants that take different
// paths.
func walkInputs() []input {
	turn := func(f *agent.Failure) inTurnEnded {
		return inTurnEnded{turn: agent.TurnEnded{Failed: true, Error: "failed", Failure: f}}
	}
	return []input{
		inStart{}, inStarted{agent: protocol.AgentInfo{PID: 7, SessionID: "sess"}},
		inStartFailed{detail: "start claude: boom", transient: true}, inStartFailed{detail: "create worktree: bad"},
		inStartFailed{detail: "not logged in", auth: true}, inBackoffDone{},
		inActivity{activity: protocol.ActivityWriting},
		inQuestion{q: protocol.Question{ID: "q1", Kind: protocol.QuestionPermission}},
		inQuestion{q: protocol.Question{ID: "q1", Kind: protocol.QuestionQuestion, Text: "which?"}},
		inQuestion{q: protocol.Question{ID: "q1", Kind: protocol.QuestionDialog}},
		inQuestion{q: protocol.Question{ID: "q2", Kind: agent.KindPermission}, decided: &decision{option: agent.OptionAllow, tool: "Bash"}},
		inResolved{questionID: "q1", by: protocol.DecidedByAgent},
		cmdRespond{questionID: "q1", answer: agent.Answer{OptionID: "allow"}},
		inResolved{questionID: "q1", by: protocol.DecidedByUser, optionID: "allow", taken: true},
		inAnswerOutcome{questionID: "q1"}, inAnswerOutcome{questionID: "q1", err: agent.ErrNoQuestion},
		inApprovalTimer{questionID: "q1"},
		inTurnEnded{turn: agent.TurnEnded{LastMessage: "done"}}, inTurnEnded{turn: agent.TurnEnded{Asks: "q1"}},
		inTurnEnded{turn: agent.TurnEnded{BackgroundTasks: 1}},
		inTurnEnded{turn: agent.TurnEnded{Failed: true, Error: "API Error: 529 overloaded"}},
		turn(&agent.Failure{Kind: agent.FailureUsageLimit, Status: 429, Message: "limit", ResetsAt: testEnv.now.Add(time.Hour)}),
		turn(&agent.Failure{Kind: agent.FailureAuth, Status: 401, Message: "Not logged in"}),
		turn(&agent.Failure{Kind: agent.FailureAPI, Status: 400, Message: "bad request"}),
		turn(&agent.Failure{Kind: agent.FailureAPI, Status: 500, Message: "boom"}),
		turn(&agent.Failure{Kind: agent.FailureAPI, Status: 500, Message: "boom", Retries: 10}),
		inAPIRetry{retry: agent.APIRetry{Attempt: 2, Status: 401, Message: "401 invalid x-api-key"}},
		inAPIRetry{retry: agent.APIRetry{Attempt: 1, Status: 500, Message: "500 boom"}},
		inNoProgress{detail: agent.ProblemStopped + " (pid 1)"},
		inTranscript{entry: protocol.TranscriptEntry{Kind: "usage", Usage: &protocol.Usage{CostUSD: 0.6}}},
		inCompleted{result: protocol.TaskResult{Summary: "s", ChangedFiles: []protocol.ChangedFile{{Path: "a"}}}},
		inCompleted{result: protocol.TaskResult{Summary: "s", NoChanges: true}},
		inCompleted{blocked: "no access"},
		inNoProgress{}, inNoProgress{detail: "claude is stopped (SIGSTOP)"},
		inAPIRetry{retry: agent.APIRetry{Attempt: 2, MaxAttempts: 10, Status: 401, Message: "Invalid API key"}},
		inAPIRetry{retry: agent.APIRetry{Attempt: 1, MaxAttempts: 10, Status: 500, Message: "boom"}},
		inCommandTimeout{detail: "silent command"}, inAgentProblem{detail: "log lost", fatal: true},
		inExited{code: 1},
		cmdCancel{}, cmdCancel{detail: "familiar run stopped"}, cmdPause{}, cmdInterrupt{},
		cmdResume{}, cmdResume{auto: true}, cmdSend{text: "more"}, cmdSetMode{mode: protocol.ModeAuditor, notice: "auditor now"},
		cmdShutdown{}, cmdKill{}, cmdMarkDone{}, cmdRevoke{rule: "Read"},
		cmdBeginOp{op: opMerge}, cmdBeginOp{op: opUndo}, cmdBeginOp{op: opRemove},
		cmdEndOp{op: opMerge, ok: true, merge: &mergeRecord{}}, cmdEndOp{op: opMerge},
		cmdEndOp{op: opMerge, block: &protocol.Blocked{Reason: protocol.BlockedMerge, Detail: "failed twice"}},
		cmdEndOp{op: opUndo, ok: true, undone: true}, cmdEndOp{op: opUndo, ok: true, result: &protocol.TaskResult{}}, cmdEndOp{op: opUndo},
		cmdEndOp{op: opRemove, ok: true, removed: true}, cmdEndOp{op: opRemove},
		cmdRequeue{priority: 1, seq: 2}, inQueueMoved{}, inWorktree{worktree: protocol.Worktree{Path: "/wt", Branch: "b"}},
		inProcess{}, inLoaded{},
		inForecast{conflicts: []protocol.TaskConflict{{With: "base", Files: []string{"a"}}}}, inForecast{},
		inWarmOver{}, cmdCool{},
		cmdMergeIntent{intent: mergeIntent{Base: "main", Before: "a", After: "b"}},
		inMergeSettled{done: true, merge: &mergeRecord{}}, inMergeSettled{},
		inCompleted{unresolved: "its conflict with main is not resolved: a.txt (conflict markers at line 1)"},
		cmdArchive{at: testEnv.now}, cmdArchive{},
	}
}

// checkState checks what must hold in every reachable state.
func checkState(t *testing.T, s state, path []string) {
	t.Helper()
	where := describe(s) + " after " + strings.Join(path, " → ")
	status := s.T.Status
	if s.op != opNone && (s.agent != agentNone || status.Live() || status == protocol.StatusQueued) {
		t.Errorf("a %s in progress with an agent or a task that runs or will: %s", s.op, where)
	}
	switch status {
	case protocol.StatusMerged, protocol.StatusBlocked, protocol.StatusCancelled, protocol.StatusPaused, protocol.StatusMerging:
		if s.agent != agentNone && s.agent != agentStopping && !(status == protocol.StatusMerging && s.warm) {
			t.Errorf("%s with an agent that is not stopping: %s", status, where)
		}
	case protocol.StatusQueued:
		if s.agent != agentNone {
			t.Errorf("queued with an agent: %s", where)
		}
	}
	if s.warm && (status != protocol.StatusMerging || s.agent == agentNone) {
		t.Errorf("warm without a finished task's agent: %s", where)
	}
	if s.agent == agentUp && !status.Live() && !s.warm {
		t.Errorf("an agent up in a task that is not live: %s", where)
	}
	if (status == protocol.StatusWaiting) != (s.T.PendingQuestion != nil) {
		t.Errorf("waiting and a pending question disagree: %s", where)
	}
	if status == protocol.StatusBlocked && s.T.Blocked == nil || status == protocol.StatusCancelled && s.T.Blocked == nil {
		t.Errorf("%s without saying why: %s", status, where)
	}
	if len(s.T.Conflicts)+len(s.T.Overlaps) > 0 && !forecastable(status) {
		t.Errorf("a conflict forecast on a task that is neither live nor ready: %s", where)
	}
	if s.resumeAfterOp && s.op == opNone {
		t.Errorf("a resume kept for an operation that is not running: %s", where)
	}
}

// checkEdge checks one step: refusals, the table, audits, announced ends,
// and that nothing starts claude while an operation owns the task.
func checkEdge(t *testing.T, from state, in input, next state, effs []effect, err error, where string, scenarios map[string]int) {
	t.Helper()
	op := from.op
	name := kindName(in)
	if r, ok := in.(cmdResume); ok && r.auto {
		name = "usage-limit reset"
	}
	if op != opNone {
		during := name + " during " + map[opKind]string{opMerge: "a merge", opUndo: "an undo", opRemove: "a remove"}[op]
		switch name {
		case "resume", "send", "start":
			scenarios[during]++
			if !errors.Is(err, errPrecondition) || !strings.Contains(err.Error(), string(op)+" of this task is in progress") {
				t.Errorf("%s: %v, want -32003 naming the %s: %s", during, err, op, where)
			}
		case "usage-limit reset":
			// Nobody waits on its answer: kept for the operation's end.
			scenarios[during]++
			if err != nil || next.T.Status != from.T.Status || len(effs) != 0 || !next.resumeAfterOp {
				t.Errorf("%s: err %v status %s effects %v kept %v: %s", during, err, next.T.Status, names(effs), next.resumeAfterOp, where)
			}
		}
	}
	if _, ok := in.(cmdSend); ok && from.warm && from.agent == agentUp && err == nil {
		scenarios["follow-up to a warm agent"]++
		sent := false
		for _, e := range effs {
			if _, ok := e.(effSendPrompt); ok {
				sent = true
			}
			if _, ok := e.(effStartAgent); ok {
				t.Errorf("a follow-up to a warm agent started another claude: %s", where)
			}
		}
		if !sent || next.T.Status != protocol.StatusRunning || next.warm {
			t.Errorf("a follow-up to a warm agent: status %s, warm %v, effects %v: %s", next.T.Status, next.warm, names(effs), where)
		}
	}
	if b, ok := in.(cmdBeginOp); ok && b.op == opRemove && from.T.Status == protocol.StatusQueued {
		scenarios["remove of a queued task"]++
		if err == nil {
			t.Errorf("a queued task's worktree was claimed for removal: %s", where)
		}
	}
	if err != nil {
		var pe *protocol.Error
		if !errors.As(err, &pe) {
			t.Errorf("%s refused with a non-protocol error %v: %s", name, err, where)
		}
		return
	}
	for _, e := range effs {
		if _, ok := e.(effStartAgent); ok && (op != opNone || next.op != opNone) {
			t.Errorf("claude started while a %s owns the task: %s", op, where)
		}
		if _, ok := e.(effStartAgent); ok && (next.T.Status != protocol.StatusStarting || next.agent != agentStarting) {
			t.Errorf("claude started in %s (agent %d): %s", next.T.Status, next.agent, where)
		}
	}
	fromS, to := from.T.Status, next.T.Status
	if fromS != to {
		if !canTransition(fromS, to) {
			// step's move refuses an edge outside the table, so a chain
			// of moves must have left it.
			t.Errorf("%s --%s--> %s is not in the table: %s", fromS, name, to, where)
		}
		audited := false
		for _, e := range effs {
			if a, ok := e.(effAudit); ok && a.action == "task.status" {
				audited = true
			}
		}
		if !audited {
			t.Errorf("%s → %s not audited: %s", fromS, to, where)
		}
	}
	// Ends: announced once each, and nothing else is.
	ends := completedOf(effs)
	want := 0
	switch {
	case fromS == to:
	case to == protocol.StatusBlocked && !next.resumeOnLoad:
		want = 1
	case to == protocol.StatusCancelled && next.T.Blocked.Reason != protocol.BlockedCancelledByUser:
		want = 1
	case to == protocol.StatusMerging && fromS.Live():
		want = 1
	}
	if len(ends) != want {
		t.Errorf("%s → %s on %s: %d task/completed, want %d: %s", fromS, to, name, len(ends), want, where)
		return
	}
	for _, n := range ends {
		success := to == protocol.StatusMerging
		if n.Status != to || n.Result.Success != success || (!success && (n.Reason != next.T.Blocked.Reason || n.Detail == "")) {
			t.Errorf("task/completed %+v for %s → %s: %s", n, fromS, to, where)
		}
	}
}

// TestWalkCoversEveryInput: every type with an apply method (an input of
// the state machine) is in walkInputs, so a new input cannot be left out of
// the reachability walk (issue 38: cmdArchive was).
func TestWalkCoversEveryInput(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "apply" || len(fn.Recv.List) != 1 || !takesStepper(fn) {
				continue
			}
			typ := fn.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				declared[id.Name] = true
			}
		}
	}
	walked := map[string]bool{}
	for _, in := range walkInputs() {
		walked[reflect.TypeOf(in).Name()] = true
	}
	for name := range declared {
		if !walked[name] {
			t.Errorf("input %s has an apply method but is not in walkInputs: the walk never takes it", name)
		}
	}
	if len(declared) < 30 {
		t.Errorf("found only %d inputs: the scan is broken", len(declared))
	}
}

// takesStepper: fn is an input's apply(st *stepper) error, not the
// stepper's own dispatch.
func takesStepper(fn *ast.FuncDecl) bool {
	ps := fn.Type.Params.List
	if len(ps) != 1 {
		return false
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "stepper"
}
