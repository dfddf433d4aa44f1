package orchestrator

import (
	"encoding/json"
	"os"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/policy"
	"github.com/familiar-dev/familiar/protocol"
)

// decision is what the permission policy said about one tool call.
type decision struct {
	option   string // agent.OptionAllow or agent.OptionDeny
	rule     string // the rule that decided; "" for the policy's default
	reason   string // told to the agent on a deny
	tool     string
	text     string          // the question as the agent put it, masked
	input    json.RawMessage // masked
	elevated bool            // allowed only because the task is elevated (audited as such)
}

// policyDecision applies the task's policy (or the settings') to a
// permission question. ok is false when a person has to decide.
//
// granted are the allow-always rules that hold for the task (its own, the
// repository's, the user's): they join the policy's allow rules, so a deny
// rule still wins over them.
func (o *Orchestrator) policyDecision(own *protocol.Policy, directives *protocol.Directives, wt *protocol.Worktree, granted []string, q *agent.Question) (decision, bool) {
	p := o.settingsNow().PermissionPolicy
	if own != nil {
		p = *own
	}
	elevated := directives != nil && directives.Elevated
	// Paths are decided as written and with their links resolved: a link
	// in the worktree may point into .github/ or out of the worktree.
	dirs := policy.Dirs{Resolve: policy.ResolveSymlinks}
	if wt != nil {
		dirs.Work = wt.Path
	}
	dirs.Home, _ = os.UserHomeDir()
	allow := append(append([]string(nil), p.Allow...), granted...)
	v := policy.DecideIn(dirs, policy.Policy{Default: policy.Verdict(p.Default), Allow: allow, Deny: p.Deny}, elevated, q.Tool, q.Input)
	// Decided on what the agent asked; shown and audited masked.
	d := decision{tool: q.Tool, input: o.mask(q.Input), text: o.maskString(q.Text), rule: v.Rule, reason: o.maskString(v.Reason)}
	switch v.Verdict {
	case policy.Allow:
		d.option = agent.OptionAllow
		d.reason = "" // an allow says nothing to the agent
		if elevated && v.Rule == "" {
			d.elevated = true
		}
		return d, true
	case policy.Deny:
		d.option = agent.OptionDeny
		return d, true
	}
	return d, false
}

// validPolicy refuses a policy with a bad rule, naming it.
func validPolicy(field string, p *protocol.Policy) error {
	if p == nil {
		return nil
	}
	if err := (policy.Policy{Default: policy.Verdict(p.Default), Allow: p.Allow, Deny: p.Deny}).Validate(); err != nil {
		return protocol.InvalidParams(field, "invalid permission policy: "+err.Error())
	}
	return nil
}
