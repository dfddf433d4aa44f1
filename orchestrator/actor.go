package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/mailbox"
	"github.com/familiar-dev/familiar/mergequeue"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// actor owns one task. Everything that changes the task — a client's
// command, an event of its agent, the result of a git effect — arrives in its
// mailbox and is handled one at a time by step (machine.go); the actor then
// runs the effects. No lock of the orchestrator is held while it does I/O.
//
// The mailbox runs a goroutine only while it has work, so 10,000 finished
// tasks in history cost no goroutines.
type actor struct {
	o          *Orchestrator
	id         string
	policy     *protocol.Policy     // the task's own; never changes
	directives *protocol.Directives // never changes

	snap atomic.Pointer[taskView] // the latest state, for readers

	box *mailbox.Mailbox[envelope] // inputs, handled one at a time

	// Owned by whichever goroutine drains the mailbox (one at a time).
	st       state
	sess     Session
	gen      int // agent starts; events of an earlier agent are ignored
	approval clock.Timer
	backoff  clock.Timer
	warm     clock.Timer // warmAgentSec after a finished turn → inWarmOver
	// told is the outcome of what this input's step told the live agent:
	// a prompt typed (effSendPrompt), an answer or an interrupt (effTell).
	told <-chan error
	// answering are the persons' answers given to the agent whose
	// task/respond waits (effTell, effAnswered), by question.
	answering map[string]chan<- error
	// saving waits for the last queued save of the task (nil: none).
	// Notifications published after it commit with it or later, so they
	// need not wait; a reply to a command does.
	saving func(context.Context) error
	// outputSize counts the bytes of this start's output log (a prepared
	// agent's own counter when the task took one: it counted from its start).
	outputSize *atomic.Int64

	// streamed masks the text block the agent is streaming (agent events).
	streamMu sync.Mutex
	streamed *streamedText // guarded by streamMu
}

// taskView is an immutable copy of a task for readers.
type taskView struct {
	T   protocol.Task
	Seq int64
	// sess is the live agent (for input, resize, screen): safe to use from
	// any goroutine; nil when none runs.
	sess       Session
	logs       []string
	lastErr    string
	op         opKind
	merge      *mergeRecord
	finishedAt time.Time
	agentPhase agentPhase
	warm       bool                // the agent stays after a finished turn (warmAgentSec)
	steps      []protocol.ToolCall // a copy of the tool calls so far (task/get)
}

// reply is what a command gets back.
type reply struct {
	err  error
	view *taskView
	// told: the step told the live agent something (effSendPrompt,
	// effTell); its outcome comes here (nil: nothing told).
	told <-chan error
}

type envelope struct {
	// early: reply as soon as the state has changed, before the effects
	// (the scheduler need not wait for a commit to count a slot).
	early bool
	in    input
	gen   int        // for agent inputs: the start they belong to (0 = any)
	reply chan reply // nil: nobody waits
	sess  Session    // with inStarted: the new session
}

func newActor(o *Orchestrator, p persisted) *actor {
	a := &actor{o: o, id: p.T.ID, policy: p.Policy, directives: p.Directives, outputSize: new(atomic.Int64), answering: map[string]chan<- error{}}
	a.box = mailbox.New(mailbox.Options[envelope]{Handle: a.drain})
	a.st.persisted = p
	a.publishView()
	return a
}

// view returns the latest state.
func (a *actor) view() *taskView { return a.snap.Load() }

// post queues an input; it never blocks (the agent's event goroutine posts
// too, and must not wait on git or the store). It reports false once the
// task takes no more input (familiar shut down).
func (a *actor) post(env envelope) bool { return a.box.Push(env) }

// callEarly is call, answered once the state has changed, before its
// effects run.
func (a *actor) callEarly(ctx context.Context, in input) (*taskView, error) {
	return a.send(ctx, in, true)
}

// call posts a command and waits for its result. It gives up when the
// orchestrator shuts down, so no request hangs on a task being stopped.
func (a *actor) call(ctx context.Context, in input) (*taskView, error) {
	return a.send(ctx, in, false)
}

func (a *actor) send(ctx context.Context, in input, early bool) (*taskView, error) {
	r := a.ask(ctx, in, early)
	return r.view, r.err
}

// ask posts a command and waits for the whole reply.
func (a *actor) ask(ctx context.Context, in input, early bool) reply {
	ch := make(chan reply, 1)
	if !a.post(envelope{in: in, reply: ch, early: early}) {
		return reply{err: protocol.Unavailable("familiar is shutting down")}
	}
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return reply{err: ctx.Err()}
	case <-a.o.closing:
		return reply{err: protocol.Unavailable("familiar is shutting down")}
	}
}

// drain handles inputs in order, on the mailbox's goroutine.
func (a *actor) drain(batch []envelope) {
	for _, env := range batch {
		err := a.handle(env)
		told := a.told
		a.told = nil
		if env.reply != nil && !(env.early && err == nil) {
			a.settleSave()
			env.reply <- reply{err: err, view: a.view(), told: told}
		}
	}
}

// settleSave waits until the task's last queued save is durable, so that
// a command's reply never runs ahead of the store.
func (a *actor) settleSave() {
	if a.saving != nil {
		_ = a.saving(context.Background())
		a.saving = nil
	}
}

// close refuses further input and waits for what is queued (familiar is
// shutting down and every agent has gone).
func (a *actor) close() { a.box.Close() }

// handle runs one input through the state machine and its effects.
func (a *actor) handle(env envelope) error {
	if env.gen != 0 && env.gen != a.gen {
		if env.sess != nil {
			// A start that was overtaken: its process must not outlive it.
			a.o.stopSession(env.sess, true)
		}
		return nil // an earlier agent of a task started again
	}
	next, effects, err := step(a.st, env.in, a.o.env())
	if err != nil {
		if env.sess != nil {
			a.o.stopSession(env.sess, true)
		}
		return err
	}
	// A start the step accepted keeps the session it brought; an agent's
	// end is the step's effAgentGone, which counts it out. The view
	// published before the effects run has no session once the step has
	// none.
	a.st = next
	if env.sess != nil {
		a.sess = env.sess
	}
	if a.st.agent == agentNone {
		a.sess = nil
	}
	// Readers (the scheduler woken by an effect among them) see the new
	// state before any effect runs.
	a.publishView()
	if env.early && env.reply != nil {
		env.reply <- reply{view: a.view()}
	}
	for _, eff := range effects {
		eff.run(a)
	}
	a.publishView()
	return nil
}

func (a *actor) publishView() {
	s := &a.st
	v := &taskView{T: s.T, Seq: s.Seq, sess: a.sess, logs: append([]string(nil), s.Logs...), lastErr: s.LastError,
		op: s.op, merge: s.Merge, agentPhase: s.agent, warm: s.warm, steps: append([]protocol.ToolCall(nil), s.steps...)}
	if q := s.T.PendingQuestion; q != nil {
		c := *q
		v.T.PendingQuestion = &c
	}
	a.snap.Store(v)
}

func (a *actor) disarmWarm() {
	if a.warm != nil {
		a.warm.Stop()
		a.warm = nil
	}
}

func (a *actor) disarm() {
	if a.approval != nil {
		a.approval.Stop()
		a.approval = nil
	}
}

// startAgent makes the worktree if needed, builds the agent's options and
// starts claude, in the background; the outcome comes back as inStarted or
// inStartFailed.
func (a *actor) startAgent(eff effStartAgent) {
	o := a.o
	o.agents.Add(1)
	a.gen++
	gen := a.gen
	size := new(atomic.Int64)
	if pa := o.preparedFor(a.id); pa != nil {
		size = &pa.size
	}
	a.outputSize = size
	p := eff.task
	others := o.liveTitles(a.id)
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		sess, info, err := o.startAgent(gen, &p, eff.logPath, others, a, size)
		if err != nil {
			var ae *authError
			if errors.As(err, &ae) {
				a.post(envelope{in: inStartFailed{detail: ae.problem, auth: true}, gen: gen})
				return
			}
			a.post(envelope{in: inStartFailed{detail: err.Error(), transient: err != nil && isTransientStart(err)}, gen: gen})
			return
		}
		if !a.post(envelope{in: inStarted{agent: info}, gen: gen, sess: sess}) {
			o.stopSession(sess, true)
		}
	}()
}

// errWorktree marks a failed worktree creation (not transient).
var errWorktree = errors.New("create worktree")

// isTransientStart reports whether a failed start is worth retrying: the
// spawn itself failed (agent.StartError says so), not the task's setup.
func isTransientStart(err error) bool {
	var se *agent.StartError
	return errors.As(err, &se) && se.Transient
}

// complete does the git work of a finished turn: leftovers committed, the
// changed files and commits listed, the summary taken from the last message.
func (a *actor) complete(turn agent.TurnEnded) {
	o := a.o
	wt, _ := o.worktreeOf(&a.st.persisted)
	title := a.st.T.Title
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		ctx := o.ctx
		summary, blocked := summarize(turn.LastMessage)
		var result protocol.TaskResult
		var errs []string
		var unresolved string
		var ue *worktree.UnresolvedError
		if _, _, err := o.cfg.Repo.Checkpoint(ctx, wt, mergequeue.CheckpointMessage(title, summary, a.id)); errors.As(err, &ue) {
			// Never a success and never a commit: the person (or the
			// merge queue's next hand-back) sees where it is left.
			base := wt.BaseRef
			if base == "" {
				base = "the base"
			}
			unresolved = fmt.Sprintf("its conflict with %s is not resolved: %s; nothing of this turn was committed", base, ue.Words())
			o.audit(a.id, "task.unresolvedConflict", "familiar", map[string]any{"files": ue.Paths()})
		} else if err != nil {
			errs = append(errs, "commit leftovers: "+err.Error())
		}
		files, commits, err := o.changes(ctx, wt)
		if err != nil {
			errs = append(errs, err.Error())
		}
		result.ChangedFiles, result.Commits = files, commits
		// Said now, not only when a merge is refused: the person decides
		// what to do with them before asking for the merge.
		var inSub []string
		for _, f := range files {
			if f.Submodule != "" {
				inSub = append(inSub, f.Path)
			}
		}
		if len(inSub) > 0 {
			o.pub.publish(a.id, protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: fmt.Sprintf(
				"task %s changed files inside a submodule (%s); familiar will not merge the task while it has them: a submodule is a repository of its own, so take them there yourself",
				title, strings.Join(inSub, ", "))})
		}
		// Nothing beyond the base, nothing left uncommitted: nothing to
		// merge (a task that only answered a question, or found nothing to
		// do). A client offers no merge for it.
		result.NoChanges = len(errs) == 0 && wt.Path != "" && len(files) == 0 && len(commits) == 0
		if cut, ref := o.clipText(a.id, summary); len(cut) < len(summary) {
			result.Truncated, result.OriginalSize, result.SummaryRef = true, len(summary), ref
			summary = cut
		}
		result.Summary = o.maskString(summary)
		a.post(envelope{in: inCompleted{result: result, blocked: o.maskString(blocked), errs: o.maskString(strings.Join(errs, "; ")), unresolved: o.maskString(unresolved)}})
	}()
}

// changes lists a worktree's changed files and commits against its base.
func (o *Orchestrator) changes(ctx context.Context, wt worktree.Worktree) ([]protocol.ChangedFile, []protocol.Commit, error) {
	files, err1 := o.cfg.Repo.ChangedFiles(ctx, wt)
	commits, err2 := o.cfg.Repo.Commits(ctx, wt)
	if err1 != nil {
		err1 = fmt.Errorf("changed files: %w", err1)
	}
	if err2 != nil {
		err2 = fmt.Errorf("commits: %w", err2)
	}
	var cf []protocol.ChangedFile
	for _, f := range files {
		cf = append(cf, protocol.ChangedFile{Path: f.Path, Status: protocol.FileStatus(f.Status), OldPath: f.OldPath, Submodule: f.Submodule})
	}
	var cs []protocol.Commit
	for _, c := range commits {
		cs = append(cs, protocol.Commit{SHA: c.SHA, Subject: c.Subject})
	}
	return cf, cs, errors.Join(err1, err2)
}

// onAgentEvent turns what an agent did into an input of its task. It runs
// on the agent's event goroutine and never blocks on the task.
func (a *actor) onAgentEvent(gen int, ev agent.Event) {
	o := a.o
	var in input
	switch ev.Kind {
	case agent.EventOutput:
		// Output changes no state: the agent's log filter
		// (terminalOutput) masks it and sends it to the log and the
		// clients, and the agent does not send it as events.
		return
	case agent.EventHook:
		var ref string
		if len(ev.Hook.Payload) > maxText {
			_, ref = o.clipText(a.id, string(ev.Hook.Payload))
		}
		payload, cut := clipJSON(ev.Hook.Payload)
		o.pub.publish(a.id, protocol.TaskHookNotification{ID: a.id, Name: ev.Hook.Name, Payload: o.mask(payload), Truncated: cut, PayloadRef: ref})
		return
	case agent.EventActivity:
		if tool := ev.Activity.Tool; tool != "" {
			o.countTool(tool)
		}
		detail, _ := clip(ev.Activity.Detail)
		if len(detail) > maxActivityDetail {
			detail = detail[:maxActivityDetail] + "…"
		}
		in = inActivity{activity: ev.Activity.State, detail: o.maskString(detail)}
	case agent.EventQuestion:
		in = a.question(ev.Question)
	case agent.EventQuestionResolved:
		by := protocol.DecidedByAgent
		switch ev.Resolved.By {
		case "user", "terminal":
			by = protocol.DecidedByUser
		}
		in = inResolved{questionID: ev.Resolved.QuestionID, by: by, optionID: ev.Resolved.OptionID, taken: ev.Resolved.By == "user"}
	case agent.EventTurnEnded:
		// What claude said about a failure becomes a blocked detail:
		// masked like everything familiar stores or sends.
		turn := *ev.Turn
		turn.Error = o.maskString(turn.Error)
		if f := turn.Failure; f != nil {
			c := *f
			c.Message = o.maskString(c.Message)
			turn.Failure = &c
		}
		in = inTurnEnded{turn: turn}
	case agent.EventTranscript:
		for _, e := range a.transcript(gen, ev.Transcript) {
			a.post(envelope{in: inTranscript{entry: e}, gen: gen})
		}
		return
	case agent.EventProblem:
		o.logger.Warn("agent problem", "task", a.id, "problem", ev.Problem)
		if ev.Problem == agent.ProblemNoProgress {
			in = inNoProgress{}
		} else if strings.HasPrefix(ev.Problem, agent.ProblemStopped) {
			in = inNoProgress{detail: ev.Problem}
		} else if strings.HasPrefix(ev.Problem, agent.ProblemCommandTimeout) {
			in = inCommandTimeout{detail: o.maskString(ev.Problem)}
		} else {
			in = inAgentProblem{detail: o.maskString(ev.Problem), fatal: strings.HasPrefix(ev.Problem, agent.ProblemOutputLog)}
		}
	case agent.EventAPIRetry:
		r := *ev.Retry
		r.Message = o.maskString(r.Message)
		in = inAPIRetry{retry: r}
	case agent.EventExited:
		in = inExited{code: ev.Exit.Code, signal: ev.Exit.Signal, refusal: ev.Exit.Refusal}
		if r := ev.Exit.Refusal; r != nil {
			masked := *r
			masked.Message = o.maskString(r.Message)
			in = inExited{code: ev.Exit.Code, signal: ev.Exit.Signal, refusal: &masked}
		}
	default:
		return
	}
	a.post(envelope{in: in, gen: gen})
}

// maxActivityDetail bounds Task.activityDetail (a long command line).
const maxActivityDetail = 300

// refusalReasons ties claude's startup refusals to the blocked reasons.
var refusalReasons = map[string]protocol.BlockedReason{
	agent.RefusalSideload:    protocol.BlockedSideloadDisabled,
	agent.RefusalSessionHeld: protocol.BlockedSessionHeld,
}

// question masks and clips a question and asks the policy about it. It
// reads the task's latest view: the policy depends on the task's settings,
// which only change by command.
func (a *actor) question(q *agent.Question) input {
	o := a.o
	pq := *q // the protocol's question already: masked and clipped here, the agent's copy untouched
	size := len(pq.Text) + len(pq.Input)
	pq.Text, pq.TextRef = o.clipText(a.id, pq.Text)
	var cutInput bool
	if len(pq.Input) > maxText {
		_, pq.InputRef = o.clipText(a.id, string(pq.Input))
	}
	pq.Input, cutInput = clipJSON(pq.Input)
	if pq.TextRef != "" || cutInput {
		pq.Truncated, pq.OriginalSize, pq.OutputOffset = true, size, max(a.outputSize.Load()-int64(size), 0)
	}
	pq.Text = o.maskString(pq.Text)
	pq.Input = o.mask(pq.Input)
	in := inQuestion{q: pq}
	if q.Kind == agent.KindPermission {
		v := a.view()
		if d, ok := o.policyDecision(a.policy, a.directives, v.T.Worktree, o.grantRules(v.T.Grants), q); ok {
			in.decided = &d
		}
	}
	return in
}
