package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/runfile"
	"github.com/familiar-dev/familiar/workspace"
)

func intp(v int) *int { return &v }

func TestSettingsForAppliesTheFileAndOnlyItsPolicy(t *testing.T) {
	base := protocol.DefaultSettings()
	base.PermissionPolicy = protocol.Policy{Default: protocol.PolicyAllow} // a workspace's own policy
	got := settingsFor(base, runfile.Settings{
		Concurrency: 5, Driver: protocol.DriverStream, ApprovalTimeoutSec: 7,
		NoProgressTimeoutSec: 60, TermGraceSec: intp(0),
	})
	if got.MaxConcurrent != 5 || got.DefaultDriver != protocol.DriverStream || got.ApprovalTimeoutSec != 7 ||
		got.NoProgressTimeoutSec != 60 || got.TermGraceSec != 0 {
		t.Errorf("settings = %+v", got)
	}
	// Headless: the workspace's allow-all policy must not leak into a run.
	if got.PermissionPolicy.Default != protocol.PolicyAsk || len(got.PermissionPolicy.Allow) != 0 {
		t.Errorf("policy without one in the file = %+v, want ask", got.PermissionPolicy)
	}
	pol := &protocol.Policy{Default: protocol.PolicyDeny, Allow: []string{"Read"}}
	if got := settingsFor(base, runfile.Settings{PermissionPolicy: pol}); got.PermissionPolicy.Default != protocol.PolicyDeny ||
		got.MaxConcurrent != base.MaxConcurrent || got.TermGraceSec != base.TermGraceSec {
		t.Errorf("settings with only a policy = %+v", got)
	}
}

func TestPrintReport(t *testing.T) {
	cost := 0.0123
	var b strings.Builder
	printReport(&b, Report{File: "tasks.yaml", Tasks: []TaskReport{
		{ID: "t1", Title: "Touch", Status: protocol.StatusMerging, Summary: "Did it.\nAll of it.", DurationSec: 1.25,
			ChangedFiles: []protocol.ChangedFile{{Path: "ok.txt", Status: protocol.FileAdded}},
			Commits:      []protocol.Commit{{SHA: "0123456789abcdef0123", Subject: "touch ok.txt"}},
			Branch:       "familiar/t1-touch", Worktree: "/w/t1", CostUSD: &cost},
		{ID: "t2", Title: "Delete", Status: protocol.StatusBlocked,
			Blocked: &protocol.Blocked{Reason: protocol.BlockedAgentFailed, Detail: "not allowed"}},
	}})
	out := b.String()
	for _, want := range []string{
		"2 tasks from tasks.yaml", "● Touch: ready to merge (t1, 1.2s)", "summary: Did it. All of it.",
		"added    ok.txt", "commit 0123456789ab touch ok.txt", "branch familiar/t1-touch in /w/t1", "cost $0.0123",
		"● Delete: blocked (t2, 0.0s)", "blocked (agent_failed): not allowed", "some tasks did not finish",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	printReport(&b, Report{File: "f", OK: true})
	if !strings.Contains(b.String(), "all tasks finished") {
		t.Errorf("an OK report:\n%s", b.String())
	}
}

func TestOneLine(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"a\nb\r\nc", 10, "a b  c"},
		{"héllo wörld", 5, "héllo…"},
		{"日本語のテキスト", 3, "日本語…"},
		{"", 3, ""},
	} {
		if got := oneLine(tt.in, tt.max); got != tt.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// runEnv is what an end-to-end run needs: the real claude pointed at a
// scripted API, a repository and a state dir of the test's own.
type runEnv struct {
	claude string
	api    *fakeapi.Server
	repo   string
	state  string
}

func newRunEnv(t *testing.T) *runEnv {
	t.Helper()
	claude := testenv.Claude(t)
	t.Setenv("HOME", t.TempDir())
	api := fakeapi.Start(fakeapi.PromptScript())
	t.Cleanup(api.Close)
	return &runEnv{claude: claude, api: api, repo: testenv.GitRepo(t, map[string]string{"README.md": "hello\n"}), state: t.TempDir()}
}

func (e *runEnv) options(t *testing.T, file string, out *bytes.Buffer) Options {
	t.Helper()
	f, err := runfile.Parse("tasks.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Dir: e.repo, File: f, Out: out,
		Workspace: workspace.Options{
			DataDir: filepath.Join(e.state, "state"), WorktreesRoot: filepath.Join(e.state, "worktrees"),
			ClaudePath: e.claude,
			StartHook: func(_ context.Context, opts *agent.Options) {
				if opts.ExtraEnv == nil {
					opts.ExtraEnv = map[string]string{}
				}
				for k, v := range e.api.Env() {
					opts.ExtraEnv[k] = v
				}
			},
		},
	}
}

const policyFile = `settings:
  concurrency: 2
  approvalTimeoutSec: 5
  termGraceSec: 1
  permissionPolicy:
    default: ask
    allow: ["Bash(touch:*)"]
    deny: ["Bash(rm:*)"]
tasks:
  - title: Touch a file
    description: |
      make it
      @@TOOL Bash {"command":"touch ok.txt"}
      @@TEXT Touched ok.txt.
  - title: Try to delete
    description: |
      delete it
      @@TOOL Bash {"command":"rm README.md"}
      @@TEXT BLOCKED: I was not allowed to delete README.md
`

// TestRunDecidesByThePolicyOnly runs two tasks through the real CLI: the
// file's policy allows one tool call and denies the other; nobody is asked.
func TestRunDecidesByThePolicyOnly(t *testing.T) {
	e := newRunEnv(t)
	var out bytes.Buffer
	rep, code := Run(context.Background(), e.options(t, policyFile, &out))
	if code != ExitFailed || rep.OK || len(rep.Tasks) != 2 {
		t.Fatalf("Run = %+v, exit %d; want exit %d (one task blocked)\n%s", rep, code, ExitFailed, out.String())
	}
	touched, denied := rep.Tasks[0], rep.Tasks[1]
	if touched.Status != protocol.StatusMerging || touched.Summary != "Touched ok.txt." || touched.Line != 10 ||
		len(touched.Commits) != 1 || len(touched.ChangedFiles) != 1 || touched.ChangedFiles[0].Path != "ok.txt" {
		t.Errorf("allowed task = %+v", touched)
	}
	if denied.Status != protocol.StatusBlocked || denied.Blocked == nil || !strings.Contains(denied.Blocked.Detail, "not allowed") {
		t.Errorf("denied task = %+v", denied)
	}
	if _, err := os.Stat(filepath.Join(e.repo, "README.md")); err != nil {
		t.Error("the denied rm ran in the user's checkout")
	}
	// Plain progress (not a terminal): the policy's decisions are shown.
	text := out.String()
	for _, want := range []string{"answered by policy: allow", "answered by policy: deny", "some tasks did not finish"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

// TestRunJSONKeepsProgressOffTheReport checks --json: Out holds only the
// report, progress goes to Log.
func TestRunJSONKeepsProgressOffTheReport(t *testing.T) {
	e := newRunEnv(t)
	var out, log bytes.Buffer
	o := e.options(t, "tasks:\n  - title: Say hi\n    description: \"hi\\n@@TEXT Hi.\"\n", &out)
	o.JSON, o.Log = true, &log
	_, code := Run(context.Background(), o)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), log.String())
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("Out is not only the JSON report: %v\n%s", err, out.String())
	}
	if !rep.OK || len(rep.Tasks) != 1 || rep.Tasks[0].Summary != "Hi." || rep.File != "tasks.yaml" {
		t.Errorf("report = %+v", rep)
	}
	// The task only answers: it ends as a task that changed nothing.
	if !strings.Contains(log.String(), "finished, nothing to merge") || strings.Contains(log.String(), "merging") {
		t.Errorf("progress did not go to Log:\n%s", log.String())
	}
}

// TestRunRefusesABadTaskWithItsLine: a task the orchestrator refuses (a hint
// file that does not exist) names the file, line and field, and nothing runs.
func TestRunRefusesABadTaskWithItsLine(t *testing.T) {
	e := newRunEnv(t)
	var out bytes.Buffer
	file := "tasks:\n  - title: Fine\n    description: ok\n  - title: Bad hint\n    description: x\n    hints:\n      files: [no-such-file.go]\n"
	_, code := Run(context.Background(), e.options(t, file, &out))
	if code != ExitBadInput {
		t.Fatalf("exit %d, want %d\n%s", code, ExitBadInput, out.String())
	}
	if !strings.Contains(out.String(), "tasks.yaml:4: tasks[1].hints.files") {
		t.Errorf("message does not name the file, line and field:\n%s", out.String())
	}
	if reqs := e.api.MainRequests(); len(reqs) != 0 {
		t.Errorf("%d model requests: the first task ran although the file was refused", len(reqs))
	}
}

// TestRunInterruptedStopsTheAgents: cancelling the run's context (Ctrl-C)
// stops the running agent gracefully and reports the task cancelled.
func TestRunInterruptedStopsTheAgents(t *testing.T) {
	e := newRunEnv(t)
	var out bytes.Buffer
	file := `settings:
  termGraceSec: 1
  permissionPolicy: {default: allow}
tasks:
  - title: Sleep
    description: |
      wait
      @@TOOL Bash {"command":"sleep 600"}
      @@TEXT Slept.
`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.api.OnResponseDone(func(_ fakeapi.Request, r fakeapi.Reply) {
		if len(r.ToolUses) > 0 {
			cancel() // the agent is running and about to start the sleep
		}
	})
	rep, code := Run(ctx, e.options(t, file, &out))
	if code != ExitFailed || len(rep.Tasks) != 1 || rep.Tasks[0].Status != protocol.StatusCancelled {
		t.Fatalf("Run = %+v, exit %d; want the task cancelled, exit %d\n%s", rep, code, ExitFailed, out.String())
	}
	if !strings.Contains(out.String(), "interrupted: stopping the agents gracefully") {
		t.Errorf("output:\n%s", out.String())
	}
	if rep.Tasks[0].Worktree == "" {
		t.Error("the worktree of the interrupted task is not reported")
	} else if _, err := os.Stat(rep.Tasks[0].Worktree); err != nil {
		t.Errorf("the interrupted task's worktree was not kept: %v", err)
	}
}

const queueFile = `settings:
  termGraceSec: 1
  merge: queue
  verify: %s
  permissionPolicy:
    default: deny
    allow: ["Bash(touch:*)"]
tasks:
  - title: Add a
    description: |
      add it
      @@TOOL Bash {"command":"touch a.txt"}
      @@TEXT Added a.txt.
  - title: Add b
    description: |
      add it
      @@TOOL Bash {"command":"touch b.txt"}
      @@TEXT Added b.txt.
`

// TestRunMergeQueue: with merge: queue a run ends with its work merged and
// checked (exit 0), or, when the verify command keeps failing, with the
// report of what was not merged and why (exit 1).
func TestRunMergeQueue(t *testing.T) {
	t.Run("merged", func(t *testing.T) {
		e := newRunEnv(t)
		var out bytes.Buffer
		rep, code := Run(context.Background(), e.options(t, fmt.Sprintf(queueFile, `"test -f README.md"`), &out))
		if code != ExitOK || !rep.OK || rep.Queue == nil || rep.Queue.State != protocol.QueueDone {
			t.Fatalf("Run = exit %d, %+v\n%s", code, rep.Queue, out.String())
		}
		for _, f := range []string{"a.txt", "b.txt"} {
			if _, err := os.Stat(filepath.Join(e.repo, f)); err != nil {
				t.Errorf("the base lacks %s", f)
			}
		}
		for _, tr := range rep.Tasks {
			if tr.Status != protocol.StatusMerged {
				t.Errorf("%s is %s", tr.Title, tr.Status)
			}
		}
		if !strings.Contains(out.String(), "merge queue into main (merge, verify: test -f README.md): done") {
			t.Errorf("report:\n%s", out.String())
		}
	})
	t.Run("verify fails", func(t *testing.T) {
		e := newRunEnv(t)
		var out bytes.Buffer
		rep, code := Run(context.Background(), e.options(t, fmt.Sprintf(queueFile, `"echo nope; exit 3"`), &out))
		if code != ExitFailed || rep.OK || rep.Queue == nil {
			t.Fatalf("Run = exit %d, %+v\n%s", code, rep.Queue, out.String())
		}
		for _, it := range rep.Queue.Items {
			if it.State != protocol.QueueItemBlocked || it.Attempts != 2 || !strings.Contains(it.Detail, "failed (exit 3)") {
				t.Errorf("item = %+v", it)
			}
		}
		for _, tr := range rep.Tasks {
			if tr.Status != protocol.StatusBlocked || tr.Blocked == nil || tr.Blocked.Reason != protocol.BlockedMerge {
				t.Errorf("%s is %s %+v", tr.Title, tr.Status, tr.Blocked)
			}
		}
		if _, err := os.Stat(filepath.Join(e.repo, "a.txt")); err == nil {
			t.Error("a task that failed its verify was merged")
		}
		for _, want := range []string{"merge queue: Add a handed back to its agent", "blocked    Add a", "failed (exit 3)", "some tasks did not finish"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
	})
}

// Every status, activity and queue state a person reads is in words
// (issue 26): none prints a protocol name that means something else.
func TestStatusesInWords(t *testing.T) {
	for _, st := range protocol.Statuses {
		w := statusWords(st, false)
		if w == "" || st == protocol.StatusMerging && w != "ready to merge" || st == protocol.StatusWaiting && w == string(st) {
			t.Errorf("%s = %q", st, w)
		}
	}
	if w := statusWords(protocol.StatusMerging, true); w != "finished, nothing to merge" {
		t.Errorf("merging with nothing = %q", w)
	}
	if w := activityWords(protocol.ActivityRunningCommand); strings.Contains(w, "_") {
		t.Errorf("running_command = %q", w)
	}
	if w := queueItemWords(protocol.QueueItemHandedBack); w != "handed back to its agent" {
		t.Errorf("handedBack = %q", w)
	}
}
