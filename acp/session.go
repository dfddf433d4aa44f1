package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/rpcclient"
)

// session is one ACP session: a familiar task once the first prompt made it.
type session struct {
	id  string
	a   *Agent
	f   *familiar
	cwd string
	mcp map[string]protocol.McpServer

	mu       sync.Mutex
	mode     string // guarded by mu
	model    string // guarded by mu; a model alias, or modelDefault
	think    bool   // guarded by mu; the next task's think directive
	elevated bool   // guarded by mu; the next task's elevated directive
	verbose  bool   // guarded by mu; the next task's verbose directive
	skills   string // guarded by mu; the next task's skills: skillsDefault, skillsNone, skillsAll or a skill's name
	// skillList are the repository's and the user's skills as the session
	// began (skills/list); set before the session is shared.
	skillList []protocol.Skill
	taskID    string // guarded by mu
	planID    string // guarded by mu; the session's plan (/plan)
	planWatch func() // guarded by mu; stops following the plan (session/cancel)
	planShown string // guarded by mu; the plan entries last sent
	// floor: notifications of seq ≤ floor were replayed from the store
	// already (session/load, session/resume), so the live ones are not sent
	// twice; lastSeq is the newest one the client was sent.
	floor, lastSeq int64 // guarded by mu
	// own are the prompts this session sent whose transcript entry has not
	// come yet: any other prompt entry is another client's, which this
	// client shows as the person's message (issue 37). firstOf is a task
	// this session created, whose first prompt entry is familiar's template
	// around the person's words (not shown).
	own     []string // guarded by mu
	firstOf string   // guarded by mu
	// changed is poked at every task/updated: a prompt waiting for another
	// client's turn to end looks again.
	changed chan struct{}
	// prepared is the agent familiar started for the session's first task
	// at session/new (task/prepare), until the first prompt takes it or the
	// session lets it go; preparing is closed once task/prepare answered.
	prepared  string          // guarded by mu
	preparing chan struct{}   // guarded by mu; nil when none was asked
	worktree  string          // guarded by mu; the task's worktree, once it has one
	unfollow  func()          // guarded by mu
	turn      *turn           // guarded by mu; the prompt in flight
	announced map[string]bool // guarded by mu; tool call ids the client has seen
	// settled are the calls a resumed session's task had finished when it
	// was resumed, by id, with their status: their end may still be on its
	// way (familiar answers task/get before the notification that told it
	// is durable and sent), and a resumed session shows no history.
	settled map[string]string // guarded by mu
	// asked is a choice or dialog question put to the person as a message;
	// the next prompt answers it.
	asked *protocol.Question // guarded by mu
	// permissions in flight, by familiar question id: cancelled when the
	// question is settled elsewhere.
	permissions map[string]context.CancelFunc // guarded by mu
}

// turn is one session/prompt waiting for the agent's turn to end.
type turn struct {
	done      chan string // the stop reason, once
	once      sync.Once
	cancelled bool // session/cancel was received
	sawWork   bool // the task ran since the prompt
	textSeen  bool // some agent text was sent
	// said is the agent's text sent in this turn (claude's own "API
	// Error: …" among it), so familiar's end does not say it again.
	said       strings.Builder
	lastStatus protocol.Status
	// retry is the last "retrying (n of m)" said in this turn, so each
	// attempt is said once.
	retry string
	// err, set before done, ends the prompt with an error instead of a
	// stop reason (auth_required for a refused login).
	err *rpcError
	// waiting: the prompt waits for another client's turn on the task to
	// end (it is not sent yet); abort ends that wait (session/cancel).
	waiting bool
	abort   chan struct{}
}

func (t *turn) end(reason string) { t.once.Do(func() { t.done <- reason }) }

// fail ends the prompt with err.
func (t *turn) fail(err *rpcError) {
	t.once.Do(func() {
		t.err = err
		t.done <- ""
	})
}

func (s *session) update(u map[string]any) {
	if err := s.a.c.notify("session/update", map[string]any{"sessionId": s.id, "update": u}); err != nil {
		s.a.opts.Logger.Debug("session/update not sent", "err", err)
	}
}

// announce tells the client the modes and slash commands.
func (s *session) announce() {
	s.update(map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": []any{
		map[string]any{"name": "diff", "description": "Show what the task changed, against where it started."},
		map[string]any{"name": "merge", "description": "Merge the task's work into its base branch.", "input": map[string]any{"hint": "merge, squash or rebase (default merge)"}},
		map[string]any{"name": "undo", "description": "Undo the task's merge, while the undo window holds (/merge says until when); a push cannot be taken back."},
		map[string]any{"name": "retry", "description": "Start the task again as a new attempt, told why the last one stopped."},
		map[string]any{"name": "archive", "description": "Take the finished task out of familiar's task lists (here and in other editors); its branch and worktree stay."},
		map[string]any{"name": "grants", "description": "List the allow-always grants that hold for the task: its own, the repository's and yours."},
		map[string]any{"name": "revoke", "description": "Revoke an allow-always grant: familiar asks for such calls again.", "input": map[string]any{"hint": "the grant's number in /grants, or its rule"}},
		map[string]any{"name": "plan", "description": "Break a goal into steps that parallel agents carry out, each merged and checked as it is done; /plan run runs it.", "input": map[string]any{"hint": "a goal; or run, cancel, undo"}},
	}})
}

// note tells the person something familiar says (not the agent): it does
// not count as the turn's text, so the agent's own words still follow.
func (s *session) note(text string) {
	s.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": textContent(text)})
}

// warn shows familiar's warning or error: as a notice where the client
// takes notices (live, not part of the conversation), else as words in
// the conversation, marked as familiar's rather than the agent's.
func (s *session) warn(level protocol.MessageLevel, text string) {
	s.a.mu.Lock()
	notices := s.a.notices
	s.a.mu.Unlock()
	severity := "warning"
	if level == protocol.LevelError {
		severity = "error"
	}
	if notices {
		title, detail := text, ""
		if i := strings.Index(text, ": "); i > 0 && i < 120 && strings.HasPrefix(text, "task ") {
			// "task <id>: <what>": the id means nothing in this session.
			title = text[i+2:]
		}
		if i := strings.Index(title, ". "); i > 0 {
			title, detail = title[:i+1], strings.TrimSpace(title[i+2:])
		}
		u := map[string]any{"sessionUpdate": "notice", "severity": severity, "title": title}
		if detail != "" {
			u["description"] = detail
		}
		s.update(u)
		return
	}
	word := "Warning"
	if level == protocol.LevelError {
		word = "Error"
	}
	if i := strings.Index(text, ": "); i > 0 && i < 120 && strings.HasPrefix(text, "task ") {
		text = text[i+2:]
	}
	s.note(fmt.Sprintf("\n\n%s from familiar: %s\n\n", word, text))
}

// hook shows one hook call of a verbose task as an info notice: live,
// not part of the conversation (a hook call is not the agent's), and only
// to a client that takes notices — without them there is no place for it
// that would not read as the agent's words or tool calls.
func (s *session) hook(n protocol.TaskHookNotification) {
	s.a.mu.Lock()
	notices := s.a.notices
	s.a.mu.Unlock()
	if !notices {
		return
	}
	title := "Hook " + n.Name
	var head struct {
		Tool string `json:"tool_name"`
	}
	if json.Unmarshal(n.Payload, &head) == nil && head.Tool != "" {
		title += ": " + head.Tool
	}
	desc := string(n.Payload)
	if len(desc) > maxHookText {
		// Cut on a rune boundary; the whole is in familiar (task/hook).
		cut := maxHookText
		for cut > 0 && !utf8.RuneStart(desc[cut]) {
			cut--
		}
		desc = desc[:cut] + "…"
	}
	s.update(map[string]any{"sessionUpdate": "notice", "severity": "info", "title": title, "description": desc})
}

// maxHookText bounds a hook call's payload in its notice.
const maxHookText = 2000

// sawTask keeps what the session needs of its task as familiar reports it.
func (s *session) sawTask(t protocol.Task) {
	if t.Worktree == nil || t.Worktree.Path == "" {
		return
	}
	s.mu.Lock()
	if t.ID == s.taskID || s.taskID == "" {
		s.worktree = t.Worktree.Path
	}
	s.mu.Unlock()
}

func (s *session) task() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.taskID
}

func (s *session) stopFollowing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unfollow != nil {
		s.unfollow()
		s.unfollow = nil
	}
}

// follow switches the session to task id's notifications. It must not be
// called with mu held: notifications that came early are handled at once.
func (s *session) follow(id string) {
	s.mu.Lock()
	old := s.unfollow
	s.unfollow = nil
	s.taskID = id
	s.mu.Unlock()
	if old != nil {
		old()
	}
	unfollow := s.f.follow(id, s.onNotification)
	s.mu.Lock()
	s.unfollow = unfollow
	s.mu.Unlock()
}

func promptText(blocks []contentBlock) string {
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "resource_link":
			parts = append(parts, "@"+strings.TrimPrefix(b.URI, "file://"))
		case "resource":
			if b.Resource != nil {
				parts = append(parts, fmt.Sprintf("<context uri=%q>\n%s\n</context>", b.Resource.URI, b.Resource.Text))
			}
		}
	}
	return strings.TrimSpace(strings.Join(parts, "\n"))
}

func (s *session) prompt(ctx context.Context, blocks []contentBlock) (any, error) {
	text := promptText(blocks)
	if text == "" {
		return nil, invalidParams("prompt", "The prompt has no text.")
	}
	if cmd, arg, ok := slashCommand(text); ok {
		return s.command(ctx, cmd, arg)
	}
	t := &turn{done: make(chan string, 1), abort: make(chan struct{})}
	s.mu.Lock()
	if s.turn != nil {
		s.mu.Unlock()
		return nil, &rpcError{Code: codeInvalidRequest, Message: "A prompt is already running in this session; cancel it first."}
	}
	s.turn = t
	taskID, asked := s.taskID, s.asked
	s.asked = nil
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.turn = nil
		s.mu.Unlock()
	}()
	if taskID != "" {
		if err := s.awaitTurn(ctx, t, taskID); err != nil {
			return nil, err
		}
		if t.cancelled {
			return map[string]any{"stopReason": stopCancelled}, nil
		}
	}
	s.mu.Lock()
	s.own = append(s.own, text)
	if len(s.own) > 8 { // answers that made no prompt entry
		s.own = s.own[len(s.own)-8:]
	}
	s.mu.Unlock()
	if err := s.start(ctx, taskID, asked, text); err != nil {
		return nil, err
	}
	select {
	case reason := <-t.done:
		if t.err != nil {
			return nil, t.err
		}
		return map[string]any{"stopReason": reason}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// awaitTurn waits while the task works on a turn this session did not
// start (another client's prompt on the same session, issue 37): a prompt
// waits its turn, so that it is answered to its sender, after the other's
// answer. The turn ignores the task's news meanwhile.
func (s *session) awaitTurn(ctx context.Context, t *turn, taskID string) error {
	s.mu.Lock()
	t.waiting = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		t.waiting = false
		s.mu.Unlock()
	}()
	for {
		task, err := s.f.TaskGet(ctx, &protocol.TaskGetParams{ID: taskID})
		if err != nil {
			return errorOf(err, "", s.a.opts.Logger)
		}
		if !busy(task) {
			return nil
		}
		select {
		case <-s.changed:
		case <-t.abort:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// busy: the task works on a turn (or waits on a permission within one).
func busy(t *protocol.Task) bool {
	switch t.Status {
	case protocol.StatusQueued, protocol.StatusStarting, protocol.StatusRunning:
		return true
	case protocol.StatusWaiting:
		return t.PendingQuestion != nil && t.PendingQuestion.Kind == protocol.QuestionPermission
	}
	return false
}

// start hands the prompt to familiar: a new task, an answer to the question
// the turn ended with, or a follow-up message.
func (s *session) start(ctx context.Context, taskID string, asked *protocol.Question, text string) error {
	if taskID == "" {
		return s.create(ctx, text)
	}
	t, err := s.f.TaskGet(ctx, &protocol.TaskGetParams{ID: taskID})
	if err != nil {
		return errorOf(err, "", s.a.opts.Logger)
	}
	if t.Status == protocol.StatusMerged {
		// A merged task takes no more messages: the session goes on with a
		// new task, started from the base its work was merged into.
		base := "its base branch"
		if t.Worktree != nil && t.Worktree.BaseRef != "" {
			base = t.Worktree.BaseRef
		}
		s.note(fmt.Sprintf("The last task was merged into %s, so this starts a new task from there, in this session.\n\n", base))
		return s.create(ctx, text)
	}
	if q := t.PendingQuestion; q != nil && (q.Kind == protocol.QuestionQuestion || (asked != nil && asked.ID == q.ID)) {
		p := &protocol.TaskRespondParams{ID: taskID, QuestionID: q.ID}
		if opt := matchOption(q, text); opt != "" {
			p.OptionID = opt
		} else {
			p.Text = text
		}
		if _, err := s.f.TaskRespond(ctx, p); err != nil {
			return errorOf(err, "", s.a.opts.Logger)
		}
		return nil
	}
	// A paused task (session/close, or session/cancel on an older
	// familiar) goes on with the message: task/send continues it.
	if _, err := s.f.TaskSend(ctx, &protocol.TaskSendParams{ID: taskID, Text: text}); err != nil {
		return errorOf(err, "", s.a.opts.Logger)
	}
	return nil
}

// create starts the session's task with the prompt.
func (s *session) create(ctx context.Context, text string) error {
	title := text
	if i := strings.IndexByte(title, '\n'); i >= 0 {
		title = title[:i]
	}
	if len([]rune(title)) > 80 {
		title = string([]rune(title)[:80]) + "…"
	}
	p := s.createParams(title, text)
	p.Prepared = s.takePrepared(ctx)
	t, err := s.f.TaskCreate(ctx, p)
	if err != nil {
		return errorOf(err, "", s.a.opts.Logger)
	}
	s.mu.Lock()
	s.worktree = ""
	s.firstOf = t.ID
	s.mu.Unlock()
	s.follow(t.ID)
	if err := s.a.rememberTask(s.f.root, s.id, t.ID); err != nil {
		s.a.opts.Logger.Warn("session map", "err", err)
	}
	s.observe(*t)
	return nil
}

// createParams are task/create's params for the session's next task, as
// its options stand.
func (s *session) createParams(title, text string) *protocol.TaskCreateParams {
	s.mu.Lock()
	mode, model, think, elevated, verbose, skills := s.mode, s.model, s.think, s.elevated, s.verbose, s.skills
	s.mu.Unlock()
	p := &protocol.TaskCreateParams{Title: title, Description: text, Mode: protocol.Mode(mode), McpServers: s.mcp,
		Driver: protocol.Driver(s.a.opts.Driver), WarmAgentSec: &acpWarmSec, Skills: s.taskSkills(skills)}
	if think || elevated || verbose {
		p.Directives = &protocol.Directives{Think: think, Elevated: elevated, Verbose: verbose}
	}
	if model != modelDefault {
		p.Model = model
	}
	return p
}

// prepare asks familiar to start the session's first agent now, in its
// worktree, so that the first prompt finds claude up (issue 40). familiar
// may decline (no free slot); the first prompt then starts it as before.
// It runs beside session/new's answer, which does not wait for it.
func (s *session) prepare(ctx context.Context, done chan struct{}) {
	defer close(done)
	r, err := s.f.TaskPrepare(ctx, &protocol.TaskPrepareParams{TaskCreateParams: *s.createParams("", "")})
	switch {
	case rpcclient.IsCode(err, protocol.CodeMethodNotFound):
		return // an older familiar
	case err != nil:
		s.a.opts.Logger.Warn("task/prepare", "err", err)
		return
	case r.ID == "":
		s.a.opts.Logger.Info("no agent prepared", "why", r.Reason)
		return
	}
	s.mu.Lock()
	s.prepared = r.ID
	s.mu.Unlock()
}

// takePrepared is the prepared agent's id for the first task (waiting for
// task/prepare's answer if it is on its way), and the session's no longer.
func (s *session) takePrepared(ctx context.Context) string {
	s.mu.Lock()
	preparing := s.preparing
	s.mu.Unlock()
	if preparing == nil {
		return ""
	}
	select {
	case <-preparing:
	case <-ctx.Done():
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.prepared
	s.prepared = ""
	return id
}

// reprepare follows an option changed before the first prompt (mode,
// model, a directive, skills: each shapes claude's start): the claude
// prepared with the old ones goes, and one with the new ones is asked for,
// so that the first prompt still finds its claude up.
func (s *session) reprepare() {
	s.mu.Lock()
	old := s.preparing
	if old == nil || s.taskID != "" {
		s.mu.Unlock()
		return
	}
	next := make(chan struct{})
	s.preparing = next
	s.mu.Unlock()
	s.a.bg.Add(1)
	go func() {
		defer s.a.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		<-old
		s.mu.Lock()
		id := s.prepared
		s.prepared = ""
		s.mu.Unlock()
		if id != "" {
			if err := s.f.TaskRelease(ctx, &protocol.TaskReleaseParams{ID: id}); err != nil {
				s.a.opts.Logger.Warn("task/release", "err", err)
			}
		}
		s.prepare(ctx, next)
	}()
}

// releasePrepared lets the agent prepared for the session go, if no task
// took it: the session closed, or its editor went.
func (s *session) releasePrepared(ctx context.Context) {
	if id := s.takePrepared(ctx); id != "" {
		if err := s.f.TaskRelease(ctx, &protocol.TaskReleaseParams{ID: id}); err != nil {
			s.a.opts.Logger.Warn("task/release", "err", err)
		}
	}
}

// matchOption reads a prompt as an option of the question: its number or
// its label.
func matchOption(q *protocol.Question, text string) string {
	text = strings.TrimSpace(text)
	for i, o := range q.Options {
		if text == fmt.Sprint(i+1) || text == o.ID || strings.EqualFold(text, o.Label) {
			return o.ID
		}
	}
	return ""
}

// cancel ends the turn in flight: the agent is interrupted, the task stays.
func (s *session) cancel(ctx context.Context) {
	s.mu.Lock()
	watch := s.planWatch
	s.mu.Unlock()
	if watch != nil {
		watch()
		return
	}
	s.stopTurn(ctx, false)
}

// abandonTurn marks the turn in flight cancelled and withdraws its
// questions without interrupting the agent: the session is closing, and
// pausing the task stops it.
func (s *session) abandonTurn() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.turn; t != nil {
		if !t.cancelled && t.waiting {
			close(t.abort)
		}
		t.cancelled = true
	}
	for _, c := range s.permissions {
		c()
	}
}

// stopTurn cancels the turn in flight, if any; with always, the agent is
// interrupted even when no prompt waits (a permission answered after a
// session/load, while the task goes on).
func (s *session) stopTurn(ctx context.Context, always bool) {
	s.mu.Lock()
	t, taskID := s.turn, s.taskID
	waiting := false
	if t != nil {
		if !t.cancelled && t.waiting {
			close(t.abort)
		}
		waiting = t.waiting
		t.cancelled = true
	}
	for _, c := range s.permissions {
		c()
	}
	s.mu.Unlock()
	if waiting {
		// Its prompt was not sent: the turn at work is another client's.
		return
	}
	if (t == nil && !always) || taskID == "" {
		if t != nil {
			t.end(stopCancelled)
		}
		return
	}
	_, err := s.f.TaskInterrupt(ctx, &protocol.TaskInterruptParams{ID: taskID})
	if rpcclient.IsCode(err, protocol.CodeMethodNotFound) {
		// An older familiar: pausing stops the turn too, and the next
		// prompt resumes the task.
		_, err = s.f.TaskPause(ctx, &protocol.TaskPauseParams{ID: taskID})
	}
	if err != nil {
		s.a.opts.Logger.Warn("cancel", "task", taskID, "err", err)
		if t != nil {
			t.end(stopCancelled)
		}
	}
}

func (s *session) setMode(ctx context.Context, mode string) (any, error) {
	if err := s.setModeTo(ctx, mode, "modeId"); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// setModeTo switches the session (and its task) to mode; field names the
// param in errors. Both the mode and the config options are updated, for
// clients that show either.
func (s *session) setModeTo(ctx context.Context, mode, field string) error {
	ok := false
	for _, m := range protocol.Modes {
		if string(m) == mode {
			ok = true
		}
	}
	if !ok {
		return invalidParams(field, fmt.Sprintf("Unknown mode %q: executor, architect or auditor.", mode))
	}
	if taskID := s.task(); taskID != "" {
		if _, err := s.f.TaskSetMode(ctx, &protocol.TaskSetModeParams{ID: taskID, Mode: protocol.Mode(mode)}); err != nil {
			// A merged task takes no mode: the session's next task (after
			// /merge) starts in it.
			if t, gerr := s.f.TaskGet(ctx, &protocol.TaskGetParams{ID: taskID}); gerr != nil || t.Status != protocol.StatusMerged {
				return errorOf(err, "", s.a.opts.Logger)
			}
		}
	}
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
	s.reprepare()
	s.update(map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": mode})
	s.update(map[string]any{"sessionUpdate": "config_option_update", "configOptions": s.configOptions()})
	return nil
}

// onNotification handles familiar's notifications about the session's task,
// in the order familiar sent them.
func (s *session) onNotification(method string, raw json.RawMessage) {
	var h struct {
		Seq int64 `json:"seq"`
	}
	_ = json.Unmarshal(raw, &h)
	s.mu.Lock()
	if h.Seq != 0 && h.Seq <= s.floor {
		s.mu.Unlock()
		return // replayed from the store already
	}
	s.lastSeq = max(s.lastSeq, h.Seq)
	s.mu.Unlock()
	switch method {
	case protocol.NotifyTaskTranscript:
		var n protocol.TaskTranscriptNotification
		if json.Unmarshal(raw, &n) == nil {
			s.transcript(n.Entry, false)
		}
	case protocol.NotifyTaskQuestion:
		var n protocol.TaskQuestionNotification
		if json.Unmarshal(raw, &n) == nil {
			s.question(n.Question)
		}
	case protocol.NotifyTaskQuestionResolved:
		var n protocol.TaskQuestionResolvedNotification
		if json.Unmarshal(raw, &n) == nil {
			s.mu.Lock()
			if c := s.permissions[n.QuestionID]; c != nil {
				c()
			}
			s.mu.Unlock()
		}
	case protocol.NotifyTaskUpdated:
		var n protocol.TaskUpdatedNotification
		if json.Unmarshal(raw, &n) == nil {
			s.observe(n.Task)
		}
	case protocol.NotifyTaskCompleted:
		var n protocol.TaskCompletedNotification
		if json.Unmarshal(raw, &n) == nil {
			s.completed(n.Result)
		}
	case protocol.NotifyTaskHook:
		var n protocol.TaskHookNotification
		if json.Unmarshal(raw, &n) == nil {
			s.hook(n)
		}
	case protocol.NotifyServerMessage:
		var n protocol.ServerMessageNotification
		if json.Unmarshal(raw, &n) == nil {
			s.warn(n.Level, n.Text)
		}
	}
}

// observe ends the turn when the task stopped working.
func (s *session) observe(t protocol.Task) {
	s.sawTask(t)
	select {
	case s.changed <- struct{}{}:
	default:
	}
	s.mu.Lock()
	tu := s.turn
	if tu == nil || tu.waiting {
		s.mu.Unlock()
		return
	}
	switch t.Status {
	case protocol.StatusQueued, protocol.StatusStarting, protocol.StatusRunning:
		tu.sawWork = true
	}
	cancelled := tu.cancelled
	sawWork := tu.sawWork
	// claude retrying a failed API call: said as it happens, each attempt
	// once, as VS Code shows it ("model error 500, retrying (3 of 10)"),
	// not only when the task ends ten retries later.
	retry := ""
	if t.Status == protocol.StatusRunning && strings.Contains(t.ActivityDetail, "retrying (") && t.ActivityDetail != tu.retry {
		tu.retry, retry = t.ActivityDetail, t.ActivityDetail
	}
	s.mu.Unlock()
	if retry != "" {
		s.note("familiar: " + retry + "\n")
	}
	if !sawWork {
		return
	}
	switch t.Status {
	case protocol.StatusWaiting:
		q := t.PendingQuestion
		if q == nil || q.Kind == protocol.QuestionPermission {
			return
		}
		if cancelled {
			tu.end(stopCancelled)
			return
		}
		if q.Kind == protocol.QuestionQuestion {
			if !tu.textSeen {
				s.message(q.Text)
			}
			tu.end(stopEndTurn)
			return
		}
		// A choice: a form where the client has forms; otherwise (and for a
		// dialog) a message, answered by the next prompt.
		if q.Kind == protocol.QuestionChoice && s.elicit(*q) {
			return
		}
		s.mu.Lock()
		s.asked = q
		s.mu.Unlock()
		s.message(choiceText(*q))
		tu.end(stopEndTurn)
	case protocol.StatusPaused, protocol.StatusCancelled:
		tu.end(stopCancelled)
	case protocol.StatusBlocked:
		if cancelled {
			tu.end(stopCancelled)
			return
		}
		if t.Blocked != nil && t.Blocked.Reason == protocol.BlockedAuth {
			// ACP's auth_required: the client offers the login, which a
			// normal end of the turn never made it do.
			tu.fail(&rpcError{Code: codeAuthRequired, Message: s.authWords(t.Blocked.Detail)})
			return
		}
		if t.Blocked != nil {
			s.mu.Lock()
			said := tu.said.String()
			s.mu.Unlock()
			s.note(blockedWords(*t.Blocked, said))
		}
		tu.end(stopEndTurn)
	case protocol.StatusMerged:
		tu.end(stopEndTurn)
	}
}

// blockedWords is what the person reads when familiar stops a task: the
// reason and its detail, without the error claude's own message in the
// turn already said (said: the turn's agent text). An API that failed
// every time ended a turn with claude's "API Error: 500 …" and then the
// same error again in familiar's words (issue 37).
func blockedWords(b protocol.Blocked, said string) string {
	detail := strings.TrimSpace(b.Detail)
	if i := strings.LastIndex(detail, " (claude gave up after "); i > 0 {
		// "<claude's message> (claude gave up after 3 retries)".
		msg, rest := strings.TrimSpace(detail[:i]), strings.TrimSuffix(strings.TrimPrefix(detail[i:], " ("), ")")
		if strings.Contains(said, msg) {
			return fmt.Sprintf("familiar stopped this task (%s): %s, with the error above.", b.Reason, rest)
		}
	} else if detail != "" && strings.Contains(said, detail) {
		return fmt.Sprintf("familiar stopped this task (%s): the error above.", b.Reason)
	}
	return fmt.Sprintf("familiar stopped this task (%s): %s", b.Reason, detail)
}

func (s *session) completed(r protocol.TaskResult) {
	s.mu.Lock()
	tu := s.turn
	ours := tu != nil && !tu.waiting && tu.sawWork
	s.mu.Unlock()
	if !ours {
		// No turn, or the end of a turn from before this one worked:
		// another client's, which this prompt waited for.
		return
	}
	if !tu.textSeen && r.Summary != "" {
		s.message(r.Summary)
	}
	if tu.cancelled {
		tu.end(stopCancelled)
		return
	}
	tu.end(stopEndTurn)
}

func (s *session) message(text string) {
	s.mu.Lock()
	if s.turn != nil {
		s.turn.textSeen = true
		s.turn.said.WriteString(text)
	}
	s.mu.Unlock()
	s.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": textContent(text)})
}

// transcript sends one transcript entry as a session update. replay is set
// for session/load, where prompts are sent back as user messages.
func (s *session) transcript(e protocol.TranscriptEntry, replay bool) {
	switch e.Kind {
	case "prompt":
		if replay || !s.ownPrompt(e.Text) {
			// Replayed, or another client's prompt on this session: the
			// person's message, as that client showed it.
			s.update(map[string]any{"sessionUpdate": "user_message_chunk", "content": textContent(e.Text)})
		}
	case "text":
		s.message(e.Text)
	case "thinking":
		s.update(map[string]any{"sessionUpdate": "agent_thought_chunk", "content": textContent(e.Text)})
	case "tool_call":
		if e.ToolCall != nil {
			s.toolCall(e.ToolCall)
		}
	case "plan":
		entries := []any{}
		for _, p := range e.Plan {
			entries = append(entries, map[string]any{"content": p.Content, "priority": "medium", "status": p.Status})
		}
		s.update(map[string]any{"sessionUpdate": "plan", "entries": entries})
	case "usage":
		if u := e.Usage; u != nil {
			used := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens + u.OutputTokens
			cost := u.CostUSD
			if u.Total != nil {
				cost = u.Total.CostUSD
			}
			s.update(map[string]any{"sessionUpdate": "usage_update", "used": used, "size": contextWindow,
				"cost": map[string]any{"amount": cost, "currency": "USD"}})
		}
	}
}

// ownPrompt reports whether a live prompt entry is one this session sent
// (or the first prompt of a task it created), and forgets it.
func (s *session) ownPrompt(text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.firstOf != "" && s.firstOf == s.taskID {
		s.firstOf = ""
		s.own = s.own[min(1, len(s.own)):]
		return true
	}
	for i, o := range s.own {
		if strings.Contains(text, o) {
			s.own = append(s.own[:i:i], s.own[i+1:]...)
			return true
		}
	}
	return false
}

// settledFrom are the calls of steps that had ended: a resumed session's
// task's, as task/get gave them.
func settledFrom(steps []protocol.ToolCall) map[string]string {
	settled := map[string]string{}
	for _, tc := range steps {
		if tc.Status == "completed" || tc.Status == "failed" {
			settled[tc.ID] = tc.Status
		}
	}
	return settled
}

// settledBefore says that tc is news from before the session was resumed:
// its call had ended so already.
func settledBefore(settled map[string]string, tc protocol.ToolCall) bool {
	status, ok := settled[tc.ID]
	return ok && status == tc.Status
}

// contextWindow is the context size usage_update reports against.
const contextWindow = 200000

// toolCall sends a tool call: the first time in full, later as updates.
func (s *session) toolCall(tc *protocol.ToolCall) {
	s.mu.Lock()
	if settledBefore(s.settled, *tc) {
		s.mu.Unlock()
		return
	}
	seen := s.announced[tc.ID]
	s.announced[tc.ID] = true
	s.mu.Unlock()
	kind := tc.Kind
	if !toolKinds[kind] {
		kind = "other"
	}
	var content []any
	for _, d := range tc.Diffs {
		dc := map[string]any{"type": "diff", "path": d.Path, "newText": d.NewText}
		if d.OldText != "" {
			dc["oldText"] = d.OldText
		}
		content = append(content, dc)
	}
	if tc.Result != "" && (tc.Status == "completed" || tc.Status == "failed") {
		content = append(content, map[string]any{"type": "content", "content": textContent(tc.Result)})
	}
	u := map[string]any{"toolCallId": tc.ID, "status": toolStatus(tc.Status)}
	if !seen {
		s.mu.Lock()
		wt := s.worktree
		s.mu.Unlock()
		u["sessionUpdate"] = "tool_call"
		u["title"] = relTitle(tc.Title, wt)
		u["kind"] = kind
	} else {
		u["sessionUpdate"] = "tool_call_update"
	}
	if len(tc.Input) > 0 && !seen {
		u["rawInput"] = tc.Input
	}
	var locs []any
	for _, f := range tc.Files {
		locs = append(locs, map[string]any{"path": f})
	}
	if len(locs) > 0 && !seen {
		u["locations"] = locs
	}
	if len(content) > 0 {
		u["content"] = content
	}
	s.update(u)
}

// question brings a permission question to the client.
func (s *session) question(q protocol.Question) {
	if q.Kind != protocol.QuestionPermission {
		return // choices and prose questions end the turn (observe)
	}
	s.mu.Lock()
	taskID, wt := s.taskID, s.worktree
	s.mu.Unlock()
	s.askPermission(taskID, wt, q)
}

// askPermission puts a permission question of task taskID (the session's,
// or a step of its plan), whose worktree is wt, to the person.
func (s *session) askPermission(taskID, wt string, q protocol.Question) {
	if q.Kind != protocol.QuestionPermission {
		return
	}
	id := q.ToolUseID
	if id == "" {
		id = "question-" + q.ID
	}
	s.mu.Lock()
	seen := s.announced[id]
	s.mu.Unlock()
	title := relTitle(titleOf(q), wt)
	diffs := editDiffs(q, wt)
	files := questionFiles(q, wt)
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	if s.permissions == nil {
		s.permissions = map[string]context.CancelFunc{}
	}
	s.permissions[q.ID] = cancel
	s.mu.Unlock()
	s.a.bg.Add(1)
	go func() {
		defer s.a.bg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.permissions, q.ID)
			s.mu.Unlock()
			cancel()
		}()
		// familiar publishes a question its policy settled too (elevated,
		// an allow rule, a grant), with its resolution right after: only
		// one the task still waits on is put to the person. The task's
		// view is settled before familiar publishes the question.
		t, err := s.f.TaskGet(ctx, &protocol.TaskGetParams{ID: taskID})
		if ctx.Err() != nil || (err == nil && (t.PendingQuestion == nil || t.PendingQuestion.ID != q.ID)) {
			return // settled meanwhile (its resolution cancels ctx), or never pending
		}
		if !seen {
			// The session file can lag the hook: announce the call from the question.
			s.toolCall(&protocol.ToolCall{ID: id, Name: q.Tool, Kind: kindOf(q.Tool), Title: title, Input: q.Input, Status: "pending", Files: files})
		}
		tc := map[string]any{"toolCallId": id, "title": title, "kind": kindOf(q.Tool), "status": "pending"}
		if len(q.Input) > 0 {
			tc["rawInput"] = q.Input
		}
		if len(files) > 0 {
			// The editor can open the file the permission is about (issue 37).
			var locs []any
			for _, f := range files {
				locs = append(locs, map[string]any{"path": f})
			}
			tc["locations"] = locs
		}
		if len(diffs) > 0 {
			tc["content"] = diffs
		}
		var res struct {
			Outcome struct {
				Outcome  string `json:"outcome"`
				OptionID string `json:"optionId"`
			} `json:"outcome"`
		}
		err = s.a.c.call(ctx, "session/request_permission", map[string]any{
			"sessionId": s.id, "toolCall": tc, "options": permissionOptions(q),
		}, &res)
		if err != nil {
			return // settled elsewhere, cancelled, or the client is gone
		}
		answer := &protocol.TaskRespondParams{ID: taskID, QuestionID: q.ID, OptionID: protocol.OptionDeny}
		stop := false
		switch opt := res.Outcome.OptionID; {
		case res.Outcome.Outcome == "cancelled":
		case opt == optionRejectAndStop:
			stop = true
		case opt == optionAllowOnce:
			answer.OptionID = protocol.OptionAllow
		case hasOption(q, opt) && opt != protocol.OptionDeny:
			answer.OptionID = opt // an allow-always option, as familiar named it
		}
		if stop {
			// The turn ends first, so the model never reads the refusal and
			// goes on; the question then settles with the turn, or by the
			// refusal below if it is still open.
			s.note("You rejected " + title + ": the turn is stopped.\n")
			s.stopTurn(context.Background(), true)
		}
		if _, err := s.f.TaskRespond(context.Background(), answer); err != nil && !stop {
			s.a.opts.Logger.Warn("permission answer not taken", "task", taskID, "err", err)
		}
	}()
}

// ACP permission option ids of familiar's own (the others are familiar's
// option ids as they are).
const (
	optionAllowOnce     = "allow_once"
	optionRejectOnce    = "reject_once"
	optionRejectAndStop = "reject_always"
	// optionAllowAlwaysExact is familiar's narrower allow-always option
	// (PROTOCOL.md, "rule").
	optionAllowAlwaysExact = "allow_always_exact"
)

// permissionOptions are the ACP options for a permission question: allow
// once, each allow-always option familiar offers named by the rule it
// grants, reject, and reject that ends the turn.
func permissionOptions(q protocol.Question) []any {
	out := []any{map[string]any{"optionId": optionAllowOnce, "name": "Allow once", "kind": "allow_once"}}
	for _, o := range q.Options {
		if o.ID != protocol.OptionAllowAlways && o.ID != optionAllowAlwaysExact {
			continue
		}
		name := o.Label
		if o.Rule != "" {
			name = "Allow always in this task: " + o.Rule
		}
		out = append(out, map[string]any{"optionId": o.ID, "name": name, "kind": "allow_always"})
	}
	return append(out,
		map[string]any{"optionId": optionRejectOnce, "name": "Reject", "kind": "reject_once"},
		map[string]any{"optionId": optionRejectAndStop, "name": "Reject, and stop this turn", "kind": "reject_always"})
}

func hasOption(q protocol.Question, id string) bool {
	for _, o := range q.Options {
		if o.ID == id {
			return true
		}
	}
	return false
}

// relTitle shows paths in the task's worktree relative to it.
func relTitle(title, worktree string) string {
	if worktree == "" {
		return title
	}
	return strings.ReplaceAll(title, strings.TrimSuffix(worktree, "/")+"/", "")
}

// editDiffs is a file edit's change as ACP diff content, from the
// question's input as familiar sent it (masked): Write's new text, Edit's
// and MultiEdit's replaced and replacing strings. The file itself is not
// read here: familiar masks what it sends, and this package holds no masker.
// Other tools have none.
func editDiffs(q protocol.Question, worktree string) []any {
	type edit struct {
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	}
	var in struct {
		FilePath string  `json:"file_path"`
		Content  *string `json:"content"`
		edit
		Edits []edit `json:"edits"`
	}
	if q.Truncated || json.Unmarshal(q.Input, &in) != nil || in.FilePath == "" {
		return nil
	}
	path := in.FilePath
	if !filepath.IsAbs(path) {
		if worktree == "" {
			return nil
		}
		path = filepath.Join(worktree, path)
	}
	var out []any
	switch q.Tool {
	case "Write":
		if in.Content != nil {
			out = append(out, map[string]any{"type": "diff", "path": path, "newText": *in.Content})
		}
	case "Edit":
		out = append(out, map[string]any{"type": "diff", "path": path, "oldText": in.OldString, "newText": in.NewString})
	case "MultiEdit":
		for _, e := range in.Edits {
			out = append(out, map[string]any{"type": "diff", "path": path, "oldText": e.OldString, "newText": e.NewString})
		}
	}
	return out
}

func kindOf(tool string) string {
	switch tool {
	case "Bash":
		return "execute"
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return "edit"
	case "Read":
		return "read"
	case "Glob", "Grep":
		return "search"
	case "WebFetch", "WebSearch":
		return "fetch"
	}
	return "other"
}

func titleOf(q protocol.Question) string {
	var in struct {
		Command  string `json:"command"`
		FilePath string `json:"file_path"`
	}
	_ = json.Unmarshal(q.Input, &in)
	switch {
	case in.Command != "":
		return in.Command
	case in.FilePath != "":
		return q.Tool + " " + in.FilePath
	case q.Tool != "":
		return q.Tool
	}
	return q.Text
}

// replay sends a task's transcript from the store (session/load), then
// follows the task.
func (s *session) replay(ctx context.Context, t *protocol.Task) error {
	return s.replayFrom(ctx, t, 0)
}

// replayFrom sends the task's transcript entries after seq since (all of
// it from 0), then follows the task: its notifications that were replayed
// (an editor that loads while a turn runs gets them from the store and
// live) are not sent again.
func (s *session) replayFrom(ctx context.Context, t *protocol.Task, since int64) error {
	taskID := t.ID
	first := since == 0
	var replayed int64
	for {
		res, err := s.f.TaskEvents(ctx, &protocol.TaskEventsParams{ID: taskID, SinceSeq: since, Limit: 1000})
		if err != nil {
			return fmt.Errorf("replay task %s: %w", taskID, err)
		}
		for _, ev := range res.Events {
			replayed = max(replayed, ev.Seq)
			if ev.Method != protocol.NotifyTaskTranscript {
				continue
			}
			var n protocol.TaskTranscriptNotification
			if json.Unmarshal(ev.Params, &n) != nil {
				continue
			}
			if n.Entry.Kind == "prompt" && first {
				// The first prompt claude got is familiar's task template
				// around the person's words: they see their own words.
				first = false
				if t.Description != "" {
					n.Entry.Text = t.Description
				}
			}
			s.transcript(n.Entry, true)
		}
		if len(res.Events) == 0 || res.LastSeq <= since {
			break
		}
		since = res.LastSeq
	}
	s.mu.Lock()
	s.floor = max(s.floor, replayed)
	s.lastSeq = max(s.lastSeq, replayed)
	s.mu.Unlock()
	s.follow(taskID)
	return nil
}

// elicit asks a choice as an elicitation form, once per question, and
// reports whether it did (the client takes forms). A declined or failed
// form falls back to the message.
func (s *session) elicit(q protocol.Question) bool {
	s.a.mu.Lock()
	can := s.a.elicitation
	s.a.mu.Unlock()
	if !can || len(q.Options) == 0 {
		return false
	}
	s.mu.Lock()
	if s.permissions == nil {
		s.permissions = map[string]context.CancelFunc{}
	}
	if _, asked := s.permissions[q.ID]; asked {
		s.mu.Unlock()
		return true
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.permissions[q.ID] = cancel
	taskID := s.taskID
	s.mu.Unlock()
	s.a.bg.Add(1)
	go func() {
		defer s.a.bg.Done()
		defer cancel()
		var opts []any
		for _, o := range q.Options {
			opts = append(opts, map[string]any{"const": o.ID, "title": o.Label})
		}
		var res struct {
			Action  string `json:"action"`
			Content struct {
				Answer string `json:"answer"`
			} `json:"content"`
		}
		err := s.a.c.call(ctx, "elicitation/create", map[string]any{
			"sessionId": s.id, "mode": "form", "message": q.Text,
			"requestedSchema": map[string]any{"type": "object", "required": []string{"answer"},
				"properties": map[string]any{"answer": map[string]any{"type": "string", "title": q.Text, "oneOf": opts}}},
		}, &res)
		if err == nil && res.Action == "accept" && res.Content.Answer != "" {
			if _, err := s.f.TaskRespond(context.Background(),
				&protocol.TaskRespondParams{ID: taskID, QuestionID: q.ID, OptionID: res.Content.Answer}); err == nil {
				return
			}
		}
		if ctx.Err() != nil {
			return // settled elsewhere
		}
		// Declined or not understood: ask in words, answered by the next prompt.
		s.mu.Lock()
		tu := s.turn
		s.asked = &q
		s.mu.Unlock()
		s.message(choiceText(q))
		if tu != nil {
			tu.end(stopEndTurn)
		}
	}()
	return true
}

func choiceText(q protocol.Question) string {
	var b strings.Builder
	b.WriteString(q.Text)
	for i, o := range q.Options {
		fmt.Fprintf(&b, "\n%d. %s", i+1, o.Label)
	}
	b.WriteString("\n\nAnswer with a number or your own words.")
	return b.String()
}

// acpWarmSec keeps an ACP session's claude after each prompt's turn: the
// editor shows the conversation and its next prompt is a follow-up, which
// a warm claude takes at once (a new one resuming the session costs
// 1.2–1.6 s before the first text; issue 29). It holds a slot and gives
// way to queued tasks like any warm agent.
var acpWarmSec = 600

// questionFiles are the files a permission question is about (an edit's
// file_path, a notebook, a search's path), absolute: relative ones are in
// the worktree.
func questionFiles(q protocol.Question, worktree string) []string {
	var in map[string]json.RawMessage
	if json.Unmarshal(q.Input, &in) != nil {
		return nil
	}
	var out []string
	for _, key := range []string{"file_path", "notebook_path", "path"} {
		var p string
		if json.Unmarshal(in[key], &p) != nil || p == "" || strings.IndexByte(p, 0) >= 0 {
			continue
		}
		if !filepath.IsAbs(p) {
			if worktree == "" {
				continue
			}
			p = filepath.Join(worktree, p)
		}
		out = append(out, filepath.Clean(p))
		break
	}
	return out
}

// authWords says why claude's login was refused and the fix that fits how
// it logs in: a refused key is to be replaced, not set again; a missing
// login is made with claude auth login.
func (s *session) authWords(detail string) string {
	var method, source string
	if au := s.f.claudeAuth; au != nil {
		method, source = au.Method, au.Source
	}
	var fix string
	switch method {
	case "api_key", "auth_token":
		fix = fmt.Sprintf("the API refused the key in %s: replace it with a valid one in the environment the editor starts familiar acp in, or unset it to use your claude.ai login (`claude auth login`)", source)
	case "api_key_helper":
		fix = fmt.Sprintf("the API refused the key from the apiKeyHelper in %s: fix the helper", source)
	case "oauth_token":
		fix = "the API refused CLAUDE_CODE_OAUTH_TOKEN: make a new one with `claude setup-token`, or unset it to use your claude.ai login"
	case "bedrock", "vertex", "foundry":
		fix = fmt.Sprintf("the cloud provider (%s) refused claude's credentials: check them where the editor starts familiar acp", method)
	case "claude_login":
		fix = "your claude.ai login was refused or has expired: run `claude auth login` in a terminal (or /login inside claude)"
	default:
		fix = "claude is not logged in: run `claude auth login` in a terminal, or set ANTHROPIC_API_KEY where the editor starts familiar acp"
	}
	// familiar's detail ends with a generic fix; the reason is before it.
	why, _, _ := strings.Cut(detail, "; run `claude auth login`")
	why = strings.TrimSpace(why)
	if why == "" {
		return "familiar stopped this task: " + fix + "; then prompt again."
	}
	return "familiar stopped this task: " + why + ". Fix: " + fix + "; then prompt again."
}
