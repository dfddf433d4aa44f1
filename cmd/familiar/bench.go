package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/bench"
)

const benchUsage = `Usage: familiar bench [flags]

Measures familiar's speed and scale (issue 9): detection latency with the
real claude against a scripted API, the overhead of idle sessions, PTY output
throughput and output notification lag (with and without a partial secret
held by the masker), task start on a 10,000-file repository, and task/list and
notification lag with 60 tasks. Run it from familiar's source tree: it builds
internal/fakeagent with the go tool. Prints Markdown tables; writes
bench/results/<date>.json and the tables into bench/results/README.md.

Exit codes:
  0  every scenario ran
  1  a scenario failed (e.g. claude or the go tool is missing)
  2  bad usage

Flags:
`

// runBench is `familiar bench`.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	withHelp(fs, benchUsage, stdout)
	var (
		only      = fs.String("only", "", "comma-separated scenarios to run: "+strings.Join(bench.Scenarios, ", ")+" (default all)")
		runs      = fs.Int("runs", 50, "questions asked per driver")
		cmpRuns   = fs.Int("compare-runs", 22, "permission rounds per system in the comparison with peers")
		cmpOnly   = fs.String("compare-only", "", "run only the compared systems whose name contains one of these comma-separated parts")
		startRuns = fs.Int("start-runs", 5, "tasks and worktrees made by the start scenario")
		floodMB   = fs.Int("flood-mb", 200, "MiB the flooding child writes")
		window    = fs.Duration("window", 10*time.Second, "how long CPU and latencies are sampled")
		hog       = fs.Int("hog", 0, "busy loops of the bench's own running beside the scenarios (a chosen load)")
		out       = fs.String("out", "", "directory for the JSON and README.md (default bench/results in the source tree)")
		noWrite   = fs.Bool("no-write", false, "print the tables only")
		fake      = fs.String("fakeagent", "", "a built internal/fakeagent (default: build one)")
		claude    = fs.String("claude", os.Getenv("FAMILIAR_CLAUDE"), "path of the claude CLI (default: .tools, then PATH)")
		cpuProf   = fs.String("cpuprofile", "", "write a CPU profile of the run to this file")

		// A measurement in a process of its own (run by bench itself).
		child    = fs.String("child", "", "internal: run one measurement and print it as JSON")
		kind     = fs.String("kind", bench.KindFake, "internal: kind of idle session for -child overhead")
		sessions = fs.Int("sessions", 0, "internal: idle sessions for -child overhead")
	)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "familiar bench: %v\n", err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if *child != "" {
		if *child != "overhead" {
			fmt.Fprintf(stderr, "familiar bench: unknown -child %q\n", *child)
			return 2
		}
		err := bench.RunOverheadChild(ctx, bench.ChildOptions{Kind: *kind, Sessions: *sessions, Window: *window, FakeAgent: *fake, Claude: *claude})
		if err != nil {
			fmt.Fprintf(stderr, "familiar bench: %v\n", err)
			return 1
		}
		return 0
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "familiar bench: %v\n", err)
		return 1
	}
	opts := bench.Options{
		Runs: *runs, CompareRuns: *cmpRuns, CompareOnly: *cmpOnly, StartRuns: *startRuns, FloodMB: *floodMB, Window: *window, Hog: *hog,
		FakeAgent: *fake, ClaudePath: *claude, ToolsDir: toolsDir(),
		Self: []string{exe, "bench"}, Familiar: exe, Out: stdout, Log: stderr,
	}
	if *only != "" {
		opts.Only = strings.Split(*only, ",")
	}
	root, err := bench.ModuleRoot()
	if err != nil {
		fmt.Fprintf(stderr, "familiar bench: %v\n", err)
		return 1
	}
	opts.ModuleRoot = root
	rep, err := bench.Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "familiar bench: %v\n", err)
		return 1
	}
	if *noWrite {
		return 0
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join(root, "bench", "results")
	}
	rep.Commit = sourceCommit(ctx, root)
	path, err := bench.WriteJSON(rep, dir)
	if err == nil {
		err = bench.WriteReadme(rep, dir, filepath.Base(path))
	}
	if err != nil {
		fmt.Fprintf(stderr, "familiar bench: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", path, filepath.Join(dir, "README.md"))
	return 0
}

// sourceCommit names the commit measured, "+dirty" when the tree has
// changes; "" when it cannot tell.
func sourceCommit(ctx context.Context, root string) string {
	cmd := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty=+dirty", "--abbrev=12")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
