package orchestrator_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// Issue 22, through the real claude and the scripted model: every end is
// announced, and a task that changed nothing has nothing to merge.

// completedNote decodes a task/completed note of id; ok is false for others.
func completedNote(n note, id string) (protocol.TaskCompletedNotification, bool) {
	var c protocol.TaskCompletedNotification
	if n.method != protocol.NotifyTaskCompleted || json.Unmarshal(n.params, &c) != nil || c.ID != id {
		return c, false
	}
	return c, true
}

func TestBlockedTaskAnnouncesItsEnd(t *testing.T) {
	e := open(t, nil, nil)
	budget := 0.0001 // the scripted model's first answer costs more (list prices)
	task, err := e.o.TaskCreate(context.Background(), &protocol.TaskCreateParams{
		Title: "spender", MaxBudgetUsd: &budget,
		Description: "go\n@@TOOL Bash {\"command\":\"true\"}\n@@TEXT finished",
	})
	if err != nil {
		t.Fatal(err)
	}
	blocked := e.notes.wait(t, "blocked{budget}", blockedIs(task.ID, "budget"))
	end := e.notes.wait(t, "task/completed", func(n note) bool { _, ok := completedNote(n, task.ID); return ok })
	c, _ := completedNote(end, task.ID)
	if c.Result.Success || c.Status != protocol.StatusBlocked || c.Reason != protocol.BlockedBudget ||
		!strings.Contains(c.Detail, "budget") || !strings.Contains(c.Detail, "maxBudgetUsd") {
		t.Errorf("task/completed = %s", end.params)
	}
	if d := end.at.Sub(blocked.at); d > 5*time.Second {
		t.Errorf("task/completed %s after the block", d)
	}
	t.Logf("task/completed %s after the block: %s", end.at.Sub(blocked.at), end.params)
	// Announced once: the agent's exit afterwards is no second end.
	got := e.get(t, task.ID)
	if got.Agent == nil {
		t.Fatal("no agent info")
	}
	if err := processGone(got.Agent.PID); err != nil {
		t.Fatal(err)
	}
	var ends int
	for _, n := range e.notes.all() {
		if _, ok := completedNote(n, task.ID); ok {
			ends++
		}
	}
	if ends != 1 {
		t.Errorf("%d task/completed, want 1", ends)
	}
}

func TestNothingChangedHasNothingToMerge(t *testing.T) {
	e := open(t, nil, nil)
	task := e.create(t, "a question", "@@TEXT The answer is 42; nothing to change.", 0)
	end := e.notes.wait(t, "task/completed", func(n note) bool { _, ok := completedNote(n, task.ID); return ok })
	c, _ := completedNote(end, task.ID)
	if !c.Result.Success || !c.Result.NoChanges || c.Status != protocol.StatusMerging || c.Reason != "" {
		t.Fatalf("task/completed = %s", end.params)
	}
	got := e.get(t, task.ID)
	if got.Result == nil || !got.Result.NoChanges {
		t.Fatalf("result = %+v", got.Result)
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", e.repo}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	before := git("rev-parse", "HEAD")
	merged, err := e.o.TaskMerge(context.Background(), &protocol.TaskMergeParams{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if after := git("rev-parse", "HEAD"); after != before {
		t.Errorf("task/merge of nothing moved the base: %s → %s (%s)", before, after, git("log", "-1", "--format=%s"))
	}
	if merged.Status != protocol.StatusMerging || merged.Result == nil || !merged.Result.NoChanges {
		t.Errorf("after task/merge: %s %+v", merged.Status, merged.Result)
	}
	// The claim is released: a second merge is the same no-op, not -32003.
	if _, err := e.o.TaskMerge(context.Background(), &protocol.TaskMergeParams{ID: task.ID}); err != nil {
		t.Errorf("second merge: %v", err)
	}
}
