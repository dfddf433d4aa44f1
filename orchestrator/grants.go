package orchestrator

import (
	"context"
	"github.com/familiar-dev/familiar/policy"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/grants"
	"github.com/familiar-dev/familiar/protocol"
)

// Allow-always grants that outlive the session (issue 17): the task's own in
// its state, the repository's and the user's in their files (grants), and
// policy/list and policy/revoke over all three.

// repoGrants and userGrants are the policy files of grants.
func (o *Orchestrator) repoGrants() *grants.File { return grants.RepositoryFile(o.cfg.Repo.Root()) }

func userGrants() (*grants.File, error) { return grants.UserFile() }

// grantRules are the rules granted for a task: its own, the repository's and
// the user's. A policy file that does not parse grants nothing (and says so
// in the log); the deny rules of the policy are not affected.
func (o *Orchestrator) grantRules(task []protocol.Grant) []string {
	var rules []string
	for _, g := range task {
		rules = append(rules, g.Rule)
	}
	files := []*grants.File{o.repoGrants()}
	if u, err := userGrants(); err == nil {
		files = append(files, u)
	}
	for _, f := range files {
		list, err := f.List()
		if err != nil {
			o.logger.Warn("policy file ignored", "err", err)
			continue
		}
		rules = append(rules, grants.Rules(list)...)
	}
	return rules
}

// saveGrant writes a repository or user grant (effect of an answer).
func (o *Orchestrator) saveGrant(g protocol.Grant) error {
	f := o.repoGrants()
	if g.Scope == protocol.GrantUser {
		var err error
		if f, err = userGrants(); err != nil {
			return err
		}
	}
	_, err := f.Add(grants.Grant{Rule: g.Rule, Tool: g.Tool, TaskID: g.TaskID, GrantedAt: g.GrantedAt})
	return err
}

// grantOf is the grant an allow-always answer to q makes, if any.
func grantOf(q *protocol.Question, optionID string, scope protocol.GrantScope, taskID string, now time.Time) *protocol.Grant {
	if q.Kind != protocol.QuestionPermission || (optionID != agent.OptionAllowAlways && optionID != agent.OptionAllowAlwaysExact) {
		return nil
	}
	for _, opt := range q.Options {
		if opt.ID == optionID && opt.Rule != "" {
			if scope == "" {
				scope = protocol.GrantTask
			}
			return &protocol.Grant{Rule: opt.Rule, Scope: scope, Tool: q.Tool, TaskID: taskID, GrantedAt: now.UTC()}
		}
	}
	return nil
}

// PolicyList is policy/list.
func (o *Orchestrator) PolicyList(ctx context.Context, p *protocol.PolicyListParams) (*protocol.PolicyListResult, error) {
	res := &protocol.PolicyListResult{Grants: []protocol.Grant{}, Files: map[protocol.GrantScope]string{}}
	if p.TaskID != "" {
		a, err := o.get(p.TaskID)
		if err != nil {
			return nil, err
		}
		res.Grants = append(res.Grants, a.view().T.Grants...)
	} else {
		actors := o.actors()
		for _, a := range actors {
			res.Grants = append(res.Grants, a.view().T.Grants...)
		}
	}
	files := map[protocol.GrantScope]*grants.File{protocol.GrantRepository: o.repoGrants()}
	if u, err := userGrants(); err == nil {
		files[protocol.GrantUser] = u
	}
	for _, scope := range []protocol.GrantScope{protocol.GrantRepository, protocol.GrantUser} {
		f := files[scope]
		if f == nil {
			continue
		}
		res.Files[scope] = f.Path()
		list, err := f.List()
		if err != nil {
			return nil, protocol.FailedPrecondition("the policy file "+err.Error()+"; fix or remove it", "")
		}
		for _, g := range list {
			res.Grants = append(res.Grants, protocol.Grant{Rule: g.Rule, Scope: scope, Tool: g.Tool, TaskID: g.TaskID, GrantedAt: g.GrantedAt})
		}
	}
	return res, nil
}

// PolicyRevoke is policy/revoke. A revoked rule stops allowing at once for
// every question familiar decides; the claude that was given it with the
// allow-always answer keeps it while it runs (only rules claude reads as
// familiar does are given). HeldByClaude says so only when such a claude
// may still run: the task's, or for a file's grant any task's. A task's
// claude that ended with its turn held nothing, and the next call was
// asked again while /revoke said it would not be (issue 37).
func (o *Orchestrator) PolicyRevoke(ctx context.Context, p *protocol.PolicyRevokeParams) (*protocol.PolicyRevokeResult, error) {
	res, err := o.policyRevoke(ctx, p)
	if res != nil && res.Revoked && policy.ClaudeAgrees(p.Rule) {
		res.HeldByClaude = o.claudeRuns(p.TaskID)
	}
	return res, err
}

// claudeRuns reports whether the task's claude runs, or with no task any
// task's.
func (o *Orchestrator) claudeRuns(taskID string) bool {
	if taskID != "" {
		a, err := o.get(taskID)
		return err == nil && a.view().agentPhase == agentUp
	}
	for _, a := range o.actors() {
		if a.view().agentPhase == agentUp {
			return true
		}
	}
	return false
}

func (o *Orchestrator) policyRevoke(ctx context.Context, p *protocol.PolicyRevokeParams) (*protocol.PolicyRevokeResult, error) {
	if p.Scope == protocol.GrantTask {
		a, err := o.get(p.TaskID)
		if err != nil {
			return nil, err
		}
		before := len(a.view().T.Grants)
		v, err := a.call(ctx, cmdRevoke{rule: p.Rule})
		if err != nil {
			return nil, err
		}
		return &protocol.PolicyRevokeResult{Revoked: len(v.T.Grants) < before}, nil
	}
	f := o.repoGrants()
	if p.Scope == protocol.GrantUser {
		var err error
		if f, err = userGrants(); err != nil {
			return nil, protocol.FailedPrecondition(err.Error(), "")
		}
	}
	ok, err := f.Revoke(p.Rule)
	if err != nil {
		return nil, protocol.FailedPrecondition("the policy file "+err.Error()+"; fix or remove it", "")
	}
	if ok {
		o.audit(p.TaskID, "policy.revoked", "user", map[string]any{"rule": p.Rule, "scope": p.Scope, "file": f.Path()})
	}
	return &protocol.PolicyRevokeResult{Revoked: ok}, nil
}

// revokeNote says, for the audit, whether a running claude keeps a revoked
// rule: only one handed to it with the allow-always answer, while it runs.
func revokeNote(rule string, agent agentPhase) string {
	switch {
	case !policy.ClaudeAgrees(rule):
		return "familiar asks again from the next call: the rule was never handed to claude"
	case agent != agentUp:
		return "familiar asks again from the next call: no claude that was handed the rule runs"
	}
	return "the claude running now keeps the rule until it stops"
}
