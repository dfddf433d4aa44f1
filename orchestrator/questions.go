package orchestrator

import (
	"encoding/json"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// timeoutText is what the agent is told when nobody answered in time.
const timeoutText = "Nobody answered this permission request within the approval timeout, so it was denied. Continue without it, or explain what you need."

// askLocked handles a question from the agent: a policy may decide it; the
// rest wait on a person, with a timeout for permissions.
func (o *Orchestrator) askLocked(t *task, q *agent.Question) {
	pq := &protocol.Question{
		ID: q.ID, Kind: protocol.QuestionKind(q.Kind), Text: q.Text, Tool: q.Tool, Input: q.Input,
		AllowText: q.AllowText,
	}
	for _, opt := range q.Options {
		pq.Options = append(pq.Options, protocol.Option{ID: opt.ID, Label: opt.Label})
	}
	if t.T.Status == protocol.StatusRunning {
		_ = o.setStatusLocked(t, protocol.StatusWaiting)
	}
	if q.Kind == agent.KindPermission {
		timeout := time.Duration(o.settings.ApprovalTimeoutSec) * time.Second
		pq.ExpiresAt = o.clk.Now().Add(timeout).UTC()
		id, qid := t.T.ID, q.ID
		t.approval = o.clk.AfterFunc(timeout, func() { o.approvalTimedOut(id, qid) })
	}
	t.T.PendingQuestion = pq
	o.touchLocked(t)
	o.pub.publish(t.T.ID, protocol.TaskQuestionNotification{ID: t.T.ID, Question: *pq})
}

// approvalTimedOut denies a permission nobody answered; the task goes on.
func (o *Orchestrator) approvalTimedOut(id, questionID string) {
	o.mu.Lock()
	t := o.tasks[id]
	if t == nil || t.sess == nil || t.T.PendingQuestion == nil || t.T.PendingQuestion.ID != questionID {
		o.mu.Unlock()
		return
	}
	sess := t.sess
	t.approval = nil
	o.mu.Unlock()
	if err := sess.Answer(questionID, agent.Answer{OptionID: agent.OptionDeny, Text: timeoutText}); err != nil {
		o.logger.Debug("timeout answer", "task", id, "err", err)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.settleLocked(t, questionID, protocol.DecidedByTimeout, agent.OptionDeny)
}

func (o *Orchestrator) stopApprovalLocked(t *task) {
	if t.approval != nil {
		t.approval.Stop()
		t.approval = nil
	}
}

// resolvedLocked handles the agent saying a question went away.
func (o *Orchestrator) resolvedLocked(t *task, r *agent.Resolution) {
	by := protocol.DecidedByAgent
	switch r.By {
	case "user", "terminal":
		by = protocol.DecidedByUser
	}
	o.settleLocked(t, r.QuestionID, by, r.OptionID)
}

// settleLocked clears a pending question once, whoever settled it first, and
// announces task/questionResolved.
func (o *Orchestrator) settleLocked(t *task, questionID string, by protocol.DecidedBy, optionID string) {
	if t.T.PendingQuestion == nil || t.T.PendingQuestion.ID != questionID {
		return
	}
	o.stopApprovalLocked(t)
	t.T.PendingQuestion = nil
	if t.T.Status == protocol.StatusWaiting {
		_ = o.setStatusLocked(t, protocol.StatusRunning)
	}
	o.touchLocked(t)
	o.pub.publish(t.T.ID, protocol.TaskQuestionResolvedNotification{ID: t.T.ID, QuestionID: questionID, DecidedBy: by, OptionID: optionID})
}

// answer passes a person's answer to the agent.
func (o *Orchestrator) answer(t *task, p *protocol.TaskRespondParams) error {
	o.mu.Lock()
	sess := t.sess
	q := t.T.PendingQuestion
	status := t.T.Status
	o.mu.Unlock()
	if q == nil || q.ID != p.QuestionID {
		return protocol.NotFound("question", p.QuestionID)
	}
	if sess == nil {
		return errTransition("answer a question of", status)
	}
	if q.Kind == protocol.QuestionPermission && p.OptionID == "" {
		return protocol.InvalidParams("optionId", "a permission question needs optionId (allow, allow_always or deny)")
	}
	if err := sess.Answer(p.QuestionID, agent.Answer{OptionID: p.OptionID, Text: p.Text, UpdatedInput: json.RawMessage(p.UpdatedInput)}); err != nil {
		return answerError(err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.settleLocked(t, p.QuestionID, protocol.DecidedByUser, p.OptionID)
	return nil
}

func answerError(err error) error {
	switch {
	case errorsIs(err, agent.ErrNoQuestion):
		return protocol.NotFound("question", err.Error())
	case errorsIs(err, agent.ErrBadAnswer):
		return protocol.InvalidParams("optionId", err.Error())
	}
	return err
}
