package protocol

import "time"

// Allow-always grants (familiar's addition to PROTOCOL.md): the rule a
// person granted, where it holds, and the methods that list and revoke them.

const (
	MethodPolicyList   = "policy/list"
	MethodPolicyRevoke = "policy/revoke"
)

// GrantScope is where an allow-always grant holds.
type GrantScope string

const (
	GrantTask       GrantScope = "task"       // this task, across restarts of its session
	GrantRepository GrantScope = "repository" // <repo>/.familiar/policy.yaml
	GrantUser       GrantScope = "user"       // $XDG_CONFIG_HOME/familiar/policy.yaml
)

var GrantScopes = []GrantScope{GrantTask, GrantRepository, GrantUser}

func (s GrantScope) Valid() bool {
	return s == GrantTask || s == GrantRepository || s == GrantUser
}

// Grant is one rule a person granted with allow-always.
type Grant struct {
	Rule      string     `json:"rule"`
	Scope     GrantScope `json:"scope"`
	Tool      string     `json:"tool,omitempty"`
	TaskID    string     `json:"taskId,omitempty"`
	GrantedAt time.Time  `json:"grantedAt,omitzero"`
}

// PolicyListParams: {taskId?}: the grants that apply to that task (its own,
// the repository's, the user's), else every task's and the files'.
type PolicyListParams struct {
	TaskID string `json:"taskId,omitempty"`
}

func (p *PolicyListParams) Validate() error { return nil }

type PolicyListResult struct {
	Grants []Grant `json:"grants"`
	// Files are the repository and user policy files, for a person to edit.
	Files map[GrantScope]string `json:"files"`
}

// PolicyRevokeParams: {rule, scope, taskId (required for scope task)}.
type PolicyRevokeParams struct {
	Rule   string     `json:"rule"`
	Scope  GrantScope `json:"scope"`
	TaskID string     `json:"taskId,omitempty"`
}

func (p *PolicyRevokeParams) Validate() error {
	var c checker
	c.required("rule", p.Rule)
	enum(&c, "scope", p.Scope, GrantScopes)
	if p.Scope == GrantTask {
		c.required("taskId", p.TaskID)
	}
	return c.result()
}

type PolicyRevokeResult struct {
	Revoked bool `json:"revoked"`
	// HeldByClaude: the rule was also handed to a claude that still runs
	// (an exact command, a single file: rules claude's matcher reads as
	// familiar's), which keeps it until it stops (a task's claude stops
	// with its turn); false once it has, and familiar asks from the next
	// call.
	HeldByClaude bool `json:"heldByClaude,omitempty"`
}
