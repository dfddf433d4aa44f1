package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/mcptest"
	"github.com/familiar-dev/familiar/internal/testenv"
	"github.com/familiar-dev/familiar/protocol"
)

// recorder collects a session's events and lets a test wait for one.
type recorder struct {
	mu      sync.Mutex
	events  []agent.Event
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) add(ev agent.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.Kind == agent.EventOutput {
		return // many and large; the screen is checked instead
	}
	r.events = append(r.events, ev)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) all() []agent.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]agent.Event(nil), r.events...)
}

// wait returns the first event from index from on that matches, or fails.
func (r *recorder) wait(t testing.TB, from int, what string, match func(agent.Event) bool) (agent.Event, int) {
	t.Helper()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for i := from; i < len(r.events); i++ {
			if match(r.events[i]) {
				ev := r.events[i]
				r.mu.Unlock()
				return ev, i + 1
			}
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; events:\n%s", what, dump(r.all()))
		}
	}
}

func dump(evs []agent.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		j, _ := json.Marshal(ev)
		fmt.Fprintf(&b, "  %s\n", j)
	}
	return b.String()
}

func isKind(k agent.EventKind) func(agent.Event) bool {
	return func(ev agent.Event) bool { return ev.Kind == k }
}

func isQuestion(kind protocol.QuestionKind) func(agent.Event) bool {
	return func(ev agent.Event) bool { return ev.Kind == agent.EventQuestion && ev.Question.Kind == kind }
}

func turnEnded(ev agent.Event) bool {
	return ev.Kind == agent.EventTurnEnded && ev.Turn.BackgroundTasks == 0
}

type harness struct {
	t    testing.TB
	api  *fakeapi.Server
	repo string
	sess *agent.Session
	rec  *recorder
}

func gitRepo(t testing.TB) string { return testenv.GitRepo(t, nil) }

// start runs the real claude against a fake API with the given driver.
func start(t *testing.T, driver, prompt string) *harness {
	t.Helper()
	return startWith(t, driver, prompt, nil)
}

func startWith(t testing.TB, driver, prompt string, edit func(*agent.Options)) *harness {
	t.Helper()
	return startScript(t, fakeapi.PromptScript(), driver, prompt, edit)
}

// startScript is startWith with the fake API answering from script. Every
// session gets a fake HOME (the user's own claude config is read from it).
func startScript(t testing.TB, script fakeapi.Script, driver, prompt string, edit func(*agent.Options)) *harness {
	t.Helper()
	claude := testenv.Claude(t)
	api := fakeapi.Start(script)
	t.Cleanup(api.Close)
	hooks, err := agent.NewHookServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hooks.Close() })
	h := &harness{t: t, api: api, repo: gitRepo(t), rec: newRecorder()}
	cfgDir := t.TempDir()
	opts := agent.Options{
		CLI:           agent.CLI{Path: claude, Version: claudeVersion(t, claude)},
		Driver:        driver,
		Dir:           h.repo,
		RepoRoot:      h.repo,
		ConfigDir:     cfgDir,
		LogPath:       filepath.Join(t.TempDir(), "out.log"),
		Prompt:        prompt,
		ExtraEnv:      withHome(api.Env(), t.TempDir()),
		Hooks:         hooks,
		ConfirmWithin: 5 * time.Second,
		GraceTimeout:  5 * time.Second,
		OnEvent:       h.rec.add,
	}
	if edit != nil {
		edit(&opts)
	}
	sess, err := agent.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	h.sess = sess
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sess.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return h
}

var (
	versionsMu sync.Mutex
	versions   = map[string]string{}
)

// claudeVersion is the version of the claude under test, read once per
// binary: the matrix (.ci/run-versions) runs these tests on several, and
// what familiar subscribes to depends on it.
func claudeVersion(t testing.TB, path string) string {
	t.Helper()
	versionsMu.Lock()
	defer versionsMu.Unlock()
	if v, ok := versions[path]; ok {
		return v
	}
	cli, err := agent.FindCLI(context.Background(), path, "")
	if err != nil {
		t.Fatalf("claude under test: %v", err)
	}
	versions[path] = cli.Version
	return cli.Version
}

func withHome(env map[string]string, home string) map[string]string {
	env["HOME"] = home
	return env
}

func (h *harness) exists(name string) bool {
	_, err := os.Stat(filepath.Join(h.repo, name))
	return err == nil
}

func drivers(t *testing.T, f func(t *testing.T, driver string)) {
	for _, d := range []string{agent.DriverPTY, agent.DriverStream} {
		t.Run(d, func(t *testing.T) { f(t, d) })
	}
}

func TestPermissionAllow(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		h := start(t, driver, "make a file\n@@TOOL Bash {\"command\":\"touch allowed.txt\",\"description\":\"make it\"}\n@@TEXT Made it.")
		ev, next := h.rec.wait(t, 0, "permission question", isQuestion(agent.KindPermission))
		q := ev.Question
		if q.Tool != "Bash" || !strings.Contains(string(q.Input), "touch allowed.txt") {
			t.Fatalf("question = %+v", q)
		}
		if err := h.sess.Answer(q.ID, agent.Answer{OptionID: agent.OptionAllow}); err != nil {
			t.Fatal(err)
		}
		ev, _ = h.rec.wait(t, next, "turn end", turnEnded)
		if ev.Turn.LastMessage != "Made it." {
			t.Errorf("last message = %q", ev.Turn.LastMessage)
		}
		if !h.exists("allowed.txt") {
			t.Error("the allowed command did not run")
		}
	})
}

func TestPermissionDenyWithText(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		h := start(t, driver, "make a file\n@@TOOL Bash {\"command\":\"touch denied.txt\"}\n@@TEXT Fine.")
		ev, next := h.rec.wait(t, 0, "permission question", isQuestion(agent.KindPermission))
		if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: agent.OptionDeny, Text: "use the Write tool instead"}); err != nil {
			t.Fatal(err)
		}
		h.rec.wait(t, next, "turn end", turnEnded)
		if h.exists("denied.txt") {
			t.Error("the denied command ran")
		}
		reqs := h.api.MainRequests()
		last := reqs[len(reqs)-1]
		found := false
		for _, b := range last.ToolResults() {
			if strings.Contains(b.Content, "use the Write tool instead") && b.IsError {
				found = true
			}
		}
		if !found {
			t.Errorf("the deny text did not reach the model: %+v", last.ToolResults())
		}
	})
}

func TestPermissionAllowAlways(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		prompt := "twice\n@@TOOL Bash {\"command\":\"touch always.txt\"}\n@@TEXT Once."
		h := start(t, driver, prompt)
		first, next := h.rec.wait(t, 0, "permission question", isQuestion(agent.KindPermission))
		if err := h.sess.Answer(first.Question.ID, agent.Answer{OptionID: agent.OptionAllowAlways}); err != nil {
			t.Fatal(err)
		}
		_, next = h.rec.wait(t, next, "turn end", turnEnded)
		if err := os.Remove(filepath.Join(h.repo, "always.txt")); err != nil {
			t.Fatalf("first run did not create the file: %v", err)
		}
		if err := h.sess.SendPrompt("again\n@@TOOL Bash {\"command\":\"touch always.txt\"}\n@@TEXT Twice."); err != nil {
			t.Fatal(err)
		}
		ev, _ := h.rec.wait(t, next, "second turn end", func(ev agent.Event) bool {
			return turnEnded(ev) || ev.Kind == agent.EventQuestion
		})
		if ev.Kind == agent.EventQuestion {
			t.Fatalf("asked again after allow always: %+v", ev.Question)
		}
		if !h.exists("always.txt") {
			t.Error("second run did not create the file")
		}
		// The grant named its rule, and it was only that rule: the CLI's
		// suggestion to switch to accept-edits was not taken, so a write
		// is still asked about.
		if q := first.Question; q.Options[1].Rule != "Bash(touch always.txt)" || !strings.Contains(q.Options[1].Label, "Bash(touch always.txt)") {
			t.Errorf("allow-always option = %+v", q.Options[1])
		}
		_, next = h.rec.wait(t, next, "second turn end", turnEnded)
		if err := h.sess.SendPrompt("write\n@@TOOL Write {\"file_path\":\"w.txt\",\"content\":\"x\"}\n@@TEXT Wrote."); err != nil {
			t.Fatal(err)
		}
		ev, _ = h.rec.wait(t, next, "write asked", func(ev agent.Event) bool {
			return turnEnded(ev) || ev.Kind == agent.EventQuestion
		})
		if ev.Kind != agent.EventQuestion || ev.Question.Tool != "Write" {
			t.Fatalf("a write after allow-always of a command was not asked: %+v", ev)
		}
		if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: agent.OptionDeny}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWritePermission(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		h := start(t, driver, "write\n@@TOOL Write {\"file_path\":\"new.txt\",\"content\":\"hello\\n\"}\n@@TEXT Written.")
		ev, next := h.rec.wait(t, 0, "permission question", isQuestion(agent.KindPermission))
		if ev.Question.Tool != "Write" {
			t.Fatalf("tool = %q", ev.Question.Tool)
		}
		if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: agent.OptionAllow}); err != nil {
			t.Fatal(err)
		}
		h.rec.wait(t, next, "turn end", turnEnded)
		b, err := os.ReadFile(filepath.Join(h.repo, "new.txt"))
		if err != nil || string(b) != "hello\n" {
			t.Fatalf("new.txt = %q, %v", b, err)
		}
	})
}

func TestAskUserQuestion(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		input := `{"questions":[{"question":"Which database?","header":"DB","multiSelect":false,"options":[{"label":"Postgres","description":"Relational"},{"label":"SQLite","description":"Embedded"}]}]}`
		h := start(t, driver, "choose\n@@TOOL AskUserQuestion "+input+"\n@@TEXT Noted.")
		ev, next := h.rec.wait(t, 0, "choice question", isQuestion(agent.KindChoice))
		q := ev.Question
		if q.Text != "Which database?" || len(q.Options) != 2 {
			t.Fatalf("question = %+v", q)
		}
		if err := h.sess.Answer(q.ID, agent.Answer{OptionID: q.Options[1].ID}); err != nil {
			t.Fatal(err)
		}
		h.rec.wait(t, next, "turn end", turnEnded)
		reqs := h.api.MainRequests()
		last := reqs[len(reqs)-1]
		var got string
		for _, b := range last.ToolResults() {
			got += b.Content
		}
		if !strings.Contains(got, `"Which database?"="SQLite"`) {
			t.Errorf("answer did not reach the model: %q", got)
		}
	})
}

// A multi-select question says so, takes several option ids joined with
// ",", refuses an unknown one among them, and the model gets the labels.
func TestAskUserQuestionMultiSelect(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		input := `{"questions":[{"question":"Which features?","header":"Features","multiSelect":true,"options":[{"label":"Auth","description":"Login"},{"label":"Search","description":"Full text"},{"label":"Export","description":"CSV"}]}]}`
		h := start(t, driver, "choose\n@@TOOL AskUserQuestion "+input+"\n@@TEXT Noted.")
		ev, next := h.rec.wait(t, 0, "choice question", isQuestion(agent.KindChoice))
		q := ev.Question
		if !q.MultiSelect || len(q.Options) != 3 {
			t.Fatalf("question = %+v, want multiSelect with 3 options", q)
		}
		if err := h.sess.Answer(q.ID, agent.Answer{OptionID: q.Options[0].ID + ",9"}); !errors.Is(err, agent.ErrBadAnswer) {
			t.Fatalf("an unknown option among several: err = %v, want ErrBadAnswer", err)
		}
		if err := h.sess.Answer(q.ID, agent.Answer{OptionID: q.Options[0].ID + "," + q.Options[2].ID}); err != nil {
			t.Fatal(err)
		}
		h.rec.wait(t, next, "turn end", turnEnded)
		reqs := h.api.MainRequests()
		var got string
		for _, b := range reqs[len(reqs)-1].ToolResults() {
			got += b.Content
		}
		if !strings.Contains(got, `"Which features?"="Auth, Export"`) {
			t.Errorf("answer did not reach the model: %q", got)
		}
	})
}

func TestProseQuestion(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		h := start(t, driver, "ask me\n@@TEXT I can do A or B. Which one do you prefer?")
		ev, _ := h.rec.wait(t, 0, "prose question", isQuestion(agent.KindQuestion))
		if !ev.Question.AllowText || !strings.Contains(ev.Question.Text, "Which one") {
			t.Fatalf("question = %+v", ev.Question)
		}
		if err := h.sess.Answer(ev.Question.ID, agent.Answer{Text: "B please"}); err != nil {
			t.Fatal(err)
		}
		if _, ok := h.api.WaitFor(func(reqs []fakeapi.Request) bool {
			for _, r := range reqs {
				if strings.Contains(r.LastUserText(), "B please") {
					return true
				}
			}
			return false
		}, 60*time.Second); !ok {
			t.Fatal("the answer never reached the model")
		}
	})
}

func TestActivitySequence(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		h := start(t, driver, "run\n@@TOOL Bash {\"command\":\"touch act.txt\"}\n@@TEXT Ran.")
		ev, next := h.rec.wait(t, 0, "permission question", isQuestion(agent.KindPermission))
		if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: agent.OptionAllow}); err != nil {
			t.Fatal(err)
		}
		h.rec.wait(t, next, "turn end", turnEnded)
		var seq []string
		for _, ev := range h.rec.all() {
			if ev.Kind == agent.EventActivity {
				if len(seq) == 0 || seq[len(seq)-1] != string(ev.Activity.State) {
					seq = append(seq, string(ev.Activity.State))
				}
			}
		}
		got := strings.Join(seq, " → ")
		if !strings.Contains(got, "thinking → running_command → thinking → idle") {
			t.Errorf("activity sequence = %s", got)
		}
	})
}

func TestMCPToolPermission(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	drivers(t, func(t *testing.T, driver string) {
		cfg := filepath.Join(t.TempDir(), "mcp.json")
		b, _ := json.Marshal(mcptest.Config(exe))
		if err := os.WriteFile(cfg, b, 0o600); err != nil {
			t.Fatal(err)
		}
		var h *harness
		marker := filepath.Join(t.TempDir(), "marker.txt")
		h = startWith(t, driver, "mark\n@@TOOL mcp__study__write_marker {\"path\":\""+marker+"\"}\n@@TEXT Marked.", func(o *agent.Options) {
			o.MCPConfigPath = cfg
		})
		ev, next := h.rec.wait(t, 0, "permission question", isQuestion(agent.KindPermission))
		if ev.Question.Tool != "mcp__study__write_marker" {
			t.Fatalf("tool = %q", ev.Question.Tool)
		}
		if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: agent.OptionAllow}); err != nil {
			t.Fatal(err)
		}
		h.rec.wait(t, next, "turn end", turnEnded)
		if b, err := os.ReadFile(marker); err != nil || string(b) != "marker" {
			t.Fatalf("marker = %q, %v", b, err)
		}
	})
}

func isResolved(by string) func(agent.Event) bool {
	return func(ev agent.Event) bool { return ev.Kind == agent.EventQuestionResolved && ev.Resolved.By == by }
}

// A person answers the permission dialog in the terminal: the CLI ignores the
// held hook from then on, so familiar must notice and release it.
func TestPTYAnsweredInTerminal(t *testing.T) {
	h := start(t, agent.DriverPTY, "make\n@@TOOL Bash {\"command\":\"touch typed.txt\"}\n@@TEXT Typed.")
	ev, next := h.rec.wait(t, 0, "permission question", isQuestion(agent.KindPermission))
	// Wait until the dialog is on screen before typing into it.
	waitScreen(t, h.sess, "Do you want to proceed?")
	if err := h.sess.Input([]byte("1")); err != nil {
		t.Fatal(err)
	}
	res, _ := h.rec.wait(t, next, "resolved in terminal", isResolved("terminal"))
	if res.Resolved.QuestionID != ev.Question.ID {
		t.Errorf("resolved %s, want %s", res.Resolved.QuestionID, ev.Question.ID)
	}
	h.rec.wait(t, next, "turn end", turnEnded)
	if !h.exists("typed.txt") {
		t.Error("the command answered in the terminal did not run")
	}
	if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: agent.OptionAllow}); err == nil {
		t.Error("answering a question resolved in the terminal succeeded")
	}
}

// Esc in the dialog interrupts the turn; no hook fires, the screen says so.
func TestPTYInterrupted(t *testing.T) {
	h := start(t, agent.DriverPTY, "make\n@@TOOL Bash {\"command\":\"touch never.txt\"}\n@@TEXT Never.")
	_, next := h.rec.wait(t, 0, "permission question", isQuestion(agent.KindPermission))
	waitScreen(t, h.sess, "Do you want to proceed?")
	if err := h.sess.Interrupt(); err != nil {
		t.Fatal(err)
	}
	h.rec.wait(t, next, "resolved by the agent", isResolved("agent"))
	// Up to 2.1.200, Esc on a permission goes back to the prompt without
	// asking (agent/screen/testdata/2.1.200/interrupted-permission.none):
	// familiar asks in its place, so every version ends the turn the same.
	ev, _ := h.rec.wait(t, next, "interrupted question", isQuestion(agent.KindQuestion))
	if !strings.Contains(ev.Question.Text, "Interrupted") {
		t.Errorf("question text = %q", ev.Question.Text)
	}
	if h.exists("never.txt") {
		t.Error("the interrupted command ran")
	}
}

func waitScreen(t *testing.T, s *agent.Session, text string) {
	t.Helper()
	// The screen has no change notification for tests; poll.
	if !testenv.Eventually(30*time.Second, func() bool { return strings.Contains(s.Screen().String(), text) }) {
		t.Fatalf("screen never showed %q:\n%s", text, s.Screen().String())
	}
}

// A person edits the command before allowing it: the edited one runs.
func TestAllowWithUpdatedInput(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		h := start(t, driver, "make\n@@TOOL Bash {\"command\":\"touch original.txt\"}\n@@TEXT Done.")
		ev, next := h.rec.wait(t, 0, "permission question", isQuestion(agent.KindPermission))
		if err := h.sess.Answer(ev.Question.ID, agent.Answer{OptionID: agent.OptionAllow,
			UpdatedInput: json.RawMessage(`{"command":"touch modified.txt"}`)}); err != nil {
			t.Fatal(err)
		}
		h.rec.wait(t, next, "turn end", turnEnded)
		if !h.exists("modified.txt") || h.exists("original.txt") {
			t.Errorf("modified ran: %v, original ran: %v", h.exists("modified.txt"), h.exists("original.txt"))
		}
	})
}

// TestInterruptedTurnEnds: no Stop fires on an interrupted turn; the turn is
// seen as ended all the same, on every supported claude (2.1.200 shows only
// the idle prompt again, newer ones "Interrupted"), and the session takes
// the next prompt.
func TestInterruptedTurnEnds(t *testing.T) {
	h := start(t, agent.DriverPTY, "make\n@@TOOL Bash {\"command\":\"touch never.txt\"}\n@@TEXT Never.")
	_, next := h.rec.wait(t, 0, "permission question", isQuestion(agent.KindPermission))
	// The Esc goes to a claude that shows its dialog: one that has not
	// drawn yet can miss it.
	waitScreen(t, h.sess, "Do you want to proceed?")
	if err := h.sess.Interrupt(); err != nil {
		t.Fatal(err)
	}
	ev, next := h.rec.wait(t, next, "interrupted question", isQuestion(agent.KindQuestion))
	if !strings.Contains(ev.Question.Text, "Interrupted") {
		t.Errorf("question text = %q", ev.Question.Text)
	}
	if !h.rec.sawActivity(agent.ActivityIdle, "interrupted") {
		t.Error("the activity did not go idle (interrupted)")
	}
	// An interrupt before any answer puts the prompt back into claude's
	// input box: the reply must not join it.
	if err := h.sess.Answer(ev.Question.ID, agent.Answer{Text: "say hi instead\n@@TEXT Hi instead."}); err != nil {
		t.Fatal(err)
	}
	ev, _ = h.rec.wait(t, next, "the next turn's end", turnEnded)
	if ev.Turn.LastMessage != "Hi instead." {
		t.Errorf("last message = %q", ev.Turn.LastMessage)
	}
}

// TestPromptAfterEarlyInterruptStandsAlone: Esc before the turn produced
// anything puts the prompt back into claude's input box a moment after the
// idle prompt shows (interrupted-early); the next prompt is typed into an
// empty box, not after it, however soon it comes (the VS Code chat scenario
// saw "slow 4 … slow 5 … After the stop." reach the model as one message).
func TestPromptAfterEarlyInterruptStandsAlone(t *testing.T) {
	first := "slow 1\n@@DELAY 60s\n@@TEXT never said 1."
	h := start(t, agent.DriverPTY, first)
	next := 0
	prompts := []string{first}
	for i := 2; i <= 4; i++ {
		waitScreen(t, h.sess, "esc to interrupt")
		if err := h.sess.Interrupt(); err != nil {
			t.Fatal(err)
		}
		if !testenv.Eventually(20*time.Second, func() bool { return h.rec.has(next, isQuestion(agent.KindQuestion)) }) {
			t.Fatalf("no end after interrupt %d; screen:\n%s", i, h.sess.Screen().String())
		}
		_, next = h.rec.wait(t, next, "the interrupted turn's end", isQuestion(agent.KindQuestion))
		p := fmt.Sprintf("slow %d\n@@DELAY 60s\n@@TEXT never said %d.", i, i)
		if i == 4 {
			p = "After the stop.\n@@TEXT Going on."
		}
		prompts = append(prompts, p)
		if err := h.sess.SendPrompt(p); err != nil {
			t.Fatal(err)
		}
		if _, ok := h.api.WaitFor(func(rs []fakeapi.Request) bool {
			for _, r := range rs {
				if strings.Contains(r.LastUserText(), strings.SplitN(p, "\n", 2)[0]) {
					return true
				}
			}
			return false
		}, 60*time.Second); !ok {
			t.Fatalf("the model never received %q", p)
		}
	}
	ev, _ := h.rec.wait(t, next, "the last turn's end", turnEnded)
	if ev.Turn.LastMessage != "Going on." {
		t.Errorf("last message = %q", ev.Turn.LastMessage)
	}
	for _, r := range h.api.MainRequests() {
		got := r.LastUserText()
		if !slices.Contains(prompts, got) {
			t.Errorf("the model received %q, not one of the prompts typed", got)
		}
	}
}

func (r *recorder) has(from int, match func(agent.Event) bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := from; i < len(r.events); i++ {
		if match(r.events[i]) {
			return true
		}
	}
	return false
}

func (r *recorder) sawActivity(state protocol.Activity, detail string) bool {
	for _, ev := range r.all() {
		if ev.Kind == agent.EventActivity && ev.Activity.State == state && ev.Activity.Detail == detail {
			return true
		}
	}
	return false
}

// A first prompt too long for claude's command line (over 100 KiB) reaches
// the model whole under both drivers: typed as a bracketed paste once the
// PTY's prompt is ready, a stream-json line on the stream.
func TestLongFirstPromptArrivesWhole(t *testing.T) {
	drivers(t, func(t *testing.T, driver string) {
		pad := strings.Repeat("lorem ipsum dolor sit amet ", 4000) // 108,000 bytes
		prompt := "read this\n" + pad + "\nEND-OF-PROMPT\n@@TEXT Read it all."
		h := start(t, driver, prompt)
		ev, _ := h.rec.wait(t, 0, "turn end", turnEnded)
		if ev.Turn.Failed || !strings.Contains(ev.Turn.LastMessage, "Read it all.") {
			t.Fatalf("turn = %+v", ev.Turn)
		}
		var got string
		for _, r := range h.api.MainRequests() {
			if s := r.LastUserText(); strings.Contains(s, "read this") {
				got = s
			}
		}
		if !strings.Contains(got, pad) || !strings.Contains(got, "END-OF-PROMPT") {
			t.Errorf("the model got %d bytes of the %d-byte prompt", len(got), len(prompt))
		}
	})
}
