package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// slashCommand splits "/merge squash" into ("merge", "squash").
func slashCommand(text string) (cmd, arg string, ok bool) {
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	f := strings.Fields(text[1:])
	if len(f) == 0 {
		return "", "", false
	}
	if f[0] == "plan" {
		// A goal keeps its lines.
		return "plan", strings.TrimSpace(strings.TrimPrefix(text, "/plan")), true
	}
	switch f[0] {
	case "diff", "merge", "undo", "retry", "archive", "grants", "revoke", "plan":
		return f[0], strings.Join(f[1:], " "), true
	}
	return "", "", false
}

// command runs a slash command as a turn of its own.
func (s *session) command(ctx context.Context, cmd, arg string) (any, error) {
	var res any
	var err error
	if cmd == "plan" {
		// A plan is the session's own, with or without a task.
		res, err = s.planCommand(ctx, arg)
	} else {
		res, err = s.run(ctx, cmd, arg)
	}
	if err != nil {
		s.message(fmt.Sprintf("/%s: %v", cmd, err))
		return map[string]any{"stopReason": stopEndTurn}, nil
	}
	switch r := res.(type) {
	case *diffResult:
		s.showDiff(&r.TaskDiffResult, r.worktree)
		if words := forecastWords(r.conflicts, r.overlaps); words != "" {
			s.message(words)
		}
	case *protocol.Task:
		s.message(commandDone(cmd, r, time.Now()))
	case *grantsResult:
		s.message(grantsText(r.Grants))
	case string:
		s.message(r)
	case cancelledTurn:
		s.note(string(r) + "\n")
		return map[string]any{"stopReason": stopCancelled}, nil
	}
	return map[string]any{"stopReason": stopEndTurn}, nil
}

// commandDone says in words what a slash command did; now is for the
// undo's time left.
func commandDone(cmd string, t *protocol.Task, now time.Time) string {
	base := "the base branch"
	if t.Worktree != nil && t.Worktree.BaseRef != "" {
		base = t.Worktree.BaseRef
	}
	switch {
	case cmd == "merge" && t.Status == protocol.StatusMerged:
		return fmt.Sprintf("Merged into %s. Your next prompt starts a new task from there.%s", base, undoLeft(t, now))
	case cmd == "archive":
		return "Archived: the task leaves familiar's task lists, here and in other editors; its branch and worktree stay. A prompt here takes it out of the archive."
	case cmd == "undo":
		// familiar's warning of what an undo leaves (a server/message to
		// every client) is said here, in its place, for this session alone
		// (globalMessage leaves it out).
		return fmt.Sprintf("The merge into %s is undone; the task is %s. %s The undone commit is kept under refs/familiar/undo/.", base, statusWords(t.Status), undoLeaves)
	case cmd == "retry":
		return fmt.Sprintf("Started attempt %d; the task is %s.", t.Attempt, statusWords(t.Status))
	}
	return fmt.Sprintf("/%s done; the task is %s.", cmd, statusWords(t.Status))
}

// undoLeaves is what an undo cannot take back (familiar's words,
// orchestrator notUndoable).
const undoLeaves = "familiar cannot undo pushes, nor changes made outside the worktree (other files, services, databases)."

// undoWarning starts familiar's server/message after a task/undo.
const undoWarning = "Undone, but "

// undoLeft says how long /undo can take a merge back ("" when it cannot):
// familiar's undoableUntil, in minutes and seconds from now.
func undoLeft(t *protocol.Task, now time.Time) string {
	if t.UndoableUntil.IsZero() || !t.UndoableUntil.After(now) {
		return ""
	}
	left := t.UndoableUntil.Sub(now).Round(time.Second)
	words := fmt.Sprintf("%d s", int(left.Seconds()))
	if left >= time.Minute {
		words = fmt.Sprintf("%d min %d s", int(left.Minutes()), int(left.Seconds())%60)
	}
	return fmt.Sprintf(" /undo takes it back for %s more (until %s UTC).", words, t.UndoableUntil.UTC().Format("15:04:05"))
}

// grantsResult is /grants' (and _familiar/grants') answer: the grants
// that hold for the session's task, in /revoke's numbering.
type grantsResult struct {
	Grants []protocol.Grant `json:"grants"`
}

// grantsText lists the allow-always grants that hold for the session's
// task, numbered for /revoke.
func grantsText(grants []protocol.Grant) string {
	if len(grants) == 0 {
		return "No allow-always grants hold for this task: every call the policy does not allow is asked."
	}
	var b strings.Builder
	b.WriteString("Allow-always grants for this task (a deny rule still wins):")
	for i, g := range grants {
		fmt.Fprintf(&b, "\n%d. %s — %s", i+1, g.Rule, scopeWords(g.Scope))
	}
	b.WriteString("\n\nRevoke one with /revoke and its number or rule.")
	return b.String()
}

func scopeWords(s protocol.GrantScope) string {
	switch s {
	case protocol.GrantTask:
		return "this task"
	case protocol.GrantRepository:
		return "this repository (.familiar/policy.yaml)"
	case protocol.GrantUser:
		return "all your repositories (your familiar/policy.yaml)"
	}
	return string(s)
}

// pickGrant is the grant /revoke's argument names: its number in the
// list /grants shows, or its rule (the narrowest scope first).
func pickGrant(grants []protocol.Grant, arg string) (protocol.Grant, error) {
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return protocol.Grant{}, errors.New("say which grant: /revoke and its number in /grants, or its rule")
	}
	if n, err := strconv.Atoi(arg); err == nil {
		if n < 1 || n > len(grants) {
			return protocol.Grant{}, fmt.Errorf("there is no grant %d; /grants lists %d", n, len(grants))
		}
		return grants[n-1], nil
	}
	for _, g := range grants {
		if g.Rule == arg {
			return g, nil
		}
	}
	return protocol.Grant{}, fmt.Errorf("no grant of the rule %s holds for this task; /grants lists them", arg)
}

// taskGrants are the grants that hold for task id: its own, the
// repository's and the user's.
func (s *session) taskGrants(ctx context.Context, id string) ([]protocol.Grant, error) {
	res, err := s.f.PolicyList(ctx, &protocol.PolicyListParams{TaskID: id})
	if err != nil {
		return nil, err
	}
	out := []protocol.Grant{}
	for _, g := range res.Grants {
		if g.Scope != protocol.GrantTask || g.TaskID == id {
			out = append(out, g)
		}
	}
	return out, nil
}

// diffResult is _familiar/diff's answer: task/diff's (with each file's
// texts) and the same changes as ACP tool call content.
type diffResult struct {
	protocol.TaskDiffResult
	Content  []any `json:"content"`
	worktree string
	// conflicts and overlaps are the task's conflict forecast, said after
	// the diff and sent in _familiar/diff's answer.
	conflicts, overlaps []protocol.TaskConflict
}

func (r diffResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.TaskDiffResult)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["content"] = r.Content
	if len(r.conflicts) > 0 {
		m["conflicts"] = r.conflicts
	}
	if len(r.overlaps) > 0 {
		m["overlaps"] = r.overlaps
	}
	return json.Marshal(m)
}

// forecastWords says a task's conflict forecast in a sentence or two; ""
// when there is nothing to say.
func forecastWords(conflicts, overlaps []protocol.TaskConflict) string {
	list := func(l []protocol.TaskConflict) string {
		var parts []string
		for _, c := range l {
			with := "the base branch"
			if c.With != "base" {
				with = "task " + c.With
			}
			parts = append(parts, fmt.Sprintf("with %s in %s", with, strings.Join(c.Files, ", ")))
		}
		return strings.Join(parts, "; ")
	}
	var out []string
	if len(conflicts) > 0 {
		out = append(out, "This task's changes would conflict "+list(conflicts)+".")
	}
	if len(overlaps) > 0 {
		out = append(out, "They overlap (and still merge cleanly) "+list(overlaps)+".")
	}
	return strings.Join(out, " ")
}

// extension runs _familiar/<cmd> and returns familiar's result as is.
func (s *session) extension(ctx context.Context, cmd string) (any, error) {
	res, err := s.run(ctx, cmd, "")
	if err != nil {
		return nil, errorOf(err, "", s.a.opts.Logger)
	}
	return res, nil
}

func (s *session) run(ctx context.Context, cmd, arg string) (any, error) {
	taskID := s.task()
	if taskID == "" {
		return nil, errNoTask
	}
	switch cmd {
	case "diff":
		t, err := s.f.TaskGet(ctx, &protocol.TaskGetParams{ID: taskID})
		if err != nil {
			return nil, err
		}
		rp, err := s.f.TaskDiff(ctx, &protocol.TaskDiffParams{ID: taskID, Texts: true})
		if err != nil {
			return nil, err
		}
		r := *rp
		wt := s.cwd
		if t.Worktree != nil {
			wt = t.Worktree.Path
		}
		return &diffResult{TaskDiffResult: r, Content: diffContent(&r, wt), worktree: wt, conflicts: t.Conflicts, overlaps: t.Overlaps}, nil
	case "merge":
		t, err := s.f.TaskMerge(ctx, &protocol.TaskMergeParams{ID: taskID, Strategy: protocol.MergeStrategy(arg)})
		if err != nil {
			return nil, err
		}
		return t, nil
	case "undo":
		t, err := s.f.TaskUndo(ctx, &protocol.TaskUndoParams{ID: taskID})
		if err != nil {
			return nil, err
		}
		return t, nil
	case "archive":
		if _, err := s.f.TaskArchive(ctx, &protocol.TaskArchiveParams{IDs: []string{taskID}}); err != nil {
			return nil, err
		}
		return s.f.TaskGet(ctx, &protocol.TaskGetParams{ID: taskID})
	case "grants":
		grants, err := s.taskGrants(ctx, taskID)
		if err != nil {
			return nil, err
		}
		return &grantsResult{Grants: grants}, nil
	case "revoke":
		grants, err := s.taskGrants(ctx, taskID)
		if err != nil {
			return nil, err
		}
		g, err := pickGrant(grants, arg)
		if err != nil {
			return nil, err
		}
		res, err := s.f.PolicyRevoke(ctx, &protocol.PolicyRevokeParams{Rule: g.Rule, Scope: g.Scope, TaskID: g.TaskID})
		if err != nil {
			return nil, err
		}
		if !res.Revoked {
			return fmt.Sprintf("%s (%s) was no longer granted.", g.Rule, scopeWords(g.Scope)), nil
		}
		// Only a rule claude's matcher reads as familiar's was handed to
		// claude (a prefix or a directory never was), and only the claude
		// that asked keeps it, while it runs: familiar says so only then.
		if res.HeldByClaude {
			return fmt.Sprintf("Revoked %s (%s). The claude working on this task now was given it and keeps it until it stops; familiar asks for such calls again after that.", g.Rule, scopeWords(g.Scope)), nil
		}
		return fmt.Sprintf("Revoked %s (%s): familiar asks for such calls again, from the next call on.", g.Rule, scopeWords(g.Scope)), nil
	case "retry":
		t, err := s.f.TaskRetry(ctx, &protocol.TaskRetryParams{ID: taskID})
		if err != nil {
			return nil, err
		}
		// The session goes on as the new attempt.
		s.follow(t.ID)
		if err := s.a.rememberTask(s.f.root, s.id, t.ID); err != nil {
			s.a.opts.Logger.Warn("session map", "err", err)
		}
		return t, nil
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("familiar acp has no command %q: diff, merge, undo, retry, archive, grants or revoke.", cmd)}
}

// diffContent is a task's changes as ACP tool call content: a diff item
// per changed text file (its path absolute, in the task's worktree), then a
// line for each file shown without its text (binary, too large, not a
// regular file).
func diffContent(r *protocol.TaskDiffResult, worktree string) []any {
	content := []any{}
	var without []string
	for _, f := range r.Files {
		if f.NewText == nil || f.OldText == nil {
			without = append(without, fmt.Sprintf("%s %s (+%d -%d)", f.Status, f.Path, f.Additions, f.Deletions))
			continue
		}
		d := map[string]any{"type": "diff", "path": filepath.Join(worktree, filepath.FromSlash(f.Path)), "newText": *f.NewText}
		if f.Status != protocol.FileAdded {
			d["oldText"] = *f.OldText
		}
		content = append(content, d)
	}
	if len(without) > 0 {
		content = append(content, map[string]any{"type": "content",
			"content": textContent("Changed, shown without text:\n" + strings.Join(without, "\n"))})
	}
	return content
}

// showDiff sends a task's changes as a completed tool call whose content is
// one diff per file.
func (s *session) showDiff(r *protocol.TaskDiffResult, worktree string) {
	content := diffContent(r, worktree)
	title := "Changes of the task: none"
	if n := len(r.Files); n == 1 {
		title = "Changes of the task: " + r.Files[0].Path
	} else if n > 1 {
		title = fmt.Sprintf("Changes of the task: %d files", n)
	}
	var locs []any
	for _, f := range r.Files {
		locs = append(locs, map[string]any{"path": filepath.Join(worktree, filepath.FromSlash(f.Path))})
	}
	u := map[string]any{"sessionUpdate": "tool_call", "toolCallId": newID(), "title": title,
		"kind": "read", "status": "completed", "content": content}
	if len(locs) > 0 {
		u["locations"] = locs
	}
	s.update(u)
}

// queue starts the merge queue of the session's repository (queue/merge):
// every ready task by default, not only the session's. familiar's refusal
// (a queue running, a dirty checkout of the base) keeps its code.
func (s *session) queue(ctx context.Context, p *queueParams) (any, error) {
	q, err := s.f.QueueMerge(ctx, &protocol.QueueMergeParams{IDs: p.IDs, Strategy: p.Strategy, Verify: p.Verify})
	var fe *protocol.Error
	if errors.As(err, &fe) {
		return nil, &rpcError{Code: fe.Code, Message: fe.Message}
	}
	if err != nil {
		return nil, errorOf(err, "", s.a.opts.Logger)
	}
	return q, nil
}
