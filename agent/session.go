package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/errkind"
	"github.com/familiar-dev/familiar/policy"
)

// Errors callers can test for with errors.Is.
var (
	ErrNoQuestion error = errkind.New(errkind.NotFound, "no such pending question")
	ErrBadAnswer  error = errkind.New(errkind.Invalid, "answer does not fit the question")
	ErrExited           = errors.New("agent has exited")
	ErrNotReady   error = errkind.New(errkind.FailedPrecondition, "agent is not ready for input")
)

// Options configure one session.
type Options struct {
	CLI    CLI
	Driver string // DriverPTY (default) or DriverStream

	Dir       string // the worktree the agent works in
	RepoRoot  string // main repository root: trust is recorded for it
	ConfigDir string // familiar's CLAUDE_CONFIG_DIR for this session
	LogPath   string // raw output log file
	// LogFilter, if set, wraps the output log file (see procs.Config): the
	// orchestrator masks secrets there, since clients page the log.
	LogFilter func(io.Writer) io.WriteCloser
	// NoOutputEvents: the output is not sent as EventOutput. The
	// orchestrator takes the terminal from its LogFilter; copying every
	// byte once more through the event queue only to drop it cost it a
	// tenth of its CPU under a flood.
	NoOutputEvents bool

	SessionID string // "" = a new one
	Resume    bool   // resume SessionID instead of starting it
	Prompt    string // the first prompt ("" = none)

	PermissionMode     string // default "default" (the TUI's own default, auto, bypasses people)
	AppendSystemPrompt string
	AllowedTools       []string
	DisallowedTools    []string
	MCPConfigPath      string // written by package mcp; passed with --strict-mcp-config
	// NoSideload: the user's own MCP servers are not passed on either
	// (managed settings' disableSideloadFlags refuses a claude started
	// with any).
	NoSideload bool
	ExtraArgs  []string // e.g. --effort for the think directive
	// Sandbox is the "sandbox" object of claude's settings (package
	// sandbox builds it); nil leaves claude's own default, off.
	Sandbox map[string]any

	Env      []string          // base environment; nil = os.Environ()
	ExtraEnv map[string]string // wins over Env

	Cols, Rows int // PTY size; default 120×40

	// NoProgress, when positive, reports ProblemNoProgress after that long
	// without output. It is paused while a question waits on a person.
	NoProgress time.Duration
	// CommandTimeout bounds a tool command that makes no progress (writes
	// nothing, starts nothing) while it runs; the no-progress watchdog is
	// paused meanwhile. 0 = DefaultCommandTimeout. Only with NoProgress.
	CommandTimeout time.Duration
	// VerboseHooks emits every hook payload as an EventHook.
	VerboseHooks bool

	Hooks         *HookServer   // required for the PTY driver
	HookTimeout   time.Duration // how long the CLI waits on a held hook; must exceed the approval timeout (default 1 h)
	ConfirmWithin time.Duration // how long a keystroke has to show an effect (default 3 s)
	GraceTimeout  time.Duration // SIGTERM → SIGKILL
	Nice          int           // lowers the priority of claude and all it starts (procs.Config.Nice)
	// OwnSession starts a stream claude in a session of its own
	// (procs.Config.OwnSession): its own scheduling group at nice 0, not
	// the background familiar's lowered one, until LowerPriority.
	OwnSession bool
	Clock      clock.Clock
	Logger     *slog.Logger

	// OnEvent receives every event, in order, from one goroutine.
	OnEvent func(Event)
}

func (o *Options) defaults() error {
	if o.CLI.Path == "" {
		return fmt.Errorf("%w: no claude path", ErrCLIUnavailable)
	}
	if o.Driver == "" {
		o.Driver = DriverPTY
	}
	if err := checkDriver(o.Driver); err != nil {
		return err
	}
	if o.Dir == "" {
		return errors.New("agent: no working directory")
	}
	if o.RepoRoot == "" {
		o.RepoRoot = o.Dir
	}
	if o.ConfigDir == "" {
		return errors.New("agent: no config dir")
	}
	if o.SessionID == "" {
		if o.Resume {
			return errors.New("agent: resume needs a session id")
		}
		o.SessionID = NewSessionID()
	}
	if o.PermissionMode == "" {
		o.PermissionMode = "default"
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	if o.Cols <= 0 || o.Rows <= 0 {
		o.Cols, o.Rows = 120, 40
	}
	if o.HookTimeout <= 0 {
		o.HookTimeout = time.Hour
	}
	if o.ConfirmWithin <= 0 {
		o.ConfirmWithin = 3 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// commonArgs are the flags both drivers pass.
func (o *Options) commonArgs(settingsPath string) []string {
	args := []string{"--permission-mode", o.PermissionMode}
	if o.Resume {
		args = append(args, "--resume", o.SessionID)
	} else {
		args = append(args, "--session-id", o.SessionID)
	}
	if settingsPath != "" {
		args = append(args, "--settings", settingsPath)
	}
	if o.MCPConfigPath != "" {
		args = append(args, "--mcp-config", o.MCPConfigPath, "--strict-mcp-config")
	}
	if o.AppendSystemPrompt != "" {
		args = append(args, "--append-system-prompt", o.AppendSystemPrompt)
	}
	if len(o.AllowedTools) > 0 {
		args = append(args, "--allowedTools", strings.Join(o.AllowedTools, ","))
	}
	if len(o.DisallowedTools) > 0 {
		args = append(args, "--disallowedTools", strings.Join(o.DisallowedTools, ","))
	}
	return append(args, o.ExtraArgs...)
}

// prepareConfig seeds the isolated config dir and writes the settings file
// (hooks) there, mode 0600: the hook secret never appears on a command line.
func (o *Options) prepareConfig(settings map[string]any) (string, error) {
	env := SessionEnv(o.Env, o.ConfigDir, o.ExtraEnv)
	if err := SeedConfigDir(o.ConfigDir, o.RepoRoot, LookupEnv(env, "ANTHROPIC_API_KEY")); err != nil {
		return "", err
	}
	// The user's own claude configuration, below familiar's layer.
	user := UserConfigOf(o.userEnv())
	if err := layerUserConfig(o.ConfigDir, user); err != nil {
		return "", err
	}
	if servers := user.userMCPServers(o.RepoRoot); len(servers) > 0 && !o.NoSideload {
		if o.MCPConfigPath == "" {
			empty := filepath.Join(o.ConfigDir, "familiar-mcp-empty.json")
			if err := writeFileAtomic(empty, []byte(`{"mcpServers":{}}`), 0o600); err != nil {
				return "", err
			}
			o.MCPConfigPath = empty
		}
		merged, err := mergeMCPConfig(o.ConfigDir, o.MCPConfigPath, servers)
		if err != nil {
			return "", err
		}
		o.MCPConfigPath = merged
	}
	if settings == nil {
		return "", nil
	}
	b, err := json.Marshal(settings)
	if err != nil {
		return "", fmt.Errorf("settings: %w", err)
	}
	path := filepath.Join(o.ConfigDir, "familiar-settings.json")
	if err := writeFileAtomic(path, b, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// userEnv is the environment that says where the user's own claude config
// is: familiar's, with ExtraEnv over it (tests give a fake HOME there).
func (o *Options) userEnv() []string {
	env := append([]string(nil), o.Env...)
	for k, v := range o.ExtraEnv {
		env = append(env, k+"="+v)
	}
	return env
}

// pendingQuestion is a Question waiting for an answer.
type pendingQuestion struct {
	q       Question
	answers chan Answer   // buffered 1; the one answer
	gone    chan struct{} // closed when resolved some other way
	once    sync.Once

	// What the question is about, to match a later PostToolUse.
	tool  string
	input json.RawMessage
	// choices holds, for a multi-question AskUserQuestion, the full input.
	source string // "hook", "screen" or "stream"
	extra  any    // driver data (stream request id, screen options)
	// answer, when set, answers the question in the driver's own way
	// (keys for a dialog read from the screen).
	answer func(Answer) error
}

func (p *pendingQuestion) resolveElsewhere() {
	p.once.Do(func() { close(p.gone) })
}

// questions is the set of pending questions of one session.
type questions struct {
	// onCount is told how many questions are pending after each change (the
	// no-progress watchdog pauses while a person is being waited on). It is
	// called under mu and must not call back into questions.
	onCount func(n int)

	mu   sync.Mutex
	byID map[string]*pendingQuestion // guarded by mu
	seq  int                         // guarded by mu
}

func (qs *questions) add(p *pendingQuestion) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.byID == nil {
		qs.byID = map[string]*pendingQuestion{}
	}
	qs.seq++
	p.q.ID = fmt.Sprintf("q%d-%s", qs.seq, randomHex(4))
	p.answers = make(chan Answer, 1)
	p.gone = make(chan struct{})
	qs.byID[p.q.ID] = p
	if qs.onCount != nil {
		qs.onCount(len(qs.byID))
	}
}

func (qs *questions) get(id string) *pendingQuestion {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	return qs.byID[id]
}

// remove reports whether id was pending (false: someone else settled it).
func (qs *questions) remove(id string) bool {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if _, ok := qs.byID[id]; !ok {
		return false
	}
	delete(qs.byID, id)
	if qs.onCount != nil {
		qs.onCount(len(qs.byID))
	}
	return true
}

func (qs *questions) all() []*pendingQuestion {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	out := make([]*pendingQuestion, 0, len(qs.byID))
	for _, p := range qs.byID {
		out = append(out, p)
	}
	return out
}

// validate checks an answer against its question.
func validate(q Question, a Answer) error {
	if a.OptionID == "" && a.Text == "" && len(a.UpdatedInput) == 0 {
		return fmt.Errorf("%w: give an option or text", ErrBadAnswer)
	}
	if a.OptionID != "" {
		ids := []string{a.OptionID}
		if q.MultiSelect {
			ids = strings.Split(a.OptionID, ",")
		}
		for _, id := range ids {
			if !slices.ContainsFunc(q.Options, func(o Option) bool { return o.ID == id }) {
				return fmt.Errorf("%w: unknown option %q", ErrBadAnswer, id)
			}
		}
	}
	if a.OptionID == "" && a.Text != "" && !q.AllowText && q.Kind != KindPermission {
		return fmt.Errorf("%w: this question takes an option, not text", ErrBadAnswer)
	}
	if len(a.UpdatedInput) > 0 && q.Kind != KindPermission {
		return fmt.Errorf("%w: updatedInput only applies to permissions", ErrBadAnswer)
	}
	if len(a.UpdatedInput) > 0 && !json.Valid(a.UpdatedInput) {
		return fmt.Errorf("%w: updatedInput is not JSON", ErrBadAnswer)
	}
	return nil
}

// permissionOptions are the options of a permission question read from a
// hook or the stream: each allow-always names the rule it grants (package
// policy derives it), and switching to accept-edits is its own option.
func (s *Session) permissionOptions(tool string, input json.RawMessage) []Option {
	home, _ := os.UserHomeDir()
	rules := policy.GrantRules(policy.Dirs{Work: s.opts.Dir, Home: home}, tool, input)
	opts := []Option{{ID: OptionAllow, Label: "Allow once"}}
	if len(rules) == 0 {
		// No rule covers this call exactly (its input is unreadable):
		// allow-always is offered, as the protocol promises, but grants
		// nothing beyond this call, and says so.
		opts = append(opts, Option{ID: OptionAllowAlways, Label: "Allow (no rule can cover this call, so nothing is remembered)"})
	} else {
		opts = append(opts, Option{ID: OptionAllowAlways, Label: "Allow always: " + rules[0], Rule: rules[0]})
		if len(rules) > 1 {
			opts = append(opts, Option{ID: OptionAllowAlwaysExact, Label: "Allow always: " + rules[1], Rule: rules[1]})
		}
	}
	opts = append(opts, Option{ID: OptionDeny, Label: "Deny"})
	if editTool(tool) {
		opts = append(opts, Option{ID: OptionAcceptEdits, Label: "Allow, and switch this task to accept-edits mode (later file edits go through unasked)"})
	}
	return opts
}

func editTool(tool string) bool {
	switch tool {
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		return true
	}
	return false
}

// permissionOptions are the options of a permission dialog read from
// the screen, where the CLI's own second option is the allow-always.
func permissionOptions() []Option {
	return []Option{
		{ID: OptionAllow, Label: "Allow"},
		{ID: OptionAllowAlways, Label: "Allow always (this session)"},
		{ID: OptionDeny, Label: "Deny"},
	}
}

// toolActivity maps a tool call to what the agent is doing.
func toolActivity(tool string, input json.RawMessage) Activity {
	var in struct {
		Command  string `json:"command"`
		FilePath string `json:"file_path"`
		Path     string `json:"path"`
		Pattern  string `json:"pattern"`
	}
	_ = json.Unmarshal(input, &in)
	switch tool {
	case "Bash", "BashOutput", "KillShell":
		return Activity{State: ActivityRunningCommand, Detail: in.Command, Tool: tool}
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return Activity{State: ActivityWriting, Detail: in.FilePath, Tool: tool}
	default:
		d := tool
		if in.FilePath != "" {
			d += " " + in.FilePath
		} else if in.Pattern != "" {
			d += " " + in.Pattern
		}
		return Activity{State: ActivityThinking, Detail: d, Tool: tool}
	}
}

// askUserQuestionInput is the AskUserQuestion tool's input (CLAUDE-CLI.md §2.7).
type askUserQuestionInput struct {
	Questions []struct {
		Question    string `json:"question"`
		Header      string `json:"header"`
		MultiSelect bool   `json:"multiSelect"`
		Options     []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
	} `json:"questions"`
}

// choiceQuestions turns an AskUserQuestion input into one Question per
// question it asks; they are put to the person one after another.
func choiceQuestions(input json.RawMessage) ([]Question, error) {
	var in askUserQuestionInput
	if err := json.Unmarshal(input, &in); err != nil || len(in.Questions) == 0 {
		return nil, fmt.Errorf("AskUserQuestion input without questions")
	}
	out := make([]Question, 0, len(in.Questions))
	for _, q := range in.Questions {
		qq := Question{Kind: KindChoice, Text: q.Question, Tool: "AskUserQuestion", AllowText: true, MultiSelect: q.MultiSelect}
		for i, o := range q.Options {
			label := o.Label
			if o.Description != "" {
				label += " — " + o.Description
			}
			qq.Options = append(qq.Options, Option{ID: fmt.Sprintf("%d", i+1), Label: label})
		}
		out = append(out, qq)
	}
	return out, nil
}

// choiceAnswer is the string AskUserQuestion expects for one question: the
// option's label, free text, or for multi-select labels joined with ", ".
func choiceAnswer(input json.RawMessage, index int, a Answer) string {
	var in askUserQuestionInput
	_ = json.Unmarshal(input, &in)
	if index >= len(in.Questions) {
		return a.Text
	}
	q := in.Questions[index]
	if a.OptionID == "" {
		return a.Text
	}
	var labels []string
	for _, id := range strings.Split(a.OptionID, ",") {
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(id), "%d", &n); err == nil && n >= 1 && n <= len(q.Options) {
			labels = append(labels, q.Options[n-1].Label)
		}
	}
	return strings.Join(labels, ", ")
}

// withAnswers returns the AskUserQuestion input with its "answers" map set.
func withAnswers(input json.RawMessage, answers map[string]string) json.RawMessage {
	var doc map[string]any
	if err := json.Unmarshal(input, &doc); err != nil {
		doc = map[string]any{}
	}
	doc["answers"] = answers
	b, _ := json.Marshal(doc)
	return b
}

// waitAnswer blocks until the question is answered, resolved elsewhere, or ctx
// ends. ok is false when no answer came.
func waitAnswer(ctx context.Context, p *pendingQuestion) (Answer, bool) {
	select {
	case a := <-p.answers:
		return a, true
	case <-p.gone:
		return Answer{}, false
	case <-ctx.Done():
		return Answer{}, false
	}
}
