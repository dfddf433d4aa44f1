package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/batch"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// familiarCmd runs the familiar main (this test binary) in dir.
func familiarCmd(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), mainEnv+"=1",
		"XDG_STATE_HOME="+filepath.Join(state, "state"), "XDG_DATA_HOME="+filepath.Join(state, "data"))
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func apiEnv(api *fakeapi.Server) []string {
	var env []string
	for k, v := range api.Env() {
		env = append(env, k+"="+v)
	}
	return env
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

func TestRunJSONReport(t *testing.T) {
	claude := testenv.Claude(t)
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	tasks := filepath.Join(t.TempDir(), "tasks.yaml")
	os.WriteFile(tasks, []byte(`settings:
  concurrency: 2
  approvalTimeoutSec: 5
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
`), 0o644)
	cmd := familiarCmd(t, repo, append(apiEnv(api), "FAMILIAR_CLAUDE="+claude), "run", "--json", tasks)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if code := exitCode(err); code != batch.ExitFailed {
		t.Fatalf("exit code %d, want %d (one task blocked)\nstdout:\n%s\nstderr:\n%s", code, batch.ExitFailed, out, stderr.String())
	}
	var rep batch.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out)
	}
	if len(rep.Tasks) != 2 || rep.OK {
		t.Fatalf("report = %+v", rep)
	}
	ok, blocked := rep.Tasks[0], rep.Tasks[1]
	if ok.Status != "merging" || ok.Summary != "Touched ok.txt." || len(ok.ChangedFiles) != 1 || len(ok.Commits) != 1 || ok.Line != 9 {
		t.Errorf("first task = %+v", ok)
	}
	if blocked.Status != "blocked" || blocked.Blocked == nil || !strings.Contains(blocked.Blocked.Detail, "not allowed to delete") {
		t.Errorf("second task = %+v", blocked)
	}
	if _, err := os.Stat(filepath.Join(repo, "README.md")); err != nil {
		t.Error("the denied rm ran in the user's checkout")
	}
	if strings.Contains(stderr.String(), fakeapi.APIKey) {
		t.Error("the API key appeared in familiar's logs")
	}
}

func TestRunExitsZeroWhenAllFinish(t *testing.T) {
	claude := testenv.Claude(t)
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	tasks := filepath.Join(t.TempDir(), "tasks.json")
	os.WriteFile(tasks, []byte(`{"tasks":[{"title":"Say hi","description":"hi\n@@TEXT Hi."}]}`), 0o644)
	cmd := familiarCmd(t, repo, append(apiEnv(api), "FAMILIAR_CLAUDE="+claude), "run", tasks)
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != batch.ExitOK {
		t.Fatalf("exit code %d\n%s", code, out)
	}
	if !strings.Contains(string(out), "all tasks finished") {
		t.Errorf("output:\n%s", out)
	}
}

func TestRunBadFilePointsAtTheLine(t *testing.T) {
	repo := gitRepo(t)
	dir := t.TempDir()
	for name, tc := range map[string]struct{ body, want string }{
		"missing-title.yaml": {"tasks:\n  - description: no title here\n", "missing-title.yaml:2:"},
		"typo.yaml":          {"tasks:\n  - title: t\n    description: d\n    priorty: 2\n", "typo.yaml:4:"},
		"bad-type.yaml":      {"tasks:\n  - title: t\n    description: d\n    priority: high\n", "bad-type.yaml:4:"},
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(tc.body), 0o644)
		cmd := familiarCmd(t, repo, nil, "run", path)
		out, err := cmd.CombinedOutput()
		if code := exitCode(err); code != batch.ExitBadInput || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: exit %d, output %q (want %q)", name, code, out, tc.want)
		}
	}
}

func TestDoctorSaysClaudeIsMissing(t *testing.T) {
	cmd := familiarCmd(t, t.TempDir(), []string{"PATH=" + filepath.Dir(gitPath(t)), "FAMILIAR_CLAUDE=", "FAMILIAR_TOOLS_DIR=" + t.TempDir()}, "doctor")
	out, err := cmd.CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), "claude not found") || !strings.Contains(string(out), "npm install") {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
}

func gitPath(t *testing.T) string { return testenv.Git(t) }

// TestRunUnderClaudeBackgroundJob: familiar started from inside one of Claude
// Code's own background jobs (claude --bg sets these variables) passes none
// of them on, so the CLI's isolation guard does not take familiar's
// worktrees for an unisolated background session and refuse the edits
// ("This background session hasn't isolated its changes yet", issue 27).
func TestRunUnderClaudeBackgroundJob(t *testing.T) {
	claude := testenv.Claude(t)
	api := fakeapi.Start(fakeapi.PromptScript())
	defer api.Close()
	repo := gitRepo(t)
	jobDir := filepath.Join(t.TempDir(), "jobs", "j1")
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		t.Fatal(err)
	}
	envOut := filepath.Join(t.TempDir(), "env.txt")
	tasks := filepath.Join(t.TempDir(), "tasks.yaml")
	// sandbox off: the command writes the environment it sees outside the
	// worktree, which the sandbox would refuse (issue 37).
	os.WriteFile(tasks, []byte(`settings:
  sandbox: "off"
  permissionPolicy:
    default: allow
tasks:
  - title: Edit files
    description: |
      edit them
      @@TOOL Write {"file_path":"notes.txt","content":"one\n"}
      @@TOOL Edit {"file_path":"notes.txt","old_string":"one","new_string":"two"}
      @@TOOL Bash {"command":"env > `+envOut+`"}
      @@TEXT Edited notes.txt.
`), 0o644)
	env := append(apiEnv(api), "FAMILIAR_CLAUDE="+claude,
		"CLAUDE_JOB_DIR="+jobDir, "CLAUDE_CODE_SESSION_KIND=bg", "CLAUDE_BG_ISOLATION=worktree",
		"CLAUDE_BG_SOURCE=cli", "CLAUDE_BG_BACKEND=daemon", "CLAUDE_CODE_SESSION_NAME=job",
		"CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS=00000000-0000-0000-0000-000000000001")
	cmd := familiarCmd(t, repo, env, "run", "--json", tasks)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if code := exitCode(err); code != batch.ExitOK {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	var rep batch.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out)
	}
	if len(rep.Tasks) != 1 || rep.Tasks[0].Summary != "Edited notes.txt." || len(rep.Tasks[0].ChangedFiles) != 1 {
		t.Fatalf("report = %+v", rep)
	}
	// What the agent's commands see: none of the job's variables.
	seen, err := os.ReadFile(envOut)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(seen), "\n") {
		if k, _, _ := strings.Cut(line, "="); k == "CLAUDE_JOB_DIR" || k == "CLAUDE_CODE_SESSION_KIND" || strings.HasPrefix(k, "CLAUDE_BG_") {
			t.Errorf("the agent inherited %s", line)
		}
	}
	// A claude that took itself for the job writes the job's state there.
	if ents, _ := os.ReadDir(jobDir); len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("claude wrote into the background job's folder: %v", names)
	}
	for _, r := range api.Requests() {
		if strings.Contains(string(r.Raw), "isolated its changes") {
			t.Fatalf("claude refused an edit as an unisolated background session:\n%s", r.Raw)
		}
	}
}
