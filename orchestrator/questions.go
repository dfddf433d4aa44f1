package orchestrator

import (
	"encoding/json"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// timeoutText is what the agent is told when nobody answered in time.
const timeoutText = "Nobody answered this permission request within the approval timeout, so it was denied. Continue without it, or explain what you need."

// noAnswerText is what a headless agent is told when its question to a
// person (not a permission) found nobody.
const noAnswerText = "Nobody is available to answer questions in this run. Choose what you think is best, say which choice you made, and carry on."

// askLocked handles a question from the agent: the permission policy may
// decide it; the rest wait on a person, with the approval timeout for
// permissions (and for every question in a headless run, where nobody can
// answer).
func (o *Orchestrator) askLocked(t *task, q *agent.Question) {
	pq := &protocol.Question{
		ID: q.ID, Kind: protocol.QuestionKind(q.Kind), Text: q.Text, Tool: q.Tool, Input: q.Input,
		AllowText: q.AllowText,
	}
	for _, opt := range q.Options {
		pq.Options = append(pq.Options, protocol.Option{ID: opt.ID, Label: opt.Label})
	}
	size := len(pq.Text) + len(pq.Input)
	var cutText, cutInput bool
	pq.Text, cutText = clip(pq.Text)
	pq.Input, cutInput = clipJSON(pq.Input)
	if cutText || cutInput {
		pq.Truncated, pq.OriginalSize, pq.OutputOffset = true, size, max(t.outputSize-int64(size), 0)
	}
	pq.Text = o.maskString(pq.Text)
	pq.Input = o.mask(pq.Input)
	if q.Kind == agent.KindPermission {
		if d, ok := o.policyDecision(t, q); ok {
			o.answerAsync(t, q.ID, agent.Answer{OptionID: d.option, Text: d.reason}, protocol.DecidedByPolicy, d)
			return
		}
	}
	if t.T.Status == protocol.StatusRunning {
		_ = o.setStatusLocked(t, protocol.StatusWaiting)
	}
	if q.Kind == agent.KindPermission || o.cfg.Headless {
		timeout := time.Duration(o.settings.ApprovalTimeoutSec) * time.Second
		pq.ExpiresAt = o.clk.Now().Add(timeout).UTC()
		id, qid, kind := t.T.ID, q.ID, q.Kind
		t.approval = o.clk.AfterFunc(timeout, func() { o.approvalTimedOut(id, qid, kind) })
	}
	t.T.PendingQuestion = pq
	t.askedAt = o.clk.Now()
	o.touchLocked(t)
	o.pub.publish(t.T.ID, protocol.TaskQuestionNotification{ID: t.T.ID, Question: *pq})
}

// answerAsync answers a question for the policy without blocking the
// agent's event goroutine (a screen answer waits for the screen to change).
func (o *Orchestrator) answerAsync(t *task, questionID string, a agent.Answer, by protocol.DecidedBy, d decision) {
	sess := t.sess
	id := t.T.ID
	// Shown, then settled at once: a client sees what the policy decided.
	o.pub.publish(id, protocol.TaskQuestionNotification{ID: id, Question: protocol.Question{
		ID: questionID, Kind: protocol.QuestionPermission, Text: agentText(d), Tool: d.tool, Input: d.input,
		Options: []protocol.Option{{ID: agent.OptionAllow, Label: "Allow"}, {ID: agent.OptionAllowAlways, Label: "Allow always"}, {ID: agent.OptionDeny, Label: "Deny"}},
	}})
	o.pub.publish(id, protocol.TaskQuestionResolvedNotification{ID: id, QuestionID: questionID, DecidedBy: by, OptionID: a.OptionID})
	actor := string(by)
	if d.elevated {
		actor = "elevated"
	}
	o.audit(id, "permission.decided", actor, map[string]any{
		"questionId": questionID, "tool": d.tool, "input": d.input, "option": a.OptionID, "rule": d.rule, "reason": d.reason,
		"decidedBy": by,
	})
	if sess == nil {
		return
	}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		if err := sess.Answer(questionID, a); err != nil {
			o.logger.Warn("policy answer", "task", id, "err", err)
		}
	}()
}

// approvalTimedOut settles a question nobody answered in time: a permission
// is denied (the agent is told why and goes on); in a headless run any other
// question gets a note that nobody can answer.
func (o *Orchestrator) approvalTimedOut(id, questionID, kind string) {
	o.mu.Lock()
	t := o.tasks[id]
	if t == nil || t.sess == nil || t.T.PendingQuestion == nil || t.T.PendingQuestion.ID != questionID {
		o.mu.Unlock()
		return
	}
	sess := t.sess
	t.approval = nil
	q := *t.T.PendingQuestion
	o.mu.Unlock()
	var a agent.Answer
	switch kind {
	case agent.KindPermission:
		a = agent.Answer{OptionID: agent.OptionDeny, Text: timeoutText}
	case agent.KindDialog:
		// A CLI dialog nobody can answer: the task cannot go on.
		o.mu.Lock()
		o.blockLocked(t, protocol.BlockedAgentFailed, "the CLI showed a dialog nobody answered: "+q.Text)
		o.mu.Unlock()
		o.stopAgent(t, "", "")
		return
	default:
		a = agent.Answer{Text: noAnswerText}
	}
	if err := sess.Answer(questionID, a); err != nil {
		o.logger.Debug("timeout answer", "task", id, "err", err)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.audit(id, "permission.decided", string(protocol.DecidedByTimeout), map[string]any{
		"questionId": questionID, "tool": q.Tool, "input": q.Input, "option": a.OptionID, "kind": kind,
	})
	o.settleLocked(t, questionID, protocol.DecidedByTimeout, a.OptionID)
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
	data := map[string]any{"questionId": p.QuestionID, "kind": q.Kind, "tool": q.Tool, "input": q.Input, "option": p.OptionID,
		"responseSec": o.clk.Now().Sub(t.askedAt).Seconds()}
	if len(p.UpdatedInput) > 0 {
		data["modifiedInput"] = p.UpdatedInput
	}
	if p.Text != "" {
		data["text"] = p.Text
	}
	o.audit(t.T.ID, "permission.decided", string(protocol.DecidedByUser), data)
	o.approvals = append(o.approvals, o.clk.Now().Sub(t.askedAt))
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

func agentText(d decision) string {
	if d.text != "" {
		return d.text
	}
	return "Use tool " + d.tool
}
