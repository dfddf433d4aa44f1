package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/internal/editor"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/protocol"
)

// An agent's Bash command that writes outside its worktree (../outside.txt,
// and a path climbing from /tmp into HOME) is refused by claude's sandbox
// with sandbox on (the default): nothing is written, and the agent is told.
// With sandbox off the same command writes, and the task says it runs
// unconfined. The real claude, the scripted Messages API, the background
// familiar; the policy allows every call, so only the sandbox stands in
// the way.
func TestSandboxConfinesBashToTheWorktree(t *testing.T) {
	needSandbox(t)
	for _, mode := range []string{protocol.SandboxOn, protocol.SandboxOff} {
		t.Run(mode, func(t *testing.T) {
			repo := gitRepo(t)
			home := t.TempDir()
			// $HOME reached through /tmp/..: outside the worktree too.
			viaTmp := filepath.Join(os.TempDir(), "..", strings.TrimPrefix(home, "/"), "x.txt")
			command := "echo out > ../outside.txt; echo home > " + viaTmp + "; echo in > inside.txt; ls"
			api := fakeapi.Start(fakeapi.Sequence(
				fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{"command": command, "description": "write files"}}}},
				fakeapi.Reply{Text: "Wrote what I could."},
			))
			defer api.Close()
			c := startFamiliar(t, repo, api).client
			settings := map[string]any{"permissionPolicy": map[string]any{"default": "allow"}, "sandbox": mode}
			c.Result("initialize", map[string]any{"workspaceRoot": repo, "settings": settings}, nil)
			var task protocol.Task
			c.Result("task/create", map[string]any{"title": "write", "description": "Write the files."}, &task)
			c.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))
			c.Result("task/get", map[string]any{"id": task.ID}, &task)
			wt := task.Worktree.Path
			outside := filepath.Join(filepath.Dir(wt), "outside.txt")
			_, outErr := os.Stat(outside)
			_, homeErr := os.Stat(filepath.Join(home, "x.txt"))
			_, inErr := os.Stat(filepath.Join(wt, "inside.txt"))
			var result string
			for _, r := range api.MainRequests() {
				for _, m := range r.Messages {
					for _, b := range m.Content {
						if b.Type == "tool_result" {
							result = b.Content
						}
					}
				}
			}
			t.Logf("sandbox %s: tool result %q; agent %+v", mode, result, task.Agent)
			if inErr != nil {
				t.Errorf("sandbox %s: inside.txt was not written in the worktree: %v", mode, inErr)
			}
			switch mode {
			case protocol.SandboxOn:
				if outErr == nil || homeErr == nil {
					t.Errorf("sandbox on: written outside the worktree: ../outside.txt %v, %s %v", outErr == nil, viaTmp, homeErr == nil)
				}
				if !strings.Contains(strings.ToLower(result), "read-only file system") && !strings.Contains(result, "ermission denied") && !strings.Contains(result, "Operation not permitted") {
					t.Errorf("sandbox on: the agent was not told the write was refused: %q", result)
				}
				if task.Agent == nil || task.Agent.Unconfined != "" {
					t.Errorf("sandbox on: the task says it runs unconfined: %+v", task.Agent)
				}
			case protocol.SandboxOff:
				if outErr != nil || homeErr != nil {
					t.Errorf("sandbox off: not written outside: ../outside.txt %v, %s %v", outErr, viaTmp, homeErr)
				}
				if task.Agent == nil || !strings.Contains(task.Agent.Unconfined, "sandbox: off") {
					t.Errorf("sandbox off: the task does not say it runs unconfined: %+v", task.Agent)
				}
				// Off is the default (DESIGN.md): the task says it, and no
				// warning per task start buries the editor.
				if slices.ContainsFunc(c.Notifications(), editor.Method("server/message", `"level":"warning"`, "runs unconfined")) {
					t.Error("sandbox off: a warning per task that it runs unconfined")
				}
			}
			c.Result("shutdown", nil, nil)
			c.Notify("exit", nil)
		})
	}
}

// TestSandboxRequiredRefusesToStart: with sandbox required and no sandbox
// on the machine (no bwrap on PATH), the task does not start, and says why.
func TestSandboxRequiredRefusesToStart(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux: the check looks for bubblewrap on PATH")
	}
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	// A PATH with git and the claude CLI's node but no bwrap or socat.
	bin := t.TempDir()
	for _, tool := range []string{"git", "node", "sh", "bash", "env"} {
		if p, err := exec.LookPath(tool); err == nil {
			_ = os.Symlink(p, filepath.Join(bin, tool))
		}
	}
	c := startFamiliar(t, repo, api, "PATH="+bin).client
	c.Result("initialize", map[string]any{"workspaceRoot": repo, "settings": map[string]any{"sandbox": "required"}}, nil)
	var task protocol.Task
	c.Result("task/create", map[string]any{"title": "x", "description": "@@TEXT Done."}, &task)
	m, _ := c.WaitNotification(0, "the refused start", editor.Method("task/updated", task.ID, "sandbox: required"))
	if !strings.Contains(string(m.Params), "bubblewrap") {
		t.Fatalf("the refused start does not say what is missing: %s", m.Params)
	}
	c.Result("task/get", map[string]any{"id": task.ID}, &task)
	if task.Agent != nil && task.Agent.PID != 0 {
		t.Errorf("a claude was started: %+v", task.Agent)
	}
}

// TestSandboxCost measures what the sandbox costs per Bash call: 50 calls
// of `true`, allowed by the policy, with the sandbox on and off; each call
// is the time from one request to the Messages API to the next (the model's
// fake answer, claude, familiar's permission hook, the command). Run only
// when asked (FAMILIAR_SANDBOX_COST=1): it reports, it asserts nothing.
func TestSandboxCost(t *testing.T) {
	if os.Getenv("FAMILIAR_SANDBOX_COST") == "" {
		t.Skip("set FAMILIAR_SANDBOX_COST=1 to measure")
	}
	const calls = 50
	for _, mode := range []string{protocol.SandboxOff, protocol.SandboxOn, protocol.SandboxOff, protocol.SandboxOn} {
		replies := make([]fakeapi.Reply, 0, calls+1)
		for i := 0; i < calls; i++ {
			replies = append(replies, fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]string{"command": "true", "description": "nothing"}}}})
		}
		replies = append(replies, fakeapi.Reply{Text: "Done."})
		api := fakeapi.Start(fakeapi.Sequence(replies...))
		repo := gitRepo(t)
		c := startFamiliar(t, repo, api).client
		c.Result("initialize", map[string]any{"workspaceRoot": repo, "settings": map[string]any{"permissionPolicy": map[string]any{"default": "allow"}, "sandbox": mode}}, nil)
		var task protocol.Task
		c.Result("task/create", map[string]any{"title": "cost", "description": "Run true."}, &task)
		c.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))
		rs := api.MainRequests()
		var gaps []float64
		for i := 1; i < len(rs); i++ {
			gaps = append(gaps, float64(rs[i].At.Sub(rs[i-1].At).Microseconds())/1000)
		}
		slices.Sort(gaps)
		if len(gaps) > 0 {
			t.Logf("sandbox %-3s: %d calls, p50 %.1f ms, p95 %.1f ms, min %.1f, max %.1f", mode, len(gaps),
				gaps[len(gaps)/2], gaps[len(gaps)*95/100], gaps[0], gaps[len(gaps)-1])
		}
		c.Result("shutdown", nil, nil)
		c.Notify("exit", nil)
		api.Close()
	}
}

// A Bash call that asks to run outside the sandbox (dangerouslyDisableSandbox)
// in an elevated task is put to the person, not allowed by elevation; denied,
// nothing is written outside the worktree.
func TestUnsandboxedCallIsAskedEvenElevated(t *testing.T) {
	needSandbox(t)
	api := fakeapi.Start(fakeapi.Sequence(
		fakeapi.Reply{ToolUses: []fakeapi.ToolUse{{Name: "Bash", Input: map[string]any{"command": "echo out > ../escaped.txt",
			"description": "write outside", "dangerouslyDisableSandbox": true}}}},
		fakeapi.Reply{Text: "Could not."},
	))
	defer api.Close()
	repo := gitRepo(t)
	c := startFamiliar(t, repo, api).client
	c.Result("initialize", map[string]any{"workspaceRoot": repo}, nil)
	var task protocol.Task
	c.Result("task/create", map[string]any{"title": "escape", "description": "Write outside.", "directives": map[string]any{"elevated": true}}, &task)
	n, _ := c.WaitNotification(0, "the question", editor.Method("task/question", task.ID, `"kind":"permission"`, "dangerouslyDisableSandbox"))
	var qn protocol.TaskQuestionNotification
	if err := json.Unmarshal(n.Params, &qn); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Notifications() {
		if editor.Method("task/questionResolved", task.ID, `"decidedBy":"policy"`)(m) {
			t.Fatalf("the policy decided the unsandboxed call: %s", m.Params)
		}
	}
	c.Result("task/respond", map[string]any{"id": task.ID, "questionId": qn.Question.ID, "optionId": "deny"}, nil)
	c.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))
	c.Result("task/get", map[string]any{"id": task.ID}, &task)
	if _, err := os.Stat(filepath.Join(filepath.Dir(task.Worktree.Path), "escaped.txt")); err == nil {
		t.Error("the denied unsandboxed call wrote outside the worktree")
	}
	var audit protocol.AuditListResult
	c.Result("audit/list", map[string]any{"taskId": task.ID, "limit": 200}, &audit)
	found := false
	for _, e := range audit.Entries {
		found = found || strings.Contains(string(e.Data), "dangerouslyDisableSandbox")
	}
	if !found {
		t.Error("the unsandboxed call is not in the audit log")
	}
	c.Result("shutdown", nil, nil)
	c.Notify("exit", nil)
}

// needSandbox skips a test where claude has no sandbox: on Linux without
// bubblewrap and socat (.ci/run installs them), elsewhere than Linux and
// macOS. On macOS these tests run against Seatbelt: checks only a Mac can
// make.
func needSandbox(t *testing.T) {
	t.Helper()
	switch runtime.GOOS {
	case "linux":
		for _, tool := range []string{"bwrap", "socat"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("%s is not installed (apt-get install bubblewrap socat; .ci/run installs them)", tool)
			}
		}
	case "darwin":
		if _, err := os.Stat("/usr/bin/sandbox-exec"); err != nil {
			t.Skip("no sandbox-exec")
		}
	default:
		t.Skip("claude's sandbox runs on Linux and macOS")
	}
}

// A profile's network list is the only network its tasks' Bash commands
// reach: a host it does not name is refused at once (no prompt that would
// hold the task). The same command in a task of the default profile (the
// network open) reaches it.
func TestSandboxNetworkAllowList(t *testing.T) {
	needSandbox(t)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 to listen on here: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	if err := os.MkdirAll(filepath.Join(repo, ".familiar", "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".familiar", "profiles", "offline.md"),
		[]byte("---\ndescription: reaches only the local host\nnetwork: [localhost]\n---\n{{.Title}}\n\n{{.Description}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startFamiliar(t, repo, api).client
	// The sandbox is off by default (DESIGN.md): asked for here.
	c.Result("initialize", map[string]any{"workspaceRoot": repo, "settings": map[string]any{"permissionPolicy": map[string]any{"default": "allow"}, "sandbox": "on"}}, nil)
	command := "curl -sS -m 20 -o /dev/null -w 'code=%{http_code}' http://" + ln.Addr().String() + "/ || echo code=failed"
	input, _ := json.Marshal(map[string]string{"command": command, "description": "reach a host"})
	reached := map[string]string{}
	label := func(profile string) string {
		if profile == "" {
			return "open"
		}
		return profile
	}
	for _, profile := range []string{"offline", ""} {
		var task protocol.Task
		c.Result("task/create", map[string]any{"title": "net " + profile, "profile": profile,
			"description": "reach-" + label(profile) + "\n@@TOOL Bash " + string(input) + "\n@@TEXT Tried."}, &task)
		c.WaitNotification(0, "completed", editor.Method("task/completed", task.ID))
		for _, r := range api.MainRequests() {
			mine, result := false, ""
			for _, m := range r.Messages {
				for _, b := range m.Content {
					mine = mine || strings.Contains(b.Text, "reach-"+label(profile))
					if b.Type == "tool_result" {
						result = b.Content
					}
				}
			}
			if mine && result != "" {
				reached[profile] = result
			}
		}
	}
	t.Logf("network allow-list: %q; open: %q", reached["offline"], reached[""])
	if reached[""] != "code=200" {
		t.Errorf("with the network open, the host was not reached: %q", reached[""])
	}
	if !strings.HasPrefix(reached["offline"], "code=") || reached["offline"] == "code=200" {
		t.Errorf("a host the profile does not name was reached: %q", reached["offline"])
	}
	c.Result("shutdown", nil, nil)
	c.Notify("exit", nil)
}
