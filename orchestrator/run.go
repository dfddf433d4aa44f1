package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// schedule starts queued tasks while slots are free. It is the only place
// that moves a task from queued to starting.
func (o *Orchestrator) schedule() {
	defer o.wg.Done()
	for {
		select {
		case <-o.ctx.Done():
			return
		case <-o.kick:
		}
		for _, t := range o.startable() {
			o.wg.Add(1)
			go func() {
				defer o.wg.Done()
				o.start(t)
			}()
		}
	}
}

// startable picks the tasks to start now and marks them starting.
func (o *Orchestrator) startable() []*task {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	running := 0
	for _, t := range o.tasks {
		if live(t.T.Status) {
			running++
		}
	}
	queue := o.queueLocked()
	var out []*task
	for _, t := range queue {
		if running >= o.settings.MaxConcurrent {
			break
		}
		if err := o.setStatusLocked(t, protocol.StatusStarting); err != nil {
			continue
		}
		running++
		out = append(out, t)
	}
	if len(out) > 0 {
		for _, t := range out {
			o.touchLocked(t)
		}
		// Everyone still queued moved up.
		for _, t := range o.queueLocked() {
			o.touchLocked(t)
		}
	}
	return out
}

// queueLocked returns the queued tasks in start order: priority (higher
// first), then FIFO.
func (o *Orchestrator) queueLocked() []*task {
	var q []*task
	for _, t := range o.tasks {
		if t.T.Status == protocol.StatusQueued {
			q = append(q, t)
		}
	}
	sort.Slice(q, func(i, j int) bool {
		if q[i].T.Priority != q[j].T.Priority {
			return q[i].T.Priority > q[j].T.Priority
		}
		return q[i].Seq < q[j].Seq
	})
	return q
}

// fillQueueLocked sets queuePosition and estimatedStartSec on a queued task's
// snapshot: position in the queue, and an estimate from recent run times.
func (o *Orchestrator) fillQueueLocked(snap *protocol.Task) {
	q := o.queueLocked()
	pos := 0 // 0-based here; clients see 1 for the next task to start
	for i, t := range q {
		if t.T.ID == snap.ID {
			pos = i
		}
	}
	p := pos + 1
	snap.QueuePosition = &p
	avg := 300 * time.Second // until familiar has seen a task finish
	if n := len(o.durations); n > 0 {
		var sum time.Duration
		for _, d := range o.durations {
			sum += d
		}
		avg = sum / time.Duration(n)
	}
	slots := o.settings.MaxConcurrent
	if slots < 1 {
		slots = 1
	}
	est := int((time.Duration(pos/slots+1) * avg).Seconds())
	running := 0
	for _, t := range o.tasks {
		if live(t.T.Status) {
			running++
		}
	}
	if running < slots && pos < slots-running {
		est = 0
	}
	snap.EstimatedStartSec = &est
}

// start makes the worktree and starts the agent of a task in status starting.
func (o *Orchestrator) start(t *task) {
	ctx := o.ctx
	o.mu.Lock()
	id := t.T.ID
	wt := t.T.Worktree
	baseRef := t.BaseRef
	title := t.T.Title
	o.mu.Unlock()

	if wt == nil {
		w, err := o.cfg.Repo.Create(ctx, worktree.CreateOptions{TaskID: id, Title: title, BaseRef: baseRef})
		if err != nil {
			o.block(t, protocol.BlockedStartFailed, "create worktree: "+err.Error())
			return
		}
		o.mu.Lock()
		t.T.Worktree = &protocol.Worktree{Path: w.Path, Branch: w.Branch, BaseRef: w.BaseRef, BaseCommit: w.BaseCommit}
		o.save(t)
		o.mu.Unlock()
	}
	opts, err := o.agentOptions(t)
	if err != nil {
		o.block(t, protocol.BlockedStartFailed, err.Error())
		return
	}
	if o.cfg.StartHook != nil {
		o.cfg.StartHook(ctx, &opts)
	}
	sess, err := agent.Start(ctx, opts)
	if err != nil {
		o.startFailed(t, "start claude: "+err.Error())
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	t.sess = sess
	id2 := sess.Identity()
	t.Process = &id2
	t.T.Agent = &protocol.AgentInfo{PID: sess.PID(), SessionID: sess.SessionID(), ClaudeVersion: o.cfg.CLI.Version}
	if t.stopping {
		// Cancelled while starting.
		o.stopAgentAsync(t)
		return
	}
	if err := o.setStatusLocked(t, protocol.StatusRunning); err != nil {
		o.logger.Error("start", "task", id, "err", err)
	}
	t.T.Activity = protocol.ActivityThinking
	o.touchLocked(t)
}

// maxStartFailures is how many transient start failures (spawn errors, an
// API that stays overloaded until claude gives up) a task survives.
const maxStartFailures = 3

// startFailed retries a failed start after a backoff, up to maxStartFailures
// times, then blocks the task with start_failed.
func (o *Orchestrator) startFailed(t *task, detail string) {
	o.mu.Lock()
	t.StartFailures++
	n := t.StartFailures
	t.LastError = detail
	if n >= maxStartFailures {
		o.blockLocked(t, protocol.BlockedStartFailed, fmt.Sprintf("%s (after %d attempts)", detail, n))
		o.mu.Unlock()
		return
	}
	o.save(t)
	o.mu.Unlock()
	wait := o.cfg.StartBackoff << (n - 1)
	o.logger.Warn("agent start failed; retrying", "task", t.T.ID, "attempt", n, "wait", wait, "err", detail)
	timer := o.clk.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C():
	case <-o.ctx.Done():
		return
	}
	o.mu.Lock()
	if t.T.Status == protocol.StatusStarting && !t.stopping {
		// Back to the queue; it keeps its place (FIFO by Seq).
		_ = o.setStatusLocked(t, protocol.StatusQueued)
		o.touchLocked(t)
	}
	o.mu.Unlock()
	o.poke()
}

// transientFailure reports whether a failed first turn was the API being
// overloaded or unreachable rather than the task failing.
func transientFailure(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"overloaded", "529", "503", "rate limit", "connection error", "econnrefused", "timed out"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// agentOptions builds the agent's options from the task and the settings.
// It reads the task under the lock and does the slow parts (git, files)
// without it.
func (o *Orchestrator) agentOptions(t *task) (agent.Options, error) {
	o.mu.Lock()
	if o.cfg.CLIErr != nil {
		o.mu.Unlock()
		return agent.Options{}, o.cfg.CLIErr
	}
	s := o.settings
	var others []string
	for _, x := range o.tasks {
		if x != t && live(x.T.Status) {
			others = append(others, x.T.Title)
		}
	}
	dir := o.taskDir(t.T.ID)
	// Each start of the agent gets its own log (procs never overwrites one).
	t.Starts++
	logPath := filepath.Join(dir, fmt.Sprintf("output-%d.log", t.Starts))
	t.Logs = append(t.Logs, logPath)
	p := t.persisted // a copy to build from
	p.T.AcceptanceCriteria = append([]string(nil), t.T.AcceptanceCriteria...)
	followUp := t.FollowUp
	t.FollowUp = ""
	id, gen := t.T.ID, t.Starts
	o.save(t)
	o.mu.Unlock()

	ctx := o.ctx
	if err := ensureDir(dir); err != nil {
		return agent.Options{}, err
	}
	tracked, err := o.cfg.Repo.ListTracked(ctx, p.T.Worktree.Path)
	if err != nil {
		o.logger.Warn("list tracked files for hints", "task", id, "err", err)
	}
	spec, err := o.buildSpec(&p, others, tracked)
	if err != nil {
		return agent.Options{}, err
	}
	if err := o.installSkills(filepath.Join(dir, "claude"), p.Skills); err != nil {
		return agent.Options{}, err
	}
	mcpPath, err := o.prepareMCP(ctx, id, dir, p.T.Worktree.Path, s.McpServers, p.McpServers)
	if err != nil {
		return agent.Options{}, err
	}
	noProgress := s.NoProgressTimeoutSec
	if p.NoProgressTimeoutSec != nil {
		noProgress = *p.NoProgressTimeoutSec
	}
	grace := time.Duration(s.TermGraceSec) * time.Second
	if grace <= 0 {
		grace = time.Nanosecond // 0 means kill at once; procs reads 0 as its default
	}
	opts := agent.Options{
		CLI:                o.cfg.CLI,
		Driver:             string(p.T.Driver),
		Dir:                p.T.Worktree.Path,
		RepoRoot:           o.cfg.Repo.Root(),
		ConfigDir:          filepath.Join(dir, "claude"),
		LogPath:            logPath,
		Prompt:             spec.Prompt.Text,
		AppendSystemPrompt: spec.Prompt.AppendSystemPrompt,
		PermissionMode:     spec.Flags.PermissionMode,
		AllowedTools:       spec.Flags.AllowedTools,
		DisallowedTools:    spec.Flags.DisallowedTools,
		ExtraArgs:          spec.Flags.ExtraArgs,
		MCPConfigPath:      mcpPath,
		Hooks:              o.cfg.Hooks,
		// The CLI fails open when a hook times out: keep it well above the
		// approval timeout, which familiar enforces itself.
		HookTimeout:  time.Duration(s.ApprovalTimeoutSec)*time.Second + time.Hour,
		GraceTimeout: grace,
		NoProgress:   time.Duration(noProgress) * time.Second,
		VerboseHooks: p.Directives != nil && p.Directives.Verbose,
		Clock:        o.clk,
		Logger:       o.logger.With("task", id),
	}
	if p.T.Agent != nil && p.T.Agent.SessionID != "" {
		// The conversation goes on where it stopped (task/send on a
		// finished task, resume after a pause or a restart, a mode switch).
		opts.SessionID = p.T.Agent.SessionID
		opts.Resume = true
		opts.Prompt = followUp
	}
	opts.OnEvent = func(ev agent.Event) { o.onAgentEvent(id, gen, ev) }
	return opts, nil
}

// block moves a task to blocked with a reason.
func (o *Orchestrator) block(t *task, reason protocol.BlockedReason, detail string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.blockLocked(t, reason, detail)
}

func (o *Orchestrator) blockLocked(t *task, reason protocol.BlockedReason, detail string) {
	if err := o.setStatusLocked(t, protocol.StatusBlocked); err != nil {
		o.logger.Warn("block", "task", t.T.ID, "err", err)
		return
	}
	detail, _ = clip(o.maskString(detail))
	t.T.Blocked = &protocol.Blocked{Reason: reason, Detail: detail}
	t.LastError = detail
	o.touchLocked(t)
}

// onAgentEvent handles what the agent of task id did. It runs on the agent's
// event goroutine, one event at a time.
func (o *Orchestrator) onAgentEvent(id string, gen int, ev agent.Event) {
	o.mu.Lock()
	t := o.tasks[id]
	if t == nil || gen != t.Starts {
		// An earlier agent of a task that has been started again.
		o.mu.Unlock()
		return
	}
	switch ev.Kind {
	case agent.EventOutput:
		t.outputSize += int64(len(ev.Output))
		o.pub.publish(id, protocol.TaskOutputNotification{ID: id, Data: o.maskString(string(ev.Output))})
	case agent.EventHook:
		// The verbose directive: every hook payload as a task event.
		payload, cut := clipJSON(ev.Hook.Payload)
		o.pub.publish(id, protocol.TaskHookNotification{ID: id, Name: ev.Hook.Name, Payload: o.mask(payload), Truncated: cut})
	case agent.EventActivity:
		if tool := ev.Activity.Tool; tool != "" {
			o.toolUses[tool]++
		}
		if t.T.Status == protocol.StatusRunning || t.T.Status == protocol.StatusWaiting {
			a := protocol.Activity(ev.Activity.State)
			if a != t.T.Activity {
				t.T.Activity = a
				o.touchLocked(t)
			}
		}
	case agent.EventQuestion:
		o.askLocked(t, ev.Question)
	case agent.EventQuestionResolved:
		o.resolvedLocked(t, ev.Resolved)
	case agent.EventTurnEnded:
		if ev.Turn.CostUSD > 0 {
			c := ev.Turn.CostUSD
			if t.costUSD != nil {
				c += *t.costUSD
			}
			t.costUSD = &c
		}
		if ev.Turn.BackgroundTasks > 0 {
			break
		}
		t.Turns++
		if ev.Turn.Failed && t.Turns == 1 && transientFailure(ev.Turn.Error) && t.StartFailures+1 < maxStartFailures {
			// Claude gave up on an overloaded API before doing anything:
			// start again later rather than failing the task.
			t.restarting = true
			t.LastError = ev.Turn.Error
			o.stopAgentAsync(t)
			break
		}
		if t.T.PendingQuestion != nil || ev.Turn.Asks != "" {
			// Waiting on the person: keep what this turn did as a checkpoint.
			o.checkpointLater(t)
			break
		}
		if ev.Turn.Failed {
			o.blockLocked(t, protocol.BlockedAgentFailed, ev.Turn.Error)
			break
		}
		if t.T.Status == protocol.StatusRunning {
			o.mu.Unlock()
			o.complete(t, ev.Turn)
			return
		}
	case agent.EventProblem:
		if ev.Problem == agent.ProblemNoProgress && live(t.T.Status) && !t.stopping {
			t.stopReason = protocol.BlockedTimeout
			t.stopDetail = "no progress for the no-progress timeout"
			o.stopAgentAsync(t)
			break
		}
		if strings.HasPrefix(ev.Problem, agent.ProblemOutputLog) && live(t.T.Status) && !t.stopping {
			// Without its log a task's record would be silently incomplete:
			// stop it clearly rather than run on.
			t.stopReason, t.stopDetail = protocol.BlockedAgentFailed, ev.Problem
			o.stopAgentAsync(t)
		}
		o.logger.Warn("agent problem", "task", id, "problem", ev.Problem)
		o.pub.publish(id, protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: fmt.Sprintf("task %s: %s", id, ev.Problem)})
	case agent.EventExited:
		o.exitedLocked(t, ev.Exit)
	}
	o.mu.Unlock()
}

// checkpointLater commits what the turn changed, so work can step back one
// turn. It runs outside the event goroutine: git may take a while.
func (o *Orchestrator) checkpointLater(t *task) {
	wt := o.worktreeOf(t)
	msg := fmt.Sprintf("familiar checkpoint: %s (turn %d)", t.T.Title, t.Turns)
	if t.T.Worktree == nil {
		return
	}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		if _, _, err := o.cfg.Repo.Checkpoint(o.ctx, wt, msg); err != nil {
			o.logger.Warn("checkpoint", "task", t.T.ID, "err", err)
		}
	}()
}

// exitedLocked settles a task whose agent process ended.
func (o *Orchestrator) exitedLocked(t *task, x *agent.Exited) {
	t.sess = nil
	t.Process = nil
	o.stopApprovalLocked(t)
	stopping, cancelled, pausing, restarting, switching := t.stopping, t.cancelled, t.pausing, t.restarting, t.switching
	reason, detail := t.stopReason, t.stopDetail
	t.stopping, t.cancelled, t.pausing, t.restarting, t.switching, t.stopReason, t.stopDetail = false, false, false, false, false, "", ""
	switch {
	case switching && live(t.T.Status) && !cancelled:
		// A mode switch keeps the slot: start again straight away.
		if err := o.setStatusLocked(t, protocol.StatusStarting); err == nil {
			o.touchLocked(t)
			o.wg.Add(1)
			go func() {
				defer o.wg.Done()
				o.start(t)
			}()
		}
		return
	case restarting && live(t.T.Status):
		if err := o.setStatusLocked(t, protocol.StatusStarting); err == nil {
			o.touchLocked(t)
			detail := t.LastError
			o.wg.Add(1)
			go func() {
				defer o.wg.Done()
				o.startFailed(t, detail)
			}()
		}
		return
	case cancelled:
		if err := o.setStatusLocked(t, protocol.StatusCancelled); err == nil {
			t.T.Blocked = &protocol.Blocked{Reason: protocol.BlockedCancelledByUser, Detail: "cancelled by the user"}
		}
	case pausing:
		_ = o.setStatusLocked(t, protocol.StatusPaused)
	case stopping:
		if live(t.T.Status) {
			o.blockLocked(t, reason, detail)
			return
		}
	case live(t.T.Status):
		detail := fmt.Sprintf("claude exited with code %d", x.Code)
		if x.Signal != "" {
			detail = "claude was killed by " + x.Signal
		}
		o.blockLocked(t, protocol.BlockedAgentExited, detail)
		return
	}
	o.touchLocked(t)
}

// complete finishes a task whose agent ended its turn with nothing pending:
// leftover changes are committed on its branch and the task moves to merging.
func (o *Orchestrator) complete(t *task, turn *agent.TurnEnded) {
	o.mu.Lock()
	wt := o.worktreeOf(t)
	title := t.T.Title
	o.mu.Unlock()
	ctx := o.ctx
	summary, blockedReason := summarize(turn.LastMessage)
	var result protocol.TaskResult
	var errs []string
	if _, _, err := o.cfg.Repo.Checkpoint(ctx, wt, "familiar: "+title); err != nil {
		errs = append(errs, "commit leftovers: "+err.Error())
	}
	files, err := o.cfg.Repo.ChangedFiles(ctx, wt)
	if err != nil {
		errs = append(errs, "changed files: "+err.Error())
	}
	for _, f := range files {
		result.ChangedFiles = append(result.ChangedFiles, protocol.ChangedFile{Path: f.Path, Status: protocol.FileStatus(f.Status), OldPath: f.OldPath})
	}
	commits, err := o.cfg.Repo.Commits(ctx, wt)
	if err != nil {
		errs = append(errs, "commits: "+err.Error())
	}
	for _, c := range commits {
		result.Commits = append(result.Commits, protocol.Commit{SHA: c.SHA, Subject: c.Subject})
	}
	if cut, ok := clip(summary); ok {
		result.Truncated, result.OriginalSize = true, len(summary)
		summary = cut
	}
	result.Summary = o.maskString(summary)
	o.mu.Lock()
	defer o.mu.Unlock()
	if t.T.Status != protocol.StatusRunning {
		return // cancelled or blocked meanwhile
	}
	result.CostUSD = t.costUSD
	if blockedReason != "" {
		o.blockLocked(t, protocol.BlockedAgentFailed, blockedReason)
		return
	}
	if len(errs) > 0 {
		o.blockLocked(t, protocol.BlockedAgentFailed, strings.Join(errs, "; "))
		return
	}
	result.Success = true
	if err := o.setStatusLocked(t, protocol.StatusMerging); err != nil {
		o.logger.Error("complete", "task", t.T.ID, "err", err)
		return
	}
	t.T.Result = &result
	t.T.Activity = protocol.ActivityIdle
	o.touchLocked(t)
	o.pub.publish(t.T.ID, protocol.TaskCompletedNotification{ID: t.T.ID, Result: result})
	// The finished agent would hold ~200 MB while idle: stop it. Its session
	// is kept, so task/send resumes the conversation.
	o.stopAgentAsync(t)
}

// stopAgentAsync stops t's agent in the background. Callers on the agent's
// event goroutine must use it: Stop waits for that goroutine to deliver the
// exit event.
func (o *Orchestrator) stopAgentAsync(t *task) {
	if t.sess == nil {
		return
	}
	t.stopping = true
	reason, detail := t.stopReason, t.stopDetail
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		o.stopAgent(t, reason, detail)
	}()
}

// summarize takes the summary from the agent's final message: the profile
// asks for a short summary, and a "BLOCKED:" line reports that it could not
// finish.
func summarize(msg string) (summary, blocked string) {
	msg = strings.TrimSpace(msg)
	for _, line := range strings.Split(msg, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "BLOCKED:"); ok {
			return msg, strings.TrimSpace(rest)
		}
	}
	return msg, ""
}

func (o *Orchestrator) worktreeOf(t *task) worktree.Worktree {
	w := t.T.Worktree
	if w == nil {
		return worktree.Worktree{TaskID: t.T.ID}
	}
	return worktree.Worktree{Path: w.Path, Branch: w.Branch, BaseRef: w.BaseRef, BaseCommit: w.BaseCommit, RepoRoot: o.cfg.Repo.Root(), TaskID: t.T.ID}
}

// stopAgent terminates a task's agent (SIGTERM → grace → SIGKILL of the
// tree) and waits for it; the exit event settles the status.
func (o *Orchestrator) stopAgent(t *task, reason protocol.BlockedReason, detail string) {
	o.mu.Lock()
	sess := t.sess
	t.stopping = true
	if t.stopReason == "" {
		t.stopReason, t.stopDetail = reason, detail
	}
	o.mu.Unlock()
	if sess == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(o.settingsNow().TermGraceSec+30)*time.Second)
	defer cancel()
	if err := sess.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
		o.logger.Warn("stop agent", "task", t.T.ID, "err", err)
	}
}
