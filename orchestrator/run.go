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
	"github.com/familiar-dev/familiar/profiles"
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
	pos := 0
	for i, t := range q {
		if t.T.ID == snap.ID {
			pos = i
		}
	}
	p := pos
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
		o.block(t, protocol.BlockedStartFailed, "start claude: "+err.Error())
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	t.sess = sess
	id2 := sess.Identity()
	t.Process = &id2
	t.T.Agent = &protocol.AgentInfo{PID: sess.PID(), SessionID: sess.SessionID(), ClaudeVersion: o.cfg.CLI.Version}
	if t.stopping {
		// Cancelled while starting: the runner below stops it.
		go o.stopAgent(t, t.stopReason, t.stopDetail)
		return
	}
	if err := o.setStatusLocked(t, protocol.StatusRunning); err != nil {
		o.logger.Error("start", "task", id, "err", err)
	}
	t.T.Activity = protocol.ActivityThinking
	o.touchLocked(t)
}

// agentOptions builds the agent's options from the task and the settings.
func (o *Orchestrator) agentOptions(t *task) (agent.Options, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cfg.CLIErr != nil {
		return agent.Options{}, o.cfg.CLIErr
	}
	s := o.settings
	var others []string
	for _, x := range o.tasks {
		if x != t && live(x.T.Status) {
			others = append(others, x.T.Title)
		}
	}
	pc := profiles.Context{
		Title: t.T.Title, Description: t.T.Description, AcceptanceCriteria: t.T.AcceptanceCriteria,
		Type: string(t.T.Type), Mode: string(t.T.Mode), OtherTasks: others,
	}
	if t.Hints != nil {
		pc.Notes, pc.HintFiles = t.Hints.Notes, t.Hints.Files
	}
	prompt, err := profiles.Build(pc, t.PromptOverride)
	if err != nil {
		return agent.Options{}, err
	}
	dir := o.taskDir(t.T.ID)
	if err := ensureDir(dir); err != nil {
		return agent.Options{}, err
	}
	// Each start of the agent gets its own log (procs never overwrites one).
	t.Starts++
	t.Logs = append(t.Logs, filepath.Join(dir, fmt.Sprintf("output-%d.log", t.Starts)))
	noProgress := s.NoProgressTimeoutSec
	if t.NoProgressTimeoutSec != nil {
		noProgress = *t.NoProgressTimeoutSec
	}
	grace := time.Duration(s.TermGraceSec) * time.Second
	if grace <= 0 {
		grace = time.Nanosecond // 0 means kill at once; procs reads 0 as its default
	}
	opts := agent.Options{
		CLI:                o.cfg.CLI,
		Driver:             string(t.T.Driver),
		Dir:                t.T.Worktree.Path,
		RepoRoot:           o.cfg.Repo.Root(),
		ConfigDir:          filepath.Join(dir, "claude"),
		LogPath:            filepath.Join(dir, fmt.Sprintf("output-%d.log", t.Starts)),
		Prompt:             prompt.Text,
		AppendSystemPrompt: prompt.AppendSystemPrompt,
		Hooks:              o.cfg.Hooks,
		// The CLI fails open when a hook times out: keep it well above the
		// approval timeout, which familiar enforces itself.
		HookTimeout:  time.Duration(s.ApprovalTimeoutSec)*time.Second + time.Hour,
		GraceTimeout: grace,
		NoProgress:   time.Duration(noProgress) * time.Second,
		VerboseHooks: t.Directives != nil && t.Directives.Verbose,
		Clock:        o.clk,
		Logger:       o.logger.With("task", t.T.ID),
	}
	if t.T.Agent != nil && t.T.Agent.SessionID != "" {
		// The conversation goes on where it stopped (task/send on a
		// finished task, resume after a pause or a restart).
		opts.SessionID = t.T.Agent.SessionID
		opts.Resume = true
		opts.Prompt = t.FollowUp
		t.FollowUp = ""
	}
	id, gen := t.T.ID, t.Starts
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
		o.pub.publish(id, protocol.TaskOutputNotification{ID: id, Data: string(ev.Output)})
	case agent.EventActivity:
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
		if ev.Turn.BackgroundTasks > 0 || t.T.PendingQuestion != nil || ev.Turn.Asks != "" {
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
			t.stopping = true
			t.stopReason = protocol.BlockedTimeout
			t.stopDetail = "no output for the no-progress timeout"
			o.mu.Unlock()
			o.stopAgent(t, protocol.BlockedTimeout, t.stopDetail)
			return
		}
		o.logger.Warn("agent problem", "task", id, "problem", ev.Problem)
		o.pub.publish(id, protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: fmt.Sprintf("task %s: %s", id, ev.Problem)})
	case agent.EventExited:
		o.exitedLocked(t, ev.Exit)
	}
	o.mu.Unlock()
}

// exitedLocked settles a task whose agent process ended.
func (o *Orchestrator) exitedLocked(t *task, x *agent.Exited) {
	t.sess = nil
	t.Process = nil
	o.stopApprovalLocked(t)
	stopping, cancelled, pausing := t.stopping, t.cancelled, t.pausing
	reason, detail := t.stopReason, t.stopDetail
	t.stopping, t.cancelled, t.pausing, t.stopReason, t.stopDetail = false, false, false, "", ""
	switch {
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
	result.Summary = summary
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
	if t.sess != nil {
		t.stopping = true
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			o.stopAgent(t, "", "")
		}()
	}
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
