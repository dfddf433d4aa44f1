package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
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

// Issue 37, as VS Code meets it: through the background familiar, with
// the default driver (the PTY) and claude's own ten retries, an API that
// fails every time, a refused login and an unreachable API are each said
// in a task/updated by claude's third retry, on every CLI of the window
// (.ci/e2e-subset). The time from the first failed request (the prompt,
// for the unreachable API, where no request arrives) to the notification's
// arrival is logged.
func TestFailuresSaidThroughTheDaemon(t *testing.T) {
	script := fakeapi.PromptScript()
	api := fakeapi.Start(func(r fakeapi.Request) fakeapi.Reply {
		switch raw := string(r.Raw); {
		case r.IsSideRequest():
		case strings.Contains(raw, "FAIL-EVERY-500"):
			return fakeapi.Reply{Status: 500, Error: "fake boom", Retryable: true}
		case strings.Contains(raw, "FAIL-EVERY-401"):
			return fakeapi.Reply{Status: 401, Error: "invalid x-api-key", Retryable: true}
		}
		return script(r)
	})
	defer api.Close()
	firstWith := func(marker string) time.Time {
		for _, req := range api.MainRequests() {
			if strings.Contains(string(req.Raw), marker) {
				return req.At
			}
		}
		t.Fatalf("no request with %s reached the API", marker)
		return time.Time{}
	}
	r := newDaemonRig(t, api)
	w := r.window()
	w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)

	var failing protocol.Task
	w.client.Result("task/create", map[string]any{"title": "failing API", "description": "FAIL-EVERY-500 go"}, &failing)
	m, next := w.client.WaitNotification(0, "the status named", editor.Method("task/updated", failing.ID, "model error 500, retrying ("))
	said := time.Now()
	saidByRetry(t, m, 3)
	t.Logf("500: %q %s after the first failed request", activityDetail(t, m), said.Sub(firstWith("FAIL-EVERY-500")).Round(time.Millisecond))
	w.client.Result("task/cancel", map[string]any{"id": failing.ID}, nil)

	var refused protocol.Task
	w.client.Result("task/create", map[string]any{"title": "refused", "description": "FAIL-EVERY-401 go"}, &refused)
	m, _ = w.client.WaitNotification(next, "blocked{auth}", editor.Method("task/updated", refused.ID, `"status":"blocked"`, `"reason":"auth"`))
	said = time.Now()
	var before int
	for _, req := range api.MainRequests() {
		if strings.Contains(string(req.Raw), "FAIL-EVERY-401") && req.At.Before(said) {
			before++
		}
	}
	if before > 4 {
		t.Errorf("blocked{auth} after %d refused requests, want it by claude's third retry", before)
	}
	t.Logf("401: blocked{auth} %s after the first refused request (%d requests)", said.Sub(firstWith("FAIL-EVERY-401")).Round(time.Millisecond), before)

	// Unreachable: a background familiar of its own, whose claude is
	// pointed at a port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	r2 := newDaemonRig(t, api)
	r2.env = append(r2.env, "ANTHROPIC_BASE_URL="+closed)
	w2 := r2.window()
	w2.client.Result("initialize", map[string]any{"workspaceRoot": r2.repo}, nil)
	var unreachable protocol.Task
	w2.client.Result("task/create", map[string]any{"title": "unreachable", "description": "go"}, &unreachable)
	m, _ = w2.client.WaitNotification(0, "the unreachable API named", editor.Method("task/updated", unreachable.ID, "model API unreachable, retrying ("))
	said = time.Now()
	saidByRetry(t, m, 3)
	p, _ := w2.client.WaitNotification(0, "the prompt", editor.Method("task/transcript", unreachable.ID, `"kind":"prompt"`))
	var tn protocol.TaskTranscriptNotification
	if err := json.Unmarshal(p.Params, &tn); err != nil {
		t.Fatal(err)
	}
	t.Logf("unreachable: %q %s after the prompt", activityDetail(t, m), said.Sub(tn.Entry.At).Round(time.Millisecond))
	w2.client.Result("task/cancel", map[string]any{"id": unreachable.ID}, nil)
}

func activityDetail(t *testing.T, m editor.Message) string {
	t.Helper()
	var u protocol.TaskUpdatedNotification
	if err := json.Unmarshal(m.Params, &u); err != nil {
		t.Fatal(err)
	}
	return u.Task.ActivityDetail
}

// saidByRetry fails the test when a task/updated's "retrying (n of m)" is
// later than claude's retry max.
func saidByRetry(t *testing.T, m editor.Message, max int) {
	t.Helper()
	d := activityDetail(t, m)
	_, rest, ok := strings.Cut(d, "retrying (")
	n, err := strconv.Atoi(strings.Fields(rest + " ")[0])
	if !ok || err != nil {
		t.Fatalf("no retry count in %q", d)
	}
	if n > max {
		t.Errorf("said at claude's retry %d (%q), want by its retry %d", n, d, max)
	}
}
