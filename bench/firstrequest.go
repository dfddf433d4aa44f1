package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/demomodel"
	"github.com/familiar-dev/familiar/protocol"
)

// FirstRequestResult is a new session's start: from the client asking for
// it to the model's first request, for each system. Beside the interactive
// CLI started bare (the TUI floor: its hooks only) and with every hook
// familiar subscribes to, it splits the PTY driver's start into the CLI's
// own start-up, what familiar's hooks cost it, and familiar's part (the
// worktree, the config dir, settings, MCP config and trust seeding).
type FirstRequestResult struct {
	System string `json:"system"`
	First  Dist   `json:"firstRequest"`
	// Steps split familiar's start: the wait for the start to begin, the
	// orchestrator's steps (worktree, submodules, tracked files, prompt,
	// skills, MCP config, login check, spawn with its config dir and
	// exec), and claude's own time from its spawn to the first request.
	Steps []StepResult `json:"steps,omitempty"`
	// PerRound holds each start against the TUI floor's start of the same
	// round: the rounds are interleaved, so the two ran minutes apart at
	// most, and a drift of the machine's load that moves both p50s moves
	// their ratio far less (runs of the same kind differed by more than
	// the gap between the systems, issue 40).
	PerRound *RoundRatio `json:"perRound,omitempty"`
	Skipped  string      `json:"skipped,omitempty"`
}

// RoundRatio is the distribution of one system's start divided by
// Against's start in the same round.
type RoundRatio struct {
	Against string  `json:"against"`
	N       int     `json:"n"`
	P50     float64 `json:"p50"`
	P95     float64 `json:"p95"`
}

// roundRatio is a's i-th start over b's, for each round both have.
func roundRatio(against string, a, b []time.Duration) *RoundRatio {
	n := min(len(a), len(b))
	if n == 0 {
		return nil
	}
	rs := make([]float64, 0, n)
	for i := range n {
		if b[i] > 0 {
			rs = append(rs, float64(a[i])/float64(b[i]))
		}
	}
	if len(rs) == 0 {
		return nil
	}
	slices.Sort(rs)
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(rs)))) - 1
		return math.Round(rs[max(0, min(i, len(rs)-1))]*1000) / 1000
	}
	return &RoundRatio{Against: against, N: len(rs), P50: at(0.5), P95: at(0.95)}
}

// firstRequest starts StartRuns fresh sessions of each system, interleaved,
// each with the compare scenario's first prompt, and times its first model
// request. familiar's clock starts at task/create (its workspace is open,
// as a running familiar's is); the floors' at the spawn of claude; the
// adapter's at its spawn (ACP's initialize and session/new are part of
// what a client waits for).
func (r *runner) firstRequest(ctx context.Context) error {
	if r.claude.Path == "" {
		return errSkip("the claude CLI is not installed (" + r.claudeErr + ")")
	}
	type entry struct {
		name  string
		start func(ctx context.Context, api *demomodel.Server) (contender, error)
		// startsOnAsk: the session's claude starts at ask(0) (familiar, the
		// TUI floors), so the clock starts there.
		startsOnAsk bool
		res         FirstRequestResult
		lat         []time.Duration
		steps       stepSeries
	}
	entries := []*entry{
		{name: SystemFamiliarPTY, startsOnAsk: true, start: func(ctx context.Context, api *demomodel.Server) (contender, error) {
			return r.startFamiliar(ctx, api, protocol.DriverPTY)
		}},
		{name: SystemFamiliarPTYDaemon, startsOnAsk: true, start: r.startFamiliarDaemon(protocol.DriverPTY)},
		{name: SystemFamiliarStream, startsOnAsk: true, start: func(ctx context.Context, api *demomodel.Server) (contender, error) {
			return r.startFamiliar(ctx, api, protocol.DriverStream)
		}},
		{name: SystemTUIFloor, startsOnAsk: true, start: r.startTUIFloor("PermissionRequest", floorMinimal)},
		{name: SystemTUIFloorAllHooks, startsOnAsk: true, start: r.startTUIFloor("PermissionRequest", floorFamiliar)},
		{name: SystemStreamFloor, start: r.startStreamFloor},
		{name: SystemAgentACP, start: r.startACP(agentACP)},
	}
	var kept []*entry
	for _, e := range entries {
		if r.compared(e.name) {
			e.res.System = e.name
			kept = append(kept, e)
		}
	}
	r.report.FirstRequestLoad[0] = loadAvg()[0]
	defer func() { r.report.FirstRequestLoad[1] = loadAvg()[0] }()
	starts := &startSteps{}
	r.startLog = starts
	defer func() { r.startLog = nil }()
	one := func(ctx context.Context, e *entry) (time.Duration, error) {
		api, err := demomodel.Listen(demomodel.PromptScript())
		if err != nil {
			return 0, err
		}
		defer api.Close()
		t0 := time.Now()
		c, err := e.start(ctx, api)
		if err != nil {
			return 0, err
		}
		defer c.close()
		if e.startsOnAsk {
			t0 = time.Now()
		}
		if _, err := c.ask(ctx, 0); err != nil {
			return 0, err
		}
		// The request that carries the prompt: a request before it (none
		// seen so far) would not be what the person waits for.
		var reqs []demomodel.Request
		for _, req := range api.MainRequests() {
			if strings.Contains(req.LastUserText(), "round 0") {
				reqs = append(reqs, req)
			}
		}
		if len(reqs) == 0 {
			return 0, fmt.Errorf("asked with no model request carrying the prompt (%d main requests)", len(api.MainRequests()))
		}
		if fc, ok := c.(*familiarContender); ok {
			began, steps, spawn := starts.take()
			if fc.daemonState != "" {
				began, steps, spawn = daemonStartSteps(fc.daemonState)
			}
			e.steps.addStart(t0, reqs[0].At, began, steps, spawn)
		}
		return reqs[0].At.Sub(t0), nil
	}
	for i := range r.opts.StartRuns {
		for _, e := range shuffled(kept, i) {
			if e.res.Skipped != "" {
				continue
			}
			d, err := one(ctx, e)
			switch {
			case isSkip(err):
				e.res.Skipped = err.Error()
				r.skip("first request " + e.name + ": " + err.Error())
				continue
			case err != nil:
				return fmt.Errorf("%s, round %d: %w", e.name, i, err)
			}
			e.lat = append(e.lat, d)
		}
	}
	var floor *entry
	for _, e := range kept {
		if e.name == SystemTUIFloor && e.res.Skipped == "" {
			floor = e
		}
	}
	for _, e := range kept {
		e.res.First = distOf(e.lat)
		e.res.Steps = e.steps.results()
		if floor != nil && e != floor && e.res.Skipped == "" {
			e.res.PerRound = roundRatio(floor.name, e.lat, floor.lat)
		}
		if e.res.Skipped == "" {
			r.logf("first request %s: p50 %.1f / p95 %.1f ms (%d runs)", e.name, e.res.First.P50, e.res.First.P95, e.res.First.N)
			if pr := e.res.PerRound; pr != nil {
				r.logf("  ÷ %s, round by round: p50 %.3f / p95 %.3f", pr.Against, pr.P50, pr.P95)
			}
			for _, st := range e.res.Steps {
				r.logf("  %s: p50 %.1f / p95 %.1f ms", st.Step, st.Dist.P50, st.Dist.P95)
			}
		}
		r.report.FirstRequest = append(r.report.FirstRequest, e.res)
	}
	return nil
}
