package orchestrator

import (
	"errors"
	"fmt"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// Effects: what the actor does after a step, in order. Each is a type with
// its run method, so an effect step emits without a way to run it does not
// compile. run executes on the actor's goroutine; slow ones (git, stopping a
// process, answering a screen) go to goroutines that report back through
// the mailbox.
type effect interface{ run(a *actor) }

type effPersist struct{} // save the task

func (effPersist) run(a *actor) {
	// Queued, not awaited: the task's question or update published
	// next goes into the same commit (a commit costs milliseconds,
	// tens under load, and a question waited for two). A full store
	// is announced by OnStoreHealth.
	a.saving = a.o.saveSoon(&a.st.persisted)
}

type effUpdated struct{} // announce task/updated

func (effUpdated) run(a *actor) {
	o := a.o
	snap := a.st.T
	if q := snap.PendingQuestion; q != nil {
		c := *q
		snap.PendingQuestion = &c
	}
	o.fillEstimates(&snap)
	snap.UndoableUntil = undoableUntil(snap, a.st.Merge, time.Duration(o.settingsNow().UndoWindowSec)*time.Second, o.clk.Now())
	o.pub.publish(a.id, protocol.TaskUpdatedNotification{Task: snap})
	o.mq.TaskChanged()
	o.plans.Poke()
}

type effPublish struct{ n protocol.Notification } // announce n

func (eff effPublish) run(a *actor) {
	a.o.pub.publish(a.id, eff.n)
}

type effAudit struct {
	action, actor string
	data          any
}

func (eff effAudit) run(a *actor) {
	a.o.audit(a.id, eff.action, eff.actor, eff.data)
}

type effStartAgent struct { // worktree, options, spawn → inStarted / inStartFailed
	task    persisted // what to start from (with the follow-up prompt)
	logPath string    // this start's raw output log
}

func (eff effStartAgent) run(a *actor) {
	a.startAgent(eff)
}

// effAgentGone: the task's agent has gone (it exited, or its start failed);
// the actor lets its session go and counts it out, once per start (Close
// waits for every agent). Emitted before anything a restart in the same
// step emits.
type effAgentGone struct{}

func (effAgentGone) run(a *actor) {
	a.sess = nil
	a.o.agents.Done()
}

type effStopAgent struct{ now bool } // SIGTERM → grace → SIGKILL (now: SIGKILL at once)

func (eff effStopAgent) run(a *actor) {
	if a.sess != nil {
		sess := a.sess
		a.o.goStopSession(sess, eff.now)
	}
}

type effSendPrompt struct{ text string } // to the live agent

func (eff effSendPrompt) run(a *actor) {
	// Typing waits for the idle prompt: in the background, its outcome
	// to the caller (TaskSend), which reports its error.
	sent := make(chan error, 1)
	a.told = sent
	sess := a.sess
	if sess == nil {
		sent <- errors.New("the agent has gone")
		return
	}
	a.o.wg.Add(1)
	go func() {
		defer a.o.wg.Done()
		sent <- sess.SendPrompt(eff.text)
	}()
}

// effTell tells the live agent, from the task's actor, what familiar or a
// person decided outside its turn: an answer to its question, or
// (interrupt) to end its turn. Every answer goes this way — the person's
// (by user), the policy's, the approval timeout's — and task/interrupt.
//
// A person's answer may be refused by the agent (a question it no longer
// asks, an answer that does not fit it, a claude stopped by a signal): its
// outcome comes back as inAnswerOutcome, and task/respond returns once the
// answer is settled or refused (effAnswered). familiar's own decisions are
// given with AnswerDecided, which waits for a stopped claude to be
// continued. An interrupt's outcome goes to the caller (reply.told).
type effTell struct {
	questionID string
	answer     agent.Answer
	by         protocol.DecidedBy
	interrupt  bool
}

func (eff effTell) run(a *actor) {
	o, sess, id := a.o, a.sess, a.id
	var told chan error
	if eff.interrupt || eff.by == protocol.DecidedByUser {
		told = make(chan error, 1)
		a.told = told
	}
	if eff.by == protocol.DecidedByUser {
		a.answering[eff.questionID] = told
	}
	if sess == nil {
		switch {
		case eff.by == protocol.DecidedByUser:
			a.post(envelope{in: inAnswerOutcome{questionID: eff.questionID, err: agent.ErrExited}})
		case eff.interrupt:
			told <- agent.ErrExited
		}
		return
	}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		switch {
		case eff.interrupt:
			told <- sess.Interrupt()
		case eff.by == protocol.DecidedByUser:
			err := sess.Answer(eff.questionID, eff.answer)
			a.post(envelope{in: inAnswerOutcome{questionID: eff.questionID, err: err}})
		default:
			if err := sess.AnswerDecided(eff.questionID, eff.answer); err != nil {
				o.logger.Debug("answer", "task", id, "err", err)
			}
		}
	}()
}

// effAnswered: a person's answer is settled (err nil) or was refused; its
// task/respond returns, once the settlement is durable, as a command's
// reply does.
type effAnswered struct {
	questionID string
	err        error
}

func (eff effAnswered) run(a *actor) {
	if told, ok := a.answering[eff.questionID]; ok {
		a.settleSave()
		told <- eff.err
		delete(a.answering, eff.questionID)
	}
}

type effArmApproval struct {
	questionID string
	after      time.Duration
}

func (eff effArmApproval) run(a *actor) {
	a.disarm()
	gen, qid := a.gen, eff.questionID
	a.approval = a.o.clk.AfterFunc(eff.after, func() { a.post(envelope{in: inApprovalTimer{questionID: qid}, gen: gen}) })
}

type effDisarmApproval struct{}

func (effDisarmApproval) run(a *actor) {
	a.disarm()
}

type effArmWarm struct{ after time.Duration } // → inWarmOver

func (eff effArmWarm) run(a *actor) {
	a.disarmWarm()
	gen := a.gen
	a.warm = a.o.clk.AfterFunc(eff.after, func() { a.post(envelope{in: inWarmOver{}, gen: gen}) })
	a.o.goTrimWarm() // one more idle claude
}

type effDisarmWarm struct{}

func (effDisarmWarm) run(a *actor) {
	a.disarmWarm()
}

// effWarmGone: a warm agent exited; its slot is free for the queue.
type effWarmGone struct{}

func (effWarmGone) run(a *actor) {
	a.o.poke() // its slot is free for the queue
}

type effBackoff struct{ after time.Duration } // → inBackoffDone

func (eff effBackoff) run(a *actor) {
	if a.backoff != nil {
		a.backoff.Stop()
	}
	a.o.logger.Warn("agent start failed; retrying", "task", a.id, "attempt", a.st.StartFailures, "wait", eff.after, "err", a.st.LastError)
	a.backoff = a.o.clk.AfterFunc(eff.after, func() { a.post(envelope{in: inBackoffDone{}}) })
}

type effCheckpoint struct{ message string }

func (eff effCheckpoint) run(a *actor) {
	o := a.o
	wt, ok := o.worktreeOf(&a.st.persisted)
	if !ok {
		return
	}
	id := a.id
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		if _, _, err := o.cfg.Repo.Checkpoint(o.ctx, wt, eff.message); err != nil {
			o.logger.Warn("checkpoint", "task", id, "err", err)
		}
		o.fc.touch(id)
	}()
}

type effComplete struct{ turn agent.TurnEnded } // git: leftovers, files, commits → inCompleted

func (eff effComplete) run(a *actor) {
	a.complete(eff.turn)
}

// effSlotFreed: a live task left the live states after ranFor;
// succeeded when it finished its work (→ merging), the runs the
// queue's estimates learn from.
type effSlotFreed struct {
	ranFor    time.Duration
	succeeded bool
	profile   string
	typ       protocol.TaskType
}

func (eff effSlotFreed) run(a *actor) {
	a.o.slotFreed(eff)
}

type effQueueChanged struct{} // the queue gained or lost a task

func (effQueueChanged) run(a *actor) {
	a.o.queueChanged()
	a.o.poke()
}

type effResponded struct{ after time.Duration } // a person answered, after this long

func (eff effResponded) run(a *actor) {
	o := a.o
	o.mu.Lock()
	o.approvals = append(o.approvals, eff.after)
	o.mu.Unlock()
}

// effUsageLimit: the account's usage limit is reached until resetsAt
// (zero: unknown). The queue holds back and blocked tasks resume then.
type effUsageLimit struct{ resetsAt time.Time }

func (eff effUsageLimit) run(a *actor) {
	a.o.usageLimited(eff.resetsAt)
}

type effSaveGrant struct{ grant protocol.Grant } // a repository or user grant to its file

func (eff effSaveGrant) run(a *actor) {
	o := a.o
	if err := o.saveGrant(eff.grant); err != nil {
		o.logger.Warn("save grant", "task", a.id, "err", err)
		o.pub.publish(a.id, protocol.ServerMessageNotification{Level: protocol.LevelWarning,
			Text: fmt.Sprintf("task %s: the %s grant of %s could not be saved: %v", a.id, eff.grant.Scope, eff.grant.Rule, err)})
	}
}

// effForecast: the task's files may have changed (an edit, the end of
// a turn); the forecaster recomputes its conflicts, coalesced.
type effForecast struct{}

// effForecastAll: a base branch moved (a merge, an undo): every task's
// forecast is recomputed.
type effForecastAll struct{}

func (effForecastAll) run(a *actor) { a.o.fc.touchAll() }

func (effForecast) run(a *actor) {
	a.o.fc.touch(a.id)
}
