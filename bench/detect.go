package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/fakeapi"
)

// DetectionResult is the time from the fake API finishing a response with a
// tool_use to familiar's permission Question event, for one driver.
type DetectionResult struct {
	Driver  string `json:"driver"`
	Latency Dist   `json:"latency"`
	// Turn is one whole iteration: prompt → tool_use → question → deny →
	// turn end, for scale.
	Turn Dist `json:"turn"`
}

// detection runs the real claude against the fake API, one session per
// driver, and asks runs permissions in turn (the loop of
// agent.BenchmarkDetectionLatency).
func (r *runner) detection(ctx context.Context) error {
	if r.claude.Path == "" {
		return errSkip("the claude CLI is not installed (" + r.claudeErr + ")")
	}
	for _, driver := range []string{agent.DriverPTY, agent.DriverStream} {
		res, err := r.detectDriver(ctx, driver)
		if err != nil {
			return fmt.Errorf("%s driver: %w", driver, err)
		}
		r.report.Detection = append(r.report.Detection, res)
		r.logf("detection %s: p50 %.1f ms, p95 %.1f ms (%d runs)", driver, res.Latency.P50, res.Latency.P95, res.Latency.N)
	}
	return nil
}

func (r *runner) detectDriver(ctx context.Context, driver string) (DetectionResult, error) {
	res := DetectionResult{Driver: driver}
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	var (
		mu     sync.Mutex
		doneAt time.Time
	)
	api.OnResponseDone(func(req fakeapi.Request, reply fakeapi.Reply) {
		if len(reply.ToolUses) > 0 {
			mu.Lock()
			doneAt = time.Now()
			mu.Unlock()
		}
	})
	hooks, err := agent.NewHookServer(nil)
	if err != nil {
		return res, err
	}
	defer hooks.Close()
	repo, err := newRepo(ctx, r.tmp, 0, 0)
	if err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp(r.tmp, "detect-")
	if err != nil {
		return res, err
	}
	ev := newEvents()
	sess, err := agent.Start(ctx, agent.Options{
		CLI:           r.claude,
		Driver:        driver,
		Dir:           repo,
		RepoRoot:      repo,
		ConfigDir:     filepath.Join(dir, "claude"),
		LogPath:       filepath.Join(dir, "out.log"),
		Prompt:        "hello",
		ExtraEnv:      api.Env(),
		Hooks:         hooks,
		ConfirmWithin: 5 * time.Second,
		GraceTimeout:  5 * time.Second,
		OnEvent:       ev.add,
	})
	if err != nil {
		return res, err
	}
	defer func() {
		stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = sess.Stop(stop)
	}()
	_, next, err := ev.wait(ctx, 0, "the first turn to end", turnEnded)
	if err != nil {
		return res, err
	}
	var lat, turns []time.Duration
	for i := range r.opts.Runs {
		start := time.Now()
		prompt := fmt.Sprintf("n%d\n@@TOOL Bash {\"command\":\"touch bench-%d.txt\"}\n@@TEXT ok", i, i)
		if err := sess.SendPrompt(prompt); err != nil {
			return res, err
		}
		var q agent.Event
		q, next, err = ev.wait(ctx, next, "a permission question", func(e agent.Event) bool {
			return e.Kind == agent.EventQuestion && e.Question.Kind == agent.KindPermission
		})
		if err != nil {
			return res, err
		}
		mu.Lock()
		lat = append(lat, q.At.Sub(doneAt))
		mu.Unlock()
		if err := sess.Answer(q.Question.ID, agent.Answer{OptionID: agent.OptionDeny}); err != nil {
			return res, err
		}
		if _, next, err = ev.wait(ctx, next, "the turn to end", turnEnded); err != nil {
			return res, err
		}
		turns = append(turns, time.Since(start))
	}
	res.Latency, res.Turn = distOf(lat), distOf(turns)
	return res, nil
}

func turnEnded(e agent.Event) bool {
	return e.Kind == agent.EventTurnEnded && e.Turn.BackgroundTasks == 0
}

// events records a session's events (output aside) for waiting on them.
type events struct {
	mu      sync.Mutex
	list    []agent.Event
	changed chan struct{}
}

func newEvents() *events { return &events{changed: make(chan struct{})} }

func (e *events) add(ev agent.Event) {
	if ev.Kind == agent.EventOutput {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
	close(e.changed)
	e.changed = make(chan struct{})
}

// wait returns the first event from index from on that matches, and the
// index after it.
func (e *events) wait(ctx context.Context, from int, what string, match func(agent.Event) bool) (agent.Event, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		e.mu.Lock()
		for i := from; i < len(e.list); i++ {
			if match(e.list[i]) {
				ev := e.list[i]
				e.mu.Unlock()
				return ev, i + 1, nil
			}
		}
		ch := e.changed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return agent.Event{}, from, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

// errSkip marks a scenario that cannot run on this machine.
type errSkip string

func (e errSkip) Error() string { return string(e) }

func isSkip(err error) bool {
	var s errSkip
	return errors.As(err, &s)
}
