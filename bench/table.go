package bench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// printScenario prints the table of one scenario.
func printScenario(w io.Writer, rep *Report, name string) {
	var b strings.Builder
	switch name {
	case ScenarioDetect:
		tableDetect(&b, rep)
	case ScenarioOverhead:
		tableOverhead(&b, rep)
	case ScenarioThroughput:
		tableThroughput(&b, rep)
	case ScenarioOutputLag:
		tableOutputLag(&b, rep)
	case ScenarioStart:
		tableStart(&b, rep)
	case ScenarioScale:
		tableScale(&b, rep)
	case ScenarioCompare:
		tableCompare(&b, rep)
	case ScenarioFollowUp:
		tableFollowUp(&b, rep)
	case ScenarioFirst:
		tableFirstRequest(&b, rep)
	case ScenarioStore:
		tableStoreCommit(&b, rep)
	}
	if b.Len() > 0 {
		fmt.Fprintln(w, b.String())
	}
}

// Each table is Markdown, so the README can hold them as they print.

func tableDetect(w io.Writer, rep *Report) {
	if len(rep.Detection) == 0 {
		return
	}
	fmt.Fprintf(w, "### Detection latency: fake API done with a tool_use → familiar's permission Question event, and → task/question at the notifier (claude %s)\n\n", rep.ClaudeVersion)
	t := newTable(w, "driver", "runs", "Question p50 ms", "Question p95 ms", "max ms", "task/question p50 ms", "task/question p95 ms", "whole turn p50 ms")
	for _, d := range rep.Detection {
		t.row(d.Driver, d.Latency.N, d.Latency.P50, d.Latency.P95, d.Latency.Max, d.AtClient.P50, d.AtClient.P95, d.Turn.P50)
	}
	t.flush()
}

func tableOverhead(w io.Writer, rep *Report) {
	if len(rep.Overhead) == 0 {
		return
	}
	fmt.Fprintf(w, "### Overhead of idle sessions: familiar's own CPU and RSS (/proc/self), %.0f s window\n\n", rep.Options.WindowSec)
	t := newTable(w, "sessions", "familiar CPU %", "RSS MiB", "peak RSS MiB", "per session: CPU %", "per session: RSS MiB", "goroutines", "task/output notifications KiB/s", "agents' CPU %", "agents' RSS MiB")
	for _, o := range rep.Overhead {
		per := func(f float64) any {
			if o.Sessions == 0 {
				return "(baseline)"
			}
			return f
		}
		t.row(fmt.Sprintf("%d %s", o.Sessions, o.Kind), o.CPUPercent, o.RSSMiB, o.HWMMiB, per(o.CPUPercentPerSession), per(o.RSSMiBPerSession), o.Goroutines, o.OutputKiBps, o.AgentCPUPercent, o.AgentRSSMiB)
	}
	t.flush()
}

func tableThroughput(w io.Writer, rep *Report) {
	if len(rep.Throughput) > 0 {
		fmt.Fprintf(w, "### Output throughput: a child writing %d MiB of text lines to its PTY\n\n", rep.Options.FloodMiB)
		t := newTable(w, "path", "lines", "MB", "s", "MB/s", "familiar CPU s", "dropped bytes", "last line on the screen model")
		for _, x := range rep.Throughput {
			last := ""
			if x.LastLine != "" {
				last = "`" + x.LastLine + "`"
			}
			t.row(x.Path, x.Lines, x.MB, x.Sec, x.MBps, x.CPUSec, x.Dropped, last)
		}
		t.flush()
	}
	if len(rep.ScreenModel) > 0 {
		fmt.Fprintf(w, "\n### Screen model alone, 120×40, 32 KiB writes: before and after the scroll elider\n\n")
		t := newTable(w, "stream", "model", "MB", "s", "MB/s", "CPU s")
		for _, x := range rep.ScreenModel {
			t.row(x.Stream, x.Model, x.MB, x.Sec, x.MBps, x.CPUSec)
		}
		t.flush()
	}
}

func tableOutputLag(w io.Writer, rep *Report) {
	if len(rep.OutputLag) == 0 {
		return
	}
	fmt.Fprintf(w, "### Output lag: a fake agent's frame written → its task/output notification, two tasks side by side, %d frames/s, %.0f s window\n\n", rep.OutputLag[0].FPS, rep.Options.WindowSec)
	t := newTable(w, "frames end with", "frames", "p50 ms", "p99 ms", "max ms", "held tail p50 ms", "held tail p99 ms")
	for _, o := range rep.OutputLag {
		end := "a cursor move (" + o.Variant + ")"
		held := []any{"", ""}
		if o.Variant == LagHeld {
			end = "`" + lagTail + "` (" + o.Variant + ")"
			held = []any{o.HeldLag.P50, o.HeldLag.P99}
		}
		t.row(end, o.Lag.N, o.Lag.P50, o.Lag.P99, o.Lag.Max, held[0], held[1])
	}
	t.flush()
}

func tableStoreCommit(w io.Writer, rep *Report) {
	if len(rep.StoreCommit) == 0 {
		return
	}
	c := rep.StoreCommit[0]
	sync := "fdatasync"
	if c.OS == "darwin" {
		sync = "F_FULLFSYNC, a flush of the drive's cache"
	}
	fmt.Fprintf(w, "### Store commit, one at a time, in a store made in %s (%s): a notification that finds the store idle waits for the journal's one sync (%s); bbolt's commit, two more, follows it\n\n", c.Where, c.OS, sync)
	t := newTable(w, "commit", "commits", "p50 ms", "p95 ms", "p99 ms", "max ms")
	for _, c := range rep.StoreCommit {
		t.row(c.Kind, c.Latency.N, c.Latency.P50, c.Latency.P95, c.Latency.P99, c.Latency.Max)
	}
	t.flush()
}

func tableStart(w io.Writer, rep *Report) {
	s := rep.TaskStart
	if s == nil {
		return
	}
	fmt.Fprintf(w, "### Task start on a %d-file repository (%d runs each)\n\n", s.Files, s.GitWorktreeAdd.N)
	t := newTable(w, "step", "p50 ms", "p95 ms", "max ms")
	t.row("`git worktree add -b` alone", s.GitWorktreeAdd.P50, s.GitWorktreeAdd.P95, s.GitWorktreeAdd.Max)
	t.row(fmt.Sprintf("worktree.Create (median %+.1f%% over git per round)", s.CreateOverPct), s.WorktreeCreate.P50, s.WorktreeCreate.P95, s.WorktreeCreate.Max)
	t.row("task/create call (returns queued)", s.TaskCreate.P50, s.TaskCreate.P95, s.TaskCreate.Max)
	t.row(fmt.Sprintf("task/create → running, agent spawned (median %+.1f%% over git per round)", s.TaskOverPct), s.TaskToRunning.P50, s.TaskToRunning.P95, s.TaskToRunning.Max)
	t.row("worktree.Create besides its own `git worktree add`", s.CreateOwn.P50, s.CreateOwn.P95, s.CreateOwn.Max)
	t.row("task/create → running besides its own `git worktree add`", s.TaskOwn.P50, s.TaskOwn.P95, s.TaskOwn.Max)
	t.flush()
}

func tableScale(w io.Writer, rep *Report) {
	s := rep.Scale
	if s == nil {
		return
	}
	fmt.Fprintf(w, "### Scale: %d running + %d queued fake-agent tasks, %.0f s window, %.0f notifications/s\n\n", s.Running, s.Queued, s.WindowSec, s.NotesPerSec)
	t := newTable(w, "measure", "n", "p50 ms", "p99 ms", "max ms")
	t.row("task/list (all 60, JSON-encoded)", s.TaskList.N, s.TaskList.P50, s.TaskList.P99, s.TaskList.Max)
	t.row("task/reorder (moves all 50 queued; every 0.5 s)", s.Reorder.N, s.Reorder.P50, s.Reorder.P99, s.Reorder.Max)
	t.row("task/output lag: agent writes → notifier called", s.OutputLag.N, s.OutputLag.P50, s.OutputLag.P99, s.OutputLag.Max)
	t.row("task/updated lag: updatedAt → notifier called", s.UpdatedLag.N, s.UpdatedLag.P50, s.UpdatedLag.P99, s.UpdatedLag.Max)
	t.flush()
}

// table writes a Markdown table with aligned columns.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, head ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)}
	t.line(head)
	seps := make([]string, len(head))
	for i := range seps {
		seps[i] = "---"
	}
	t.line(seps)
	return t
}

func (t *table) row(cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case float64:
			if v >= 1000 || v <= -1000 {
				s[i] = fmt.Sprintf("%.0f", v)
			} else {
				s[i] = fmt.Sprintf("%.4g", v)
			}
		default:
			s[i] = fmt.Sprint(v)
		}
	}
	t.line(s)
}

func (t *table) line(cells []string) {
	fmt.Fprintf(t.tw, "| %s\t|\n", strings.Join(cells, "\t| "))
}

func (t *table) flush() { _ = t.tw.Flush() }

// Markdown returns every table of the report.
func Markdown(rep *Report) string {
	var b strings.Builder
	for _, name := range Scenarios {
		printScenario(&b, rep, name)
	}
	return b.String()
}

// readmeMarker separates the generated part of README.md from notes kept
// by hand below it.
const readmeMarker = "<!-- Everything above is written by `familiar bench`; notes below this line are kept. -->"

// WriteReadme writes dir/README.md: how to run the benchmarks, the tables
// of rep, and whatever the existing README has below readmeMarker.
func WriteReadme(rep *Report, dir, jsonName string) error {
	path := filepath.Join(dir, "README.md")
	var notes string
	if b, err := os.ReadFile(path); err == nil {
		if _, after, ok := strings.Cut(string(b), readmeMarker); ok {
			notes = after
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmark results\n\n")
	fmt.Fprintf(&b, "Measured by `go run ./cmd/familiar bench` (package `bench`, issue 9) on %s: %d CPUs, %.0f GiB, Linux %s, %s; load average %.2f at the start, %.2f at the end",
		rep.Date, rep.Machine.CPUs, rep.Machine.MemGiB, rep.Machine.Kernel, rep.Machine.Go, rep.Machine.LoadAvg[0], rep.Machine.LoadEnd[0])
	if rep.Commit != "" {
		fmt.Fprintf(&b, "; source at %s", rep.Commit)
	}
	fmt.Fprintf(&b, ". All figures are in [%s](%s). The whole run took %.0f s.\n\n", jsonName, jsonName, rep.DurationSec)
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(&b, "Not measured here: %s.\n\n", strings.Join(rep.Skipped, "; "))
	}
	b.WriteString(Markdown(rep))
	b.WriteString("\n" + readmeMarker)
	if notes == "" {
		notes = "\n"
	}
	b.WriteString(notes)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func tableCompare(w io.Writer, rep *Report) {
	if len(rep.Compare) == 0 {
		return
	}
	fmt.Fprintf(w, "### Compared with peers: detect (scripted API done with a tool_use → the client sees the question) and continue (the client's allow → the next API request), claude %s, %d rounds each, interleaved\n\n",
		rep.ClaudeVersion, rep.Options.CompareRuns)
	t := newTable(w, "system", "runs", "detect p50 ms", "detect p95 ms", "continue p50 ms", "continue p95 ms")
	for _, c := range rep.Compare {
		if c.Skipped != "" {
			t.row(c.System, 0, "skipped: "+c.Skipped, "", "", "")
			continue
		}
		t.row(c.System, c.Detect.N, c.Detect.P50, c.Detect.P95, c.Continue.P50, c.Continue.P95)
	}
	t.flush()
}

func tableFollowUp(w io.Writer, rep *Report) {
	if len(rep.FollowUp) == 0 {
		return
	}
	fmt.Fprintf(w, "### Follow-ups: a prompt on a session whose turn ended → its model request (the first text comes with the reply), and the memory the session holds between turns, claude %s, %d rounds each, interleaved\n\n",
		rep.ClaudeVersion, rep.Options.CompareRuns)
	t := newTable(w, "system", "runs", "p50 ms", "p95 ms", "idle RSS MiB")
	for _, f := range rep.FollowUp {
		if f.Skipped != "" {
			t.row(f.System, 0, "skipped: "+f.Skipped, "", "")
			continue
		}
		t.row(f.System, f.FirstRequest.N, f.FirstRequest.P50, f.FirstRequest.P95, f.IdleRSSMiB)
	}
	t.flush()
}

func tableFirstRequest(w io.Writer, rep *Report) {
	if len(rep.FirstRequest) == 0 {
		return
	}
	fmt.Fprintf(w, "### A new session's start: the client asks for it → the model's first request (familiar from task/create; the floors and the adapter from their spawn), claude %s, %d starts each, interleaved\n\n",
		rep.ClaudeVersion, rep.Options.StartRuns)
	against := ""
	for _, f := range rep.FirstRequest {
		if f.PerRound != nil {
			against = f.PerRound.Against
		}
	}
	if against == "" {
		t := newTable(w, "system", "runs", "p50 ms", "p95 ms")
		for _, f := range rep.FirstRequest {
			if f.Skipped != "" {
				t.row(f.System, 0, "skipped: "+f.Skipped, "")
				continue
			}
			t.row(f.System, f.First.N, f.First.P50, f.First.P95)
		}
		t.flush()
	} else {
		// Each start over the floor's of the same round: the interleaved
		// pairs ran side by side, so the machine's drift cancels out.
		t := newTable(w, "system", "runs", "p50 ms", "p95 ms", "÷ "+against+", round by round: p50", "p95")
		for _, f := range rep.FirstRequest {
			switch {
			case f.Skipped != "":
				t.row(f.System, 0, "skipped: "+f.Skipped, "", "", "")
			case f.PerRound != nil:
				t.row(f.System, f.First.N, f.First.P50, f.First.P95, fmt.Sprintf("%.2f×", f.PerRound.P50), fmt.Sprintf("%.2f×", f.PerRound.P95))
			default:
				t.row(f.System, f.First.N, f.First.P50, f.First.P95, "", "")
			}
		}
		t.flush()
	}
	fmt.Fprintf(w, "\nLoad average %.1f as the starts began, %.1f as they ended", rep.FirstRequestLoad[0], rep.FirstRequestLoad[1])
	if rep.Options.Hog > 0 {
		fmt.Fprintf(w, ", with %d busy loops of the bench's own", rep.Options.Hog)
	}
	fmt.Fprintln(w, ".")
	for _, f := range rep.FirstRequest {
		if len(f.Steps) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n#### %s's start, step by step (the orchestrator's steps in order; the spawn's parts indented)\n\n", f.System)
		t := newTable(w, "step", "p50 ms", "p95 ms")
		for _, st := range f.Steps {
			name := st.Step
			if strings.HasPrefix(name, "spawn: ") {
				name = "  " + name
			}
			t.row(name, st.Dist.P50, st.Dist.P95)
		}
		t.flush()
	}
}
