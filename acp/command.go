package acp

import (
	"context"
	"fmt"
	"strings"

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
	switch f[0] {
	case "diff", "merge", "undo", "retry":
		return f[0], strings.Join(f[1:], " "), true
	}
	return "", "", false
}

// command runs a slash command as a turn of its own.
func (s *session) command(ctx context.Context, cmd, arg string) (any, error) {
	res, err := s.run(ctx, cmd, arg)
	if err != nil {
		s.message(fmt.Sprintf("/%s: %v", cmd, err))
		return map[string]any{"stopReason": stopEndTurn}, nil
	}
	switch r := res.(type) {
	case *protocol.TaskDiffResult:
		s.showDiff(r)
	case *protocol.Task:
		s.message(fmt.Sprintf("/%s: task %s is %s.", cmd, r.ID, r.Status))
	}
	return map[string]any{"stopReason": stopEndTurn}, nil
}

// extension runs _familiar/<cmd> and returns familiar's result as is.
func (s *session) extension(ctx context.Context, cmd string) (any, error) {
	res, err := s.run(ctx, cmd, "")
	if err != nil {
		return nil, &rpcError{Code: codeInternal, Message: err.Error()}
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
		var r protocol.TaskDiffResult
		if err := s.f.call(ctx, protocol.MethodTaskDiff, map[string]any{"id": taskID}, &r); err != nil {
			return nil, err
		}
		return &r, nil
	case "merge":
		p := map[string]any{"id": taskID}
		if arg != "" {
			p["strategy"] = arg
		}
		var t protocol.Task
		if err := s.f.call(ctx, protocol.MethodTaskMerge, p, &t); err != nil {
			return nil, err
		}
		return &t, nil
	case "undo":
		var t protocol.Task
		if err := s.f.call(ctx, protocol.MethodTaskUndo, map[string]any{"id": taskID}, &t); err != nil {
			return nil, err
		}
		return &t, nil
	case "retry":
		var t protocol.Task
		if err := s.f.call(ctx, protocol.MethodTaskRetry, map[string]any{"id": taskID}, &t); err != nil {
			return nil, err
		}
		// The session goes on as the new attempt.
		s.follow(t.ID)
		if err := s.a.rememberTask(s.f.root, s.id, t.ID); err != nil {
			s.a.opts.Logger.Warn("session map", "err", err)
		}
		return &t, nil
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: fmt.Sprintf("familiar acp has no command %q: diff, merge, undo or retry.", cmd)}
}

// showDiff sends a diff as a completed tool call whose content is the patch.
func (s *session) showDiff(r *protocol.TaskDiffResult) {
	var files []string
	for _, f := range r.Files {
		files = append(files, fmt.Sprintf("%s %s (+%d -%d)", f.Status, f.Path, f.Additions, f.Deletions))
	}
	summary := "No changes."
	if len(files) > 0 {
		summary = strings.Join(files, "\n")
	}
	content := []any{map[string]any{"type": "content", "content": textContent(summary)}}
	if r.Patch != "" {
		content = append(content, map[string]any{"type": "content", "content": textContent("```diff\n" + r.Patch + "```")})
	}
	s.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": newID(), "title": "Diff of the task",
		"kind": "read", "status": "completed", "content": content})
}
