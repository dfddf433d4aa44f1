package protocol

import (
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Validate methods check what can be checked without state: required fields,
// enum values, ranges and shapes. They return nil or an *Error with code
// -32602 whose data.field is the JSON path of the first offending field.
// Checks that need state (does the task exist, is the path inside the
// workspace) belong to the orchestrator, which reports them with the same
// constructors.

func (p *InitializeParams) Validate() error {
	var c checker
	if c.required("workspaceRoot", p.WorkspaceRoot) && !filepath.IsAbs(p.WorkspaceRoot) {
		c.fail("workspaceRoot", "workspaceRoot must be an absolute path, not %q.", p.WorkspaceRoot)
	}
	if p.Settings != nil {
		p.Settings.validate(&c, "settings")
	}
	return c.result()
}

func (p *SettingsUpdateParams) Validate() error {
	var c checker
	if p.Settings == nil {
		c.fail("settings", "settings is required.")
	} else {
		p.Settings.validate(&c, "settings")
	}
	return c.result()
}

// Validate checks a complete Settings, e.g. one read from a file.
func (s Settings) Validate() error {
	var c checker
	s.asUpdate().validate(&c, "")
	return c.result()
}

func (s Settings) asUpdate() *SettingsUpdate {
	return &SettingsUpdate{
		MaxConcurrent:        &s.MaxConcurrent,
		DefaultProfile:       &s.DefaultProfile,
		DefaultDriver:        &s.DefaultDriver,
		ApprovalTimeoutSec:   &s.ApprovalTimeoutSec,
		NoProgressTimeoutSec: &s.NoProgressTimeoutSec,
		TermGraceSec:         &s.TermGraceSec,
		McpServers:           s.McpServers,
		OutputRetentionDays:  &s.OutputRetentionDays,
		UndoWindowSec:        &s.UndoWindowSec,
		PermissionPolicy:     &s.PermissionPolicy,
		IdleExitSec:          &s.IdleExitSec,
		CommandTimeoutSec:    &s.CommandTimeoutSec,
		MaxBudgetUsd:         &s.MaxBudgetUsd,
		AgentNice:            &s.AgentNice,
		MergeVerify:          &s.MergeVerify,
		TestCommands:         &s.TestCommands,
	}
}

func (u *SettingsUpdate) Validate() error {
	var c checker
	u.validate(&c, "")
	return c.result()
}

func (u *SettingsUpdate) validate(c *checker, prefix string) {
	f := func(name string) string { return join(prefix, name) }
	c.intPtrRange(f("maxConcurrent"), u.MaxConcurrent, 1, MaxConcurrentLimit)
	if u.DefaultDriver != nil {
		enum(c, f("defaultDriver"), *u.DefaultDriver, Drivers)
	}
	c.intPtrRange(f("approvalTimeoutSec"), u.ApprovalTimeoutSec, MinApprovalTimeoutSec, MaxTimeoutSec)
	c.intPtrRange(f("noProgressTimeoutSec"), u.NoProgressTimeoutSec, MinNoProgressTimeoutSec, MaxTimeoutSec)
	c.intPtrRange(f("termGraceSec"), u.TermGraceSec, 0, MaxTermGraceSec)
	c.intPtrRange(f("outputRetentionDays"), u.OutputRetentionDays, 1, MaxOutputRetentionDays)
	c.intPtrRange(f("undoWindowSec"), u.UndoWindowSec, 0, MaxUndoWindowSec)
	c.intPtrRange(f("idleExitSec"), u.IdleExitSec, 0, MaxTimeoutSec)
	c.intPtrRange(f("commandTimeoutSec"), u.CommandTimeoutSec, MinNoProgressTimeoutSec, MaxTimeoutSec)
	c.intPtrRange(f("agentNice"), u.AgentNice, 0, MaxAgentNice)
	c.intPtrRange(f("warmAgentSec"), u.WarmAgentSec, 0, MaxTimeoutSec)
	c.intPtrRange(f("warmAgentMax"), u.WarmAgentMax, 1, MaxConcurrentLimit)
	c.intPtrRange(f("warmAgentMemoryMiB"), u.WarmAgentMemoryMiB, 100, MaxWarmAgentMemoryMiB)
	c.intPtrRange(f("queueParallel"), u.QueueParallel, 0, MaxConcurrentLimit)
	if u.Sandbox != nil && !slices.Contains([]string{SandboxOn, SandboxOff, SandboxRequired}, *u.Sandbox) {
		c.fail(f("sandbox"), "must be %q, %q or %q, not %q.", SandboxOn, SandboxOff, SandboxRequired, *u.Sandbox)
	}
	budget(c, f("maxBudgetUsd"), u.MaxBudgetUsd)
	if u.TestCommands != nil {
		for i, cmd := range *u.TestCommands {
			if strings.TrimSpace(cmd) == "" || strings.ContainsAny(cmd, "\n\r") {
				c.fail(index(f("testCommands"), i), "a test command is one line such as \"go test\", not %q.", cmd)
			}
		}
	}
	validateMcpServers(c, f("mcpServers"), u.McpServers)
	if u.PermissionPolicy != nil {
		u.PermissionPolicy.validate(c, f("permissionPolicy"))
	}
}

func validateMcpServers(c *checker, field string, servers map[string]McpServer) {
	// Sorted, so the same params always report the same field first.
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		s := servers[name]
		if strings.TrimSpace(name) == "" || strings.ContainsFunc(name, isSpaceOrControl) {
			c.fail(field, "MCP server names must be non-empty and contain no spaces, not %q.", name)
		}
		s.validate(c, field+"."+name)
	}
}

// Validate checks one MCP server config.
func (s McpServer) Validate() error {
	var c checker
	s.validate(&c, "")
	return c.result()
}

func (s McpServer) validate(c *checker, field string) {
	if !enum(c, join(field, "type"), s.Type, McpServerTypes) {
		return
	}
	switch s.Type {
	case McpStdio:
		c.required(join(field, "command"), s.Command)
	case McpHTTP, McpSSE:
		if !c.required(join(field, "url"), s.URL) {
			return
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.fail(join(field, "url"), "%s must be an http or https URL.", join(field, "url"))
		}
	}
}

// ruleSyntax is the shape of a Claude permission rule: a tool name, then
// optionally a specifier in parentheses ("Bash(go test:*)").
var ruleSyntax = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*(\(.*\))?$`)

// Validate checks a permission policy.
func (p Policy) Validate() error {
	var c checker
	p.validate(&c, "")
	return c.result()
}

func (p Policy) validate(c *checker, field string) {
	enum(c, join(field, "default"), p.Default, PolicyDefaults)
	for _, list := range []struct {
		name  string
		rules []string
	}{{"allow", p.Allow}, {"deny", p.Deny}} {
		for i, r := range list.rules {
			f := index(join(field, list.name), i)
			if !ruleSyntax.MatchString(r) {
				c.fail(f, "%s must be a permission rule such as \"Read\" or \"Bash(go test:*)\", not %q.", f, r)
			}
		}
	}
}

func (p *TaskCreateParams) Validate() error {
	var c checker
	c.required("title", p.Title)
	c.required("description", p.Description)
	for i, s := range p.AcceptanceCriteria {
		c.required(index("acceptanceCriteria", i), s)
	}
	optionalEnum(&c, "type", p.Type, TaskTypes)
	optionalEnum(&c, "mode", p.Mode, Modes)
	optionalEnum(&c, "driver", p.Driver, Drivers)
	// baseRef ends up as a git argument; refusing a leading "-" here keeps
	// user text from ever being read as an option, whatever git code follows.
	if p.BaseRef != "" && (strings.HasPrefix(p.BaseRef, "-") || strings.ContainsFunc(p.BaseRef, isSpaceOrControl)) {
		c.fail("baseRef", "baseRef must name a branch, tag or commit, not %q.", p.BaseRef)
	}
	validateMcpServers(&c, "mcpServers", p.McpServers)
	for i, s := range p.Skills {
		c.required(index("skills", i), s)
	}
	if p.Hints != nil {
		for i, f := range p.Hints.Files {
			if c.required(index("hints.files", i), f) && strings.ContainsRune(f, 0) {
				c.fail(index("hints.files", i), "%s must not contain a NUL byte.", index("hints.files", i))
			}
		}
	}
	c.intPtrRange("noProgressTimeoutSec", p.NoProgressTimeoutSec, MinNoProgressTimeoutSec, MaxTimeoutSec)
	c.intPtrRange("commandTimeoutSec", p.CommandTimeoutSec, MinNoProgressTimeoutSec, MaxTimeoutSec)
	c.intPtrRange("warmAgentSec", p.WarmAgentSec, 0, MaxTimeoutSec)
	budget(&c, "maxBudgetUsd", p.MaxBudgetUsd)
	if p.PermissionPolicy != nil {
		p.PermissionPolicy.validate(&c, "permissionPolicy")
	}
	return c.result()
}

// Validate checks task/prepare's params as task/create's, less the title
// and description it does not have yet.
func (p *TaskPrepareParams) Validate() error {
	c := p.TaskCreateParams
	if c.Title == "" {
		c.Title = "-"
	}
	if c.Description == "" {
		c.Description = "-"
	}
	if c.Prepared != "" {
		return InvalidParams("prepared", "task/prepare takes no prepared id.")
	}
	return c.Validate()
}

func (p *TaskIDParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	return c.result()
}

func (p *TaskRetryParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	return c.result()
}

func (p *TaskListParams) Validate() error {
	var c checker
	for i, s := range p.Status {
		enum(&c, index("status", i), s, Statuses)
	}
	c.intRange("limit", p.Limit, 0, MaxTaskListLimit)
	c.timeOrder(p.Since, p.Until)
	optionalEnum(&c, "archived", p.Archived, ArchivedFilters)
	return c.result()
}

func (p *TaskArchiveParams) Validate() error {
	var c checker
	if len(p.IDs) == 0 && p.FinishedBefore.IsZero() {
		c.fail("ids", "ids or finishedBefore is required.")
	}
	for i, id := range p.IDs {
		c.required(index("ids", i), id)
	}
	return c.result()
}

func (p *TaskRespondParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	c.required("questionId", p.QuestionID)
	if p.OptionID == "" && p.Text == "" {
		c.fail("optionId", "optionId or text is required.")
	}
	if raw := bytes.TrimSpace(p.UpdatedInput); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) && raw[0] != '{' {
		c.fail("updatedInput", "updatedInput must be an object.")
	}
	if p.GrantScope != "" {
		enum(&c, "grantScope", p.GrantScope, GrantScopes)
	}
	return c.result()
}

func (p *TaskSendParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	c.required("text", p.Text)
	return c.result()
}

func (p *TaskInputParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	// Whitespace alone ("\r", " ") is real input, so only emptiness is checked.
	if p.Data == "" {
		c.fail("data", "data is required.")
	}
	return c.result()
}

func (p *TaskResizeParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	c.intRange("cols", p.Cols, 1, MaxTerminalSize)
	c.intRange("rows", p.Rows, 1, MaxTerminalSize)
	return c.result()
}

func (p *TaskOutputParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	if p.Offset < 0 {
		c.fail("offset", "offset must not be negative, not %d.", p.Offset)
	}
	c.intRange("limit", p.Limit, 0, MaxOutputLimit)
	return c.result()
}

func (p *TaskReorderParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	if p.Priority == nil && p.Before == "" {
		c.fail("priority", "priority or before is required.")
	}
	if p.Before != "" && p.Before == p.ID {
		c.fail("before", "before must name another task.")
	}
	return c.result()
}

func (p *TaskSetModeParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	enum(&c, "mode", p.Mode, Modes)
	return c.result()
}

func (p *TaskDiffParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	if strings.ContainsRune(p.Path, 0) {
		c.fail("path", "path must not contain a NUL byte.")
	}
	return c.result()
}

func (p *TaskMergeParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	optionalEnum(&c, "strategy", p.Strategy, MergeStrategies)
	if p.Paths != nil && len(p.Paths) == 0 {
		c.fail("paths", "paths must name at least one file to keep; leave it out to merge every file.")
	}
	for _, path := range p.Paths {
		if path == "" || strings.ContainsAny(path, "\x00\n") {
			c.fail("paths", "paths must be the task's changed files, not %q.", path)
			break
		}
	}
	return c.result()
}

func (p *TaskRemoveParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	return c.result()
}

func (p *TaskEventsParams) Validate() error {
	var c checker
	if p.SinceSeq < 0 {
		c.fail("sinceSeq", "sinceSeq must not be negative, not %d.", p.SinceSeq)
	}
	c.intRange("limit", p.Limit, 0, MaxEventsLimit)
	return c.result()
}

func (p *ProfilesListParams) Validate() error { return nil }
func (p *SkillsListParams) Validate() error   { return nil }
func (p *McpPresetsParams) Validate() error   { return nil }
func (p *ServerStatsParams) Validate() error  { return nil }
func (p *ServerStopParams) Validate() error   { return nil }

func (p *SkillsGetParams) Validate() error {
	var c checker
	c.required("name", p.Name)
	return c.result()
}

func (p *McpCheckParams) Validate() error {
	var c checker
	validateMcpServers(&c, "servers", p.Servers)
	return c.result()
}

func (p *AuditListParams) Validate() error {
	var c checker
	c.intRange("limit", p.Limit, 0, MaxAuditLimit)
	c.timeOrder(p.Since, p.Until)
	return c.result()
}

// checker keeps the first failure, so a client fixes one field at a time in
// the order the fields are declared.
type checker struct{ err *Error }

func (c *checker) fail(field, format string, args ...any) {
	if c.err == nil {
		c.err = InvalidParams(field, fmt.Sprintf(format, args...))
	}
}

// result returns a nil error, not a nil *Error in an error interface.
func (c *checker) result() error {
	if c.err == nil {
		return nil
	}
	return c.err
}

// required reports whether s has content.
func (c *checker) required(field, s string) bool {
	if strings.TrimSpace(s) == "" {
		c.fail(field, "%s is required.", field)
		return false
	}
	return true
}

type enumeration interface {
	~string
	Valid() bool
}

// enum requires v to be one of all; it reports whether it is. (A function,
// not a method, because methods cannot have type parameters.)
func enum[T enumeration](c *checker, field string, v T, all []T) bool {
	if v.Valid() {
		return true
	}
	names := make([]string, len(all))
	for i, a := range all {
		names[i] = string(a)
	}
	if v == "" {
		c.fail(field, "%s is required; use one of %s.", field, strings.Join(names, ", "))
	} else {
		c.fail(field, "%s must be one of %s, not %q.", field, strings.Join(names, ", "), string(v))
	}
	return false
}

// optionalEnum checks v only when it is set.
func optionalEnum[T enumeration](c *checker, field string, v T, all []T) {
	if v != "" {
		enum(c, field, v, all)
	}
}

func (c *checker) intRange(field string, v, lo, hi int) {
	if v < lo || v > hi {
		c.fail(field, "%s must be between %d and %d, not %d.", field, lo, hi, v)
	}
}

func (c *checker) intPtrRange(field string, v *int, lo, hi int) {
	if v != nil {
		c.intRange(field, *v, lo, hi)
	}
}

func (c *checker) timeOrder(since, until Time) {
	if !since.IsZero() && !until.IsZero() && until.Before(since.Time) {
		c.fail("until", "until must not be before since.")
	}
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func index(field string, i int) string { return fmt.Sprintf("%s[%d]", field, i) }

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

// budget checks a spending limit in USD: 0 (none) or positive, finite, and
// below a bound that catches cents typed as dollars times a thousand.
func budget(c *checker, field string, v *float64) {
	if v == nil {
		return
	}
	if !(*v >= 0 && *v <= MaxBudgetUsd) {
		c.fail(field, "%s must be between 0 (no limit) and %d, not %v.", field, MaxBudgetUsd, *v)
	}
}

// MaxBudgetUsd is the largest maxBudgetUsd accepted.
const MaxBudgetUsd = 100000
