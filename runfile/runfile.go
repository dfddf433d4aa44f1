package runfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/familiar-dev/familiar/plan"
	"github.com/familiar-dev/familiar/protocol"
	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds a tasks file. A real one is a few kilobytes; the limit
// keeps a wrong path (a log, a binary) from being read whole into memory.
const MaxFileSize = 8 << 20

// DefaultConcurrency is Settings.Concurrency when the file sets none, the
// same as settings/update's maxConcurrent default.
const DefaultConcurrency = protocol.DefaultMaxConcurrent

// File is a parsed, validated tasks file.
type File struct {
	Path     string
	Settings Settings
	// Tasks are in file order; each has passed Validate, and one without a
	// baseRef has Settings.BaseRef.
	Tasks []protocol.TaskCreateParams
	// Lines[i] is the line of Tasks[i] in the file, for messages about a
	// task while it runs.
	Lines []int
	// Plan is the file's tasks as a plan's steps, when a task says what it
	// needs (needs:): the run is then a plan, each task starting once the
	// tasks it needs are merged, each merged through the merge queue as it
	// finishes. Nil otherwise.
	Plan []protocol.PlanStepSpec
}

// Settings are the run settings of a tasks file. Zero values mean familiar's
// default unless said otherwise.
type Settings struct {
	// Concurrency is how many tasks run at once (maxConcurrent); 1..64,
	// DefaultConcurrency when the file sets none.
	Concurrency int
	// Driver is the driver of the tasks that name none ("": familiar's
	// defaultDriver). Unlike BaseRef it is not copied into the tasks, so
	// that the run's settings/update can carry it.
	Driver protocol.Driver
	// BaseRef has already been applied to the tasks that name none; it is
	// kept for the report.
	BaseRef string
	// PermissionPolicy is the only source of permissions in a headless run;
	// nil when the file has none.
	PermissionPolicy *protocol.Policy
	// ApprovalTimeoutSec is how long a permission request no policy rule
	// decides may wait before it is denied (0: familiar's default).
	ApprovalTimeoutSec int
	// NoProgressTimeoutSec is 0 for familiar's default; a task's own
	// noProgressTimeoutSec wins over it.
	NoProgressTimeoutSec int
	// TermGraceSec is nil when the file sets none, because 0 (kill at once)
	// is a real value.
	TermGraceSec *int
	// CommandTimeoutSec (0: familiar's default) bounds a silent command;
	// MaxBudgetUsd (0: none) stops a task that has spent it. A task's own
	// value wins.
	CommandTimeoutSec int
	MaxBudgetUsd      float64
	// Sandbox is familiar's sandbox setting for the run ("": the
	// setting's default, on).
	Sandbox string
	// Merge is "queue" when the run ends by merging its finished tasks
	// through the merge queue ("": the tasks are left ready to merge).
	// Verify is the queue's verify command (nil: familiar's mergeVerify or
	// the repository's .familiar/config.yaml); MergeStrategy its strategy.
	Merge         string
	Verify        *string
	MergeStrategy protocol.MergeStrategy
}

// MergeQueue is Settings.Merge's one value.
const MergeQueue = "queue"

// Error is what is wrong with a tasks file and where. Line and Column are
// 1-based; 0 means unknown (a file that cannot be read has neither; a YAML
// syntax error has no column). Field is the path of the offending field,
// e.g. "tasks[2].title" or "settings.concurrency", or "" for syntax errors.
type Error struct {
	Path         string
	Line, Column int
	Field        string
	Msg          string

	err error // the cause, for errors.Is(err, fs.ErrNotExist)
}

// Error formats as "tasks.yaml:12:5: tasks[2].title: title is required",
// leaving out the parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteString(":" + strconv.Itoa(e.Column))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.err }

// Load reads and parses the tasks file at path. A file that cannot be read
// is reported as an *Error too (wrapping the cause, so errors.Is(err,
// fs.ErrNotExist) works).
func Load(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, readError(path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, readError(path, err)
	}
	return Parse(path, data)
}

func readError(path string, err error) *Error {
	cause := err
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		cause = pe.Err // the path is already in front of the message
	}
	return &Error{Path: path, Msg: "cannot read the tasks file: " + cause.Error(), err: err}
}

// Parse parses and validates a tasks file; path is used in errors and, by
// its extension, to tell JSON from YAML (see the package doc).
func Parse(path string, data []byte) (*File, error) {
	f, perr := parse(data, isJSONPath(path), isYAMLPath(path))
	if perr != nil {
		perr.Path = path
		return nil, perr
	}
	f.Path = path
	return f, nil
}

// Document is the shape of a tasks file, for its JSON Schema (package
// schema); the list of tasks alone is a tasks file too.
type Document = document

// document is the shape of a tasks file. Its json tags are the file's keys.
type document struct {
	// The run's settings; every one is optional.
	Settings fileSettings `json:"settings"`
	// The tasks, in the order they start; each takes the params of
	// task/create, and id and needs for a run as a plan.
	Tasks []Task `json:"tasks"`
}

// Task is a task as a tasks file writes it: task/create's params, and, for
// a file whose tasks build on each other, its id and needs.
type Task struct {
	protocol.TaskCreateParams
	// The name other tasks give this one in their needs (letters, digits,
	// -, _ and .). Default: task1, task2, ... by place.
	ID string `json:"id"`
	// The ids of the tasks whose work this one builds on: it starts once
	// they are all merged, from the base that has them. A file where a
	// task has needs runs as a plan.
	Needs []string `json:"needs"`
}

// fileSettings is Settings as written in the file: pointers tell an absent
// key from a zero value, so that an explicit 0 is checked against its range.
type fileSettings struct {
	// How many tasks run at once, 1..64. Default 3.
	Concurrency *int `json:"concurrency"`
	// The driver of the tasks that name none: pty (claude under a
	// terminal) or stream (stream-json). Default: familiar's default.
	Driver protocol.Driver `json:"driver"`
	// The base ref of every task that names none. Default: HEAD.
	BaseRef string `json:"baseRef"`
	// The only source of permissions in a headless run: a request it
	// leaves to "ask" is denied after approvalTimeoutSec.
	PermissionPolicy *protocol.Policy `json:"permissionPolicy"`
	// Seconds a permission request no rule decides waits before it is
	// denied.
	ApprovalTimeoutSec *int `json:"approvalTimeoutSec"`
	// Seconds without progress after which a task is blocked; a task's own
	// value wins.
	NoProgressTimeoutSec *int `json:"noProgressTimeoutSec"`
	// Seconds from SIGTERM to SIGKILL when a task is stopped; 0 kills at
	// once.
	TermGraceSec *int `json:"termGraceSec"`
	// Seconds a command that writes nothing may run before it is stopped;
	// a task's own value wins.
	CommandTimeoutSec *int `json:"commandTimeoutSec"`
	// A task that has spent this many US dollars is blocked; 0: no limit.
	// A task's own value wins.
	MaxBudgetUsd *float64 `json:"maxBudgetUsd"`
	// Claude's sandbox for agents' Bash commands: on (the default), off, or
	// required (a task does not start without one).
	Sandbox string `json:"sandbox"`
	// "queue": at the end, merge the finished tasks through the merge
	// queue. Absent: they are left ready to merge.
	Merge string `json:"merge"`
	// The merge queue's check of each task before its merge (exit 0
	// passes). Default: the mergeVerify setting, else the repository's
	// .familiar/config.yaml.
	Verify *string `json:"verify"`
	// How the merge queue brings each task in: merge, squash or rebase.
	// Default merge.
	MergeStrategy protocol.MergeStrategy `json:"mergeStrategy"`
}

// keyHints name the file's key for protocol names a person may reach for.
var keyHints = map[string]string{
	"maxConcurrent": "concurrency",
	"defaultDriver": "driver",
}

func parse(data []byte, jsonPath, yamlPath bool) (*File, *Error) {
	if len(data) > MaxFileSize {
		return nil, &Error{Msg: fmt.Sprintf("the file is larger than %d MiB; is it really a tasks file?", MaxFileSize>>20)}
	}
	root, isJSON, err := parseTree(data, jsonPath, yamlPath)
	if err != nil {
		return nil, err
	}
	noTasks := func(n *yaml.Node) *Error {
		return nodeError(n, "tasks", "at least one task is required")
	}
	if root == nil || isNull(root) {
		e := noTasks(root)
		if e.Line == 0 {
			e.Line = 1
		}
		return nil, e
	}

	d := newDecoder(isJSON, len(data))
	var doc document
	switch root.Kind {
	case yaml.MappingNode:
		if err := d.decode(root, &doc, ""); err != nil {
			return nil, err
		}
		if _, ok := d.pos["tasks"]; !ok {
			return nil, noTasks(root)
		}
	case yaml.SequenceNode:
		d.pos["tasks"] = root
		if err := d.decode(root, &doc.Tasks, "tasks"); err != nil {
			return nil, err
		}
	default:
		return nil, nodeError(root, "", fmt.Sprintf(
			"the file must be a mapping with settings and tasks, or a list of tasks, not %s", d.describe(root)))
	}
	if len(doc.Tasks) == 0 {
		return nil, noTasks(d.pos["tasks"])
	}

	asPlan := false
	for _, t := range doc.Tasks {
		asPlan = asPlan || len(t.Needs) > 0
	}
	if asPlan && doc.Settings.Merge == "" {
		// A plan merges each task as it finishes: merge: queue goes
		// without saying.
		doc.Settings.Merge = MergeQueue
	}
	settings, err := d.settings(&doc.Settings)
	if err != nil {
		return nil, err
	}
	f := &File{Settings: settings, Lines: make([]int, len(doc.Tasks))}
	for i := range doc.Tasks {
		t := &doc.Tasks[i].TaskCreateParams
		field := index("tasks", i)
		f.Lines[i] = d.pos[field].Line
		if t.BaseRef == "" {
			t.BaseRef = settings.BaseRef
		}
		if err := t.Validate(); err != nil {
			return nil, d.validationError(field, err)
		}
		if t.Prepared != "" {
			// task/prepare's agents are an editor's, for a session's first
			// prompt; the schema leaves the key out too.
			return nil, d.validationError(field, protocol.InvalidParams("prepared", "prepared is not a key of a tasks file."))
		}
		f.Tasks = append(f.Tasks, *t)
	}
	if asPlan {
		steps, err := d.planSteps(doc.Tasks, settings.BaseRef)
		if err != nil {
			return nil, err
		}
		f.Plan = steps
	}
	return f, nil
}

// planSteps makes the tasks a plan's steps, refusing what a step cannot
// carry and needs that cannot run (an unknown id, a circle), at the line of
// the task.
func (d *decoder) planSteps(tasks []Task, baseRef string) ([]protocol.PlanStepSpec, *Error) {
	steps := make([]protocol.PlanStepSpec, len(tasks))
	for i, t := range tasks {
		field := index("tasks", i)
		if name := unplannable(t.TaskCreateParams, baseRef); name != "" {
			return nil, nodeError(d.lookup(join(field, name)), join(field, name), fmt.Sprintf(
				"a tasks file whose tasks have needs runs as a plan, whose steps take id, title, description, acceptanceCriteria, mode, profile, hints.files and needs; %s is not one of them", name))
		}
		id := t.ID
		if id == "" {
			id = fmt.Sprintf("task%d", i+1)
		}
		steps[i] = protocol.PlanStepSpec{ID: id, Title: t.Title, Description: t.Description,
			AcceptanceCriteria: t.AcceptanceCriteria, Mode: t.Mode, Profile: t.Profile, Needs: t.Needs}
		if t.Hints != nil {
			steps[i].Files = t.Hints.Files
		}
	}
	if probs := plan.Check(steps); len(probs) > 0 {
		p := probs[0]
		field := "tasks"
		if p.Index >= 0 {
			field = join(index("tasks", p.Index), p.Field)
		}
		return nil, nodeError(d.lookup(field), field, p.Message)
	}
	return steps, nil
}

// unplannable names the first field of a task that a plan's step cannot
// carry ("" when none).
func unplannable(t protocol.TaskCreateParams, baseRef string) string {
	switch {
	case t.Type != "":
		return "type"
	case t.PromptOverride != "":
		return "promptOverride"
	case t.Priority != 0:
		return "priority"
	case t.BaseRef != "" && t.BaseRef != baseRef:
		return "baseRef"
	case t.Driver != "":
		return "driver"
	case len(t.McpServers) > 0:
		return "mcpServers"
	case len(t.Skills) > 0:
		return "skills"
	case t.Hints != nil && t.Hints.Notes != "":
		return "hints.notes"
	case t.Directives != nil:
		return "directives"
	case t.NoProgressTimeoutSec != nil:
		return "noProgressTimeoutSec"
	case t.PermissionPolicy != nil:
		return "permissionPolicy"
	case t.CommandTimeoutSec != nil:
		return "commandTimeoutSec"
	case t.MaxBudgetUsd != nil:
		return "maxBudgetUsd"
	case t.Model != "":
		return "model"
	case t.WarmAgentSec != nil:
		return "warmAgentSec"
	}
	return ""
}

// settings checks the file's settings, in the order the package doc lists
// them, and fills in defaults.
func (d *decoder) settings(fs *fileSettings) (Settings, *Error) {
	fail := func(name, format string, args ...any) *Error {
		field := "settings." + name
		return nodeError(d.lookup(field), field, fmt.Sprintf(format, args...))
	}
	// inRange checks an int the file sets; an absent one is left to familiar.
	inRange := func(name string, v *int, lo, hi int) *Error {
		if v != nil && (*v < lo || *v > hi) {
			return fail(name, "%s must be between %d and %d, not %d", name, lo, hi, *v)
		}
		return nil
	}
	if err := inRange("concurrency", fs.Concurrency, 1, protocol.MaxConcurrentLimit); err != nil {
		return Settings{}, err
	}
	if fs.Driver != "" && !fs.Driver.Valid() {
		return Settings{}, fail("driver", "driver must be one of %s, not %q", joinEnum(protocol.Drivers), fs.Driver)
	}
	if !validRef(fs.BaseRef) {
		return Settings{}, fail("baseRef", "baseRef must name a branch, tag or commit, not %q", fs.BaseRef)
	}
	if fs.PermissionPolicy != nil {
		if err := (&protocol.SettingsUpdate{PermissionPolicy: fs.PermissionPolicy}).Validate(); err != nil {
			return Settings{}, d.validationError("settings", err)
		}
	}
	for _, err := range []*Error{
		inRange("approvalTimeoutSec", fs.ApprovalTimeoutSec, protocol.MinApprovalTimeoutSec, protocol.MaxTimeoutSec),
		inRange("noProgressTimeoutSec", fs.NoProgressTimeoutSec, protocol.MinNoProgressTimeoutSec, protocol.MaxTimeoutSec),
		inRange("termGraceSec", fs.TermGraceSec, 0, protocol.MaxTermGraceSec),
		inRange("commandTimeoutSec", fs.CommandTimeoutSec, protocol.MinNoProgressTimeoutSec, protocol.MaxTimeoutSec),
	} {
		if err != nil {
			return Settings{}, err
		}
	}
	if v := fs.MaxBudgetUsd; v != nil && !(*v >= 0 && *v <= protocol.MaxBudgetUsd) {
		return Settings{}, fail("maxBudgetUsd", "maxBudgetUsd must be between 0 (no limit) and %d, not %v", protocol.MaxBudgetUsd, *v)
	}
	if fs.Merge != "" && fs.Merge != MergeQueue {
		return Settings{}, fail("merge", "merge must be %q (merge the finished tasks through the merge queue) or absent, not %q", MergeQueue, fs.Merge)
	}
	if fs.MergeStrategy != "" && !fs.MergeStrategy.Valid() {
		return Settings{}, fail("mergeStrategy", "mergeStrategy must be one of %s, not %q", joinEnum(protocol.MergeStrategies), fs.MergeStrategy)
	}
	if fs.Merge == "" && (fs.Verify != nil || fs.MergeStrategy != "") {
		field := "verify"
		if fs.Verify == nil {
			field = "mergeStrategy"
		}
		return Settings{}, fail(field, "%s is for the merge queue: add merge: queue", field)
	}
	if fs.Sandbox != "" && fs.Sandbox != protocol.SandboxOn && fs.Sandbox != protocol.SandboxOff && fs.Sandbox != protocol.SandboxRequired {
		return Settings{}, fail("sandbox", "sandbox must be \"on\", \"off\" or \"required\", not %q", fs.Sandbox)
	}
	return Settings{
		Sandbox:              fs.Sandbox,
		Merge:                fs.Merge,
		Verify:               fs.Verify,
		MergeStrategy:        fs.MergeStrategy,
		Concurrency:          valueOr(fs.Concurrency, DefaultConcurrency),
		Driver:               fs.Driver,
		BaseRef:              fs.BaseRef,
		PermissionPolicy:     fs.PermissionPolicy,
		ApprovalTimeoutSec:   valueOr(fs.ApprovalTimeoutSec, 0),
		NoProgressTimeoutSec: valueOr(fs.NoProgressTimeoutSec, 0),
		TermGraceSec:         fs.TermGraceSec,
		CommandTimeoutSec:    valueOr(fs.CommandTimeoutSec, 0),
		MaxBudgetUsd:         budgetOr(fs.MaxBudgetUsd),
	}, nil
}

func budgetOr(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

func valueOr(v *int, def int) int {
	if v == nil {
		return def
	}
	return *v
}

// validRef is the check protocol's TaskCreateParams.Validate makes of a
// baseRef (a ref ends up as a git argument, so it must not look like an
// option); settings.baseRef gets it here so that a bad one is reported at
// its own line rather than at every task that inherits it.
func validRef(ref string) bool {
	return !strings.HasPrefix(ref, "-") &&
		!strings.ContainsFunc(ref, func(r rune) bool { return r <= ' ' || r == 0x7f })
}

// validationError places a protocol Validate error (whose data.field is
// relative to the object validated, e.g. "hints.files[0]") under prefix
// ("tasks[2]", "settings") at the line of that field, or of the nearest
// enclosing node the file has when the field is missing.
func (d *decoder) validationError(prefix string, err error) *Error {
	field, msg := prefix, err.Error()
	if pe, ok := errors.AsType[*protocol.Error](err); ok {
		msg = pe.Message
		if data, ok := pe.Data.(*protocol.ErrorData); ok && data.Field != "" {
			field = prefix + "." + data.Field
		}
	}
	// protocol's messages are sentences; ours follow "file:line: field:" the
	// way a compiler's do, without the final period.
	msg = strings.TrimSuffix(msg, ".")
	return nodeError(d.lookup(field), field, msg)
}

func joinEnum[T ~string](all []T) string {
	names := make([]string, len(all))
	for i, a := range all {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

func index(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }
