package main

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/daemon"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
)

// planWrites is a plan step's script: its agent writes path with content.
func planWrites(path, content string) string {
	b, _ := json.Marshal(map[string]string{"file_path": path, "content": content})
	return "go\n@@TOOL Write " + string(b) + "\n@@TEXT Wrote " + path + "."
}

// Issue 39, through the background familiar: familiar is killed (kill -9)
// while a plan integrates its first step, before or after git moved main.
// The next familiar finds the plan's truth in its tasks and in main: the
// step is merged if main has it (once: never merged twice), merged again if
// not; the step that needs it starts from a base that has it; the plan ends
// done with main holding both, and plan/undo puts main back where it was
// before the plan. main and the plan never disagree.
func TestCrashDuringPlanMergeSettlesOnStart(t *testing.T) {
	for _, tc := range []struct {
		name, state string
		exit        int
		moved       bool
	}{
		{"after main moved", "committed", 0, true},
		{"before main moved", "prepared", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := fakeapi.Start(fakeapi.PromptScript())
			defer api.Close()
			r := newDaemonRig(t, api)
			if !tc.moved {
				// main not checked out: its move is the ref update alone (see
				// TestCrashDuringMergeSettlesOnStart).
				gitOut(t, r.repo, "checkout", "-q", "-b", "elsewhere")
			}
			before := gitOut(t, r.repo, "rev-parse", "main")
			entered, release := holdRefUpdate(t, r.repo, tc.state, tc.exit)

			w := r.window()
			w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo,
				"settings": map[string]any{"permissionPolicy": map[string]any{"default": "allow"}}}, nil)
			var plan protocol.Plan
			w.client.Result("plan/create", map[string]any{"run": true, "verify": "", "baseRef": "main", "steps": []map[string]any{
				{"id": "one", "title": "Add one.txt", "description": planWrites("one.txt", "one\n")},
				{"id": "two", "title": "Add two.txt on top of one", "needs": []string{"one"}, "description": planWrites("two.txt", "two\n")},
			}}, &plan)
			testenv.Await(t, 120*time.Second, "step one's merge to reach main's ref update", func() bool {
				_, err := os.Stat(entered)
				return err == nil
			})
			var mid protocol.Plan
			w.client.Result("plan/get", map[string]any{"id": plan.ID}, &mid)
			if s := planStep(&mid, "two"); s.TaskID != "" {
				t.Fatalf("two started before one was merged: %+v", s)
			}
			oneTask := planStep(&mid, "one").TaskID
			pid := r.info().PID
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			testenv.Await(t, 30*time.Second, "the killed familiar to be gone", func() bool { return !daemon.Alive(pid) })
			w.close(t)
			release()
			if tc.moved {
				testenv.Await(t, 30*time.Second, "main to hold step one", func() bool { return gitOut(t, r.repo, "rev-parse", "main") != before })
			}

			again := r.window()
			again.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
			var done protocol.Plan
			testenv.Await(t, 180*time.Second, "the plan to end", func() bool {
				again.client.Result("plan/get", map[string]any{"id": plan.ID}, &done)
				return done.State == protocol.PlanHeld || done.State.Ended()
			})
			if done.State != protocol.PlanDone {
				b, _ := json.Marshal(done)
				t.Fatalf("after the restart the plan ended %s: %s", done.State, b)
			}
			if s := planStep(&done, "one"); s.TaskID != oneTask || s.State != protocol.StepMerged {
				t.Errorf("step one after the restart: %+v (its task was %s)", s, oneTask)
			}
			// Step one is in main once: the restarted familiar did not merge
			// what main already had a second time.
			bothOnceThenUndo(t, r.repo, before, again, plan.ID)
		})
	}
}

// familiar is killed (kill -9) while a plan step's agent is in the middle
// of its turn, before it wrote anything. The next familiar stops that
// agent's claude if it outlived its terminal (no orphan) and continues the
// step's task from its session (it waited on nobody).
//   - The agent then does its work: the plan goes on, step one merged once,
//     then step two on top of it, main holding both and nothing of step one
//     before its agent finished; plan/undo puts main back.
//   - The agent says it is done but changed nothing (nonsense after the
//     restart): nothing is merged, the plan is held on that step with why,
//     step two never starts, and main stays where it was.
func TestCrashWhileAPlanStepWorks(t *testing.T) {
	for _, tc := range []struct {
		name, rest string
		finishes   bool
	}{
		{"the agent then does its work", strings.TrimPrefix(planWrites("one.txt", "one\n"), "go\n"), true},
		{"the agent then says it is done but changed nothing", "@@TEXT All done, one.txt is there.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := fakeapi.Start(fakeapi.PromptScript())
			defer api.Close()
			r := newDaemonRig(t, api)
			before := gitOut(t, r.repo, "rev-parse", "main")

			w := r.window()
			w.client.Result("initialize", map[string]any{"workspaceRoot": r.repo,
				"settings": map[string]any{"permissionPolicy": map[string]any{"default": "allow"}}}, nil)
			var plan protocol.Plan
			w.client.Result("plan/create", map[string]any{"run": true, "verify": "", "baseRef": "main", "steps": []map[string]any{
				{"id": "one", "title": "Add one.txt", "description": "take your time\n@@DELAY 6s\n" + tc.rest},
				{"id": "two", "title": "Add two.txt on top of one", "needs": []string{"one"}, "description": planWrites("two.txt", "two\n")},
			}}, &plan)
			if _, ok := api.WaitFor(func(reqs []fakeapi.Request) bool {
				for _, q := range reqs {
					if strings.Contains(q.LastUserText(), "take your time") {
						return true
					}
				}
				return false
			}, 120*time.Second); !ok {
				t.Fatal("step one's agent never asked the model")
			}
			var mid protocol.Plan
			w.client.Result("plan/get", map[string]any{"id": plan.ID}, &mid)
			oneTask := planStep(&mid, "one").TaskID
			var working protocol.Task
			w.client.Result("task/get", map[string]any{"id": oneTask}, &working)
			if working.Agent == nil || working.Agent.PID == 0 {
				t.Fatalf("step one's task has no agent while its model works: %s %+v", working.Status, working.Agent)
			}
			pid := r.info().PID
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			testenv.Await(t, 30*time.Second, "the killed familiar to be gone", func() bool { return !daemon.Alive(pid) })
			w.close(t)
			if got := gitOut(t, r.repo, "rev-parse", "main"); got != before {
				t.Fatalf("main moved while step one's agent worked: %s, was %s", got, before)
			}

			again := r.window()
			again.client.Result("initialize", map[string]any{"workspaceRoot": r.repo}, nil)
			testenv.Await(t, 30*time.Second, "the killed familiar's claude to be gone", func() bool { return !daemon.Alive(working.Agent.PID) })
			var done protocol.Plan
			testenv.Await(t, 180*time.Second, "the plan to end or be held", func() bool {
				again.client.Result("plan/get", map[string]any{"id": plan.ID}, &done)
				return done.State == protocol.PlanHeld || done.State.Ended()
			})
			one := planStep(&done, "one")
			if one.TaskID != oneTask {
				t.Errorf("step one after the restart ran as task %s, not %s, the one interrupted", one.TaskID, oneTask)
			}
			if !tc.finishes {
				if done.State != protocol.PlanHeld || one.State != protocol.StepFailed || !strings.Contains(one.Why, "changed nothing") {
					b, _ := json.Marshal(done)
					t.Fatalf("a step whose agent changed nothing: plan %s, step %s %q; want held on a failed step that says so: %s", done.State, one.State, one.Why, b)
				}
				if s := planStep(&done, "two"); s.TaskID != "" {
					t.Errorf("step two started though step one did nothing: %+v", s)
				}
				if got := gitOut(t, r.repo, "rev-parse", "main"); got != before {
					t.Errorf("main moved (%s, was %s) for a step that changed nothing", got, before)
				}
				return
			}
			if done.State != protocol.PlanDone {
				b, _ := json.Marshal(done)
				t.Fatalf("after the restart the plan ended %s: %s", done.State, b)
			}
			if one.State != protocol.StepMerged {
				t.Errorf("step one after the restart: %+v", one)
			}
			bothOnceThenUndo(t, r.repo, before, again, plan.ID)
		})
	}
}

// bothOnceThenUndo checks that main holds the two steps' files, step one
// merged once since before, and that plan/undo puts main back at before.
func bothOnceThenUndo(t *testing.T, repo, before string, w *familiarProc, planID string) {
	t.Helper()
	for _, f := range []string{"one.txt", "two.txt"} {
		if got := gitOut(t, repo, "show", "main:"+f); got != strings.TrimSuffix(f, ".txt") {
			t.Errorf("main:%s = %q", f, got)
		}
	}
	log := gitOut(t, repo, "log", "--format=%s", before+"..main")
	if n := strings.Count("\n"+log+"\n", "\nAdd one.txt\n"); n != 1 {
		t.Errorf("step one merged %d times:\n%s", n, log)
	}
	var undone protocol.Plan
	w.client.Result("plan/undo", map[string]any{"id": planID}, &undone)
	if got := gitOut(t, repo, "rev-parse", "main"); got != before {
		t.Errorf("plan/undo left main at %s, want %s (before the plan); plan %s", got, before, undone.State)
	}
}

func planStep(p *protocol.Plan, id string) protocol.PlanStep {
	for _, s := range p.Steps {
		if s.ID == id {
			return s
		}
	}
	return protocol.PlanStep{}
}
