package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/protocol"
)

// SIGTERM while a task/send waits for the agent's idle prompt: familiar
// answers the waiting request with an error and exits within the grace
// period plus 2 s, leaving no claude behind (issue 13 §6; it took 55 s).
func TestSIGTERMWhileSendWaitsExitsWithinGrace(t *testing.T) {
	// The model takes a minute to answer: the turn is busy, so typing a
	// follow-up waits for an idle prompt that does not come.
	api := fakeapi.Start(fakeapi.Sequence(
		fakeapi.Reply{Text: "Thinking hard.", Delay: 60 * time.Second},
		fakeapi.Reply{Text: "Done."},
	))
	defer api.Close()
	repo := gitRepo(t)
	// In-process (noDaemon): the test signals the familiar it holds.
	f := startFamiliarIn(t, noDaemon, repo, api, stateEnv(t)...)
	c := f.client
	c.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
	const grace = 3
	c.Result("settings/update", map[string]any{"settings": map[string]any{"termGraceSec": grace}}, nil)
	var task protocol.Task
	c.Result("task/create", map[string]any{"title": "slow", "description": "think"}, &task)
	c.WaitNotification(0, "running", editor.Method("task/updated", `"status":"running"`))
	// The request is in the API's delay once claude has sent it.
	if _, ok := api.WaitRequests(1, 60*time.Second); !ok {
		t.Fatal("claude sent no request")
	}
	var pid int
	for _, n := range c.Notifications() {
		if n.Method == "task/updated" && strings.Contains(string(n.Params), `"pid":`) {
			var u protocol.TaskUpdatedNotification
			if err := json.Unmarshal(n.Params, &u); err == nil && u.Task.Agent != nil {
				pid = u.Task.Agent.PID
			}
		}
	}
	// Sent before the signal: familiar reads it first, and it waits for
	// an idle prompt the busy turn does not give.
	sendID := c.Send("task/send", map[string]any{"id": task.ID, "text": "also do this"})

	start := time.Now()
	if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Duration(grace+30) * time.Second):
		t.Fatalf("familiar still running %s after SIGTERM", time.Since(start))
	}
	took := time.Since(start)
	t.Logf("familiar exited %s after SIGTERM (grace %d s)", took.Round(time.Millisecond), grace)
	if took > time.Duration(grace+2)*time.Second {
		t.Errorf("familiar took %s to exit; the grace is %d s", took.Round(time.Millisecond), grace)
	}
	resp := c.Response(sendID)
	if resp.Error == nil {
		t.Errorf("the waiting task/send got no error: %s", resp.Result)
	}
	if pid > 0 && claudeRunning(pid) {
		t.Errorf("claude %d outlived familiar", pid)
	}
}
