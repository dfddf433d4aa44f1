// Package batch runs a tasks file headless (familiar run): the same engine
// as the editor's, with permissions decided only by the file's policy, live
// progress on a terminal (one line per event otherwise), and a report.
//
// It never asks a person anything: a question nobody can answer times out.
package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/orchestrator"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/runfile"
	"github.com/familiar-dev/familiar/workspace"
)

// Exit codes of familiar run.
const (
	ExitOK       = 0 // every task reached merging or merged
	ExitFailed   = 1 // a task was blocked or cancelled, or familiar could not run
	ExitBadInput = 2 // the tasks file is wrong
)

// Options configure a run.
type Options struct {
	Dir       string // the repository
	File      *runfile.File
	JSON      bool      // print the report as JSON
	Terminal  bool      // Out is a terminal: draw live progress
	Out       io.Writer // report (and progress, without JSON)
	Log       io.Writer // progress with JSON (stdout then holds only the report); nil = discard
	Workspace workspace.Options
	// Force is closed on a second Ctrl-C: stop the agents without grace.
	Force <-chan struct{}
	// Diffs prints each finished task's patch after the report.
	Diffs bool
}

// Report is what a run produced.
type Report struct {
	File  string       `json:"file"`
	OK    bool         `json:"ok"`
	Tasks []TaskReport `json:"tasks"`
	// Queue is the merge queue's end, with merge: queue.
	Queue *protocol.Queue `json:"queue,omitempty"`
	// QueueError is why the merge queue could not start.
	QueueError string `json:"queueError,omitempty"`
	// Plan is the run's plan at its end, when its tasks have needs.
	Plan *protocol.Plan `json:"plan,omitempty"`
}

// TaskReport is one task's outcome.
type TaskReport struct {
	ID           string                 `json:"id"`
	Title        string                 `json:"title"`
	Line         int                    `json:"line"`
	Status       protocol.Status        `json:"status"`
	Summary      string                 `json:"summary,omitempty"`
	ChangedFiles []protocol.ChangedFile `json:"changedFiles"`
	Commits      []protocol.Commit      `json:"commits"`
	CostUSD      *float64               `json:"costUsd,omitempty"`
	// Usage is the task's tokens and cost, in total and per turn.
	Usage       *protocol.Usage   `json:"usage,omitempty"`
	DurationSec float64           `json:"durationSec"`
	Blocked     *protocol.Blocked `json:"blocked,omitempty"`
	Branch      string            `json:"branch,omitempty"`
	Worktree    string            `json:"worktree,omitempty"`
	// Conflicts and Overlaps are the task's conflict forecast at the end.
	Conflicts []protocol.TaskConflict `json:"conflicts,omitempty"`
	Overlaps  []protocol.TaskConflict `json:"overlaps,omitempty"`
}

// Run runs every task of the file and returns the report and the exit code.
// Cancelling ctx (Ctrl-C) stops the agents gracefully and keeps worktrees.
func Run(ctx context.Context, o Options) (Report, int) {
	rep := Report{File: o.File.Path}
	n := newNotes()
	wo := o.Workspace
	wo.Notifier = n
	wo.Headless = true
	ws, err := workspace.Open(context.Background(), o.Dir, wo)
	if err != nil {
		fmt.Fprintf(o.Out, "familiar run: %v\n", err)
		return rep, ExitFailed
	}
	defer ws.Close()
	if ws.CLIErr != nil {
		fmt.Fprintf(o.Out, "familiar run: claude is not available: %v\n", ws.CLIErr)
		return rep, ExitFailed
	}
	ws.Orch.UseSettings(settingsFor(ws.Orch.Settings(), o.File.Settings))
	if o.File.Plan != nil {
		return runPlan(ctx, o, ws.Orch, n, rep)
	}

	var ids []string
	lines := map[string]int{}
	for i := range o.File.Tasks {
		p := o.File.Tasks[i]
		t, err := ws.Orch.TaskCreate(context.Background(), &p)
		if err != nil {
			ws.Orch.CancelAll(context.Background(), fmt.Sprintf("familiar run stopped: task %d of %s could not be created", i+1, o.File.Path))
			var pe *protocol.Error
			if errors.As(err, &pe) && pe.Code == protocol.CodeInvalidParams {
				field := ""
				if d, ok := pe.Data.(*protocol.ErrorData); ok {
					field = d.Field
				}
				fmt.Fprintf(o.Out, "%s:%d: tasks[%d].%s: %s\n", o.File.Path, o.File.Lines[i], i, field, pe.Message)
				return rep, ExitBadInput
			}
			fmt.Fprintf(o.Out, "%s:%d: tasks[%d]: %v\n", o.File.Path, o.File.Lines[i], i, err)
			return rep, ExitFailed
		}
		ids = append(ids, t.ID)
		lines[t.ID] = o.File.Lines[i]
	}

	progOut := o.Out
	if o.JSON {
		progOut = o.Log
		if progOut == nil {
			progOut = io.Discard
		}
	}
	prog := newProgress(progOut, o.Terminal && !o.JSON, ids, ws.Orch)
	cancelled := false
	for {
		if allDone(ws.Orch, ids) {
			break
		}
		select {
		case <-n.changed():
			for _, m := range n.take() {
				prog.event(m)
			}
		case <-ctx.Done():
			if !cancelled {
				cancelled = true
				prog.say("interrupted: stopping the agents gracefully (Ctrl-C again to force)")
				go ws.Orch.CancelAll(context.Background(), "") // the person's Ctrl-C
			}
			ctx = context.Background() // wait for the tasks to settle
		case <-o.Force:
			prog.say("forced: killing the agents")
			ws.Orch.Kill()
			o.Force = nil
		}
	}
	for _, m := range n.take() {
		prog.event(m)
	}
	var queue *protocol.Queue
	var queueErr error
	if o.File.Settings.Merge == runfile.MergeQueue && !cancelled {
		queue, queueErr = runQueue(ctx, ws.Orch, ids, o.File.Settings, n, prog)
	}
	// The tasks' final states are read from the store, which can be ahead of
	// the notifications still on their way: show what those would have.
	for _, id := range ids {
		if t, err := ws.Orch.TaskGet(context.Background(), &protocol.TaskIDParams{ID: id}); err == nil {
			prog.update(*t)
		}
	}
	prog.close()

	rep.OK = true
	for _, id := range ids {
		tr, t, ok := taskReport(ws.Orch, id, lines[id])
		if !ok {
			continue
		}
		if t.Status != protocol.StatusMerging && t.Status != protocol.StatusMerged {
			rep.OK = false
		}
		// With merge: queue, ready is not enough: the run merges its work
		// (a task with nothing to merge is done as it is).
		if o.File.Settings.Merge == runfile.MergeQueue && t.Status == protocol.StatusMerging && (t.Result == nil || !t.Result.NoChanges) {
			rep.OK = false
		}
		rep.Tasks = append(rep.Tasks, tr)
	}
	rep.Queue = queue
	if queueErr != nil {
		rep.OK, rep.QueueError = false, queueErr.Error()
	}
	return finish(o, ws.Orch, rep)
}

// finish prints the report and says the exit code.
func finish(o Options, orch *orchestrator.Orchestrator, rep Report) (Report, int) {
	if o.JSON {
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		printReport(o.Out, rep)
		if o.Diffs {
			printDiffs(o.Out, orch, rep)
		}
	}
	if !rep.OK {
		return rep, ExitFailed
	}
	return rep, ExitOK
}

// taskReport is a task's outcome as the report says it.
func taskReport(o *orchestrator.Orchestrator, id string, line int) (TaskReport, *protocol.Task, bool) {
	t, err := o.TaskGet(context.Background(), &protocol.TaskIDParams{ID: id})
	if err != nil {
		return TaskReport{}, nil, false
	}
	tr := TaskReport{ID: t.ID, Title: t.Title, Line: line, Status: t.Status, Blocked: t.Blocked,
		ChangedFiles: []protocol.ChangedFile{}, Commits: []protocol.Commit{}, Usage: t.Usage,
		Conflicts: t.Conflicts, Overlaps: t.Overlaps}
	if t.Result != nil {
		tr.Summary, tr.CostUSD = t.Result.Summary, t.Result.CostUSD
		tr.ChangedFiles = append(tr.ChangedFiles, t.Result.ChangedFiles...)
		tr.Commits = append(tr.Commits, t.Result.Commits...)
	}
	if !t.StartedAt.IsZero() && !t.FinishedAt.IsZero() {
		tr.DurationSec = t.FinishedAt.Sub(t.StartedAt).Round(time.Millisecond).Seconds()
	}
	if t.Worktree != nil {
		tr.Branch, tr.Worktree = t.Worktree.Branch, t.Worktree.Path
	}
	return tr, t, true
}

func allDone(o *orchestrator.Orchestrator, ids []string) bool {
	for _, id := range ids {
		t, err := o.TaskGet(context.Background(), &protocol.TaskIDParams{ID: id})
		if err != nil {
			continue
		}
		if !t.Status.Finished() {
			return false
		}
	}
	return true
}

// settingsFor applies the file's run settings to familiar's.
func settingsFor(s protocol.Settings, r runfile.Settings) protocol.Settings {
	if r.Concurrency > 0 {
		s.MaxConcurrent = r.Concurrency
	}
	if r.Driver != "" {
		s.DefaultDriver = r.Driver
	}
	if r.ApprovalTimeoutSec > 0 {
		s.ApprovalTimeoutSec = r.ApprovalTimeoutSec
	}
	if r.NoProgressTimeoutSec > 0 {
		s.NoProgressTimeoutSec = r.NoProgressTimeoutSec
	}
	if r.TermGraceSec != nil {
		s.TermGraceSec = *r.TermGraceSec
	}
	if r.CommandTimeoutSec > 0 {
		s.CommandTimeoutSec = r.CommandTimeoutSec
	}
	if r.Sandbox != "" {
		s.Sandbox = r.Sandbox
	}
	if r.MaxBudgetUsd > 0 {
		s.MaxBudgetUsd = r.MaxBudgetUsd
	}
	// Headless: only the file's policy decides; without one, ask — which
	// nobody answers, so requests are denied after the approval timeout.
	s.PermissionPolicy = protocol.Policy{Default: protocol.PolicyAsk}
	if r.PermissionPolicy != nil {
		s.PermissionPolicy = *r.PermissionPolicy
	}
	return s
}

func printReport(w io.Writer, rep Report) {
	fmt.Fprintf(w, "\n%s from %s\n", count(len(rep.Tasks), "task"), rep.File)
	for _, t := range rep.Tasks {
		nothing := len(t.ChangedFiles) == 0 && len(t.Commits) == 0
		fmt.Fprintf(w, "\n● %s: %s (%s, %.1fs)\n", t.Title, statusWords(t.Status, nothing), t.ID, t.DurationSec)
		if b := t.Blocked; b != nil {
			switch b.Reason {
			case protocol.BlockedMerge, protocol.BlockedConflict:
				// The detail says it in words; "merge" reads as nothing.
				fmt.Fprintf(w, "  set aside: %s\n", b.Detail)
			default:
				fmt.Fprintf(w, "  blocked (%s): %s\n", b.Reason, b.Detail)
			}
		}
		if t.Summary != "" {
			fmt.Fprintf(w, "  summary: %s\n", oneLine(t.Summary, 300))
		}
		for _, f := range t.ChangedFiles {
			fmt.Fprintf(w, "  %-8s %s\n", f.Status, f.Path)
		}
		for _, c := range t.Commits {
			fmt.Fprintf(w, "  commit %s %s\n", c.SHA[:min(12, len(c.SHA))], c.Subject)
		}
		if t.Branch != "" {
			fmt.Fprintf(w, "  branch %s in %s\n", t.Branch, t.Worktree)
		}
		for _, c := range t.Conflicts {
			fmt.Fprintf(w, "  conflicts with %s: %s\n", c.With, strings.Join(c.Files, ", "))
		}
		for _, c := range t.Overlaps {
			fmt.Fprintf(w, "  overlaps with %s: %s\n", c.With, strings.Join(c.Files, ", "))
		}
		if t.CostUSD != nil {
			fmt.Fprintf(w, "  cost $%.4f\n", *t.CostUSD)
		}
		if u := t.Usage; u != nil {
			fmt.Fprintf(w, "  tokens %d in, %d out, %d cache read, %d cache write over %d turns\n",
				u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, len(u.Turns))
		}
	}
	if rep.QueueError != "" {
		fmt.Fprintf(w, "\nthe merge queue did not start: %s\n", rep.QueueError)
	}
	if q := rep.Queue; q != nil {
		fmt.Fprintf(w, "\nmerge queue into %s (%s", q.BaseRef, q.Strategy)
		if q.Verify != "" {
			fmt.Fprintf(w, ", verify: %s", q.Verify)
		}
		fmt.Fprintf(w, "): %s\n", q.State)
		if q.Interrupted != "" {
			fmt.Fprintf(w, "  %s\n", q.Interrupted)
		}
		for _, it := range q.Items {
			attempts := "1 attempt"
			if it.Attempts != 1 {
				attempts = fmt.Sprintf("%d attempts", it.Attempts)
			}
			fmt.Fprintf(w, "  %-10s %s %s (%s)", it.State, it.Title, it.TaskID, attempts)
			if it.State != protocol.QueueItemMerged && it.Detail != "" {
				fmt.Fprintf(w, ": %s", oneLine(it.Detail, 300))
			}
			fmt.Fprintln(w)
		}
	}
	if p := rep.Plan; p != nil {
		printPlan(w, p)
	}
	switch {
	case rep.Plan != nil && rep.OK:
		fmt.Fprintln(w, "\nthe plan is done: every step merged and checked")
	case rep.Plan != nil:
		fmt.Fprintln(w, "\nthe plan did not finish")
	case rep.OK:
		fmt.Fprintln(w, "\nall tasks finished")
	default:
		fmt.Fprintln(w, "\nsome tasks did not finish")
	}
}

// count says n things: "1 task", "3 tasks".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func printDiffs(w io.Writer, o *orchestrator.Orchestrator, rep Report) {
	for _, t := range rep.Tasks {
		if len(t.Commits) == 0 {
			continue
		}
		d, err := o.TaskDiff(context.Background(), &protocol.TaskDiffParams{ID: t.ID})
		if err != nil {
			fmt.Fprintf(w, "\n(no diff for %s: %v)\n", t.Title, err)
			continue
		}
		fmt.Fprintf(w, "\n--- diff of %q on %s ---\n", t.Title, t.Branch)
		for _, f := range d.Files {
			fmt.Fprintf(w, " %s | +%d -%d\n", f.Path, f.Additions, f.Deletions)
		}
		fmt.Fprint(w, d.Patch)
	}
}

func oneLine(s string, max int) string {
	b := []rune(s)
	out := make([]rune, 0, len(b))
	for _, r := range b {
		if r == '\n' || r == '\r' {
			r = ' '
		}
		out = append(out, r)
	}
	if len(out) > max {
		return string(out[:max]) + "…"
	}
	return string(out)
}

// notes collects notifications for the progress loop.
type notes struct {
	mu   sync.Mutex
	list []note
	ch   chan struct{}
}

type note struct {
	method string
	params json.RawMessage
}

func newNotes() *notes { return &notes{ch: make(chan struct{}, 1)} }

func (n *notes) Notify(method string, params any) {
	b, _ := params.(json.RawMessage)
	n.mu.Lock()
	n.list = append(n.list, note{method, b})
	n.mu.Unlock()
	select {
	case n.ch <- struct{}{}:
	default:
	}
}

func (n *notes) changed() <-chan struct{} { return n.ch }

func (n *notes) take() []note {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.list
	n.list = nil
	return l
}

// runQueue merges the run's finished tasks through the merge queue and
// waits for it to end (tasks it hands back to their agents run again
// meanwhile, shown as before). Ctrl-C cancels the queue after its step.
func runQueue(ctx context.Context, o *orchestrator.Orchestrator, ids []string, s runfile.Settings, n *notes, prog *progress) (*protocol.Queue, error) {
	var ready []string
	for _, id := range ids {
		t, err := o.TaskGet(context.Background(), &protocol.TaskIDParams{ID: id})
		if err == nil && t.Status == protocol.StatusMerging && (t.Result == nil || !t.Result.NoChanges) {
			ready = append(ready, id)
		}
	}
	if len(ready) == 0 {
		return nil, nil
	}
	q, err := o.QueueMerge(context.Background(), &protocol.QueueMergeParams{IDs: ready, Strategy: s.MergeStrategy, Verify: s.Verify})
	if err != nil {
		return nil, err
	}
	prog.say(fmt.Sprintf("merge queue: %s into %s", count(len(q.Items), "task"), q.BaseRef))
	for {
		st, _ := o.QueueStatus(context.Background(), &protocol.QueueStatusParams{})
		if st != nil && st.Queue != nil && st.Queue.ID == q.ID && st.Queue.State != protocol.QueueRunning {
			for _, m := range n.take() {
				prog.event(m)
			}
			return st.Queue, nil
		}
		select {
		case <-n.changed():
			for _, m := range n.take() {
				prog.event(m)
			}
		case <-ctx.Done():
			prog.say("interrupted: the merge queue stops after its current step")
			o.QueueCancel(context.Background(), &protocol.QueueCancelParams{})
			ctx = context.Background()
		}
	}
}
