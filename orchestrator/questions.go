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

// TaskRespond passes a person's answer to the agent, through the task's
// actor (cmdRespond, effTell), and returns once the agent has taken it and
// the question is settled, or with the agent's refusal (it refuses a
// question it no longer asks: a second window's answer gets NotFound).
func (o *Orchestrator) TaskRespond(ctx context.Context, p *protocol.TaskRespondParams) (*protocol.Task, error) {
	a, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	r := a.ask(ctx, cmdRespond{questionID: p.QuestionID, scope: p.GrantScope,
		answer: agent.Answer{OptionID: p.OptionID, Text: p.Text, UpdatedInput: json.RawMessage(p.UpdatedInput)}}, false)
	if r.err != nil {
		return nil, r.err
	}
	refused, err := o.awaitTold(ctx, r.told)
	if err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, answerError(refused)
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
