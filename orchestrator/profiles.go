package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/familiar-dev/familiar/mcp"
	"github.com/familiar-dev/familiar/profiles"
	"github.com/familiar-dev/familiar/protocol"
)

// buildSpec renders a task's prompt and flags from its profile. tracked may
// be nil (at create, before the worktree exists).
func (o *Orchestrator) buildSpec(t *persisted, others []string, tracked []string) (profiles.Spec, error) {
	skills, err := o.skills().Resolve(t.Skills)
	if err != nil {
		return profiles.Spec{}, protocol.InvalidParams("skills", err.Error())
	}
	tests, err := o.testCommands()
	if err != nil {
		return profiles.Spec{}, err
	}
	req := profiles.Request{
		TestCommands: tests,
		Context: profiles.Context{
			Title: t.T.Title, Description: t.T.Description, AcceptanceCriteria: t.T.AcceptanceCriteria,
			Type: string(t.T.Type), Mode: string(t.T.Mode), OtherTasks: others,
		},
		Profile:        t.T.Profile,
		PromptOverride: t.PromptOverride,
		Think:          t.Directives != nil && t.Directives.Think,
		Skills:         skills,
		Tracked:        tracked,
	}
	if t.Hints != nil {
		req.Notes, req.HintFiles = t.Hints.Notes, t.Hints.Files
	}
	if t.Prior != nil {
		req.PriorAttempt = &profiles.Attempt{Summary: t.Prior.Summary, BlockedReason: t.Prior.BlockedReason, LastError: t.Prior.LastError}
	}
	spec, err := profiles.Load(o.dirs).Build(req)
	if err != nil {
		// A profile's file or name is the profile's fault; any other
		// invalid value the mode's.
		field := "profile"
		if errors.Is(err, profiles.ErrInvalid) && !errors.As(err, new(*profiles.FileError)) {
			field = "mode"
		}
		return spec, mapError(err, "", field)
	}
	return spec, nil
}

func (o *Orchestrator) skills() *profiles.Skills {
	if o.cfg.Skills != nil {
		return o.cfg.Skills
	}
	return profiles.LoadSkills(o.dirs)
}

// mcpServers converts protocol MCP configs to package mcp's (same JSON).
func mcpServers(in map[string]protocol.McpServer) map[string]mcp.Server {
	if in == nil {
		return nil
	}
	out := make(map[string]mcp.Server, len(in))
	for name, s := range in {
		b, _ := json.Marshal(s)
		var m mcp.Server
		_ = json.Unmarshal(b, &m)
		out[name] = m
	}
	return out
}

// ProfilesList is profiles/list.
func (o *Orchestrator) ProfilesList(ctx context.Context) ([]protocol.Profile, error) {
	var out []protocol.Profile
	for _, p := range profiles.Load(o.dirs).List() {
		pp := protocol.Profile{Name: p.Name, Description: p.Description, Source: protocol.Source(p.Source), Skills: p.Skills}
		for _, tt := range p.TaskTypes {
			pp.TaskTypes = append(pp.TaskTypes, protocol.TaskType(tt))
		}
		out = append(out, pp)
	}
	return out, nil
}

// SkillsList is skills/list.
func (o *Orchestrator) SkillsList(ctx context.Context) ([]protocol.Skill, error) {
	defaultFor := map[string][]string{}
	for _, p := range profiles.Load(o.dirs).List() {
		for _, s := range p.Skills {
			defaultFor[s] = append(defaultFor[s], p.Name)
		}
	}
	var out []protocol.Skill
	for _, s := range o.skills().List() {
		v := skillView(s)
		v.DefaultFor = defaultFor[s.Name]
		out = append(out, v)
	}
	return out, nil
}

// SkillsGet is skills/get.
func (o *Orchestrator) SkillsGet(ctx context.Context, name string) (*protocol.SkillDetail, error) {
	s, ok := o.skills().Get(name)
	if !ok {
		return nil, protocol.NotFound("skill", name)
	}
	return &protocol.SkillDetail{Skill: skillView(s), Content: s.Content}, nil
}

func skillView(s profiles.Skill) protocol.Skill {
	return protocol.Skill{Name: s.Name, Description: s.Description, Mode: protocol.Mode(s.Mode), Source: protocol.Source(s.Source), Path: s.Path}
}

// OnSkillsChanged announces a reload of the skills (skills/changed).
func (o *Orchestrator) OnSkillsChanged(c profiles.SkillsChange) {
	n := protocol.SkillsChangedNotification{Added: c.Added, Updated: c.Updated, Removed: c.Removed}
	for _, e := range c.Errors {
		n.Errors = append(n.Errors, protocol.SkillError{Path: e.Path, Line: e.Line, Message: e.Error()})
	}
	o.pub.publish("", n)
	o.updateRunningSkills(c)
}

// updateRunningSkills rewrites the installed copy of a changed skill in every
// live task that uses it, at once. Claude re-reads its skills while it runs
// (from its first request ~4 s after the write, measured with 2.1.330), so
// the task says so rather than restarting.
func (o *Orchestrator) updateRunningSkills(c profiles.SkillsChange) {
	if len(c.Updated) == 0 && len(c.Removed) == 0 {
		return
	}
	actors := o.actors()
	for _, a := range actors {
		v := a.view()
		if !v.T.Status.Live() {
			continue // a later start installs the current copies
		}
		changed, err := profiles.UpdateInstalled(filepath.Join(o.taskDir(a.id), "claude"), o.skills(), c)
		if err != nil {
			o.logger.Warn("update installed skills", "task", a.id, "err", err)
		}
		if len(changed) > 0 {
			o.pub.publish(a.id, protocol.ServerMessageNotification{Level: protocol.LevelInfo,
				Text: fmt.Sprintf("task %s: skill %s updated in the running session; claude picks the change up within a few seconds, from its next request", a.id, strings.Join(changed, ", "))})
		}
	}
}

// McpPresets is mcp/presets.
func (o *Orchestrator) McpPresets(ctx context.Context) ([]protocol.McpPreset, error) {
	var out []protocol.McpPreset
	for _, p := range mcp.Presets("") {
		b, _ := json.Marshal(p.Server)
		var s protocol.McpServer
		_ = json.Unmarshal(b, &s)
		out = append(out, protocol.McpPreset{Name: p.Name, Server: s, Requires: p.Requires})
	}
	return out, nil
}

// McpCheck is mcp/check: the given servers, or the settings'.
func (o *Orchestrator) McpCheck(ctx context.Context, servers map[string]protocol.McpServer) (*protocol.McpCheckResult, error) {
	if servers == nil {
		servers = o.settingsNow().McpServers
	}
	res := &protocol.McpCheckResult{}
	for _, r := range (mcp.Checker{}).Check(ctx, mcpServers(servers)) {
		res.Servers = append(res.Servers, protocol.McpServerCheck{Name: r.Name, Available: r.Available, Problem: r.Problem})
	}
	return res, nil
}

// prepareMCP writes the task's --mcp-config file and warns about servers
// that will not start.
func (o *Orchestrator) prepareMCP(ctx context.Context, id, dir, worktree string, session, task map[string]protocol.McpServer) (string, error) {
	if len(session) == 0 && len(task) == 0 {
		return "", nil
	}
	merged := mcp.Merge(mcpServers(session), mcpServers(task))
	for _, r := range (mcp.Checker{}).Check(ctx, merged) {
		if r.Problem != "" {
			o.pub.publish(id, protocol.ServerMessageNotification{Level: protocol.LevelWarning,
				Text: fmt.Sprintf("task %s: MCP server %s: %s", id, r.Name, r.Problem)})
		}
	}
	path, err := mcp.Prepare(dir, mcpServers(session), mcpServers(task), mcp.Env{Worktree: worktree})
	if err != nil {
		return "", fmt.Errorf("MCP config: %w", err)
	}
	return path, nil
}

// installSkills puts the task's skills where claude reads them: the skills
// dir of the session's own config dir. Not in the worktree, where they would
// end up in the task's commits. Stale ones from an earlier start go.
func (o *Orchestrator) installSkills(configDir string, names []string) error {
	skills, err := o.skills().Resolve(names)
	if err != nil {
		return protocol.InvalidParams("skills", err.Error())
	}
	return profiles.InstallSkills(configDir, skills)
}
