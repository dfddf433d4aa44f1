package orchestrator

import (
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// Inputs of questions: the agent asks, a person or the policy or the approval
// timeout answers, a question turns out to have been a report, a grant goes.
// Every answer goes to the agent through one effect (effTell), from the
// task's actor; a question the agent asked is settled by one input, the
// agent's resolution (inResolved), except familiar's own decisions, settled
// as they are made.

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
	st.changed()
	st.emit(effPublish{protocol.TaskQuestionNotification{ID: s.T.ID, Question: q}})
	return nil
}

// inResolved: the agent says a question was settled — in the terminal, by
// claude itself, or by an answer familiar gave it (taken). It is the one
// settlement of a person's answer: the agent took it (the audit, the grant
// and the response time recorded with it). familiar's own decisions (the
// policy, the approval timeout) settle in the step that makes them, since a
// claude stopped by a signal takes them only once continued; their
// resolution then finds nothing pending.
type inResolved struct {
	questionID string
	by         protocol.DecidedBy
	optionID   string
	taken      bool // the agent took an answer familiar gave it
}

func (in inResolved) apply(st *stepper) error {
	s := &st.s
	a := s.answer
	if !in.taken || a.questionID != in.questionID || a.settled {
		st.settle(in.questionID, in.by, in.optionID)
		return nil
	}
	pending := s.T.PendingQuestion != nil && s.T.PendingQuestion.ID == in.questionID
	if st.recordAnswer(a) && !pending {
		st.changed() // the grant; settle announces the change otherwise
	}
	st.settle(in.questionID, in.by, in.optionID)
	if a.taken {
		s.answer = personAnswer{}
		st.emit(effAnswered{questionID: a.questionID})
	} else {
		s.answer.settled = true // its task/respond returns with the agent's outcome
	}
	return nil
}

// personAnswer is a person's answer on its way to the agent (task/respond),
// from the command until both the agent's outcome (inAnswerOutcome) and its
// settlement (inResolved) are in; task/respond returns then, so what it
// returns, the audit and the grant include the answer.
type personAnswer struct {
	questionID string
	optionID   string
	audit      map[string]any
	grant      *protocol.Grant // an allow-always answer's rule
	responded  time.Duration   // from the question to the answer
	taken      bool            // the agent's outcome came first, without error
	settled    bool            // the agent's resolution came first
}

// cmdRespond is task/respond: a person answers the pending question. The
// answer goes to the agent through effTell; the agent may refuse it (a
// question it no longer asks, an answer that does not fit, a claude
// stopped by a signal), which task/respond returns.
type cmdRespond struct {
	questionID string
	answer     agent.Answer
	scope      protocol.GrantScope
}

func (in cmdRespond) apply(st *stepper) error {
	s := &st.s
	q := s.T.PendingQuestion
	if q == nil || q.ID != in.questionID || s.answer.questionID == in.questionID {
		// Already answered (another window's answer is on its way).
		return protocol.NotFound("question", in.questionID)
	}
	if s.agent != agentUp {
		return errTransition("answer a question of", s.T.Status)
	}
	if q.Kind == protocol.QuestionPermission && in.answer.OptionID == "" {
		return protocol.InvalidParams("optionId", "a permission question needs optionId (allow, allow_always or deny)")
	}
	data := map[string]any{"questionId": q.ID, "kind": q.Kind, "tool": q.Tool, "input": q.Input, "option": in.answer.OptionID}
	if len(in.answer.UpdatedInput) > 0 {
		data["modifiedInput"] = in.answer.UpdatedInput
	}
	if in.answer.Text != "" {
		data["text"] = in.answer.Text
	}
	if q.Skill != nil {
		data["skill"] = q.Skill
	}
	after := st.e.now.Sub(s.askedAt)
	data["responseSec"] = after.Seconds()
	s.answer = personAnswer{questionID: q.ID, optionID: in.answer.OptionID, audit: data, responded: after,
		grant: grantOf(q, in.answer.OptionID, in.scope, s.T.ID, st.e.now)}
	st.emit(effTell{questionID: q.ID, answer: in.answer, by: protocol.DecidedByUser})
	return nil
}

// inAnswerOutcome: the agent took a person's answer (err nil) or refused it.
type inAnswerOutcome struct {
	questionID string
	err        error
}

func (in inAnswerOutcome) apply(st *stepper) error {
	s := &st.s
	if a := s.answer; a.questionID == in.questionID {
		if in.err == nil && !a.settled {
			s.answer.taken = true // its settlement (inResolved) answers task/respond
			return nil
		}
		s.answer = personAnswer{}
	}
	st.emit(effAnswered{questionID: in.questionID, err: in.err})
	return nil
}

// recordAnswer records a person's answer the agent took: its response
// time, its audit entry and its allow-always grant. It reports whether the
// task's own grants changed.
func (st *stepper) recordAnswer(a personAnswer) bool {
	s := &st.s
	changed := false
	st.emit(effResponded{after: a.responded})
	st.emit(effAudit{action: "permission.decided", actor: string(protocol.DecidedByUser), data: a.audit})
	if g := a.grant; g != nil {
		// Kept beyond this session: familiar's policy allows the rule
		// when a later session of the task asks again.
		if g.Scope == protocol.GrantTask {
			if !grantsHave(s.T.Grants, g.Rule) {
				s.T.Grants = append(append([]protocol.Grant(nil), s.T.Grants...), *g)
				changed = true
			}
		} else {
			st.emit(effSaveGrant{grant: *g})
		}
		st.emit(effAudit{action: "policy.granted", actor: "user", data: map[string]any{
			"rule": g.Rule, "scope": g.Scope, "tool": g.Tool, "questionId": a.questionID}})
	}
	return changed
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
	st.emit(effTell{questionID: q.ID, answer: a, by: protocol.DecidedByTimeout})
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
		"rule": in.rule, "scope": protocol.GrantTask, "note": revokeNote(in.rule, s.agent)}})
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
	st.emit(effTell{questionID: q.ID, answer: agent.Answer{OptionID: d.option, Text: d.reason}, by: protocol.DecidedByPolicy})
}

func grantsHave(list []protocol.Grant, rule string) bool {
	for _, g := range list {
		if g.Rule == rule {
			return true
		}
	}
	return false
}
