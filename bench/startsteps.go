package bench

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/orchestrator"
)

// startSteps is a slog.Handler that keeps the steps of familiar's last agent
// start, from the orchestrator's "agent start" record and the agent's
// "agent spawned" record, and drops every other record.
type startSteps struct {
	mu    sync.Mutex
	began time.Time      // guarded by mu
	steps []stepDuration // guarded by mu; in order
	spawn []stepDuration // guarded by mu; the spawn's own parts
}

type stepDuration struct {
	name string
	d    time.Duration
}

func (h *startSteps) Enabled(_ context.Context, l slog.Level) bool { return l == slog.LevelDebug }
func (h *startSteps) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *startSteps) WithGroup(string) slog.Handler                { return h }

func (h *startSteps) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != orchestrator.StartStepsRecord && rec.Message != agent.SpawnRecord {
		return nil
	}
	var began time.Time
	var steps []stepDuration
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Value.Kind() {
		case slog.KindTime:
			if a.Key == "began" {
				began = a.Value.Time()
			}
		case slog.KindDuration:
			steps = append(steps, stepDuration{a.Key, a.Value.Duration()})
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if rec.Message == agent.SpawnRecord {
		h.spawn = steps
		return nil
	}
	h.began, h.steps = began, steps
	return nil
}

// take returns the last start's steps and forgets them.
func (h *startSteps) take() (began time.Time, steps, spawn []stepDuration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	began, steps, spawn = h.began, h.steps, h.spawn
	h.began, h.steps, h.spawn = time.Time{}, nil, nil
	return began, steps, spawn
}

// Names of the start's steps that are not the orchestrator's laps.
const (
	StepQueued   = "task/create → the start begins"
	StepFamiliar = "familiar's part: task/create → claude exec'd"
	StepCLI      = "claude: exec'd → first model request"
)

// stepSeries collects each step's durations over the runs, in the order
// the steps first came.
type stepSeries struct {
	order []string
	by    map[string][]time.Duration
}

func (s *stepSeries) add(name string, d time.Duration) {
	if s.by == nil {
		s.by = map[string][]time.Duration{}
	}
	if _, ok := s.by[name]; !ok {
		s.order = append(s.order, name)
	}
	s.by[name] = append(s.by[name], d)
}

// addStart splits one familiar start, from the client's task/create at
// asked to the model's first request at first.
func (s *stepSeries) addStart(asked, first, began time.Time, steps, spawn []stepDuration) {
	if began.IsZero() {
		return
	}
	s.add(StepQueued, began.Sub(asked))
	execd := began
	for _, st := range steps {
		s.add(st.name, st.d)
		if st.name != "spawn" {
			execd = execd.Add(st.d)
			continue
		}
		// The spawn's own parts up to exec; what it does after (the
		// screen model, the transcript's watch) runs beside claude.
		for _, sp := range spawn {
			s.add("spawn: "+sp.name, sp.d)
			execd = execd.Add(sp.d)
		}
	}
	s.add(StepFamiliar, execd.Sub(asked))
	s.add(StepCLI, first.Sub(execd))
}

// StepResult is one step of a start over the runs.
type StepResult struct {
	Step string `json:"step"`
	Dist Dist   `json:"dist"`
}

func (s *stepSeries) results() []StepResult {
	var out []StepResult
	for _, n := range s.order {
		out = append(out, StepResult{Step: n, Dist: distOf(s.by[n])})
	}
	return out
}
