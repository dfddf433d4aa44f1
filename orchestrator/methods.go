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

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/mcp"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

var errorsIs = errors.Is

// get returns a task or NotFound.
func (o *Orchestrator) get(id string) (*task, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.tasks[id]
	if t == nil {
		return nil, protocol.NotFound("task", id)
	}
	return t, nil
}

func (o *Orchestrator) view(t *task) *protocol.Task {
	o.mu.Lock()
	defer o.mu.Unlock()
	snap := t.snapshot()
	if snap.Status == protocol.StatusQueued {
		o.fillQueueLocked(&snap)
	}
	return &snap
}

// Settings returns the current settings.
func (o *Orchestrator) Settings() protocol.Settings { return o.settingsNow() }

// UpdateSettings merges u into the settings and persists them.
func (o *Orchestrator) UpdateSettings(ctx context.Context, u *protocol.SettingsUpdate) (*protocol.Settings, error) {
	if u != nil {
		if err := validPolicy("settings.permissionPolicy", u.PermissionPolicy); err != nil {
			return nil, err
		}
	}
	o.mu.Lock()
	s := o.settings.Apply(u)
	o.settings = s
	o.mu.Unlock()
	b, err := json.Marshal(s)
	if err == nil {
		err = o.cfg.Store.PutSetting(ctx, "settings", b)
	}
	if err != nil {
		return nil, fmt.Errorf("save settings: %w", err)
	}
	o.poke() // maxConcurrent may have grown
	return &s, nil
}

// TaskCreate queues a new task.
func (o *Orchestrator) TaskCreate(ctx context.Context, p *protocol.TaskCreateParams) (*protocol.Task, error) {
	if o.cfg.CLIErr != nil {
		return nil, protocol.Unavailable("claude is not available: " + o.cfg.CLIErr.Error())
	}
	if p.BaseRef != "" {
		if err := o.cfg.Repo.CheckRef(ctx, p.BaseRef); err != nil {
			return nil, protocol.InvalidParams("baseRef", err.Error())
		}
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
	t := &task{}
	t.T = protocol.Task{
		ID: newTaskID(), Title: p.Title, Description: p.Description, AcceptanceCriteria: p.AcceptanceCriteria,
		Type: p.Type, Profile: p.Profile, Mode: p.Mode, Priority: p.Priority, Driver: p.Driver,
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
	t.Skills, t.McpServers, t.NoProgressTimeoutSec, t.Policy = p.Skills, p.McpServers, p.NoProgressTimeoutSec, p.PermissionPolicy
	t.BaseRef = p.BaseRef
	if err := mcp.ValidateAll(mcpServers(p.McpServers)); err != nil {
		return nil, protocol.InvalidParams("mcpServers", err.Error())
	}
	// Build once now, so a broken profile, an unknown skill or a bad mode
	// fails task/create (with the file and line) instead of the start.
	spec, err := o.buildSpec(&t.persisted, nil, nil)
	if err != nil {
		return nil, err
	}
	t.T.Profile, t.T.Mode = spec.Profile, protocol.Mode(spec.Mode)
	return o.enqueue(t)
}

func hintFiles(p *protocol.TaskCreateParams) []string {
	if p.Hints == nil {
		return nil
	}
	return p.Hints.Files
}

// enqueue adds a new task to the queue.
func (o *Orchestrator) enqueue(t *task) (*protocol.Task, error) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil, protocol.Unavailable("familiar is shutting down")
	}
	var maxSeq int64
	for _, x := range o.tasks {
		maxSeq = max(maxSeq, x.Seq)
	}
	t.Seq = maxSeq + 1
	o.tasks[t.T.ID] = t
	o.touchLocked(t)
	o.mu.Unlock()
	o.poke()
	return o.view(t), nil
}

// TaskGet returns one task.
func (o *Orchestrator) TaskGet(ctx context.Context, p *protocol.TaskIDParams) (*protocol.Task, error) {
	t, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	return o.view(t), nil
}

// TaskList lists tasks newest first, filtered, with cursor paging. Every
// task is in memory (loaded at start), so the list is computed there: a
// free-text query over 10,000 tasks need not decode 10,000 records.
func (o *Orchestrator) TaskList(ctx context.Context, p *protocol.TaskListParams) (*protocol.TaskListResult, error) {
	after, err := decodeCursor(p.Cursor)
	if err != nil {
		return nil, protocol.InvalidParams("cursor", "cursor is not one task/list returned")
	}
	q := strings.ToLower(strings.TrimSpace(p.Query))
	o.mu.Lock()
	defer o.mu.Unlock()
	var matched []*task
	for _, t := range o.tasks {
		if len(p.Status) > 0 && !slices.Contains(p.Status, t.T.Status) {
			continue
		}
		if !p.Since.IsZero() && t.T.CreatedAt.Before(p.Since.Time) {
			continue
		}
		if !p.Until.IsZero() && !t.T.CreatedAt.Before(p.Until.Time) {
			continue
		}
		if q != "" && !t.matches(q) {
			continue
		}
		matched = append(matched, t)
	}
	sort.Slice(matched, func(i, j int) bool { return newer(matched[i], matched[j]) })
	res := &protocol.TaskListResult{Total: len(matched)}
	limit := p.EffectiveLimit()
	for _, t := range matched {
		if after != nil && !newer(after, t) {
			continue
		}
		if len(res.Tasks) == limit {
			res.NextCursor = encodeCursor(res.Tasks[len(res.Tasks)-1])
			break
		}
		snap := t.snapshot()
		if snap.Status == protocol.StatusQueued {
			o.fillQueueLocked(&snap)
		}
		res.Tasks = append(res.Tasks, snap)
	}
	return res, nil
}

// newer orders tasks newest first, by creation time then id.
func newer(a, b *task) bool {
	if !a.T.CreatedAt.Equal(b.T.CreatedAt) {
		return a.T.CreatedAt.After(b.T.CreatedAt)
	}
	return a.T.ID > b.T.ID
}

// A cursor is the position of the last task of a page.
func encodeCursor(t protocol.Task) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(t.CreatedAt.UnixNano(), 10) + "." + t.ID))
}

func decodeCursor(c string) (*task, error) {
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
	t := &task{}
	t.T.CreatedAt, t.T.ID = time.Unix(0, n).UTC(), id
	return t, nil
}

// matches reports whether the lowercased query q is in the task's title,
// description, summary or error.
func (t *task) matches(q string) bool {
	fields := []string{t.T.Title, t.T.Description, t.LastError}
	if t.T.Result != nil {
		fields = append(fields, t.T.Result.Summary)
	}
	if t.T.Blocked != nil {
		fields = append(fields, t.T.Blocked.Detail)
	}
	for _, f := range fields {
		if strings.Contains(strings.ToLower(f), q) {
			return true
		}
	}
	return false
}

// TaskCancel cancels a queued task at once, or terminates a running one
// (SIGTERM → grace → SIGKILL of its tree); the worktree is kept.
func (o *Orchestrator) TaskCancel(ctx context.Context, p *protocol.TaskIDParams) (*protocol.Task, error) {
	t, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	switch {
	case t.T.Status == protocol.StatusQueued || t.T.Status == protocol.StatusPaused || t.T.Status == protocol.StatusBlocked:
		if err := o.setStatusLocked(t, protocol.StatusCancelled); err != nil {
			o.mu.Unlock()
			return nil, err
		}
		t.T.Blocked = &protocol.Blocked{Reason: protocol.BlockedCancelledByUser, Detail: "cancelled by the user"}
		o.touchLocked(t)
		o.mu.Unlock()
		return o.view(t), nil
	case live(t.T.Status):
		t.cancelled = true
		t.stopping = true
		sess := t.sess
		o.mu.Unlock()
		if sess != nil {
			o.stopAgent(t, protocol.BlockedCancelledByUser, "cancelled by the user")
		}
		// A task still starting is stopped by start() when its agent is up.
		return o.view(t), nil
	default:
		from := t.T.Status
		o.mu.Unlock()
		return nil, errTransition("cancel", from)
	}
}

// TaskRespond answers the pending question.
func (o *Orchestrator) TaskRespond(ctx context.Context, p *protocol.TaskRespondParams) (*protocol.Task, error) {
	t, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	if err := o.answer(t, p); err != nil {
		return nil, err
	}
	return o.view(t), nil
}

// TaskSend gives the running agent a follow-up message.
func (o *Orchestrator) TaskSend(ctx context.Context, p *protocol.TaskSendParams) (*protocol.Task, error) {
	t, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	sess, status := t.sess, t.T.Status
	if status == protocol.StatusMerging && sess != nil && t.stopping {
		// The finished agent is still stopping: let it go first.
		o.mu.Unlock()
		select {
		case <-sess.Done():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		o.mu.Lock()
		sess, status = t.sess, t.T.Status
	}
	if status == protocol.StatusMerging && sess == nil {
		// A follow-up on finished work: the agent resumes its session with
		// it when a slot is free.
		if err := o.setStatusLocked(t, protocol.StatusQueued); err != nil {
			o.mu.Unlock()
			return nil, err
		}
		t.FollowUp = p.Text
		t.T.Result = nil
		o.touchLocked(t)
		o.mu.Unlock()
		o.poke()
		return o.view(t), nil
	}
	o.mu.Unlock()
	if sess == nil || (status != protocol.StatusRunning && status != protocol.StatusWaiting) {
		return nil, errTransition("send a message to", status)
	}
	if err := sess.SendPrompt(p.Text); err != nil {
		return nil, fmt.Errorf("send to agent: %w", err)
	}
	return o.view(t), nil
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

func (o *Orchestrator) session(id, action string) (*agent.Session, error) {
	t, err := o.get(id)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if t.sess == nil {
		return nil, errTransition(action, t.T.Status)
	}
	return t.sess, nil
}

// TaskOutput pages through the task's raw output log.
func (o *Orchestrator) TaskOutput(ctx context.Context, p *protocol.TaskOutputParams) (*protocol.TaskOutputResult, error) {
	t, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	logs := append([]string(nil), t.Logs...)
	o.mu.Unlock()
	if p.Offset < 0 {
		return nil, protocol.InvalidParams("offset", fmt.Sprintf("offset %d is negative", p.Offset))
	}
	res := &protocol.TaskOutputResult{Offset: p.Offset}
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
	cut := utf8Boundary(buf)
	res.Data = string(buf[:cut])
	res.NextOffset = p.Offset + int64(cut)
	res.Truncated = res.NextOffset < res.Size
	return res, nil
}

// utf8Boundary returns the length of b without a trailing incomplete UTF-8
// sequence.
func utf8Boundary(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		c := b[i]
		if c < 0x80 {
			return len(b)
		}
		if c >= 0xC0 { // a lead byte: is its sequence complete?
			need := 2
			if c >= 0xF0 {
				need = 4
			} else if c >= 0xE0 {
				need = 3
			}
			if len(b)-i < need {
				return i
			}
			return len(b)
		}
	}
	return len(b)
}

// TaskReorder changes a queued task's priority or moves it before another.
func (o *Orchestrator) TaskReorder(ctx context.Context, p *protocol.TaskReorderParams) (*protocol.Task, error) {
	t, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if t.T.Status != protocol.StatusQueued {
		return nil, errTransition("reorder", t.T.Status)
	}
	if p.Priority != nil {
		t.T.Priority = *p.Priority
	}
	if p.Before != "" {
		b := o.tasks[p.Before]
		if b == nil || b.T.Status != protocol.StatusQueued {
			return nil, protocol.InvalidParams("before", "before must name another queued task")
		}
		t.T.Priority = b.T.Priority
		// Take b's place in FIFO order and push b and those after it back.
		for _, x := range o.tasks {
			if x != t && x.T.Status == protocol.StatusQueued && x.T.Priority == b.T.Priority && x.Seq >= b.Seq {
				x.Seq++
				o.save(x)
			}
		}
		t.Seq = b.Seq - 1
	}
	for _, x := range o.queueLocked() {
		o.touchLocked(x)
	}
	snap := t.snapshot()
	o.fillQueueLocked(&snap)
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
		res.Events = append(res.Events, protocol.Event{Seq: int64(e.Seq), Method: e.Kind, Params: params})
	}
	return res, nil
}

// TaskDiff reports the task's changes against its base commit.
func (o *Orchestrator) TaskDiff(ctx context.Context, p *protocol.TaskDiffParams) (*protocol.TaskDiffResult, error) {
	t, err := o.get(p.ID)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	wt := o.worktreeOf(t)
	hasWT := t.T.Worktree != nil
	o.mu.Unlock()
	if !hasWT {
		return nil, protocol.FailedPrecondition("the task has no worktree yet", t.T.Status)
	}
	if p.Path != "" {
		if err := o.cfg.Repo.CheckPath(p.Path); err != nil {
			return nil, protocol.InvalidParams("path", err.Error())
		}
	}
	files, err := o.cfg.Repo.ChangedFiles(ctx, wt)
	if err != nil {
		return nil, mapError(err, "diff")
	}
	patch, err := o.cfg.Repo.Diff(ctx, wt, p.Path)
	if err != nil {
		return nil, mapError(err, "diff")
	}
	res := &protocol.TaskDiffResult{Patch: patch}
	for _, f := range files {
		if p.Path != "" && f.Path != p.Path {
			continue
		}
		res.Files = append(res.Files, protocol.DiffFile{Path: f.Path, Status: protocol.FileStatus(f.Status), Additions: f.Additions, Deletions: f.Deletions})
	}
	return res, nil
}

// TaskRemove removes a finished task's worktree (and branch, if asked).
func (o *Orchestrator) TaskRemove(ctx context.Context, p *protocol.TaskRemoveParams) error {
	t, err := o.get(p.ID)
	if err != nil {
		return err
	}
	o.mu.Lock()
	status := t.T.Status
	wt := t.T.Worktree
	o.mu.Unlock()
	if live(status) {
		return errTransition("remove", status)
	}
	if wt != nil {
		err := o.cfg.Repo.Remove(ctx, wt.Path, worktree.RemoveOptions{DeleteBranch: p.DeleteBranch, Force: p.Force})
		if errors.Is(err, worktree.ErrFailedPrecondition) {
			return protocol.FailedPrecondition(err.Error()+"; pass force to remove it anyway", status)
		}
		if err != nil && !errors.Is(err, worktree.ErrNotFound) {
			return mapError(err, "remove worktree")
		}
	}
	o.mu.Lock()
	t.T.Worktree = nil
	o.touchLocked(t)
	o.mu.Unlock()
	return nil
}

// ServerStats summarises the tasks.
func (o *Orchestrator) ServerStats(ctx context.Context) (*protocol.ServerStats, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	st := &protocol.ServerStats{Tasks: protocol.TaskCounts{ByStatus: map[protocol.Status]int{}}}
	var done, ok int
	var total time.Duration
	for _, t := range o.tasks {
		st.Tasks.ByStatus[t.T.Status]++
		switch t.T.Status {
		case protocol.StatusQueued:
			st.QueueDepth++
		case protocol.StatusStarting, protocol.StatusRunning, protocol.StatusWaiting:
			st.Running++
		case protocol.StatusMerging, protocol.StatusMerged:
			done++
			ok++
		case protocol.StatusBlocked, protocol.StatusCancelled:
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
