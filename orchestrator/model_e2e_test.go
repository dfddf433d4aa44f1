package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/orchestrator"
	"github.com/familiar-dev/familiar/protocol"
)

// The model side failing (issue 13 §2) and the user's own Claude (issue 14),
// through the real claude and the orchestrator.

// noLoginEnv is the environment without any way for claude to log in.
func noLoginEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE_CODE_USE_") || k == "CLAUDE_CODE_OAUTH_TOKEN" || k == "CLAUDE_CONFIG_DIR" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// updated decodes a task/updated note; ok is false for other notes.
func updated(n note) (protocol.Task, bool) {
	if n.method != protocol.NotifyTaskUpdated {
		return protocol.Task{}, false
	}
	var u protocol.TaskUpdatedNotification
	if json.Unmarshal(n.params, &u) != nil {
		return protocol.Task{}, false
	}
	return u.Task, true
}

func blockedIs(id string, r protocol.BlockedReason) func(note) bool {
	return func(n note) bool {
		t, ok := updated(n)
		return ok && t.ID == id && t.Status == protocol.StatusBlocked && t.Blocked != nil && t.Blocked.Reason == r
	}
}

// stoppedBySignal reports whether pid is in state T (SIGSTOP).
func stoppedBySignal(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'T'
}

func TestNoLoginBlocksAuthAtOnce(t *testing.T) {
	e := open(t, nil, nil)
	e.startHook = func(o *agent.Options) {
		o.Env = noLoginEnv()
		delete(o.ExtraEnv, "ANTHROPIC_API_KEY")
	}
	created := time.Now()
	task := e.create(t, "no login", "@@TEXT never", 0)
	if task.Status != protocol.StatusQueued && task.Status != protocol.StatusStarting {
		t.Errorf("created %s, want queued (task/create is not refused)", task.Status)
	}
	e.notes.wait(t, "blocked{auth}", blockedIs(task.ID, protocol.BlockedAuth))
	if d := time.Since(created); d > 10*time.Second {
		t.Errorf("blocked{auth} after %s", d)
	}
	got := e.get(t, task.ID)
	if !strings.Contains(got.Blocked.Detail, "claude login") || !strings.Contains(got.Blocked.Detail, "ANTHROPIC_API_KEY") {
		t.Errorf("detail = %q, want the fix", got.Blocked.Detail)
	}
	if n := len(e.api.Requests()); n != 0 {
		t.Errorf("%d requests reached the API", n)
	}
	t.Logf("blocked{auth} %s after task/create", time.Since(created).Round(time.Millisecond))
}

func TestLoginRejectedBlocksAuth(t *testing.T) {
	// A login claude has but the API refuses: claude's own "log in" message
	// becomes blocked{auth}, never a question.
	e := openWith(t, nil, nil, func(r fakeapi.Request) fakeapi.Reply {
		return fakeapi.Reply{Status: 401, Error: "invalid x-api-key"}
	})
	created := time.Now()
	task := e.create(t, "bad key", "@@TEXT never", 0)
	e.notes.wait(t, "blocked{auth}", blockedIs(task.ID, protocol.BlockedAuth))
	t.Logf("blocked{auth} %s after task/create", time.Since(created).Round(time.Millisecond))
	for _, n := range e.notes.all() {
		if n.method == protocol.NotifyTaskQuestion {
			t.Errorf("asked: %s", n.params)
		}
	}
}

func TestAPIGivesUpBlocksAPIError(t *testing.T) {
	e := openWith(t, nil, nil, func(r fakeapi.Request) fakeapi.Reply {
		if r.IsSideRequest() {
			return fakeapi.SideReply(r)
		}
		return fakeapi.Reply{Status: 529, Error: "fake overloaded", Retryable: true}
	})
	e.startHook = func(o *agent.Options) { o.ExtraEnv["CLAUDE_CODE_MAX_RETRIES"] = "2" }
	task := e.create(t, "overloaded", "go", 0)
	retrying := e.notes.wait(t, "the retry shown on the task", func(n note) bool {
		u, ok := updated(n)
		return ok && u.ID == task.ID && strings.Contains(u.ActivityDetail, "retry 1 of 2")
	})
	first := e.api.MainRequests()[0].At
	if d := retrying.at.Sub(first); d > 5*time.Second {
		t.Errorf("the retry was shown %s after the first failed request", d)
	}
	t.Logf("retry shown on the task %s after the first failed request", retrying.at.Sub(first).Round(time.Millisecond))
	e.notes.wait(t, "blocked{api_error}", blockedIs(task.ID, protocol.BlockedAPIError))
	got := e.get(t, task.ID)
	if got.Blocked.Status != 529 || !strings.Contains(got.Blocked.Detail, "529") {
		t.Errorf("blocked = %+v", got.Blocked)
	}
	// familiar restarted the turn twice: each start sent requests (the
	// restart really retries, it does not sit at an empty prompt).
	sessions := map[string]int{}
	for _, r := range e.api.MainRequests() {
		sessions[r.SessionID()]++
	}
	if len(e.api.MainRequests()) < 3*3 {
		t.Errorf("%d requests over %d sessions, want 3 attempts of 3", len(e.api.MainRequests()), len(sessions))
	}
	for _, n := range e.notes.all() {
		if n.method == protocol.NotifyTaskQuestion {
			t.Errorf("asked: %s", n.params)
		}
	}
}

func TestUsageLimitBlocksHoldsTheQueueAndResumes(t *testing.T) {
	defer orchestrator.SetResetSlack(time.Second)()
	reset := time.Now().Add(20 * time.Second).Truncate(time.Second)
	limited := true
	e := openWith(t, nil, &protocol.SettingsUpdate{MaxConcurrent: intp(1)}, func(r fakeapi.Request) fakeapi.Reply {
		if !r.IsSideRequest() && limited && time.Now().Before(reset) {
			return fakeapi.UsageLimitReply(reset)
		}
		return fakeapi.PromptScript()(r)
	})
	writeLoginFile(t, e.home)
	e.startHook = func(o *agent.Options) {
		o.Env = noLoginEnv()
		delete(o.ExtraEnv, "ANTHROPIC_API_KEY")
	}
	task := e.create(t, "limited", "@@TEXT finished after the limit", 0)
	e.notes.wait(t, "blocked{usage_limit}", blockedIs(task.ID, protocol.BlockedUsageLimit))
	got := e.get(t, task.ID)
	if !got.Blocked.ResetsAt.Equal(reset) {
		t.Errorf("resets at %s, want %s", got.Blocked.ResetsAt, reset)
	}
	second := e.create(t, "waits", "@@TEXT second done", 0)
	if time.Now().Before(reset) {
		if s := e.get(t, second.ID).Status; s != protocol.StatusQueued {
			t.Errorf("a task started into a known limit: %s", s)
		}
	}
	e.notes.wait(t, "resumed and finished", statusIs(task.ID, protocol.StatusMerging))
	e.notes.wait(t, "second finished", statusIs(second.ID, protocol.StatusMerging))
	if s := e.get(t, second.ID); s.StartedAt.Before(reset) {
		t.Errorf("the second task started at %s, before the reset %s", s.StartedAt, reset)
	}
}

func writeLoginFile(t *testing.T, home string) {
	t.Helper()
	dir := filepath.Join(home, ".claude")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	creds := fmt.Sprintf(`{"claudeAiOauth":{"accessToken":"sk-ant-oat01-orch-test","refreshToken":"sk-ant-ort01-orch","expiresAt":%d,"scopes":["user:inference","user:profile"],"subscriptionType":"max"}}`,
		time.Now().Add(24*time.Hour).UnixMilli())
	if err := os.WriteFile(filepath.Join(dir, ".credentials.json"), []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRespondRefusedWhileClaudeIsStopped(t *testing.T) {
	e := open(t, nil, nil)
	task := e.create(t, "stopped", askBash("stopped.txt"), 0)
	n := e.notes.wait(t, "question", is(protocol.NotifyTaskQuestion))
	var qn protocol.TaskQuestionNotification
	if err := json.Unmarshal(n.params, &qn); err != nil {
		t.Fatal(err)
	}
	q := qn.Question
	pid := e.get(t, task.ID).Agent.PID
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	deadline := time.Now().Add(10 * time.Second)
	for !stoppedBySignal(pid) {
		if time.Now().After(deadline) {
			t.Fatal("claude did not stop")
		}
		time.Sleep(10 * time.Millisecond) // polling /proc: nothing to wait on
	}
	_, err := e.o.TaskRespond(context.Background(), &protocol.TaskRespondParams{ID: task.ID, QuestionID: q.ID, OptionID: "allow"})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeFailedPrecondition || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("respond to a stopped claude: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if _, err := e.o.TaskRespond(context.Background(), &protocol.TaskRespondParams{ID: task.ID, QuestionID: q.ID, OptionID: "allow"}); err != nil {
		t.Fatalf("respond after SIGCONT: %v", err)
	}
	e.notes.wait(t, "finished", statusIs(task.ID, protocol.StatusMerging))
}

func TestBudgetStopsTheTask(t *testing.T) {
	e := open(t, nil, nil)
	budget := 0.0001 // the fake model's first answer costs more (list prices)
	task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{
		Title: "spender", MaxBudgetUsd: &budget,
		Description: "go\n@@TOOL Bash {\"command\":\"true\"}\n@@TOOL Bash {\"command\":\"true\"}\n@@TEXT finished",
	})
	if err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "blocked{budget}", blockedIs(task.ID, protocol.BlockedBudget))
	got := e.get(t, task.ID)
	if !strings.Contains(got.Blocked.Detail, "of its $0.00 budget") {
		t.Errorf("detail %q", got.Blocked.Detail)
	}
	if got.Agent == nil {
		t.Fatal("no agent info")
	}
	if err := processGone(got.Agent.PID); err != nil {
		t.Error(err)
	}
}
