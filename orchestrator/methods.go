package orchestrator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/familiar-dev/familiar/mcp"
	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/profiles"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// Settings returns the current settings.
func (o *Orchestrator) Settings() protocol.Settings { return o.settingsNow() }

// UpdateSettings merges u into the settings and persists them.
func (o *Orchestrator) UpdateSettings(ctx context.Context, u *protocol.SettingsUpdate) (*protocol.Settings, error) {
	if u != nil {
		if err := validPolicy("settings.permissionPolicy", u.PermissionPolicy); err != nil {
			return nil, err
		}
	}
	// One update at a time, each applied to the last, and saved before it
	// applies (issue 38): a save that fails (a full disk) leaves the
	// settings as they were, so what runs is what familiar restarts with.
	o.settingsMu.Lock()
	defer o.settingsMu.Unlock()
	s := o.settingsNow().Apply(u)
	b, err := json.Marshal(s)
	if err == nil {
		err = o.cfg.Store.PutSetting(ctx, "settings", b)
	}
	if err != nil {
		return nil, fmt.Errorf("save settings (nothing was changed): %w", err)
	}
	o.mu.Lock()
	o.settings.Store(&s)
	o.mu.Unlock()
	o.queueChanged()
	o.poke()       // maxConcurrent may have grown
	o.goTrimWarm() // the idle claudes' bounds may have shrunk
	if s.PermissionPolicy.Default == protocol.PolicyAllow {
		o.warnAutonomy(autonomyWarnings(s.PermissionPolicy, false, nil))
	} else {
		o.warnAutonomy(nil, settingPolicy)
	}
	return &s, nil
}

// TaskCreate queues a new task.
func (o *Orchestrator) TaskCreate(ctx context.Context, p *protocol.TaskCreateParams) (*protocol.Task, error) {
	t, err := o.newTask(ctx, p)
	if err != nil {
		return nil, err
	}
	if p.Prepared != "" && o.claimPrepared(p.Prepared) {
		// The task is the one its agent was prepared for: its id names
		// the worktree and the config dir that agent runs in.
		t.T.ID = p.Prepared
	}
	snap, err := o.enqueue(t)
	if err == nil && (p.PermissionPolicy != nil || p.Directives != nil) {
		var pol protocol.Policy
		if p.PermissionPolicy != nil {
			pol = *p.PermissionPolicy
		}
		o.warnAutonomy(autonomyWarnings(pol, true, p.Directives))
	}
	return snap, err
}

// newTask checks task/create's params and makes the task they ask for
// (not yet queued): task/create's, and task/prepare's agent's.
func (o *Orchestrator) newTask(ctx context.Context, p *protocol.TaskCreateParams) (*persisted, error) {
	if o.cfg.CLIErr != nil {
		return nil, protocol.Unavailable("claude is not available: " + o.cfg.CLIErr.Error())
	}
	if p.BaseRef != "" {
		if err := o.cfg.Repo.CheckRef(ctx, p.BaseRef); err != nil {
			return nil, protocol.InvalidParams("baseRef", err.Error())
		}
	}
	if m := p.Model; m != "" && (len(m) > 100 || strings.HasPrefix(m, "-") || strings.ContainsFunc(m, unicode.IsSpace)) {
		return nil, protocol.InvalidParams("model", fmt.Sprintf("%q is not a model: an alias such as opus or sonnet, or a model's full name", m))
	}
	if err := validPolicy("permissionPolicy", p.PermissionPolicy); err != nil {
		return nil, err
	}
	for i, f := range hintFiles(p) {
		field := fmt.Sprintf("hints.files[%d]", i)
		if err := o.cfg.Repo.CheckPath(f); err != nil {
			return nil, protocol.InvalidParams(field, err.Error())
		}
		if _, err := os.Stat(filepath.Join(o.cfg.Repo.Root(), filepath.FromSlash(f))); err != nil {
			return nil, protocol.InvalidParams(field, fmt.Sprintf("%s does not exist in the repository", f))
		}
	}
	now := o.clk.Now().UTC()
	s := o.settingsNow()
	t := &persisted{}
	t.T = protocol.Task{
		ID: newTaskID(), Title: p.Title, Description: p.Description, AcceptanceCriteria: p.AcceptanceCriteria,
		Type: p.Type, Profile: p.Profile, Mode: p.Mode, Priority: p.Priority, Driver: p.Driver, Model: p.Model,
		Status: protocol.StatusQueued, Activity: protocol.ActivityIdle, Attempt: 1,
		CreatedAt: now, UpdatedAt: now,
	}
	if t.T.Type == "" {
		t.T.Type = protocol.TaskTypeImplement
	}
	if t.T.Driver == "" {
		t.T.Driver = s.DefaultDriver
	}
	if t.T.Profile == "" {
		t.T.Profile = s.DefaultProfile // "" = chosen by the task's type
	}
	t.PromptOverride, t.Hints, t.Directives = p.PromptOverride, p.Hints, p.Directives
	if d := p.Directives; d != nil && (d.Think || d.Verbose || d.Elevated) {
		c := *d
		t.T.Directives = &c
	}
	t.Skills, t.McpServers, t.NoProgressTimeoutSec, t.Policy = p.Skills, p.McpServers, p.NoProgressTimeoutSec, p.PermissionPolicy
	t.CommandTimeoutSec, t.MaxBudgetUsd, t.WarmAgentSec = p.CommandTimeoutSec, p.MaxBudgetUsd, p.WarmAgentSec
	t.BaseRef = p.BaseRef
	if err := mcp.ValidateAll(mcpServers(p.McpServers)); err != nil {
		return nil, protocol.InvalidParams("mcpServers", err.Error())
	}
	if p.Skills == nil {
		// No skills named (absent, not []): the profile's defaults. A
		// profile that does not resolve fails in buildSpec below.
		if prof, err := profiles.Load(o.dirs).Resolve(t.T.Profile, string(t.T.Type)); err == nil {
			t.Skills = slices.Clone(prof.Skills)
		}
	}
	// Build once now, so a broken profile, an unknown skill or a bad mode
	// fails task/create (with the file and line) instead of the start.
	spec, err := o.buildSpec(t, nil, nil)
	if err != nil {
		return nil, err
	}
	t.T.Profile, t.T.Mode = spec.Profile, protocol.Mode(spec.Mode)
	return t, nil
}

func hintFiles(p *protocol.TaskCreateParams) []string {
	if p.Hints == nil {
		return nil
	}
	return p.Hints.Files
}

// enqueue adds a new task to the queue.
func (o *Orchestrator) enqueue(p *persisted) (*protocol.Task, error) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil, protocol.Unavailable("familiar is shutting down")
	}
	o.nextSeq++
	p.Seq = o.nextSeq
	o.mu.Unlock()
	p.RepoRoot = o.cfg.Repo.Root()
	// Saved before anyone sees it: never acknowledged if it could not be
	// saved, and never started by the scheduler only to be taken back.
	if err := o.save(p); err != nil {
		return nil, mapError(err, "task/create", "")
	}
	a := newActor(o, *p)
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil, protocol.Unavailable("familiar is shutting down")
	}
	o.tasks[p.T.ID] = a
	o.order[p.T.ID] = queueKey{priority: p.T.Priority, seq: p.Seq}
	o.queueValid = false
	o.mu.Unlock()
	snap := o.viewOf(a.view())
	o.pub.publish(p.T.ID, protocol.TaskUpdatedNotification{Task: *snap})
	o.poke()
	return snap, nil
}

// TaskGet returns one task.
func (o *Orchestrator) TaskGet(ctx context.Context, p *protocol.TaskIDParams) (*protocol.Task, error) {
	return o.taskNow(p.ID)
}

// taskNow is the task as it is now, with its steps (task/get); the methods
// that answer with the task they changed read it here, not through
// TaskGet, so no protocol method calls another.
func (o *Orchestrator) taskNow(id string) (*protocol.Task, error) {
	a, err := o.get(id)
	if err != nil {
		return nil, err
	}
	v := a.view()
	t := o.viewOf(v)
	t.Steps = v.steps
	return t, nil
}

// TaskList lists tasks newest first, filtered, with cursor paging. Every
// task is in memory, so the list is computed there from the tasks' latest
// views: a free-text query over 10,000 tasks need not decode 10,000
// records, and no task's work holds it up.
func (o *Orchestrator) TaskList(ctx context.Context, p *protocol.TaskListParams) (*protocol.TaskListResult, error) {
	after, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, protocol.InvalidParams("cursor", "cursor is not one task/list returned")
	}
	q := strings.ToLower(strings.TrimSpace(p.Query))
	o.mu.Lock()
	views := make([]*taskView, 0, len(o.tasks))
	for _, a := range o.tasks {
		views = append(views, a.view())
	}
	o.mu.Unlock()
	var matched []*taskView
	for _, v := range views {
		if len(p.Status) > 0 && !slices.Contains(p.Status, v.T.Status) {
			continue
		}
		switch archived := !v.T.ArchivedAt.IsZero(); p.Archived {
		case protocol.ArchivedInclude:
		case protocol.ArchivedOnly:
			if !archived {
				continue
			}
		default:
			if archived {
				continue
			}
		}
		if !p.Since.IsZero() && v.T.CreatedAt.Before(p.Since.Time) {
			continue
		}
		if !p.Until.IsZero() && !v.T.CreatedAt.Before(p.Until.Time) {
			continue
		}
		if q != "" && !v.matches(q) {
			continue
		}
		matched = append(matched, v)
	}
	sort.Slice(matched, func(i, j int) bool { return newer(&matched[i].T, &matched[j].T) })
	res := &protocol.TaskListResult{Total: len(matched)}
	limit := p.EffectiveLimit()
	for _, v := range matched {
		if after != nil && !newer(after, &v.T) {
			continue
		}
		if len(res.Tasks) == limit {
			res.NextCursor = encodeCursor(res.Tasks[len(res.Tasks)-1])
			break
		}
		res.Tasks = append(res.Tasks, *o.viewOf(v))
	}
	return res, nil
}

// newer orders tasks newest first, by creation time then id.
func newer(a, b *protocol.Task) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}

// A cursor is the position of the last task of a page.
func encodeCursor(t protocol.Task) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(t.CreatedAt.UnixNano(), 10) + "." + t.ID))
}

func decodeCursor(c string) (*protocol.Task, error) {
	if c == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, err
	}
	ns, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, fmt.Errorf("bad cursor")
	}
	return &protocol.Task{CreatedAt: time.Unix(0, n).UTC(), ID: id}, nil
}

// matches reports whether the lowercased query q is in the task's title,
// description, summary or error.
func (v *taskView) matches(q string) bool {
	fields := []string{v.T.Title, v.T.Description, v.lastErr}
	if v.T.Result != nil {
		fields = append(fields, v.T.Result.Summary)
	}
	if v.T.Blocked != nil {
		fields = append(fields, v.T.Blocked.Detail)
	}
	for _, f := range fields {
		if strings.Contains(strings.ToLower(f), q) {
			return true
		}
	}
	return false
}

// command runs a command on a task's actor and returns the task's view.
func (o *Orchestrator) command(ctx context.Context, id string, in input) (*taskView, error) {
	a, err := o.get(id)
	if err != nil {
		return nil, err
	}
	return a.call(ctx, in)
}

// waitAgentGone waits until a task's agent has exited (after a cancel or a
// pause), so the caller answers once the process tree is gone.
func (o *Orchestrator) waitAgentGone(ctx context.Context, v *taskView) error {
	if v == nil || v.sess == nil {
		return nil
	}
	select {
	case <-v.sess.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-o.closing:
		return protocol.Unavailable("familiar is shutting down")
	}
}

// TaskCancel cancels a queued task at once, or terminates a running one
// (SIGTERM → grace → SIGKILL of its tree); the worktree is kept.
func (o *Orchestrator) TaskCancel(ctx context.Context, p *protocol.TaskIDParams) (*protocol.Task, error) {
	return o.cancelTask(ctx, p, "")
}

// cancelTask is TaskCancel by the person (detail "") or by familiar itself,
// saying why (announced as the task's end).
func (o *Orchestrator) cancelTask(ctx context.Context, p *protocol.TaskIDParams, detail string) (*protocol.Task, error) {
	v, err := o.command(ctx, p.ID, cmdCancel{detail: detail})
	if err != nil {
		return nil, err
	}
	if err := o.waitAgentGone(ctx, v); err != nil {
		return nil, err
	}
	// The answer is the task as cancelled: its actor has handled the exit
	// (a task/retry right after the reply would otherwise find it running).
	if a, err := o.get(p.ID); err == nil && v.sess != nil {
		if err := o.waitSettled(ctx, a); err != nil {
			return nil, err
		}
	}
	return o.taskNow(p.ID)
}

// TaskPause stops the agent gracefully, keeps its session and worktree and
// frees its slot. A queued task is held back in the queue.
func (o *Orchestrator) TaskPause(ctx context.Context, p *protocol.TaskIDParams) (*protocol.Task, error) {
	v, err := o.command(ctx, p.ID, cmdPause{})
	if err != nil {
		return nil, err
	}
	if err := o.waitAgentGone(ctx, v); err != nil {
		return nil, err
	}
	return o.taskNow(p.ID)
}

// TaskResume queues a paused or blocked task; it continues its claude
// session with --resume in the same worktree when a slot is free.
func (o *Orchestrator) TaskResume(ctx context.Context, p *protocol.TaskIDParams) (*protocol.Task, error) {
	v, err := o.resume(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	return o.viewOf(v), nil
}

// resume continues a paused or blocked task: task/resume's, and a plan's
// for a step familiar's stop interrupted.
func (o *Orchestrator) resume(ctx context.Context, id string) (*taskView, error) {
	a, err := o.get(id)
	if err != nil {
		return nil, err
	}
	if err := o.waitReleased(ctx, a); err != nil {
		return nil, err
	}
	// Queued by the step, which wakes the scheduler (effQueueChanged).
	return a.call(ctx, cmdResume{})
}

// TaskSend gives the agent a follow-up message: typed into a live agent;
// for a finished, paused or blocked task, the prompt its session resumes
// with.
func (o *Orchestrator) TaskSend(ctx context.Context, p *protocol.TaskSendParams) (*protocol.Task, error) {
	a, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	r, err := o.send(ctx, a, p.Text)
	if err != nil {
		return nil, err
	}
	// When the step typed it into the live agent (effSendPrompt), which
	// waits for the idle prompt, the request waits for that (the session's
	// stop ends the typing too). Otherwise it queued the task
	// (effQueueChanged woke the scheduler) or resumes it with the message.
	told, err := o.awaitTold(ctx, r.told)
	if err != nil {
		return nil, err
	}
	if told != nil {
		return nil, protocol.FailedPrecondition("the agent did not take the message: "+told.Error(), r.view.T.Status)
	}
	return o.viewOf(a.view()), nil
}

// awaitTold waits for the outcome of what a command's step told the live
// agent (reply.told; nil: nothing, nothing to wait for), giving up when the
// request's client does or familiar shuts down (err).
func (o *Orchestrator) awaitTold(ctx context.Context, told <-chan error) (outcome, err error) {
	if told == nil {
		return nil, nil
	}
	select {
	case outcome := <-told:
		return outcome, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-o.closing:
		return nil, protocol.Unavailable("familiar is shutting down")
	}
}

// send gives the task a follow-up (cmdSend) once its agent is released.
func (o *Orchestrator) send(ctx context.Context, a *actor, text string) (reply, error) {
	if err := o.waitReleased(ctx, a); err != nil {
		return reply{}, err
	}
	r := a.ask(ctx, cmdSend{text: text}, false)
	return r, r.err
}

// sendFollowUp is task/send from inside familiar (the merge queue's
// hand-back): the follow-up queued or typed, not waited for.
func (o *Orchestrator) sendFollowUp(ctx context.Context, id, text string) error {
	a, err := o.get(id)
	if err != nil {
		return err
	}
	_, err = o.send(ctx, a, text)
	return err
}

// waitReleased waits until a task that no longer runs (finished, blocked,
// paused) has let its agent go: a person continuing it right away should
// not be told to try again.
func (o *Orchestrator) waitReleased(ctx context.Context, a *actor) error {
	v := a.view()
	if v.sess == nil || v.T.Status.Live() || v.warm && v.agentPhase == agentUp {
		// A warm agent takes a follow-up as it is (cmdSend).
		return nil
	}
	if err := o.waitAgentGone(ctx, v); err != nil {
		return err
	}
	return o.waitSettled(ctx, a)
}

// waitSettled waits until the actor has handled what its agent's exit
// posted (the view's session is gone).
func (o *Orchestrator) waitSettled(ctx context.Context, a *actor) error {
	for {
		v, err := a.call(ctx, inQueueMoved{})
		if err != nil {
			return err
		}
		if v.sess == nil || v.agentPhase == agentNone {
			return nil
		}
		select {
		case <-v.sess.Done():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TaskInput writes raw keystrokes into the task's terminal.
func (o *Orchestrator) TaskInput(ctx context.Context, p *protocol.TaskInputParams) error {
	sess, err := o.session(p.ID, "type into")
	if err != nil {
		return err
	}
	return sess.Input([]byte(p.Data))
}

// TaskResize resizes the task's terminal.
func (o *Orchestrator) TaskResize(ctx context.Context, p *protocol.TaskResizeParams) error {
	sess, err := o.session(p.ID, "resize")
	if err != nil {
		return err
	}
	return sess.Resize(p.Cols, p.Rows)
}

// TaskScreen returns the terminal's current screen.
func (o *Orchestrator) TaskScreen(ctx context.Context, p *protocol.TaskIDParams) (*protocol.TaskScreenResult, error) {
	sess, err := o.session(p.ID, "show the screen of")
	if err != nil {
		return nil, err
	}
	snap := sess.Screen()
	return &protocol.TaskScreenResult{Cols: snap.Cols, Rows: snap.Rows, Lines: snap.Lines,
		Cursor: protocol.Cursor{Row: snap.Cursor.Row, Col: snap.Cursor.Col}}, nil
}

func (o *Orchestrator) session(id, action string) (Session, error) {
	a, err := o.get(id)
	if err != nil {
		return nil, err
	}
	v := a.view()
	if v.sess == nil {
		return nil, errTransition(action, v.T.Status)
	}
	return v.sess, nil
}

// TaskOutput pages through the task's raw output log.
func (o *Orchestrator) TaskOutput(ctx context.Context, p *protocol.TaskOutputParams) (*protocol.TaskOutputResult, error) {
	a, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	// One view, taken before the log is read: an agent that is gone had its
	// log flushed and closed (procs closes it before the agent's Exited
	// event) so what is read below is all there will be.
	v := a.view()
	logs := v.logs
	if p.Offset < 0 {
		return nil, protocol.InvalidParams("offset", fmt.Sprintf("offset %d is negative", p.Offset))
	}
	res := &protocol.TaskOutputResult{Offset: p.Offset, Ended: v.agentPhase == agentNone}
	if len(logs) == 0 {
		res.NextOffset = p.Offset
		return res, nil
	}
	// The latest start's log; earlier ones stay on disk.
	f, err := os.Open(logs[len(logs)-1])
	if err != nil {
		if os.IsNotExist(err) {
			res.NextOffset = p.Offset
			return res, nil
		}
		return nil, fmt.Errorf("read output: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read output: %w", err)
	}
	res.Size = fi.Size()
	if p.Offset < 0 || p.Offset > res.Size {
		return nil, protocol.InvalidParams("offset", fmt.Sprintf("offset %d is outside the output (size %d)", p.Offset, res.Size))
	}
	buf := make([]byte, min(int64(p.EffectiveLimit()), res.Size-p.Offset))
	n, err := f.ReadAt(buf, p.Offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read output: %w", err)
	}
	buf = buf[:n]
	// Never cut inside a UTF-8 character: stop before an incomplete one.
	cut := procs.CompleteUTF8(buf)
	res.Data = string(buf[:cut])
	res.NextOffset = p.Offset + int64(cut)
	res.Truncated = res.NextOffset < res.Size
	return res, nil
}

// TaskReorder changes a queued task's priority or moves it before another.
// The order is the orchestrator's (in memory, under its lock); the tasks
// save their new place on their own actors, without holding anyone up.
func (o *Orchestrator) TaskReorder(ctx context.Context, p *protocol.TaskReorderParams) (*protocol.Task, error) {
	a, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	if v := a.view(); v.T.Status != protocol.StatusQueued {
		return nil, errTransition("reorder", v.T.Status)
	}
	o.mu.Lock()
	key := o.order[p.ID]
	if p.Priority != nil {
		key.priority = *p.Priority
	}
	changed := map[string]queueKey{}
	if p.Before != "" {
		b := o.tasks[p.Before]
		if b == nil || b.view().T.Status != protocol.StatusQueued || p.Before == p.ID {
			o.mu.Unlock()
			return nil, protocol.InvalidParams("before", "before must name another queued task")
		}
		bk := o.order[p.Before]
		key.priority = bk.priority
		// Take b's place in FIFO order and push b and those after it back.
		for _, x := range o.queueLocked() {
			xk := o.order[x.id]
			if x.id != p.ID && xk.priority == bk.priority && xk.seq >= bk.seq {
				xk.seq++
				o.order[x.id] = xk
				changed[x.id] = xk
			}
		}
		key.seq = bk.seq - 1
	}
	o.order[p.ID] = key
	o.queueValid = false
	changed[p.ID] = key
	targets := map[string]*actor{}
	for id := range changed {
		targets[id] = o.tasks[id]
	}
	o.mu.Unlock()
	for id, x := range targets {
		k := changed[id]
		x.post(envelope{in: cmdRequeue{priority: k.priority, seq: k.seq}})
	}
	o.announceQueue()
	snap := a.view().T
	snap.Priority = key.priority
	o.fillEstimates(&snap)
	return &snap, nil
}

// TaskEvents replays notifications after a reconnect.
func (o *Orchestrator) TaskEvents(ctx context.Context, p *protocol.TaskEventsParams) (*protocol.TaskEventsResult, error) {
	if p.ID != "" {
		if _, err := o.get(p.ID); err != nil {
			return nil, err
		}
	}
	evs, last, err := o.cfg.Store.Events(p.ID, uint64(max(p.SinceSeq, 0)), p.EffectiveLimit())
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	res := &protocol.TaskEventsResult{LastSeq: int64(last)}
	for _, e := range evs {
		params, err := withSeq(e.Data, int64(e.Seq))
		if err != nil {
			continue
		}
		res.Events = append(res.Events, protocol.Event{Seq: int64(e.Seq), Method: e.Kind, Params: params, At: e.At})
	}
	return res, nil
}

// TaskDiff reports the task's changes against its base commit.
func (o *Orchestrator) TaskDiff(ctx context.Context, p *protocol.TaskDiffParams) (*protocol.TaskDiffResult, error) {
	a, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	v := a.view()
	wt, hasWT := o.worktreeOfView(v)
	if !hasWT {
		return nil, protocol.FailedPrecondition("the task has no worktree yet", v.T.Status)
	}
	if p.Path != "" {
		if err := o.cfg.Repo.CheckPath(p.Path); err != nil {
			return nil, protocol.InvalidParams("path", err.Error())
		}
	}
	files, err := o.cfg.Repo.ChangedFiles(ctx, wt)
	if err != nil {
		return nil, mapError(err, "diff", "path")
	}
	patch, err := o.cfg.Repo.Diff(ctx, wt, p.Path)
	if err != nil {
		return nil, mapError(err, "diff", "path")
	}
	res := &protocol.TaskDiffResult{Patch: patch}
	for _, f := range files {
		if p.Path != "" && f.Path != p.Path {
			continue
		}
		df := protocol.DiffFile{Path: f.Path, Status: protocol.FileStatus(f.Status), Additions: f.Additions, Deletions: f.Deletions}
		if p.Texts {
			oldText, newText, ok, err := o.cfg.Repo.FileTexts(ctx, wt, f)
			if err != nil {
				return nil, mapError(err, "diff", "path")
			}
			if ok {
				oldText, newText = o.maskString(oldText), o.maskString(newText)
				df.OldText, df.NewText = &oldText, &newText
			}
		}
		res.Files = append(res.Files, df)
	}
	return res, nil
}

// TaskRemove removes a finished task's worktree (and branch, if asked),
// and with p.Archive archives the task.
func (o *Orchestrator) TaskRemove(ctx context.Context, p *protocol.TaskRemoveParams) error {
	if err := o.removeWorktree(ctx, p); err != nil || !p.Archive {
		return err
	}
	a, err := o.get(p.ID)
	if err != nil {
		return err
	}
	// The operation's end is in the task's mailbox before this.
	_, err = a.call(ctx, cmdArchive{at: o.clk.Now().UTC()})
	return err
}

// removeWorktree is task/remove's git work. One remove, merge or undo of a
// task runs at a time.
func (o *Orchestrator) removeWorktree(ctx context.Context, p *protocol.TaskRemoveParams) error {
	op, err := o.claim(ctx, p.ID, opRemove)
	if err != nil {
		return err
	}
	defer op.release()
	if wt := op.v.T.Worktree; wt != nil {
		err := o.cfg.Repo.Remove(ctx, wt.Path, worktree.RemoveOptions{DeleteBranch: p.DeleteBranch, Force: p.Force})
		if err != nil && !errors.Is(err, worktree.ErrNotFound) {
			return mapError(err, "remove worktree", "force")
		}
	}
	if err := op.finish(cmdEndOp{ok: true}); err != nil {
		o.logger.Warn("end operation", "task", p.ID, "op", opRemove, "err", err)
	}
	return nil
}

// TaskArchive archives (or shows again) the tasks named, or every merged
// or cancelled task that finished before p.FinishedBefore. The store keeps
// them: the audit and task/get still see them.
func (o *Orchestrator) TaskArchive(ctx context.Context, p *protocol.TaskArchiveParams) (*protocol.TaskArchiveResult, error) {
	var targets []*actor
	for _, id := range p.IDs {
		a, err := o.get(id)
		if err != nil {
			return nil, err
		}
		targets = append(targets, a)
	}
	if !p.FinishedBefore.IsZero() {
		o.mu.Lock()
		for _, a := range o.tasks {
			t := a.view().T
			if (t.Status == protocol.StatusMerged || t.Status == protocol.StatusCancelled) &&
				!t.FinishedAt.IsZero() && t.FinishedAt.Before(p.FinishedBefore.Time) && !slices.Contains(targets, a) {
				targets = append(targets, a)
			}
		}
		o.mu.Unlock()
	}
	at := o.clk.Now().UTC()
	if p.Unarchive {
		at = time.Time{}
	}
	res := &protocol.TaskArchiveResult{IDs: []string{}}
	for _, a := range targets {
		before := a.view().T.ArchivedAt
		v, err := a.call(ctx, cmdArchive{at: at})
		if err != nil {
			return res, err
		}
		if !v.T.ArchivedAt.Equal(before) {
			res.IDs = append(res.IDs, a.id)
		}
	}
	slices.Sort(res.IDs)
	return res, nil
}

// beginOp claims a task for one git operation; a second one while it runs
// is refused naming the state.
func (o *Orchestrator) beginOp(ctx context.Context, id string, op opKind) (*actor, *taskView, error) {
	a, err := o.get(id)
	if err != nil {
		return nil, nil, err
	}
	if v := a.view(); v.warm {
		// git must not race a claude kept warm for a follow-up: it goes
		// first (waited for below).
		if _, err := a.call(ctx, cmdCool{}); err != nil {
			return nil, nil, err
		}
	}
	if v := a.view(); v.sess != nil && (v.T.Status == protocol.StatusMerging || v.T.Status == protocol.StatusBlocked) {
		// A finished task's agent is still going away: git must not race it.
		if err := o.waitAgentGone(ctx, v); err != nil {
			return nil, nil, err
		}
		if err := o.waitSettled(ctx, a); err != nil {
			return nil, nil, err
		}
	}
	v, err := a.call(ctx, cmdBeginOp{op: op})
	if err != nil {
		return nil, nil, err
	}
	return a, v, nil
}

// ServerStats summarises the tasks.
func (o *Orchestrator) ServerStats(ctx context.Context) (*protocol.ServerStats, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	st := &protocol.ServerStats{Tasks: protocol.TaskCounts{ByStatus: map[protocol.Status]int{}}}
	var done, ok int
	var total time.Duration
	for _, a := range o.tasks {
		v := a.view()
		st.Tasks.ByStatus[v.T.Status]++
		switch s := v.T.Status; {
		case s == protocol.StatusQueued:
			st.QueueDepth++
		case s.Live():
			st.Running++
		case s == protocol.StatusMerging || s == protocol.StatusMerged:
			done++
			ok++
		case s == protocol.StatusBlocked:
			// A cancel is the person's choice, not a failure.
			done++
		}
	}
	if done > 0 {
		st.SuccessRate = float64(ok) / float64(done)
	}
	for _, d := range o.durations {
		total += d
	}
	if n := len(o.durations); n > 0 {
		st.AvgDurationSec = total.Seconds() / float64(n)
	}
	st.Approvals.Count = len(o.approvals)
	var resp time.Duration
	for _, d := range o.approvals {
		resp += d
	}
	if n := len(o.approvals); n > 0 {
		st.Approvals.AvgResponseSec = resp.Seconds() / float64(n)
	}
	st.ToolUses = map[string]int{}
	for k, v := range o.toolUses {
		st.ToolUses[k] = v
	}
	return st, nil
}

// TaskInterrupt ends the agent's current turn and keeps the task: the next
// task/send goes on in the same session (ACP's session/cancel).
func (o *Orchestrator) TaskInterrupt(ctx context.Context, p *protocol.TaskIDParams) (*protocol.Task, error) {
	a, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	r := a.ask(ctx, cmdInterrupt{}, false)
	if r.err != nil {
		return nil, r.err
	}
	told, err := o.awaitTold(ctx, r.told)
	if err != nil {
		return nil, err
	}
	if told != nil {
		return nil, protocol.ErrorOf(told, protocol.ErrorContext{What: "interrupt the agent", Status: r.view.T.Status})
	}
	return o.viewOf(a.view()), nil
}
