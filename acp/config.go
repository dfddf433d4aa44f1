package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/familiar-dev/familiar/protocol"
)

// A session's config options (ACP's session/set_config_option): the mode
// and the model. ACP 1.21 removed session/set_model; the model is a select
// of category "model".

// modelDefault passes no --model: claude's own choice (its settings or
// ANTHROPIC_MODEL).
const modelDefault = "default"

// modelChoices are the model aliases claude takes with --model: its
// --help names fable, opus and sonnet, and the alias list in 2.1.330's
// binary adds haiku (and variants such as opus[1m] left out here).
var modelChoices = []struct{ id, name, desc string }{
	{modelDefault, "Default", "claude's own choice: its settings, or ANTHROPIC_MODEL."},
	{"fable", "Fable", "The latest Fable model."},
	{"opus", "Opus", "The latest Opus model."},
	{"sonnet", "Sonnet", "The latest Sonnet model."},
	{"haiku", "Haiku", "The latest Haiku model: fastest."},
}

func (s *session) configOptions() []any {
	s.mu.Lock()
	mode, model, think, elevated, verbose, skills := s.mode, s.model, s.think, s.elevated, s.verbose, s.skills
	s.mu.Unlock()
	var modeOpts, modelOpts []any
	for _, m := range modes(mode).AvailableModes {
		modeOpts = append(modeOpts, map[string]any{"value": m.ID, "name": m.Name, "description": m.Description})
	}
	known := false
	for _, m := range modelChoices {
		modelOpts = append(modelOpts, map[string]any{"value": m.id, "name": m.name, "description": m.desc})
		known = known || m.id == model
	}
	if !known {
		// A task another client created with a model's full name: the
		// current value must be one of the options.
		modelOpts = append(modelOpts, map[string]any{"value": model, "name": model, "description": "The model this session's task runs on."})
	}
	opts := []any{
		map[string]any{"id": "mode", "name": "Mode", "category": "mode", "type": "select",
			"description": "What the task's agent may do.", "currentValue": mode, "options": modeOpts},
		map[string]any{"id": "model", "name": "Model", "category": "model", "type": "select",
			"description": "The model claude runs the session's task on; chosen before its first prompt.", "currentValue": model, "options": modelOpts},
		map[string]any{"id": optThink, "name": "Thinking", "category": "thought_level", "type": "select",
			"description":  "Whether the agent thinks step by step at claude's high effort (the think directive); chosen before the first prompt.",
			"currentValue": onOff(think), "options": []any{
				map[string]any{"value": valueOff, "name": "Normal", "description": "claude's own effort."},
				map[string]any{"value": valueOn, "name": "Think", "description": "Think step by step before acting, at high effort."},
			}},
		map[string]any{"id": optElevated, "name": "Elevated", "type": "select",
			"description":  "Elevated: the agent runs every tool call no deny rule matches without asking you; a deny rule still wins. Chosen before the first prompt.",
			"currentValue": onOff(elevated), "options": []any{
				map[string]any{"value": valueOff, "name": "Ask", "description": "Tool calls the policy does not allow are asked."},
				map[string]any{"value": valueOn, "name": "Elevated", "description": "Nothing is asked: every call no deny rule matches runs."},
			}},
		map[string]any{"id": optSkills, "name": "Skills", "type": "select",
			"description":  "The skills installed for the task's agent, from the repository's .familiar/skills and yours; chosen before the first prompt.",
			"currentValue": skills, "options": s.skillOptions(skills)},
	}
	if s.hooksShown() {
		opts = append(opts, map[string]any{"id": optVerbose, "name": "Hook calls", "type": "select",
			"description":  "The verbose directive: each Claude Code hook call of the task shown as a notice; chosen before the first prompt.",
			"currentValue": onOff(verbose), "options": []any{
				map[string]any{"value": valueOff, "name": "Hidden", "description": "Hook calls are not shown."},
				map[string]any{"value": valueOn, "name": "Shown", "description": "Each hook call (its name, tool and payload) is shown as a notice."},
			}})
	}
	return opts
}

// hooksShown: the verbose option is offered. Hook calls come from claude's
// hooks, which familiar installs under the PTY driver only (the stream
// driver answers claude's control requests instead), and are shown as
// notices, which only a client that takes them shows.
func (s *session) hooksShown() bool {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	return s.a.opts.Driver == string(protocol.DriverPTY) && s.a.notices
}

// The skills option's values besides a skill's name.
const (
	optSkills     = "skills"
	skillsDefault = "default" // task/create without skills: the profile's defaults
	skillsNone    = "none"
	skillsAll     = "all"
	// skillsStarted stands for the skills of a task this session was
	// loaded from: familiar's Task does not say them.
	skillsStarted = "started"
)

// skillOptions are the skills option's values: the profile's defaults,
// none, all, then each skill alone (a select takes one value; a skill
// named like one of the others is left out).
func (s *session) skillOptions(current string) []any {
	var defaults, all []string
	for _, sk := range s.skillList {
		all = append(all, sk.Name)
		if len(sk.DefaultFor) > 0 {
			defaults = append(defaults, fmt.Sprintf("%s for %s", sk.Name, strings.Join(sk.DefaultFor, ", ")))
		}
	}
	def := "The default skills of the task's profile: none."
	if len(defaults) > 0 {
		def = "The default skills of the task's profile (" + strings.Join(defaults, "; ") + ")."
	}
	out := []any{map[string]any{"value": skillsDefault, "name": "Profile's defaults", "description": def},
		map[string]any{"value": skillsNone, "name": "None", "description": "No skills."}}
	if len(all) > 0 {
		out = append(out, map[string]any{"value": skillsAll, "name": "All", "description": "Every skill: " + strings.Join(all, ", ") + "."})
	}
	for _, sk := range s.skillList {
		if reservedSkillValue(sk.Name) {
			continue
		}
		where := "yours"
		if sk.Source == protocol.SourceWorkspace {
			where = "the repository's"
		}
		desc := sk.Description
		if desc == "" {
			desc = sk.Name
		}
		out = append(out, map[string]any{"value": sk.Name, "name": sk.Name, "description": fmt.Sprintf("Only this skill (%s): %s", where, desc)})
	}
	if current == skillsStarted {
		out = append(out, map[string]any{"value": skillsStarted, "name": "As the task started", "description": "The skills the session's task was created with."})
	}
	return out
}

func reservedSkillValue(v string) bool {
	return v == skillsDefault || v == skillsNone || v == skillsAll || v == skillsStarted
}

// taskSkills are task/create's skills for the option's value: nil (absent:
// the profile's defaults), none, every skill, or one.
func (s *session) taskSkills(v string) []string {
	switch v {
	case skillsDefault, skillsStarted, "":
		return nil
	case skillsNone:
		return []string{}
	case skillsAll:
		out := []string{}
		for _, sk := range s.skillList {
			out = append(out, sk.Name)
		}
		return out
	}
	return []string{v}
}

// setSkills chooses the skills of the session's next task; a task already
// started keeps its own (they are installed when its agent starts).
func (s *session) setSkills(v string) error {
	s.mu.Lock()
	same := v == s.skills
	s.mu.Unlock()
	if same {
		return nil
	}
	ok := v == skillsDefault || v == skillsNone || v == skillsAll
	var names []string
	for _, sk := range s.skillList {
		names = append(names, sk.Name)
		ok = ok || (sk.Name == v && !reservedSkillValue(v))
	}
	if !ok {
		return invalidParams("value", fmt.Sprintf("Unknown skills value %q: default, none, all or a skill's name (%s).", v, strings.Join(names, ", ")))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taskID != "" && v != s.skills {
		return &rpcError{Code: codeInvalidRequest, Message: fmt.Sprintf(
			"This session's task started with its skills, which hold for the task. Start a new session for skills %s.", v),
			Data: map[string]string{"field": "value"}}
	}
	s.skills = v
	return nil
}

// elevatedWarning is said when a session turns elevated on: familiar's
// warning before autonomy (orchestrator autonomyWarnings), for this session.
const elevatedWarning = "This session's task will be elevated: its agent runs every tool call no deny rule matches without asking you. A deny rule still wins."

// The think and elevated options (task/create's directives): on or off.
const (
	optThink    = "think"
	optElevated = "elevated"
	optVerbose  = "verbose"
	valueOn     = "on"
	valueOff    = "off"
)

func onOff(b bool) string {
	if b {
		return valueOn
	}
	return valueOff
}

// setDirective sets the think or elevated directive of the session's next
// task. Directives are fixed when a task is created, so a session whose
// task runs keeps its own.
func (s *session) setDirective(id, v string) error {
	if v != valueOn && v != valueOff {
		return invalidParams("value", fmt.Sprintf("Option %q is on or off, not %q.", id, v))
	}
	on := v == valueOn
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := &s.think
	switch id {
	case optElevated:
		cur = &s.elevated
	case optVerbose:
		cur = &s.verbose
	}
	if s.taskID != "" && *cur != on {
		return &rpcError{Code: codeInvalidRequest, Message: fmt.Sprintf(
			"This session's task was created with %s %s, which holds for the task. Start a new session for %s %s.", id, onOff(*cur), id, v),
			Data: map[string]string{"field": "value"}}
	}
	*cur = on
	return nil
}

// setConfig is session/set_config_option; it answers every option as it
// is now.
func (s *session) setConfig(ctx context.Context, p setConfigParams) (any, error) {
	var v string
	if err := json.Unmarshal(p.Value, &v); err != nil {
		return nil, invalidParams("value", fmt.Sprintf("Option %q takes a value id (a string).", p.ConfigID))
	}
	switch p.ConfigID {
	case "mode":
		if err := s.setModeTo(ctx, v, "value"); err != nil {
			return nil, err
		}
	case "model":
		if err := s.setModel(v); err != nil {
			return nil, err
		}
		s.reprepare()
	case optVerbose:
		if !s.hooksShown() {
			return nil, invalidParams("configId", "Option verbose (hook calls as notices) is offered to clients that take notices, with familiar acp --driver pty: under the stream driver claude runs no hooks.")
		}
		if err := s.setDirective(p.ConfigID, v); err != nil {
			return nil, err
		}
		s.reprepare()
	case optThink, optElevated:
		s.mu.Lock()
		was := s.elevated
		s.mu.Unlock()
		if err := s.setDirective(p.ConfigID, v); err != nil {
			return nil, err
		}
		s.reprepare()
		if p.ConfigID == optElevated && v == valueOn && !was {
			// familiar's warning before autonomy, in this session: familiar
			// sends its own once per workspace, which an editor that joined
			// later never hears.
			s.warn(protocol.LevelWarning, elevatedWarning)
		}
	case optSkills:
		if err := s.setSkills(v); err != nil {
			return nil, err
		}
		s.reprepare()
	case "":
		return nil, invalidParams("configId", "configId is required.")
	default:
		return nil, invalidParams("configId", fmt.Sprintf("Unknown config option %q: mode, model, think, elevated, verbose or skills.", p.ConfigID))
	}
	return map[string]any{"configOptions": s.configOptions()}, nil
}

// setModel chooses the model of the session's next task. claude keeps its
// model for a whole session, so a task already started keeps its own.
func (s *session) setModel(model string) error {
	var ids []string
	ok := false
	for _, m := range modelChoices {
		ids = append(ids, m.id)
		ok = ok || m.id == model
	}
	if !ok {
		return invalidParams("value", fmt.Sprintf("Unknown model %q: %s.", model, strings.Join(ids, ", ")))
	}
	s.mu.Lock()
	cur, started := s.model, s.taskID != ""
	s.mu.Unlock()
	if started && model != cur {
		name := cur
		if cur == modelDefault {
			name = "claude's default model"
		}
		return &rpcError{Code: codeInvalidRequest, Message: fmt.Sprintf(
			"This session's task already runs on %s, and claude keeps its model for a whole session. Start a new session for %s.", name, model),
			Data: map[string]string{"field": "value"}}
	}
	s.mu.Lock()
	s.model = model
	s.mu.Unlock()
	return nil
}

// statusWords says a task status the way a person reads it (the
// protocol's table: familiar's status names are not for the person).
func statusWords(st protocol.Status) string { return st.Words() }
