package orchestrator

import (
	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// Inputs of questions: the agent asks, a person or the policy or the approval
// timeout answers, a question turns out to have been a report, a grant goes.

// inQuestion: the agent asks (q masked and clipped); decided when the
// policy answered it already.
type inQuestion struct {
	q       protocol.Question
	decided *decision
}

func (in inQuestion) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	if in.q.Kind == agent.KindQuestion {
		s.interrupting = false // the PTY driver's interrupted turn ends asking
	}
	if s.agent != agentUp {
		return nil // the agent is going away; nobody should answer it
	}
	if !status.Live() {
		// A warm agent asks nothing while idle; one that does is not
		// what a follow-up should meet: it goes.
		if s.warm {
			st.emit(effDisarmWarm{})
			st.stopAgent(stopIntent{kind: stopRelease}, false)
		}
		return nil
	}
	if d := in.decided; d != nil {
		st.policyAnswered(in.q, d)
		return nil
	}
	q := in.q
	if status == protocol.StatusRunning {
		if err := st.move(protocol.StatusWaiting); err != nil {
			return err
		}
	}
	if in.q.Kind == agent.KindPermission || st.e.headless {
		q.ExpiresAt = st.e.now.Add(st.e.approvalTimeout).UTC()
		st.emit(effArmApproval{questionID: q.ID, after: st.e.approvalTimeout})
	}
	s.T.PendingQuestion = &q
	s.askedAt = st.e.now
	s.askedID = q.ID
	st.changed()
	st.emit(effPublish{protocol.TaskQuestionNotification{ID: s.T.ID, Question: q}})
	return nil
}

// inResolved: the agent says a question was settled (in the terminal, or by
// claude itself).
type inResolved struct {
	questionID string
	by         protocol.DecidedBy
	optionID   string
}

func (in inResolved) apply(st *stepper) error {

	st.settle(in.questionID, in.by, in.optionID)
	return nil
}

// inAnswered: the agent took a person's answer (task/respond).
type inAnswered struct {
	questionID string
	optionID   string
	audit      map[string]any
	grant      *protocol.Grant // an allow-always answer's rule
}

func (in inAnswered) apply(st *stepper) error {
	s := &st.s
	// The agent took the answer; its own "resolved" event may have
	// settled the question first (it races this input), so the last
	// question asked counts too: the person's decision and grant are
	// never lost.
	pending := s.T.PendingQuestion != nil && s.T.PendingQuestion.ID == in.questionID
	if !pending && s.askedID != in.questionID {
		return protocol.NotFound("question", in.questionID)
	}
	s.askedID = ""
	data := in.audit
	if data == nil {
		data = map[string]any{}
	}
	data["responseSec"] = st.e.now.Sub(s.askedAt).Seconds()
	st.emit(effResponded{after: st.e.now.Sub(s.askedAt)})
	st.emit(effAudit{action: "permission.decided", actor: string(protocol.DecidedByUser), data: data})
	if g := in.grant; g != nil {
		// Kept beyond this session: familiar's policy allows the rule
		// when a later session of the task asks again.
		if g.Scope == protocol.GrantTask {
			if !grantsHave(s.T.Grants, g.Rule) {
				s.T.Grants = append(append([]protocol.Grant(nil), s.T.Grants...), *g)
			}
		} else {
			st.emit(effSaveGrant{grant: *g})
		}
		st.emit(effAudit{action: "policy.granted", actor: "user", data: map[string]any{
			"rule": g.Rule, "scope": g.Scope, "tool": g.Tool, "questionId": in.questionID}})
	}
	st.settle(in.questionID, protocol.DecidedByUser, in.optionID)
	return nil
}

// inApprovalTimer: a question waited the approval timeout.
type inApprovalTimer struct{ questionID string }

func (in inApprovalTimer) apply(st *stepper) error {
	s := &st.s
	q := s.T.PendingQuestion
	if q == nil || q.ID != in.questionID || s.agent != agentUp {
		return nil
	}
	var a agent.Answer
	switch q.Kind {
	case protocol.QuestionPermission:
		a = agent.Answer{OptionID: agent.OptionDeny, Text: timeoutText}
	case protocol.QuestionDialog:
		st.block(protocol.BlockedAgentFailed, "the CLI showed a dialog nobody answered: "+q.Text)
		return nil
	default:
		a = agent.Answer{Text: noAnswerText}
	}
	st.emit(effAnswer{questionID: q.ID, answer: a})
	data := map[string]any{"questionId": q.ID, "tool": q.Tool, "input": q.Input, "option": a.OptionID, "kind": q.Kind}
	if q.Skill != nil {
		data["skill"] = q.Skill
	}
	st.emit(effAudit{action: "permission.decided", actor: string(protocol.DecidedByTimeout), data: data})
	st.settle(q.ID, protocol.DecidedByTimeout, a.OptionID)
	return nil
}

type cmdMarkDone struct{ questionID string } // a prose question was a report after all

func (in cmdMarkDone) apply(st *stepper) error {
	s := &st.s
	status := s.T.Status
	q := s.T.PendingQuestion
	if status != protocol.StatusWaiting || q == nil || q.Kind != protocol.QuestionQuestion {
		return protocol.FailedPrecondition("only a task waiting on a question from the agent's last message can be marked done", status)
	}
	if in.questionID != "" && in.questionID != q.ID {
		return protocol.NotFound("question", in.questionID)
	}
	if s.completing {
		return nil
	}
	text := q.Text
	st.emit(effAudit{action: "task.markedDone", actor: "user", data: map[string]any{"questionId": q.ID, "closing": q.Closing}})
	st.settle(q.ID, protocol.DecidedByUser, "")
	// As if the turn had ended with a report: the usual git work, then
	// merging.
	s.completing = true
	st.emit(effPersist{}, effComplete{turn: agent.TurnEnded{LastMessage: text}})
	return nil
}

type cmdRevoke struct{ rule string } // a task grant goes

func (in cmdRevoke) apply(st *stepper) error {
	s := &st.s
	var kept []protocol.Grant
	for _, g := range s.T.Grants {
		if g.Rule != in.rule {
			kept = append(kept, g)
		}
	}
	if len(kept) == len(s.T.Grants) {
		return nil
	}
	s.T.Grants = kept
	st.emit(effAudit{action: "policy.revoked", actor: "user", data: map[string]any{
		"rule": in.rule, "scope": protocol.GrantTask, "note": revokeNote(in.rule)}})
	st.changed()
	return nil
}

// settle clears a pending question once, whoever settled it first, and
// announces task/questionResolved.
func (st *stepper) settle(questionID string, by protocol.DecidedBy, optionID string) {
	s := &st.s
	if s.T.PendingQuestion == nil || s.T.PendingQuestion.ID != questionID {
		return
	}
	s.T.PendingQuestion = nil
	st.emit(effDisarmApproval{})
	if s.T.Status == protocol.StatusWaiting {
		_ = st.move(protocol.StatusRunning)
	}
	st.changed()
	st.emit(effPublish{protocol.TaskQuestionResolvedNotification{ID: s.T.ID, QuestionID: questionID, DecidedBy: by, OptionID: optionID}})
}

// policyAnswered shows a question the policy decided, settles it at once
// and answers the agent.
func (st *stepper) policyAnswered(q protocol.Question, d *decision) {
	id := st.s.T.ID
	st.emit(effPublish{protocol.TaskQuestionNotification{ID: id, Question: protocol.Question{
		ID: q.ID, Kind: protocol.QuestionPermission, Text: agentText(*d), Tool: d.tool, Input: d.input, Skill: q.Skill,
		Options: []protocol.Option{{ID: agent.OptionAllow, Label: "Allow"}, {ID: agent.OptionAllowAlways, Label: "Allow always"}, {ID: agent.OptionDeny, Label: "Deny"}},
	}}})
	st.emit(effPublish{protocol.TaskQuestionResolvedNotification{ID: id, QuestionID: q.ID, DecidedBy: protocol.DecidedByPolicy, OptionID: d.option}})
	actor := string(protocol.DecidedByPolicy)
	if d.elevated {
		actor = "elevated"
	}
	data := map[string]any{
		"questionId": q.ID, "tool": d.tool, "input": d.input, "option": d.option, "rule": d.rule, "reason": d.reason,
		"decidedBy": protocol.DecidedByPolicy,
	}
	if q.Skill != nil {
		data["skill"] = q.Skill
	}
	st.emit(effAudit{action: "permission.decided", actor: actor, data: data})
	st.emit(effAnswer{questionID: q.ID, answer: agent.Answer{OptionID: d.option, Text: d.reason}})
}

func grantsHave(list []protocol.Grant, rule string) bool {
	for _, g := range list {
		if g.Rule == rule {
			return true
		}
	}
	return false
}
