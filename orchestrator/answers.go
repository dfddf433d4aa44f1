package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/grants"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/texts"
)

// Issue 17's methods: a prose question marked done, whole texts behind
// clipped ones, and allow-always grants that outlive the session.

// texts is the store of a task's whole texts: clipped ones under its
// directory, and the tool outputs claude persisted in its config dir.
func (o *Orchestrator) texts(id string) *texts.Store {
	dir := o.taskDir(id)
	return texts.New(dir, filepath.Join(dir, "claude"))
}

// clipText clips s for a question or a summary, keeping the whole behind a
// reference. A failure to store is logged: the clipped text still goes out.
func (o *Orchestrator) clipText(id, s string) (clipped, ref string) {
	clipped, ref, err := o.texts(id).Clip(s, maxText)
	if err != nil {
		o.logger.Warn("store clipped text", "task", id, "err", err)
		c, _ := clip(s)
		return c, ""
	}
	return clipped, ref
}

// TaskText is task/text.
func (o *Orchestrator) TaskText(ctx context.Context, p *protocol.TaskTextParams) (*protocol.TaskTextResult, error) {
	if _, err := o.get(p.ID); err != nil {
		return nil, err
	}
	page, err := o.texts(p.ID).Read(p.Ref, p.Offset, p.EffectiveLimit())
	switch {
	case errors.Is(err, texts.ErrInvalidRef):
		return nil, protocol.InvalidParams("ref", err.Error())
	case errors.Is(err, texts.ErrNotFound):
		return nil, protocol.NotFound("text", p.Ref)
	case errors.Is(err, texts.ErrBadRange):
		return nil, protocol.InvalidParams("offset", err.Error())
	case err != nil:
		return nil, fmt.Errorf("read text: %w", err)
	}
	// Secrets are masked in what familiar sends, as everywhere else; the
	// offsets stay those of the whole text.
	return &protocol.TaskTextResult{Data: o.maskString(page.Data), Offset: page.Offset, NextOffset: page.NextOffset,
		Size: page.Size, Truncated: page.More}, nil
}

// TaskMarkDone is task/markDone.
func (o *Orchestrator) TaskMarkDone(ctx context.Context, p *protocol.TaskMarkDoneParams) (*protocol.Task, error) {
	v, err := o.command(ctx, p.ID, cmdMarkDone{questionID: p.QuestionID})
	if err != nil {
		return nil, err
	}
	return o.viewOf(v), nil
}

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
		o.mu.Lock()
		actors := o.actorsLocked()
		o.mu.Unlock()
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
// every question familiar decides; a session that is running keeps the rule
// the CLI was given with the allow-always answer until it restarts (the
// audit entry says so).
func (o *Orchestrator) PolicyRevoke(ctx context.Context, p *protocol.PolicyRevokeParams) (*protocol.PolicyRevokeResult, error) {
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

// Service delegations.

func (s *Service) TaskMarkDone(ctx context.Context, p *protocol.TaskMarkDoneParams) (*protocol.Task, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.TaskMarkDone(ctx, p)
}

func (s *Service) TaskText(ctx context.Context, p *protocol.TaskTextParams) (*protocol.TaskTextResult, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.TaskText(ctx, p)
}

func (s *Service) PolicyList(ctx context.Context, p *protocol.PolicyListParams) (*protocol.PolicyListResult, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.PolicyList(ctx, p)
}

func (s *Service) PolicyRevoke(ctx context.Context, p *protocol.PolicyRevokeParams) (*protocol.PolicyRevokeResult, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.PolicyRevoke(ctx, p)
}

func (s *Service) QueueMerge(ctx context.Context, p *protocol.QueueMergeParams) (*protocol.Queue, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.QueueMerge(ctx, p)
}

func (s *Service) QueueStatus(ctx context.Context, p *protocol.QueueStatusParams) (*protocol.QueueStatusResult, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.QueueStatus(ctx, p)
}

func (s *Service) QueueCancel(ctx context.Context, p *protocol.QueueCancelParams) (*protocol.Queue, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.QueueCancel(ctx, p)
}

func (s *Service) QueueUndo(ctx context.Context, p *protocol.QueueUndoParams) (*protocol.Queue, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.QueueUndo(ctx, p)
}
