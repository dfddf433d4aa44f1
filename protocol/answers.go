package protocol

import "time"

// Familiar's additions to PROTOCOL.md for issue 17: a prose question marked
// done, whole texts behind clipped ones, and allow-always grants. Kept in one
// file so they read together; their methods are part of Server.

const (
	MethodTaskMarkDone = "task/markDone"
	MethodTaskText     = "task/text"
	MethodPolicyList   = "policy/list"
	MethodPolicyRevoke = "policy/revoke"
)

// TaskMarkDoneParams: {id, questionId?}. questionId, when given, must be the
// pending question's.
type TaskMarkDoneParams struct {
	ID         string `json:"id"`
	QuestionID string `json:"questionId,omitempty"`
}

func (p *TaskMarkDoneParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	return c.result()
}

// TaskTextParams: {id, ref, offset?, limit? (default 65536)}.
type TaskTextParams struct {
	ID     string `json:"id"`
	Ref    string `json:"ref"`
	Offset int64  `json:"offset,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

func (p *TaskTextParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	c.required("ref", p.Ref)
	if p.Offset < 0 {
		c.fail("offset", "offset must not be negative, not %d.", p.Offset)
	}
	c.intRange("limit", p.Limit, 0, MaxOutputLimit)
	return c.result()
}

func (p *TaskTextParams) EffectiveLimit() int { return orDefault(p.Limit, DefaultOutputLimit) }

// TaskTextResult is one page of a text: offsets are in bytes of the whole
// text, and a page never ends inside a UTF-8 character.
type TaskTextResult struct {
	Data       string `json:"data"`
	Offset     int64  `json:"offset"`
	NextOffset int64  `json:"nextOffset"`
	Size       int64  `json:"size"`
	// Truncated is set when the text goes on after nextOffset.
	Truncated bool `json:"truncated"`
}

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
	// HeldByClaude: the rule was also handed to the claude of a session
	// (an exact command, a single file: rules claude's matcher reads as
	// familiar's), which keeps it until it restarts; familiar's added.
	HeldByClaude bool `json:"heldByClaude,omitempty"`
}
