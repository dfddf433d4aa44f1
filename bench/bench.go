package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/agent"
)

// Scenarios, in the order Run runs them.
const (
	ScenarioDetect     = "detect"
	ScenarioOverhead   = "overhead"
	ScenarioThroughput = "throughput"
	ScenarioOutputLag  = "outputlag"
	ScenarioStart      = "start"
	ScenarioScale      = "scale"
	ScenarioCompare    = "compare"
	ScenarioFollowUp   = "followup"
	ScenarioFirst      = "firstrequest"
	ScenarioStore      = "store"
)

// Scenarios lists every scenario.
var Scenarios = []string{ScenarioDetect, ScenarioOverhead, ScenarioThroughput, ScenarioOutputLag, ScenarioStart, ScenarioScale, ScenarioCompare, ScenarioFollowUp, ScenarioFirst, ScenarioStore}

// Options configure Run. The zero value of each field means its default.
type Options struct {
	// Only runs these scenarios; nil runs all.
	Only []string
	// Runs is how many questions each driver is asked (default 50).
	Runs int
	// CompareRuns is how many permission rounds each system of the
	// comparison gets, interleaved (default 22).
	CompareRuns int
	// CompareOnly, if set, runs only the systems whose name contains one
	// of its comma-separated parts.
	CompareOnly string
	// StartRuns is how many tasks and worktrees the start scenario makes
	// (default 5).
	StartRuns int
	// FloodMB is how much the flooding child writes (default 200, in MiB).
	FloodMB int
	// Window is how long CPU and latencies are sampled (default 10 s).
	Window time.Duration
	// Hog is how many busy loops of its own the bench runs beside every
	// scenario: the load a measurement is taken at (0: none).
	Hog int

	// ModuleRoot is familiar's source tree (default: found from the
	// working directory); the fake agent is built from it.
	ModuleRoot string
	// FakeAgent is a built internal/fakeagent; "" builds one.
	FakeAgent string
	// ClaudePath and ToolsDir find the real CLI as familiar does.
	ClaudePath, ToolsDir string
	// Self re-runs this program for a measurement in a process of its own:
	// Self[0] is the executable, the rest the arguments that select the
	// bench command; Run adds -child and its flags (see RunOverheadChild).
	Self []string
	// Familiar is a familiar executable for the measurements that run it
	// as an editor does (familiar serve --stdio); "" skips them.
	Familiar string

	// Out receives the tables; Log progress lines. nil discards.
	Out, Log io.Writer
}

func (o *Options) defaults() error {
	if o.Runs <= 0 {
		o.Runs = 50
	}
	if o.StartRuns <= 0 {
		o.StartRuns = 5
	}
	if o.CompareRuns <= 0 {
		o.CompareRuns = 22
	}
	if o.FloodMB <= 0 {
		o.FloodMB = 200
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Second
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	for _, s := range o.Only {
		if !slices.Contains(Scenarios, s) {
			return fmt.Errorf("unknown scenario %q (have %s)", s, strings.Join(Scenarios, ", "))
		}
	}
	if o.ModuleRoot == "" {
		root, err := ModuleRoot()
		if err != nil {
			return err
		}
		o.ModuleRoot = root
	}
	return nil
}

// Report is everything one Run measured; it is what the JSON file holds.
type Report struct {
	Date          string               `json:"date"`
	Commit        string               `json:"commit,omitempty"`
	Machine       Machine              `json:"machine"`
	ClaudeVersion string               `json:"claudeVersion,omitempty"`
	Options       ReportOptions        `json:"options"`
	Detection     []DetectionResult    `json:"detectionLatency,omitempty"`
	Overhead      []OverheadResult     `json:"overhead,omitempty"`
	Throughput    []ThroughputResult   `json:"throughput,omitempty"`
	ScreenModel   []ScreenResult       `json:"screenModel,omitempty"`
	OutputLag     []OutputLagResult    `json:"outputLag,omitempty"`
	TaskStart     *TaskStartResult     `json:"taskStart,omitempty"`
	Scale         *ScaleResult         `json:"scale,omitempty"`
	Compare       []CompareResult      `json:"compare,omitempty"`
	FollowUp      []FollowUpResult     `json:"followUp,omitempty"`
	FirstRequest  []FirstRequestResult `json:"firstRequest,omitempty"`
	// FirstRequestLoad is the 1-minute load average as the first-request
	// scenario began and as it ended.
	FirstRequestLoad [2]float64     `json:"firstRequestLoad,omitempty"`
	StoreCommit      []CommitResult `json:"storeCommit,omitempty"`
	// Skipped says what did not run here and why.
	Skipped     []string           `json:"skipped,omitempty"`
	DurationSec float64            `json:"durationSec"`
	Scenarios   map[string]float64 `json:"scenarioSec"`
}

// ReportOptions are the options that shape the figures.
type ReportOptions struct {
	Runs        int     `json:"detectionRuns"`
	CompareRuns int     `json:"compareRuns"`
	StartRuns   int     `json:"startRuns"`
	FloodMiB    int     `json:"floodMiB"`
	WindowSec   float64 `json:"windowSec"`
	Hog         int     `json:"busyLoops,omitempty"`
}

type runner struct {
	opts       Options
	report     *Report
	tmp        string
	fake       string
	moduleRoot string
	claude     agent.CLI
	claudeErr  string
	// startLog, if set, takes the debug records of familiar's contenders
	// (the steps of an agent's start).
	startLog slog.Handler
}

// Run runs the scenarios, printing a table per scenario to Out as each
// ends, and returns the report. A scenario that cannot run on this machine
// (no claude CLI) is skipped and listed in Report.Skipped; any other failure
// stops Run.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	began := time.Now()
	rep := &Report{
		Date: began.Format("2006-01-02"),
		Machine: Machine{
			CPUs: runtime.NumCPU(), MemGiB: memTotalGiB(), Kernel: kernel(), Go: runtime.Version(), LoadAvg: loadAvg(),
		},
		Options:   ReportOptions{Runs: opts.Runs, CompareRuns: opts.CompareRuns, StartRuns: opts.StartRuns, FloodMiB: opts.FloodMB, WindowSec: opts.Window.Seconds(), Hog: opts.Hog},
		Scenarios: map[string]float64{},
	}
	r := &runner{opts: opts, report: rep, moduleRoot: opts.ModuleRoot}
	tmp, err := os.MkdirTemp("", "familiar-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if tmp, err = filepath.EvalSymlinks(tmp); err != nil {
		return nil, err
	}
	r.tmp = tmp
	r.fake = opts.FakeAgent
	if r.fake == "" {
		r.logf("building internal/fakeagent")
		if r.fake, err = BuildFakeAgent(ctx, opts.ModuleRoot, tmp); err != nil {
			return nil, err
		}
	}
	r.claude, err = agent.FindCLI(ctx, opts.ClaudePath, opts.ToolsDir)
	if err != nil {
		r.claude, r.claudeErr = agent.CLI{}, err.Error()
	}
	rep.ClaudeVersion = r.claude.Version
	if opts.Hog > 0 {
		h, err := startHog(opts.Hog)
		if err != nil {
			return nil, err
		}
		defer h.stop()
		r.logf("%d busy loops running", opts.Hog)
	}

	steps := map[string]func(context.Context) error{
		ScenarioDetect:     r.detection,
		ScenarioOverhead:   r.overhead,
		ScenarioThroughput: r.throughput,
		ScenarioOutputLag:  r.outputLag,
		ScenarioStart:      r.taskStart,
		ScenarioScale:      r.scale,
		ScenarioCompare:    r.compare,
		ScenarioFollowUp:   r.followUp,
		ScenarioFirst:      r.firstRequest,
		ScenarioStore:      r.storeCommit,
	}
	for _, name := range Scenarios {
		if len(opts.Only) > 0 && !slices.Contains(opts.Only, name) {
			continue
		}
		r.logf("== %s", name)
		start := time.Now()
		err := steps[name](ctx)
		rep.Scenarios[name] = round(time.Since(start).Seconds())
		switch {
		case isSkip(err):
			r.skip(name + ": " + err.Error())
		case err != nil:
			return rep, fmt.Errorf("%s: %w", name, err)
		}
		printScenario(opts.Out, rep, name)
	}
	rep.Machine.LoadEnd = loadAvg()
	rep.DurationSec = round(time.Since(began).Seconds())
	return rep, nil
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.opts.Log, "bench: "+format+"\n", args...)
}

func (r *runner) skip(why string) {
	r.report.Skipped = append(r.report.Skipped, why)
	r.logf("skipped %s", why)
}

// WriteJSON writes the report to dir/<date>.json (indented, with a final
// newline) and returns the path.
func WriteJSON(rep *Report, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, rep.Date+".json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}
