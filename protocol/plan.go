package protocol

import (
	"encoding/json"
	"time"
)

// Plans (issue 39): one goal broken into steps with dependencies, run by
// parallel agents and integrated through the merge queue. familiar's
// additions to PROTOCOL.md, kept in one file so they read together; their
// methods are part of Server.

const (
	MethodPlanCreate = "plan/create"
	MethodPlanGet    = "plan/get"
	MethodPlanList   = "plan/list"
	MethodPlanUpdate = "plan/update"
	MethodPlanRun    = "plan/run"
	MethodPlanCancel = "plan/cancel"
	MethodPlanUndo   = "plan/undo"
	MethodPlanRetry  = "plan/retry"
	MethodPlanSkip   = "plan/skip"

	NotifyPlanUpdated = "plan/updated"
)

// MaxPlanSteps bounds a plan.
const MaxPlanSteps = 50

// PlanState is where a plan is.
type PlanState string

const (
	// PlanDrafting: its architect task is writing the steps.
	PlanDrafting PlanState = "drafting"
	// PlanDraft: written (by the architect or the person), to be reviewed
	// and run; Problems say what must be fixed first, when any.
	PlanDraft PlanState = "draft"
	// PlanRunning: its steps run and merge as their needs allow.
	PlanRunning PlanState = "running"
	// PlanHeld: nothing can go on until the person retries, edits or
	// skips a step (Why says which and why).
	PlanHeld PlanState = "held"
	// PlanDone: every step is merged (or finished with nothing to merge,
	// or skipped) and verified by the merge queue.
	PlanDone      PlanState = "done"
	PlanCancelled PlanState = "cancelled"
	// PlanUndone: plan/undo took the plan's merges back.
	PlanUndone PlanState = "undone"
	// PlanFailed: no plan came of the goal (the architect failed or
	// wrote none); Why says why.
	PlanFailed PlanState = "failed"
)

var PlanStates = []PlanState{PlanDrafting, PlanDraft, PlanRunning, PlanHeld, PlanDone, PlanCancelled, PlanUndone, PlanFailed}

func (s PlanState) Valid() bool { return validIn(s, PlanStates) }

// Ended: the plan will not change by itself any more.
func (s PlanState) Ended() bool {
	return s == PlanDone || s == PlanCancelled || s == PlanUndone || s == PlanFailed
}

// PlanStepState is where one step is.
type PlanStepState string

const (
	// StepPending: waits for its needs to merge (Why names them).
	StepPending PlanStepState = "pending"
	// StepRunning: its task is queued or its agent at work (or waiting
	// for an answer, or paused).
	StepRunning PlanStepState = "running"
	// StepReady: its task finished; it waits for the merge queue.
	StepReady PlanStepState = "ready"
	// StepMerging: in the merge queue (verified, merged).
	StepMerging PlanStepState = "merging"
	StepMerged  PlanStepState = "merged"
	// StepDone: its task, an architect's or an auditor's, finished having
	// changed nothing, as such a step does: nothing to merge; its
	// dependents go on. (An executor step that changed nothing failed.)
	StepDone PlanStepState = "done"
	// StepFailed: its task is blocked, cancelled or set aside by the
	// merge queue (Why says so); the person retries, edits or skips it.
	StepFailed PlanStepState = "failed"
	// StepHeld: a step it needs failed or was skipped (Why says which).
	StepHeld    PlanStepState = "held"
	StepSkipped PlanStepState = "skipped"
	// StepCancelled: plan/cancel stopped it before it merged.
	StepCancelled PlanStepState = "cancelled"
	// StepUndone: plan/undo took its merge back.
	StepUndone PlanStepState = "undone"
)

var PlanStepStates = []PlanStepState{StepPending, StepRunning, StepReady, StepMerging, StepMerged, StepDone,
	StepFailed, StepHeld, StepSkipped, StepCancelled, StepUndone}

func (s PlanStepState) Valid() bool { return validIn(s, PlanStepStates) }

// Satisfied: a step that needs this one may start.
func (s PlanStepState) Satisfied() bool { return s == StepMerged || s == StepDone }

// Started: the step has (or had) a task of its own; plan/update keeps it
// as it is.
func (s PlanStepState) Started() bool {
	switch s {
	case StepRunning, StepReady, StepMerging, StepMerged, StepDone, StepUndone:
		return true
	}
	return false
}

func validIn[T comparable](v T, all []T) bool {
	for _, a := range all {
		if a == v {
			return true
		}
	}
	return false
}

// PlanStepSpec is a step as written: by the architect, the person or a
// tasks file.
type PlanStepSpec struct {
	// ID names the step in needs: letters, digits, '-', '_' and '.', at
	// most 40 characters, unique in the plan.
	ID                 string   `json:"id"`
	Title              string   `json:"title"`
	Description        string   `json:"description"`
	AcceptanceCriteria []string `json:"acceptanceCriteria,omitempty"`
	// Files are the files the step is expected to touch (a hint to its
	// agent and to the person reviewing the plan).
	Files []string `json:"files,omitempty"`
	// Needs are the ids of the steps whose work this one builds on: it
	// starts once they are all merged, from the base that has them.
	Needs   []string `json:"needs"`
	Mode    Mode     `json:"mode,omitempty"`
	Profile string   `json:"profile,omitempty"`
}

func (s PlanStepSpec) MarshalJSON() ([]byte, error) {
	type plain PlanStepSpec
	p := plain(s)
	p.Needs = nonNil(p.Needs)
	return json.Marshal(p)
}

// PlanStep is a step of a plan and where it is.
type PlanStep struct {
	PlanStepSpec
	State PlanStepState `json:"state"`
	// Why says, in words, why the step waits, is held or failed.
	Why string `json:"why,omitempty"`
	// TaskID is the step's task (the latest attempt's).
	TaskID string `json:"taskId,omitempty"`
	// Attempts counts the step's tasks (plan/retry starts another).
	Attempts int `json:"attempts,omitempty"`
	// TaskIDs are every attempt's task, oldest first.
	TaskIDs []string `json:"taskIds,omitempty"`
	// DurationMs is its finished tasks' time at work (start to end),
	// Tokens and CostUSD what their models used.
	DurationMs int64     `json:"durationMs,omitempty"`
	Tokens     int64     `json:"tokens,omitempty"`
	CostUSD    float64   `json:"costUsd,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	MergedAt   time.Time `json:"mergedAt,omitzero"`
	// Merge is the base's commits around the step's merge.
	Merge *QueueMerge `json:"merge,omitempty"`
}

func (s PlanStep) MarshalJSON() ([]byte, error) {
	// PlanStepSpec's own MarshalJSON would be promoted and write the spec
	// alone: the spec goes in as a type without methods.
	type specFields PlanStepSpec
	type plain struct {
		specFields
		State      PlanStepState `json:"state"`
		Why        string        `json:"why,omitempty"`
		TaskID     string        `json:"taskId,omitempty"`
		Attempts   int           `json:"attempts,omitempty"`
		TaskIDs    []string      `json:"taskIds,omitempty"`
		DurationMs int64         `json:"durationMs,omitempty"`
		Tokens     int64         `json:"tokens,omitempty"`
		CostUSD    float64       `json:"costUsd,omitempty"`
		StartedAt  time.Time     `json:"startedAt,omitzero"`
		MergedAt   time.Time     `json:"mergedAt,omitzero"`
		Merge      *QueueMerge   `json:"merge,omitempty"`
	}
	spec := specFields(s.PlanStepSpec)
	spec.Needs = nonNil(spec.Needs)
	return json.Marshal(plain{specFields: spec, State: s.State, Why: s.Why, TaskID: s.TaskID, Attempts: s.Attempts,
		TaskIDs: s.TaskIDs, DurationMs: s.DurationMs, Tokens: s.Tokens, CostUSD: s.CostUSD,
		StartedAt: utc(s.StartedAt), MergedAt: utc(s.MergedAt), Merge: s.Merge})
}

// PlanProblem is one thing wrong with a plan's steps, said so the person
// (or the architect) can fix it: the step, the field, why.
type PlanProblem struct {
	// Step is the step's id ("" for the plan as a whole); Index its place.
	Step  string `json:"step,omitempty"`
	Index int    `json:"index"`
	// Field is the step's field ("needs", "id", ...), or the JSON path of
	// the whole ("steps").
	Field   string `json:"field"`
	Message string `json:"message"`
}

// PlanTotals are a plan's time, tokens and cost: its steps' and its
// architect's.
type PlanTotals struct {
	// WallMs is the plan's time from plan/run to its end (0 until it
	// ends: a client counts from startedAt).
	WallMs int64 `json:"wallMs"`
	// WorkMs is the sum of its finished tasks' time at work.
	WorkMs  int64   `json:"workMs"`
	Tokens  int64   `json:"tokens"`
	CostUSD float64 `json:"costUsd"`
}

// Plan is a goal, its steps and where they are.
type Plan struct {
	ID    string    `json:"id"`
	Goal  string    `json:"goal,omitempty"`
	State PlanState `json:"state"`
	// Why says, in words, why the plan is held or failed, or what the
	// person is to do next.
	Why string `json:"why,omitempty"`
	// BaseRef is the branch the plan's steps start from and merge into.
	BaseRef string `json:"baseRef"`
	Profile string `json:"profile,omitempty"`
	// Verify is the merge queue's verify command for the plan's merges
	// (as shown: masked); absent for the settings' or repository's.
	Verify string `json:"verify,omitempty"`
	// ArchitectTaskID is the task that wrote the steps (plan/create with a
	// goal).
	ArchitectTaskID string     `json:"architectTaskId,omitempty"`
	Steps           []PlanStep `json:"steps"`
	// Problems are what keeps the steps from running, when the plan is a
	// draft that cannot run yet.
	Problems []PlanProblem `json:"problems,omitempty"`
	// Warnings are what the person may want to change before running:
	// steps that may run at the same time and say they touch the same
	// file (their merges would likely conflict).
	Warnings  []PlanProblem `json:"warnings,omitempty"`
	Totals    PlanTotals    `json:"totals"`
	CreatedAt time.Time     `json:"createdAt"`
	StartedAt time.Time     `json:"startedAt,omitzero"`
	EndedAt   time.Time     `json:"endedAt,omitzero"`
	UpdatedAt time.Time     `json:"updatedAt"`
}

func (p Plan) MarshalJSON() ([]byte, error) {
	type plain Plan
	c := plain(p)
	c.Steps = nonNil(c.Steps)
	c.CreatedAt, c.StartedAt, c.EndedAt, c.UpdatedAt = utc(c.CreatedAt), utc(c.StartedAt), utc(c.EndedAt), utc(c.UpdatedAt)
	return json.Marshal(c)
}

// PlanCreateParams: {goal} (an architect task writes the steps) or
// {steps} (the person's own), with profile?, baseRef?, verify?, run?.
type PlanCreateParams struct {
	Goal  string         `json:"goal,omitempty"`
	Steps []PlanStepSpec `json:"steps,omitempty"`
	// Profile is the architect's and the default of every step.
	Profile string `json:"profile,omitempty"`
	BaseRef string `json:"baseRef,omitempty"`
	// Verify is the merge queue's verify command for the plan (nil: the
	// settings' mergeVerify, else the repository's); "" asks for none.
	Verify *string `json:"verify,omitempty"`
	// Run starts the plan as soon as its steps are valid (familiar run;
	// with a goal, when the architect's plan is).
	Run bool `json:"run,omitempty"`
	// Driver is the driver of the plan's tasks ("": the default).
	Driver Driver `json:"driver,omitempty"`
}

func (p *PlanCreateParams) Validate() error {
	var c checker
	switch {
	case p.Goal == "" && len(p.Steps) == 0:
		c.fail("goal", "goal (for an architect to plan) or steps (a plan of your own) is required.")
	case p.Goal != "" && len(p.Steps) > 0:
		c.fail("steps", "give goal or steps, not both.")
	}
	if len(p.Goal) > 64<<10 {
		c.fail("goal", "goal must be at most 64 KB.")
	}
	validateStepShapes(&c, "steps", p.Steps)
	optionalEnum(&c, "driver", p.Driver, Drivers)
	if p.BaseRef != "" && (len(p.BaseRef) > 0 && p.BaseRef[0] == '-' || containsSpaceOrControl(p.BaseRef)) {
		c.fail("baseRef", "baseRef must name a branch, not %q.", p.BaseRef)
	}
	if p.Verify != nil && len(*p.Verify) > 4096 {
		c.fail("verify", "verify must be at most 4096 bytes, not %d.", len(*p.Verify))
	}
	return c.result()
}

// validateStepShapes checks each step's fields on their own; how the steps
// hang together (unknown needs, cycles, ids used twice) is package plan's
// Check, which names every problem at once.
func validateStepShapes(c *checker, field string, steps []PlanStepSpec) {
	if len(steps) > MaxPlanSteps {
		c.fail(field, "a plan has at most %d steps, not %d.", MaxPlanSteps, len(steps))
	}
	for i, s := range steps {
		at := index(field, i)
		optionalEnum(c, at+".mode", s.Mode, Modes)
		for j, n := range s.Needs {
			c.required(index(at+".needs", j), n)
		}
		for j, f := range s.Files {
			c.required(index(at+".files", j), f)
		}
	}
}

func containsSpaceOrControl(s string) bool {
	for _, r := range s {
		if isSpaceOrControl(r) {
			return true
		}
	}
	return false
}

// PlanIDParams names a plan.
type PlanIDParams struct {
	ID string `json:"id"`
}

func (p *PlanIDParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	return c.result()
}

type (
	PlanGetParams    = PlanIDParams
	PlanRunParams    = PlanIDParams
	PlanCancelParams = PlanIDParams
	PlanUndoParams   = PlanIDParams
)

type PlanListParams struct{}

func (p *PlanListParams) Validate() error { return nil }

// PlanListResult: every plan, newest first.
type PlanListResult struct {
	Plans []Plan `json:"plans"`
}

func (r PlanListResult) MarshalJSON() ([]byte, error) {
	type plain PlanListResult
	p := plain(r)
	p.Plans = nonNil(p.Plans)
	return json.Marshal(p)
}

// PlanUpdateParams replaces the plan's steps (edit, add, remove, reorder,
// change needs: the whole list as it is to be) and, optionally, its goal
// or verify command. Steps already started stay as they are: they must be
// in the list, unchanged.
type PlanUpdateParams struct {
	ID     string         `json:"id"`
	Steps  []PlanStepSpec `json:"steps"`
	Goal   *string        `json:"goal,omitempty"`
	Verify *string        `json:"verify,omitempty"`
}

func (p *PlanUpdateParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	if len(p.Steps) == 0 {
		c.fail("steps", "steps is required: the plan's steps as they are to be.")
	}
	validateStepShapes(&c, "steps", p.Steps)
	if p.Verify != nil && len(*p.Verify) > 4096 {
		c.fail("verify", "verify must be at most 4096 bytes, not %d.", len(*p.Verify))
	}
	return c.result()
}

// PlanStepParams names a step of a plan (plan/retry, plan/skip).
type PlanStepParams struct {
	ID   string `json:"id"`
	Step string `json:"step"`
}

func (p *PlanStepParams) Validate() error {
	var c checker
	c.required("id", p.ID)
	c.required("step", p.Step)
	return c.result()
}

type (
	PlanRetryParams = PlanStepParams
	PlanSkipParams  = PlanStepParams
)

// PlanUpdatedNotification: every change of a plan.
type PlanUpdatedNotification struct {
	Seq  int64 `json:"seq"`
	Plan Plan  `json:"plan"`
}

func (PlanUpdatedNotification) Method() string    { return NotifyPlanUpdated }
func (n PlanUpdatedNotification) Sequence() int64 { return n.Seq }
