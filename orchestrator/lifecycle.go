package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/profiles"
	"github.com/familiar-dev/familiar/protocol"
)

// TaskRetry starts a new attempt of a finished task, with what the
// previous attempt left in its prompt: by default in a fresh worktree from
// the same base commit; with fromBranch, from the previous attempt's branch,
// so its work carries over.
func (o *Orchestrator) TaskRetry(ctx context.Context, p *protocol.TaskRetryParams) (*protocol.Task, error) {
	prevActor, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	prev := prevActor.view()
	status := prev.T.Status
	if status.HoldsWorktree() {
		return nil, errTransition("retry", status)
	}
	if prev.op != opNone && p.FromBranch {
		// Its branch is being stepped back, merged or removed: the new
		// attempt would start from whatever it is in the middle of.
		return nil, protocol.FailedPrecondition(fmt.Sprintf("a %s of this task is in progress; try again when it is done", prev.op), status)
	}
	stored, err := o.cfg.Store.GetTask(p.ID)
	if err != nil {
		return nil, mapError(err, "task", "id")
	}
	var base persisted
	if err := json.Unmarshal(stored.Data, &base); err != nil {
		return nil, fmt.Errorf("read task %s: %w", p.ID, err)
	}
	now := o.clk.Now().UTC()
	t := base
	t.T = protocol.Task{
		ID: newTaskID(), Title: prev.T.Title, Description: prev.T.Description,
		AcceptanceCriteria: prev.T.AcceptanceCriteria, Type: prev.T.Type, Profile: prev.T.Profile,
		Mode: prev.T.Mode, Priority: prev.T.Priority, Driver: prev.T.Driver,
		Status: protocol.StatusQueued, Activity: protocol.ActivityIdle,
		Attempt: prev.T.Attempt + 1, PreviousAttemptID: prev.T.ID, CreatedAt: now, UpdatedAt: now,
	}
	t.Process, t.Starts, t.Logs, t.FollowUp, t.LastError, t.StartFailures, t.Turns, t.Merge = nil, 0, nil, "", "", 0, 0, nil
	if w := prev.T.Worktree; w != nil {
		t.BaseRef = w.BaseCommit
		if p.FromBranch {
			t.BaseRef = w.Branch
		}
	} else if p.FromBranch {
		return nil, protocol.InvalidParams("fromBranch", "the previous attempt has no branch to start from")
	}
	t.Prior = &priorAttempt{LastError: prev.lastErr}
	if prev.T.Result != nil {
		t.Prior.Summary = prev.T.Result.Summary
	}
	if prev.T.Blocked != nil {
		t.Prior.BlockedReason = string(prev.T.Blocked.Reason) + ": " + prev.T.Blocked.Detail
	}
	return o.enqueue(&t)
}

// recoverLeftovers settles what a previous familiar left behind: agents
// still alive (familiar cannot re-attach to their PTY) are terminated, stale
// claude session files are removed, and the tasks a crash interrupted while
// they waited on nobody (with resumeInterrupted: every interrupted task) are
// queued to continue their sessions.
func (o *Orchestrator) recoverLeftovers(resumeInterrupted bool) {
	o.mu.Lock()
	actors := o.actorsLocked()
	grace := time.Duration(o.settingsNow().TermGraceSec) * time.Second
	o.mu.Unlock()
	var orphans []procs.Identity
	for _, a := range actors {
		v := a.view()
		if p := a.st.Process; p != nil {
			// Read before any input runs on the actor: New has not started
			// the scheduler yet, and load's inputs have all been handled.
			if alive, _ := p.Alive(); alive {
				orphans = append(orphans, *p)
			}
		}
		cleanStaleSessions(filepath.Join(o.taskDir(a.id), "claude", "sessions"))
		// Tasks a crash interrupted while they waited on nobody continue by
		// default; --resume-interrupted continues every interrupted one.
		if (resumeInterrupted || a.st.resumeOnLoad) && v.T.Status == protocol.StatusBlocked && v.T.Blocked != nil &&
			v.T.Blocked.Reason == protocol.BlockedInterrupted && v.T.Agent != nil && v.T.Agent.SessionID != "" {
			if _, err := a.call(context.Background(), cmdResume{}); err != nil {
				o.logger.Warn("resume interrupted task", "task", a.id, "err", err)
			}
		}
	}
	// Each task dir also records its agent (procs.Record): a store restored
	// from an older backup, or started empty, does not know every agent a
	// crashed familiar left running.
	known := map[int]bool{}
	for _, id := range orphans {
		known[id.PID] = true
	}
	dirs, _ := os.ReadDir(filepath.Join(o.cfg.DataDir, "tasks"))
	for _, d := range dirs {
		dir := filepath.Join(o.cfg.DataDir, "tasks", d.Name())
		rec, err := procs.ReadRecord(dir)
		if err != nil {
			continue
		}
		// Even when claude itself is gone (it exits with its terminal), a
		// command it ran in a session of its own may not be: TerminateTree
		// finds those by the tree's token.
		if !known[rec.PID] {
			orphans = append(orphans, rec.Identity)
			known[rec.PID] = true
		}
		_ = procs.RemoveRecord(dir)
	}
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
		if !procs.Running(s.PID, s.ProcStart) {
			os.Remove(path)
		}
	}
}

// UseSettings replaces the settings for this process only (familiar run's
// file settings must not overwrite the editor's saved ones).
func (o *Orchestrator) UseSettings(s protocol.Settings) {
	o.settings.Store(&s)
	o.queueChanged()
	o.poke()
}

// CancelAll cancels every task that has not finished, gracefully, and waits
// for them to settle. reason is "" for the person's cancel (Ctrl-C), or why
// familiar cancels them itself, which their end announces.
func (o *Orchestrator) CancelAll(ctx context.Context, reason string) {
	actors := o.actors()
	var wg sync.WaitGroup
	for _, a := range actors {
		if s := a.view().T.Status; !s.HoldsWorktree() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := o.cancelTask(ctx, &protocol.TaskIDParams{ID: a.id}, reason); err != nil {
				o.logger.Debug("cancel", "task", a.id, "err", err)
			}
		}()
	}
	wg.Wait()
}

// Kill stops every running agent without a grace period (a second Ctrl-C).
func (o *Orchestrator) Kill() {
	actors := o.actors()
	var views []*taskView
	for _, a := range actors {
		if v := a.view(); v.sess != nil {
			a.post(envelope{in: cmdKill{}})
			views = append(views, v)
		}
	}
	for _, v := range views {
		<-v.sess.Done()
	}
}

// TaskSetMode switches a task's mode. A running agent is restarted with
// --resume and the new mode's flags, and told about the switch: the
// conversation continues, now with the new tool set.
func (o *Orchestrator) TaskSetMode(ctx context.Context, p *protocol.TaskSetModeParams) (*protocol.Task, error) {
	notice, err := profiles.ModeNotice(string(p.Mode), nil)
	if err != nil {
		return nil, protocol.InvalidParams("mode", err.Error())
	}
	v, err := o.command(ctx, p.ID, cmdSetMode{mode: p.Mode, notice: notice})
	if err != nil {
		return nil, err
	}
	return o.viewOf(v), nil
}
