package plan

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/protocol"
)

// plansSetting is where the plans are kept (the store's settings bucket).
const plansSetting = "plans"

// keptEnded bounds the ended plans kept: the newest stay.
const keptEnded = 50

// retryEvery is how often a plan whose ready steps could not be handed to
// the merge queue (a dirty checkout of the base, a queue of someone else's
// running) tries again when nothing else wakes it.
const retryEvery = 3 * time.Second

// Config is what a Planner is made of.
type Config struct {
	Host   Host
	Store  Store
	Clock  clock.Clock
	Logger *slog.Logger
	// Ctx ends when familiar shuts down.
	Ctx context.Context
}

// record is a plan and what the Planner keeps beside it.
type record struct {
	Plan protocol.Plan `json:"plan"`
	// Verify is the plan's verify command as written, kept only when it
	// holds no secret (Plan.Verify is the masked one shown); verifyLive is
	// the one this familiar was given, never stored.
	Verify     *string `json:"verify,omitempty"`
	verifyLive *string
	// Run: start the plan as soon as its steps are valid.
	Run    bool            `json:"run,omitempty"`
	Driver protocol.Driver `json:"driver,omitempty"`
	// Moved are the plan's task branches a merge queue moved, with where
	// each was before: plan/undo puts them back.
	Moved map[string]string `json:"moved,omitempty"`
}

// Planner owns a repository's plans.
type Planner struct {
	host   Host
	store  Store
	clk    clock.Clock
	logger *slog.Logger
	ctx    context.Context
	wg     sync.WaitGroup
	wake   chan struct{}

	// act serialises every change of a plan (the goroutine's steps and the
	// methods), host calls included; mu guards the records for readers.
	// Lock order: act, then mu.
	act     sync.Mutex
	mu      sync.Mutex
	records []*record // guarded by mu; oldest first
	// resumed are the step tasks resumed after familiar stopped while they
	// worked (guarded by act).
	resumed map[string]bool
}

// New makes the Planner, reads the plans back and starts its goroutine;
// Wait waits for it once Ctx has ended.
func New(cfg Config) *Planner {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pl := &Planner{host: cfg.Host, store: cfg.Store, clk: cfg.Clock, logger: cfg.Logger, ctx: cfg.Ctx, wake: make(chan struct{}, 1), resumed: map[string]bool{}}
	pl.load()
	pl.wg.Add(1)
	go pl.loop()
	pl.Poke()
	return pl
}

// Wait waits for the Planner's goroutine once Ctx has ended.
func (pl *Planner) Wait() { pl.wg.Wait() }

// Poke wakes the Planner: a task or the merge queue changed.
func (pl *Planner) Poke() {
	if pl == nil { // tasks loaded before the Planner is made
		return
	}
	select {
	case pl.wake <- struct{}{}:
	default:
	}
}

func (pl *Planner) loop() {
	defer pl.wg.Done()
	timer := pl.clk.NewTimer(retryEvery)
	defer timer.Stop()
	for {
		select {
		case <-pl.ctx.Done():
			return
		case <-pl.wake:
		case <-timer.C():
		}
		pl.advanceAll()
		timer.Reset(retryEvery)
	}
}

func (pl *Planner) load() {
	b, err := pl.store.GetSetting(plansSetting)
	if err != nil {
		return
	}
	var recs []*record
	if err := json.Unmarshal(b, &recs); err != nil {
		pl.logger.Warn("unreadable plans in the store", "err", err)
		return
	}
	pl.records = recs
}

// saveLocked writes every plan; pl.mu is held, so saves go in the order of
// the changes.
func (pl *Planner) saveLocked() {
	b, err := json.Marshal(pl.records)
	if err != nil {
		pl.logger.Error("encode plans", "err", err)
		return
	}
	if err := pl.store.PutSetting(context.Background(), plansSetting, b); err != nil {
		pl.logger.Warn("save plans", "err", err)
	}
}

func (pl *Planner) find(id string) (*record, error) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for _, r := range pl.records {
		if r.Plan.ID == id {
			return r, nil
		}
	}
	return nil, protocol.NotFound("plan", id)
}

// commit replaces r's plan with p (under act), keeps, saves and announces
// it when it changed. It returns the plan as it is.
func (pl *Planner) commit(r *record, p protocol.Plan) *protocol.Plan {
	pl.mu.Lock()
	before, _ := json.Marshal(r.Plan)
	after, _ := json.Marshal(p)
	changed := !bytes.Equal(before, after)
	if changed {
		p.UpdatedAt = pl.clk.Now().UTC()
		r.Plan = p
		pl.trimLocked()
		pl.saveLocked()
	}
	snap := clonePlan(r.Plan)
	pl.mu.Unlock()
	if changed {
		pl.host.Publish(protocol.PlanUpdatedNotification{Plan: snap})
	}
	return &snap
}

// trimLocked forgets the oldest ended plans beyond keptEnded.
func (pl *Planner) trimLocked() {
	ended := 0
	for _, r := range pl.records {
		if r.Plan.State.Ended() {
			ended++
		}
	}
	if ended <= keptEnded {
		return
	}
	out := pl.records[:0]
	for _, r := range pl.records {
		if r.Plan.State.Ended() && ended > keptEnded {
			ended--
			continue
		}
		out = append(out, r)
	}
	pl.records = out
}

func clonePlan(p protocol.Plan) protocol.Plan {
	c := p
	c.Steps = slices.Clone(p.Steps)
	for i := range c.Steps {
		s := &c.Steps[i]
		s.Needs, s.Files, s.AcceptanceCriteria = slices.Clone(s.Needs), slices.Clone(s.Files), slices.Clone(s.AcceptanceCriteria)
		s.TaskIDs = slices.Clone(s.TaskIDs)
	}
	c.Problems = slices.Clone(p.Problems)
	c.Warnings = slices.Clone(p.Warnings)
	return c
}

func newPlanID() string {
	var b [6]byte
	rand.Read(b[:])
	return "p" + hex.EncodeToString(b[:])
}

// Create is plan/create.
func (pl *Planner) Create(ctx context.Context, p *protocol.PlanCreateParams) (*protocol.Plan, error) {
	pl.act.Lock()
	defer pl.act.Unlock()
	base := p.BaseRef
	if base == "" {
		b, err := pl.host.DefaultBase(ctx)
		if err != nil {
			return nil, err
		}
		base = b
	}
	now := pl.clk.Now().UTC()
	r := &record{Run: p.Run, Driver: p.Driver, verifyLive: p.Verify}
	plan := protocol.Plan{ID: newPlanID(), Goal: p.Goal, BaseRef: base, Profile: p.Profile, CreatedAt: now, UpdatedAt: now}
	if p.Verify != nil {
		plan.Verify = pl.host.Mask(*p.Verify)
		if plan.Verify == *p.Verify {
			r.Verify = p.Verify
		}
	}
	if p.Goal != "" {
		id, err := pl.host.CreateTask(ctx, &protocol.TaskCreateParams{
			Title: "Plan: " + firstLine(p.Goal, 70), Description: ArchitectPrompt(p.Goal),
			Mode: protocol.ModeArchitect, Profile: p.Profile, BaseRef: base, Driver: p.Driver,
		})
		if err != nil {
			return nil, err
		}
		plan.ArchitectTaskID, plan.State = id, protocol.PlanDrafting
		plan.Why = "an architect is writing the steps"
	} else {
		if probs := Check(p.Steps); len(probs) > 0 {
			return nil, problemsError(probs)
		}
		plan.Steps = stepsOf(p.Steps, nil)
		plan.Warnings = Overlaps(p.Steps)
		plan.State = protocol.PlanDraft
	}
	pl.mu.Lock()
	r.Plan = plan
	pl.records = append(pl.records, r)
	pl.saveLocked()
	pl.mu.Unlock()
	pl.host.Audit("", "plan.created", "user", map[string]any{"planId": plan.ID, "steps": len(plan.Steps), "goal": pl.host.Mask(firstLine(p.Goal, 200))})
	pl.host.Publish(protocol.PlanUpdatedNotification{Plan: clonePlan(plan)})
	if plan.State == protocol.PlanDraft && p.Run {
		return pl.runLocked(r)
	}
	snap := clonePlan(plan)
	return &snap, nil
}

// problemsError refuses steps, naming the first problem's step and field
// and saying every problem.
func problemsError(probs []protocol.PlanProblem) error {
	var words []string
	for _, p := range probs {
		words = append(words, p.Message)
	}
	first := probs[0]
	field := "steps"
	if first.Index >= 0 {
		field = fmt.Sprintf("steps[%d].%s", first.Index, first.Field)
	}
	msg := "The plan's steps cannot run: " + strings.Join(words, "; ") + "."
	return protocol.InvalidParams(field, msg)
}

// stepsOf makes steps of specs, keeping what old says of the steps it has.
func stepsOf(specs []protocol.PlanStepSpec, old map[string]protocol.PlanStep) []protocol.PlanStep {
	out := make([]protocol.PlanStep, len(specs))
	for i, s := range specs {
		if s.Needs == nil {
			s.Needs = []string{}
		}
		if o, ok := old[s.ID]; ok {
			o.PlanStepSpec = s
			out[i] = o
			continue
		}
		out[i] = protocol.PlanStep{PlanStepSpec: s, State: protocol.StepPending}
	}
	return out
}

// Get is plan/get.
func (pl *Planner) Get(id string) (*protocol.Plan, error) {
	r, err := pl.find(id)
	if err != nil {
		return nil, err
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	snap := clonePlan(r.Plan)
	return &snap, nil
}

// List is plan/list: newest first.
func (pl *Planner) List() *protocol.PlanListResult {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	res := &protocol.PlanListResult{}
	for i := len(pl.records) - 1; i >= 0; i-- {
		res.Plans = append(res.Plans, clonePlan(pl.records[i].Plan))
	}
	return res
}

// Update is plan/update.
func (pl *Planner) Update(ctx context.Context, p *protocol.PlanUpdateParams) (*protocol.Plan, error) {
	pl.act.Lock()
	defer pl.act.Unlock()
	r, plan, err := pl.changeable(p.ID)
	if err != nil {
		return nil, err
	}
	old := map[string]protocol.PlanStep{}
	for _, s := range plan.Steps {
		old[s.ID] = s
	}
	given := map[string]int{}
	for i, s := range p.Steps {
		given[s.ID] = i
	}
	for _, s := range plan.Steps {
		if !keptAsIs(s.State) {
			continue
		}
		i, ok := given[s.ID]
		if !ok {
			return nil, protocol.InvalidParams("steps", fmt.Sprintf("step %q is %s: it stays in the plan (plan/undo takes the plan's merges back).", s.ID, s.State))
		}
		if !sameSpec(s.PlanStepSpec, p.Steps[i]) {
			return nil, protocol.InvalidParams(fmt.Sprintf("steps[%d]", i), fmt.Sprintf("step %q is %s: it cannot be changed any more.", s.ID, s.State))
		}
	}
	if probs := Check(p.Steps); len(probs) > 0 {
		return nil, problemsError(probs)
	}
	plan.Steps = stepsOf(p.Steps, old)
	plan.Problems, plan.Warnings = nil, Overlaps(p.Steps)
	if p.Goal != nil {
		plan.Goal = *p.Goal
	}
	if p.Verify != nil {
		r.verifyLive = p.Verify
		plan.Verify, r.Verify = pl.host.Mask(*p.Verify), nil
		if plan.Verify == *p.Verify {
			r.Verify = p.Verify
		}
	}
	if plan.State == protocol.PlanDraft {
		plan.Why = ""
	}
	pl.host.Audit("", "plan.updated", "user", map[string]any{"planId": plan.ID, "steps": len(plan.Steps)})
	snap := pl.commit(r, plan)
	pl.Poke()
	return snap, nil
}

// keptAsIs: a step in this state has work of its own under way or done,
// which plan/update may not change.
func keptAsIs(s protocol.PlanStepState) bool {
	switch s {
	case protocol.StepRunning, protocol.StepReady, protocol.StepMerging, protocol.StepMerged, protocol.StepDone:
		return true
	}
	return false
}

func sameSpec(a, b protocol.PlanStepSpec) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// Run is plan/run.
func (pl *Planner) Run(ctx context.Context, id string) (*protocol.Plan, error) {
	pl.act.Lock()
	defer pl.act.Unlock()
	r, err := pl.find(id)
	if err != nil {
		return nil, err
	}
	return pl.runLocked(r)
}

func (pl *Planner) runLocked(r *record) (*protocol.Plan, error) {
	plan := clonePlan(r.Plan)
	switch plan.State {
	case protocol.PlanDraft:
	case protocol.PlanDrafting:
		// Run once the architect's steps are in and valid.
		r.Run = true
		snap := pl.commit(r, plan)
		return snap, nil
	default:
		return nil, protocol.FailedPrecondition(fmt.Sprintf("the plan is %s, not a draft", plan.State), "")
	}
	if len(plan.Problems) > 0 {
		return nil, problemsError(plan.Problems)
	}
	plan.State, plan.Why, plan.StartedAt = protocol.PlanRunning, "", pl.clk.Now().UTC()
	pl.host.Audit("", "plan.started", "user", map[string]any{"planId": plan.ID, "steps": len(plan.Steps)})
	snap := pl.commit(r, plan)
	pl.Poke()
	return snap, nil
}

// Retry is plan/retry: a failed (or cancelled) step starts again, as a new
// task, from the base as it now is (its needs, if any, merged).
func (pl *Planner) Retry(ctx context.Context, p *protocol.PlanStepParams) (*protocol.Plan, error) {
	return pl.changeStep(p, "plan.stepRetried", func(plan *protocol.Plan, s *protocol.PlanStep) error {
		switch s.State {
		case protocol.StepFailed, protocol.StepCancelled, protocol.StepSkipped:
		default:
			return protocol.FailedPrecondition(fmt.Sprintf("step %q is %s; only a failed, cancelled or skipped step is retried", s.ID, s.State), "")
		}
		s.TaskID, s.State, s.Why = "", protocol.StepPending, "starting again"
		return nil
	})
}

// Skip is plan/skip: the step will not run; the steps that need it are
// held and say so until each is edited (run without it) or skipped too.
func (pl *Planner) Skip(ctx context.Context, p *protocol.PlanStepParams) (*protocol.Plan, error) {
	var cancel string
	plan, err := pl.changeStep(p, "plan.stepSkipped", func(plan *protocol.Plan, s *protocol.PlanStep) error {
		switch s.State {
		case protocol.StepMerged, protocol.StepMerging, protocol.StepDone:
			return protocol.FailedPrecondition(fmt.Sprintf("step %q is %s; plan/undo takes the plan's merges back", s.ID, s.State), "")
		case protocol.StepRunning, protocol.StepReady:
			cancel = s.TaskID
		}
		s.State, s.Why = protocol.StepSkipped, "skipped by the person"
		return nil
	})
	if err == nil && cancel != "" {
		if err := pl.host.CancelTask(ctx, cancel); err != nil {
			pl.logger.Warn("plan: cancel a skipped step's task", "task", cancel, "err", err)
		}
	}
	return plan, err
}

// changeable is a plan whose steps may still change (a draft, running or
// held), and a copy of it to change; act is held.
func (pl *Planner) changeable(id string) (*record, protocol.Plan, error) {
	r, err := pl.find(id)
	if err != nil {
		return nil, protocol.Plan{}, err
	}
	plan := clonePlan(r.Plan)
	switch plan.State {
	case protocol.PlanDraft, protocol.PlanRunning, protocol.PlanHeld:
		return r, plan, nil
	}
	return nil, protocol.Plan{}, protocol.FailedPrecondition(fmt.Sprintf("the plan is %s: its steps can no longer change", plan.State), "")
}

func (pl *Planner) changeStep(p *protocol.PlanStepParams, action string, change func(*protocol.Plan, *protocol.PlanStep) error) (*protocol.Plan, error) {
	pl.act.Lock()
	defer pl.act.Unlock()
	r, plan, err := pl.changeable(p.ID)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(plan.Steps, func(s protocol.PlanStep) bool { return s.ID == p.Step })
	if i < 0 {
		return nil, protocol.InvalidParams("step", fmt.Sprintf("the plan has no step %q.", p.Step))
	}
	if err := change(&plan, &plan.Steps[i]); err != nil {
		return nil, err
	}
	if plan.State == protocol.PlanHeld {
		plan.State = protocol.PlanRunning
	}
	pl.host.Audit("", action, "user", map[string]any{"planId": plan.ID, "step": p.Step})
	snap := pl.commit(r, plan)
	pl.Poke()
	return snap, nil
}

// Cancel is plan/cancel: no step starts any more, live steps' tasks are
// cancelled, a merge queue working on its steps stops after its current
// step. What merged stays merged (plan/undo takes it back).
func (pl *Planner) Cancel(ctx context.Context, id string) (*protocol.Plan, error) {
	pl.act.Lock()
	defer pl.act.Unlock()
	r, err := pl.find(id)
	if err != nil {
		return nil, err
	}
	plan := clonePlan(r.Plan)
	if plan.State.Ended() {
		return nil, protocol.FailedPrecondition(fmt.Sprintf("the plan is %s", plan.State), "")
	}
	var live []string
	queueHasOne := false
	if plan.ArchitectTaskID != "" && plan.State == protocol.PlanDrafting {
		live = append(live, plan.ArchitectTaskID)
	}
	for i := range plan.Steps {
		s := &plan.Steps[i]
		switch s.State {
		case protocol.StepMerged, protocol.StepDone, protocol.StepSkipped, protocol.StepUndone:
			continue
		case protocol.StepRunning:
			live = append(live, s.TaskID)
		case protocol.StepMerging:
			queueHasOne = true
		}
		s.State, s.Why = protocol.StepCancelled, "the plan was cancelled"
	}
	if queueHasOne {
		if err := pl.host.CancelQueue(); err != nil {
			pl.logger.Warn("plan: cancel the merge queue", "err", err)
		}
	}
	for _, t := range live {
		if err := pl.host.CancelTask(ctx, t); err != nil {
			pl.logger.Warn("plan: cancel a step's task", "task", t, "err", err)
		}
	}
	plan.State, plan.Why, plan.EndedAt = protocol.PlanCancelled, "cancelled; what merged stays merged until plan/undo", pl.clk.Now().UTC()
	pl.host.Audit("", "plan.cancelled", "user", map[string]any{"planId": plan.ID})
	return pl.commit(r, plan), nil
}

// Undo is plan/undo: the plan's merges taken back newest first, each as
// task/undo does it (the base's ref compare-and-swapped back, the merge
// kept under refs/familiar/undo), and every task branch a merge queue moved
// for the plan put back. It stops at the first merge that cannot be taken
// back, saying which and why; what it undid stays undone.
func (pl *Planner) Undo(ctx context.Context, id string) (*protocol.Plan, error) {
	pl.act.Lock()
	defer pl.act.Unlock()
	r, err := pl.find(id)
	if err != nil {
		return nil, err
	}
	plan := clonePlan(r.Plan)
	switch plan.State {
	case protocol.PlanDone, protocol.PlanHeld, protocol.PlanCancelled, protocol.PlanRunning:
	default:
		return nil, protocol.FailedPrecondition(fmt.Sprintf("the plan is %s: nothing of it is merged", plan.State), "")
	}
	for _, s := range plan.Steps {
		if s.State == protocol.StepMerging {
			return nil, protocol.FailedPrecondition(fmt.Sprintf("step %q is being merged; plan/cancel first, or wait for the merge queue", s.ID), "")
		}
	}
	if plan.State == protocol.PlanRunning || plan.State == protocol.PlanHeld {
		// Nothing more may start or merge while its merges go back.
		var live []string
		for i := range plan.Steps {
			s := &plan.Steps[i]
			if s.State == protocol.StepRunning || s.State == protocol.StepReady {
				live = append(live, s.TaskID)
			}
			if !s.State.Started() && s.State != protocol.StepSkipped {
				s.State, s.Why = protocol.StepCancelled, "the plan was undone"
			}
		}
		for _, t := range live {
			if err := pl.host.CancelTask(ctx, t); err != nil {
				pl.logger.Warn("plan: cancel a step's task", "task", t, "err", err)
			}
		}
	}
	var merged []int
	for i, s := range plan.Steps {
		if s.State == protocol.StepMerged {
			merged = append(merged, i)
		}
	}
	sort.SliceStable(merged, func(a, b int) bool {
		return plan.Steps[merged[a]].MergedAt.After(plan.Steps[merged[b]].MergedAt)
	})
	var undone []string
	var failure error
	for _, i := range merged {
		s := &plan.Steps[i]
		if err := pl.host.UndoMerge(ctx, s.TaskID); err != nil {
			failure = fmt.Errorf("step %q could not be taken back: %w", s.ID, err)
			break
		}
		s.State, s.Why = protocol.StepUndone, "plan/undo took its merge back"
		undone = append(undone, s.ID)
	}
	if failure == nil {
		for _, s := range plan.Steps {
			for _, t := range s.TaskIDs {
				if commit, ok := r.Moved[t]; ok {
					if err := pl.host.RestoreBranch(ctx, t, commit); err != nil {
						pl.logger.Warn("plan: restore a task's branch", "task", t, "err", err)
					}
				}
			}
		}
		plan.State = protocol.PlanUndone
		plan.Why = fmt.Sprintf("%s taken back from %s", count(len(undone), "merge"), plan.BaseRef)
		if plan.EndedAt.IsZero() {
			plan.EndedAt = pl.clk.Now().UTC()
		}
	} else {
		plan.Why = fmt.Sprintf("undid %d of %d merges, newest first; %v", len(undone), len(merged), failure)
	}
	pl.host.Audit("", "plan.undone", "user", map[string]any{"planId": plan.ID, "undone": undone, "complete": failure == nil})
	snap := pl.commit(r, plan)
	if failure != nil {
		return nil, protocol.FailedPrecondition(plan.Why, "")
	}
	return snap, nil
}

func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}
