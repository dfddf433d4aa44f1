package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/protocol"
)

// Issue 22, through the binary and its background familiar: a model that
// refuses the credentials (a 401 claude retries, as the real API's) is
// blocked{auth} with the fix in seconds, and a claude stopped by SIGSTOP
// during a question is shown as stopped, then as it was once continued.
func TestRefusedLoginAndStoppedClaudeThroughTheDaemon(t *testing.T) {
	script := fakeapi.PromptScript()
	api := fakeapi.Start(func(r fakeapi.Request) fakeapi.Reply {
		if !r.IsSideRequest() && strings.Contains(string(r.Raw), "REFUSE-THE-LOGIN") {
			return fakeapi.Reply{Status: 401, Error: "invalid x-api-key", Retryable: true}
		}
		return script(r)
	})
	defer api.Close()
	r := newDaemonRig(t, api)
	w := r.window()
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)

	var refused protocol.Task
	w.client.Result("task/create", map[string]any{"title": "refused", "description": "REFUSE-THE-LOGIN go"}, &refused)
	m, _ := w.client.WaitNotification(0, "blocked{auth}", editor.Method("task/updated", refused.ID, `"status":"blocked"`))
	var u protocol.TaskUpdatedNotification
	if err := json.Unmarshal(m.Params, &u); err != nil {
		t.Fatal(err)
	}
	var first time.Time
	for _, req := range api.MainRequests() {
		if strings.Contains(string(req.Raw), "REFUSE-THE-LOGIN") {
			first = req.At
			break
		}
	}
	if d := u.Task.UpdatedAt.Sub(first); u.Task.Blocked == nil || u.Task.Blocked.Reason != protocol.BlockedAuth || d > 10*time.Second {
		t.Errorf("blocked %+v, %s after the first refused request", u.Task.Blocked, d)
	}
	t.Logf("blocked{auth} %s after the first refused request", u.Task.UpdatedAt.Sub(first).Round(time.Millisecond))
	if !strings.Contains(u.Task.Blocked.Detail, "401") || !strings.Contains(u.Task.Blocked.Detail, "login") {
		t.Errorf("detail %q: the status and the fix", u.Task.Blocked.Detail)
	}

	var asking protocol.Task
	w.client.Result("task/create", map[string]any{"title": "asks",
		"description": "go\n@@TOOL Bash {\"command\":\"touch asked.txt\"}\n@@TEXT Done."}, &asking)
	_, next := w.client.WaitNotification(0, "question", editor.Method("task/question", asking.ID))
	var got protocol.Task
	w.client.Result("task/get", map[string]any{"id": asking.ID}, &got)
	pid := got.Agent.PID
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	_, next = w.client.WaitNotification(next, "shown as stopped", editor.Method("task/updated", asking.ID, `"activity":"stopped"`, "SIGSTOP"))
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	w.client.WaitNotification(next, "shown as it was", func(m editor.Message) bool {
		return editor.Method("task/updated", asking.ID)(m) && !strings.Contains(string(m.Params), `"activity":"stopped"`)
	})
	// Answered after SIGCONT, it goes on.
	w.client.Result("task/get", map[string]any{"id": asking.ID}, &got)
	if got.PendingQuestion == nil {
		t.Fatalf("no question pending: %+v", got)
	}
	w.client.Result("task/respond", map[string]any{"id": asking.ID, "questionId": got.PendingQuestion.ID, "optionId": "allow"}, nil)
	w.client.WaitNotification(0, "finished", editor.Method("task/completed", asking.ID, `"success":true`))
	if _, err := os.Stat(filepath.Join(got.Worktree.Path, "asked.txt")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
}
