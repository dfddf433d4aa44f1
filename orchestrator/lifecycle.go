package orchestrator

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/profiles"
	"github.com/familiar-dev/familiar/protocol"
)

// TaskPause stops the agent gracefully, keeps its session and worktree and
// frees its slot. A queued task is simply held back.
func (o *Orchestrator) TaskPause(ctx context.Context, p *protocol.TaskIDParams) (*protocol.Task, error) {
	t, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	status := t.T.Status
	switch {
	case status == protocol.StatusRunning || status == protocol.StatusWaiting:
		if t.sess == nil {
			o.mu.Unlock()
			return nil, errTransition("pause", status)
		}
		t.pausing = true
		o.mu.Unlock()
		o.stopAgent(t, "", "")
		return o.view(t), nil
	default:
		o.mu.Unlock()
		return nil, errTransition("pause", status)
	}
}

// TaskResume queues a paused (or interrupted) task; it continues its claude
// session with --resume in the same worktree when a slot is free.
func (o *Orchestrator) TaskResume(ctx context.Context, p *protocol.TaskIDParams) (*protocol.Task, error) {
	t, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	status := t.T.Status
	resumable := status == protocol.StatusPaused ||
		(status == protocol.StatusBlocked && t.T.Blocked != nil && t.T.Blocked.Reason == protocol.BlockedInterrupted)
	if !resumable {
		o.mu.Unlock()
		return nil, errTransition("resume", status)
	}
	if err := o.setStatusLocked(t, protocol.StatusQueued); err != nil {
		o.mu.Unlock()
		return nil, err
	}
	t.T.Blocked = nil
	if t.FollowUp == "" {
		t.FollowUp = resumePrompt
	}
	o.touchLocked(t)
	o.mu.Unlock()
	o.poke()
	return o.view(t), nil
}

// resumePrompt starts the next turn of a resumed session: the previous one
// was cut off, and claude waits for a prompt after --resume.
const resumePrompt = "familiar stopped you before you finished (a pause or a restart). Continue the task where you left off."

// TaskRetry starts a new attempt of a finished task in a fresh worktree from
// the same base commit, with what the previous attempt left in its prompt.
func (o *Orchestrator) TaskRetry(ctx context.Context, p *protocol.TaskIDParams) (*protocol.Task, error) {
	prev, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	status := prev.T.Status
	if live(status) || status == protocol.StatusQueued {
		o.mu.Unlock()
		return nil, errTransition("retry", status)
	}
	now := o.clk.Now().UTC()
	t := &task{}
	t.persisted = prev.persisted
	t.T = protocol.Task{
		ID: newTaskID(), Title: prev.T.Title, Description: prev.T.Description,
		AcceptanceCriteria: prev.T.AcceptanceCriteria, Type: prev.T.Type, Profile: prev.T.Profile,
		Mode: prev.T.Mode, Priority: prev.T.Priority, Driver: prev.T.Driver,
		Status: protocol.StatusQueued, Activity: protocol.ActivityIdle,
		Attempt: prev.T.Attempt + 1, PreviousAttemptID: prev.T.ID, CreatedAt: now, UpdatedAt: now,
	}
	t.Process, t.Starts, t.Logs, t.FollowUp, t.LastError = nil, 0, nil, "", ""
	if prev.T.Worktree != nil {
		t.BaseRef = prev.T.Worktree.BaseCommit
	}
	t.Prior = &priorAttempt{LastError: prev.LastError}
	if prev.T.Result != nil {
		t.Prior.Summary = prev.T.Result.Summary
	}
	if prev.T.Blocked != nil {
		t.Prior.BlockedReason = string(prev.T.Blocked.Reason) + ": " + prev.T.Blocked.Detail
	}
	o.mu.Unlock()
	return o.enqueue(t)
}

// recover settles what a previous familiar left behind: agents still alive
// (familiar cannot re-attach to their PTY) are terminated, stale claude
// session files are removed, and with resumeInterrupted the interrupted
// tasks are queued to continue their sessions.
func (o *Orchestrator) recoverLeftovers(resumeInterrupted bool) {
	o.mu.Lock()
	var orphans []procs.Identity
	for _, t := range o.tasks {
		if t.Process != nil {
			if alive, _ := t.Process.Alive(); alive {
				orphans = append(orphans, *t.Process)
			}
			t.Process = nil
			o.save(t)
		}
		cleanStaleSessions(filepath.Join(o.taskDir(t.T.ID), "claude", "sessions"))
		if resumeInterrupted && t.T.Status == protocol.StatusBlocked && t.T.Blocked != nil &&
			t.T.Blocked.Reason == protocol.BlockedInterrupted && t.T.Agent != nil && t.T.Agent.SessionID != "" {
			if err := o.setStatusLocked(t, protocol.StatusQueued); err == nil {
				t.T.Blocked = nil
				if t.FollowUp == "" {
					t.FollowUp = resumePrompt
				}
				o.touchLocked(t)
			}
		}
	}
	grace := time.Duration(o.settings.TermGraceSec) * time.Second
	o.mu.Unlock()
	for _, id := range orphans {
		o.logger.Warn("terminating an agent left by a previous familiar", "pid", id.PID)
		ctx, cancel := context.WithTimeout(context.Background(), grace+30*time.Second)
		if err := procs.TerminateTree(ctx, id, procs.TreeOptions{Grace: grace, Clock: o.clk, Logger: o.logger}); err != nil {
			o.logger.Error("terminate leftover agent", "pid", id.PID, "err", err)
		}
		cancel()
	}
}

// cleanStaleSessions removes claude's sessions/<pid>.json files whose
// process is gone: a killed claude leaves them behind (CLAUDE-CLI.md §2.8).
func cleanStaleSessions(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var s struct {
			PID       int    `json:"pid"`
			ProcStart string `json:"procStart"`
		}
		if json.Unmarshal(b, &s) != nil || s.PID <= 0 {
			continue
		}
		if !pidAlive(s.PID, s.ProcStart) {
			os.Remove(path)
		}
	}
}

// pidAlive reports whether pid runs and, when start is known, started at
// that clock tick (field 22 of /proc/PID/stat), so a reused pid is not
// mistaken for the session's process.
func pidAlive(pid int, start string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 || fields[0] == "Z" {
		return false
	}
	return start == "" || fields[19] == start
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// UseSettings replaces the settings for this process only (familiar run's
// file settings must not overwrite the editor's saved ones).
func (o *Orchestrator) UseSettings(s protocol.Settings) {
	o.mu.Lock()
	o.settings = s
	o.mu.Unlock()
	o.poke()
}

// CancelAll cancels every task that has not finished, gracefully, and waits
// for them to settle.
func (o *Orchestrator) CancelAll(ctx context.Context) {
	o.mu.Lock()
	var ids []string
	for id, t := range o.tasks {
		if t.T.Status == protocol.StatusQueued || live(t.T.Status) {
			ids = append(ids, id)
		}
	}
	o.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := o.TaskCancel(ctx, &protocol.TaskIDParams{ID: id}); err != nil {
				o.logger.Debug("cancel", "task", id, "err", err)
			}
		}()
	}
	wg.Wait()
}

// Kill stops every running agent without a grace period (a second Ctrl-C).
func (o *Orchestrator) Kill() {
	o.mu.Lock()
	var sessions []*task
	for _, t := range o.tasks {
		if t.sess != nil {
			t.cancelled = t.cancelled || t.T.Status != protocol.StatusMerging
			t.stopping = true
			sessions = append(sessions, t)
		}
	}
	o.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a done context: procs goes straight to SIGKILL
	for _, t := range sessions {
		o.mu.Lock()
		sess := t.sess
		o.mu.Unlock()
		if sess != nil {
			_ = sess.Stop(ctx)
		}
	}
}

// TaskSetMode switches a task's mode. A running agent is restarted with
// --resume and the new mode's flags, and told about the switch: the
// conversation continues, now with the new tool set.
func (o *Orchestrator) TaskSetMode(ctx context.Context, p *protocol.TaskSetModeParams) (*protocol.Task, error) {
	t, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	notice, err := profiles.ModeNotice(string(p.Mode), nil)
	if err != nil {
		return nil, protocol.InvalidParams("mode", err.Error())
	}
	o.mu.Lock()
	from := t.T.Mode
	if from == p.Mode {
		o.mu.Unlock()
		return o.view(t), nil
	}
	switch t.T.Status {
	case protocol.StatusMerged, protocol.StatusCancelled:
		status := t.T.Status
		o.mu.Unlock()
		return nil, errTransition("change the mode of", status)
	}
	t.T.Mode = p.Mode
	o.audit(t.T.ID, "task.mode", "user", map[string]string{"from": string(from), "to": string(p.Mode)})
	restart := t.sess != nil && (t.T.Status == protocol.StatusRunning || t.T.Status == protocol.StatusWaiting)
	if restart {
		t.FollowUp = notice
		t.switching = true
		o.stopAgentAsync(t)
	} else if t.T.Agent != nil {
		// Told at the next start of its session.
		t.FollowUp = notice
	}
	o.touchLocked(t)
	o.mu.Unlock()
	return o.view(t), nil
}
