package orchestrator

import (
	"context"
	"encoding/json"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// timeoutText is what the agent is told when nobody answered in time.
const timeoutText = "Nobody answered this permission request within the approval timeout, so it was denied. Continue without it, or explain what you need."

// noAnswerText is what a headless agent is told when its question to a
// person (not a permission) found nobody.
const noAnswerText = "Nobody is available to answer questions in this run. Choose what you think is best, say which choice you made, and carry on."

// TaskRespond passes a person's answer to the agent. The agent is answered
// first (it refuses a question it no longer asks: a second window's answer
// gets NotFound); then the task settles the question.
func (o *Orchestrator) TaskRespond(ctx context.Context, p *protocol.TaskRespondParams) (*protocol.Task, error) {
	a, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	v := a.view()
	q := v.T.PendingQuestion
	if q == nil || q.ID != p.QuestionID {
		return nil, protocol.NotFound("question", p.QuestionID)
	}
	if v.sess == nil || v.agentPhase != agentUp {
		return nil, errTransition("answer a question of", v.T.Status)
	}
	if q.Kind == protocol.QuestionPermission && p.OptionID == "" {
		return nil, protocol.InvalidParams("optionId", "a permission question needs optionId (allow, allow_always or deny)")
	}
	if err := v.sess.Answer(p.QuestionID, agent.Answer{OptionID: p.OptionID, Text: p.Text, UpdatedInput: json.RawMessage(p.UpdatedInput)}); err != nil {
		return nil, answerError(err)
	}
	data := map[string]any{"questionId": p.QuestionID, "kind": q.Kind, "tool": q.Tool, "input": q.Input, "option": p.OptionID}
	if len(p.UpdatedInput) > 0 {
		data["modifiedInput"] = p.UpdatedInput
	}
	if p.Text != "" {
		data["text"] = p.Text
	}
	if q.Skill != nil {
		data["skill"] = q.Skill
	}
	grant := grantOf(q, p.OptionID, p.GrantScope, p.ID, o.clk.Now())
	if _, err := a.call(ctx, inAnswered{questionID: p.QuestionID, optionID: p.OptionID, audit: data, grant: grant}); err != nil {
		// The agent took the answer; the question went away meanwhile
		// (answered in the terminal): nothing left to settle.
		o.logger.Debug("settle answer", "task", p.ID, "err", err)
	}
	return o.viewOf(a.view()), nil
}

// answerError is the protocol's error for an answer the agent refused: an
// unknown question (agent.ErrNoQuestion), an answer that does not fit it
// (ErrBadAnswer, from optionId), or a claude stopped or unable to take
// input now (ErrNotReady, while the task waits).
func answerError(err error) error {
	return protocol.ErrorOf(err, protocol.ErrorContext{Thing: "question", Field: "optionId", Status: protocol.StatusWaiting})
}

func agentText(d decision) string {
	if d.text != "" {
		return d.text
	}
	return "Use tool " + d.tool
}

// TaskMarkDone is task/markDone.
func (o *Orchestrator) TaskMarkDone(ctx context.Context, p *protocol.TaskMarkDoneParams) (*protocol.Task, error) {
	v, err := o.command(ctx, p.ID, cmdMarkDone{questionID: p.QuestionID})
	if err != nil {
		return nil, err
	}
	return o.viewOf(v), nil
}
