package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/demomodel"
	"github.com/familiar-dev/familiar/protocol"
)

// DetectionResult is the time from the fake API finishing a response with a
// tool_use to familiar's permission Question event, for one driver.
type DetectionResult struct {
	Driver  string `json:"driver"`
	Latency Dist   `json:"latency"`
	// Turn is one whole iteration: prompt → tool_use → question → deny →
	// turn end, for scale.
	Turn Dist `json:"turn"`
	// AtClient is the same through the orchestrator: to the notifier being
	// called with task/question (what a client gets, less the JSON-RPC
	// write), in a session of its own.
	AtClient Dist `json:"atClient"`
}

// detection runs the real claude against the fake API, one session per
// driver, and asks runs permissions in turn (the loop of
// agent.BenchmarkDetectionLatency).
func (r *runner) detection(ctx context.Context) error {
	if r.claude.Path == "" {
		return errSkip("the claude CLI is not installed (" + r.claudeErr + ")")
	}
	for _, d := range protocol.Drivers {
		driver := string(d)
		res, err := r.detectDriver(ctx, driver)
		if err != nil {
			return fmt.Errorf("%s driver: %w", driver, err)
		}
		if res.AtClient, err = r.detectAtClient(ctx, driver); err != nil {
			return fmt.Errorf("%s driver, through the orchestrator: %w", driver, err)
		}
		r.report.Detection = append(r.report.Detection, res)
		r.logf("detection %s: Question event p50 %.1f ms, p95 %.1f ms; task/question p50 %.1f ms, p95 %.1f ms (%d runs)",
			driver, res.Latency.P50, res.Latency.P95, res.AtClient.P50, res.AtClient.P95, res.Latency.N)
	}
	return nil
}

// detectAtClient asks the same questions of one task: its turns end with a
// question in prose, so the task waits with claude alive at its prompt, and
// the answer to that is the next prompt.
func (r *runner) detectAtClient(ctx context.Context, driver string) (Dist, error) {
	api := demomodel.Start(demomodel.PromptScript())
	defer api.Close()
	sw := toolUseStopwatch(api)
	repo, err := newRepo(ctx, r.tmp, 0, 0)
	if err != nil {
		return Dist{}, err
	}
	w, err := openWorkspace(ctx, r.tmp, repo, r.claude.Path, func(o *agent.Options) {
		if o.ExtraEnv == nil {
			o.ExtraEnv = map[string]string{}
		}
		for k, v := range api.Env() {
			o.ExtraEnv[k] = v
		}
	}, nil)
	if err != nil {
		return Dist{}, err
	}
	defer w.close()
	type asked struct {
		id, kind string
		at       time.Time
	}
	qs := newQueue[asked]()
	stop := w.notes.handle(func(x note) {
		if x.method != protocol.NotifyTaskQuestion {
			return
		}
		var n struct {
			Question struct {
				ID   string `json:"id"`
				Kind string `json:"kind"`
			} `json:"question"`
		}
		if json.Unmarshal(x.params, &n) == nil {
			qs.add(asked{n.Question.ID, n.Question.Kind, x.at})
		}
	})
	defer stop()
	prompt := func(i int) string {
		return fmt.Sprintf("n%d\n@@TOOL Bash {\"command\":\"touch bench-%d.txt\"}\n@@TEXT Done, shall I go on?", i, i)
	}
	t, err := w.ws.Orch.TaskCreate(ctx, &protocol.TaskCreateParams{Title: "detect", Description: prompt(0), Driver: protocol.Driver(driver)})
	if err != nil {
		return Dist{}, err
	}
	var lat []time.Duration
	next := 0
	for i := range r.opts.Runs {
		var q asked
		if q, next, err = qs.wait(ctx, next, "task/question for a permission", func(q asked) bool { return q.kind == string(agent.KindPermission) }); err != nil {
			return Dist{}, err
		}
		lat = append(lat, sw.since(q.at))
		if _, err := w.ws.Orch.TaskRespond(ctx, &protocol.TaskRespondParams{ID: t.ID, QuestionID: q.id, OptionID: agent.OptionDeny}); err != nil {
			return Dist{}, err
		}
		if q, next, err = qs.wait(ctx, next, "task/question in prose", func(q asked) bool { return q.kind == string(agent.KindQuestion) }); err != nil {
			return Dist{}, err
		}
		if i+1 < r.opts.Runs {
			if _, err := w.ws.Orch.TaskRespond(ctx, &protocol.TaskRespondParams{ID: t.ID, QuestionID: q.id, Text: prompt(i + 1)}); err != nil {
				return Dist{}, err
			}
		}
	}
	return distOf(lat), nil
}

func (r *runner) detectDriver(ctx context.Context, driver string) (DetectionResult, error) {
	res := DetectionResult{Driver: driver}
	api := demomodel.Start(demomodel.PromptScript())
	defer api.Close()
	sw := toolUseStopwatch(api)
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
	ev := newQueue[agent.Event]()
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
		OnEvent: func(e agent.Event) {
			if e.Kind != agent.EventOutput {
				ev.add(e)
			}
		},
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
		lat = append(lat, sw.since(q.At))
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

// queue collects items as they come, for waiting on one.
type queue[T any] struct {
	mu      sync.Mutex
	list    []T
	changed chan struct{}
}

func newQueue[T any]() *queue[T] { return &queue[T]{changed: make(chan struct{})} }

func (q *queue[T]) add(x T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.list = append(q.list, x)
	close(q.changed)
	q.changed = make(chan struct{})
}

// wait returns the first item from index from on that matches, and the
// index after it.
func (q *queue[T]) wait(ctx context.Context, from int, what string, match func(T) bool) (T, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		q.mu.Lock()
		for i := from; i < len(q.list); i++ {
			if match(q.list[i]) {
				x := q.list[i]
				q.mu.Unlock()
				return x, i + 1, nil
			}
		}
		ch := q.changed
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			var zero T
			return zero, from, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
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

// stopwatch remembers when the fake API last finished a tool_use reply:
// the start of every detection-latency measurement.
type stopwatch struct {
	mu     sync.Mutex
	doneAt time.Time
}

func toolUseStopwatch(api *demomodel.Server) *stopwatch {
	sw := &stopwatch{}
	api.OnResponseDone(func(req demomodel.Request, reply demomodel.Reply) {
		if len(reply.ToolUses) > 0 {
			sw.mu.Lock()
			sw.doneAt = time.Now()
			sw.mu.Unlock()
		}
	})
	return sw
}

// since is the time from the last tool_use reply to at.
func (sw *stopwatch) since(at time.Time) time.Duration {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return at.Sub(sw.doneAt)
}
