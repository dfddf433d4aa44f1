package profiles

import (
	"cmp"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// writeFile writes path (making its directory) atomically, as editors save.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(t.TempDir(), "tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// testDirs makes a workspace and points XDG_CONFIG_HOME at a fresh dir.
func testDirs(t *testing.T) (repo string, d Dirs) {
	t.Helper()
	repo = t.TempDir()
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("HOME", t.TempDir())
	d = DirsFor(repo)
	if d.Global != filepath.Join(cfg, "familiar") || d.Workspace != filepath.Join(repo, ".familiar") {
		t.Fatalf("DirsFor = %+v", d)
	}
	return repo, d
}

func profileFile(name, fm, body string) string {
	return "---\nname: " + name + "\n" + fm + "---\n" + body
}

func TestGlobalDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	if got, want := GlobalDir(), filepath.Join(home, ".config", "familiar"); got != want {
		t.Errorf("without XDG_CONFIG_HOME: %q, want %q", got, want)
	}
	t.Setenv("XDG_CONFIG_HOME", "relative/ignored")
	if got, want := GlobalDir(), filepath.Join(home, ".config", "familiar"); got != want {
		t.Errorf("relative XDG_CONFIG_HOME: %q, want %q", got, want)
	}
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	if got := GlobalDir(); got != "/cfg/familiar" {
		t.Errorf("with XDG_CONFIG_HOME: %q", got)
	}
}

func TestBuiltinsResolveByType(t *testing.T) {
	s := Builtin()
	if errs := s.Errors(); len(errs) != 0 {
		t.Fatal(errs)
	}
	for typ, want := range map[string]string{
		TypeImplement: "implement", TypeFix: "fix", TypeRefactor: "refactor",
		TypeTest: "test", TypeCustom: "default", "": "default",
	} {
		p, err := s.Resolve("", typ)
		if err != nil || p.Name != want || p.Source != SourceBuiltin {
			t.Errorf("Resolve(%q) = %v, %v; want %s", typ, p, err, want)
		}
	}
	// An explicit name wins over the type.
	if p, err := s.Resolve("refactor", TypeFix); err != nil || p.Name != "refactor" {
		t.Errorf("explicit name: %v, %v", p, err)
	}
	_, err := s.Resolve("nope", TypeFix)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown name: %v", err)
	}
	var names []string
	for _, p := range s.List() {
		names = append(names, p.Name+":"+string(p.Source)+":"+strings.Join(p.TaskTypes, ","))
		if p.Description == "" {
			t.Errorf("%s has no description", p.Name)
		}
	}
	want := []string{"default:builtin:custom", "fix:builtin:fix", "implement:builtin:implement", "refactor:builtin:refactor", "test:builtin:test"}
	if !slices.Equal(names, want) {
		t.Errorf("List = %v, want %v", names, want)
	}
}

func TestOverridePrecedence(t *testing.T) {
	_, d := testDirs(t)
	gp, wp := filepath.Join(d.Global, "profiles"), filepath.Join(d.Workspace, "profiles")
	// fix: global and workspace; the workspace wins.
	writeFile(t, filepath.Join(gp, "fix.md"), profileFile("fix", "description: global fix\n", "GLOBAL FIX {{.Title}}"))
	writeFile(t, filepath.Join(wp, "fix.md"), profileFile("fix", "description: workspace fix\n", "WORKSPACE FIX {{.Title}}"))
	// refactor: global only; it wins over the built-in, and claims its type
	// without saying so.
	writeFile(t, filepath.Join(gp, "refactor.md"), "GLOBAL REFACTOR {{.Title}}")
	// docs: a workspace profile with a new name that claims custom tasks.
	writeFile(t, filepath.Join(wp, "docs.md"), profileFile("docs", "description: docs\ntaskTypes: [custom]\nmode: auditor\n", "DOCS {{.Title}}"))
	// Files that are not profiles are ignored.
	writeFile(t, filepath.Join(wp, "README.txt"), "not a profile {{")
	writeFile(t, filepath.Join(wp, ".hidden.md"), "{{broken")

	s := Load(d)
	if errs := s.Errors(); len(errs) != 0 {
		t.Fatal(errs)
	}
	tests := []struct {
		name, typ       string
		wantName, start string
		source          Source
	}{
		{"", TypeFix, "fix", "WORKSPACE FIX", SourceWorkspace},
		{"fix", "", "fix", "WORKSPACE FIX", SourceWorkspace},
		{"", TypeRefactor, "refactor", "GLOBAL REFACTOR", SourceGlobal},
		{"", TypeCustom, "docs", "DOCS", SourceWorkspace},
		{"", TypeImplement, "implement", "You are implementing", SourceBuiltin},
		{"default", TypeCustom, "default", "You are working", SourceBuiltin},
	}
	for _, tt := range tests {
		spec, err := s.Build(Request{Context: Context{Title: "T1", Type: tt.typ}, Profile: tt.name})
		if err != nil {
			t.Errorf("%s/%s: %v", tt.name, tt.typ, err)
			continue
		}
		p, _ := s.Resolve(tt.name, tt.typ)
		if spec.Profile != tt.wantName || p.Source != tt.source || !strings.HasPrefix(spec.Prompt.Text, tt.start) {
			t.Errorf("%s/%s: profile %s (%s), prompt %.40q; want %s (%s) starting %q", tt.name, tt.typ, spec.Profile, p.Source, spec.Prompt.Text, tt.wantName, tt.source, tt.start)
		}
		if !strings.Contains(spec.Prompt.Text, "T1") {
			t.Errorf("%s/%s: the title is missing", tt.name, tt.typ)
		}
	}
	// The docs profile's mode applies when the task sets none, not when it does.
	if spec, _ := s.Build(Request{Context: Context{Title: "T", Type: TypeCustom}}); spec.Mode != ModeAuditor || spec.Flags.PermissionMode != "dontAsk" {
		t.Errorf("profile mode: %s %+v", spec.Mode, spec.Flags)
	}
	if spec, _ := s.Build(Request{Context: Context{Title: "T", Type: TypeCustom, Mode: ModeExecutor}}); spec.Mode != ModeExecutor {
		t.Errorf("task mode: %s", spec.Mode)
	}
	got := map[string]Source{}
	for _, p := range s.List() {
		got[p.Name] = p.Source
	}
	want := map[string]Source{"default": SourceBuiltin, "docs": SourceWorkspace, "fix": SourceWorkspace,
		"implement": SourceBuiltin, "refactor": SourceGlobal, "test": SourceBuiltin}
	if len(got) != len(want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	for n, src := range want {
		if got[n] != src {
			t.Errorf("List %s = %s, want %s", n, got[n], src)
		}
	}
}

func TestProfileFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		line    int
		text    string
	}{
		{"template parse error", "---\nname: p\n---\nline one\n{{.Title}}\n{{if .Title}}\nunclosed\n", 8, "unexpected EOF"},
		{"unknown function", "---\nname: p\n---\n\n{{frobnicate .Title}}\n", 5, `function "frobnicate" not defined`},
		{"unknown field", "---\nname: p\ntaskTypes: [fix]\n---\n{{.Title}}\n{{.NoSuchField}}\n", 6, "NoSuchField"},
		{"no frontmatter, bad template", "{{.Title}}\n\n{{end}}\n", 3, "unexpected {{end}}"},
		{"unknown template", "---\nname: p\n---\n{{.Title}}\n{{template \"nope\" .}}\n", 5, "nope"},
		{"long range", "---\nname: p\n---\n{{.Title}}\n{{range 1000000000}}{{end}}\n", 5, "at most"},
		{"yaml error", "---\nname: p\ndescription: [unclosed\n---\nbody", 3, "frontmatter:"},
		{"unknown key", "---\nname: p\ntaskType: fix\n---\nbody", 3, `unknown key "taskType"`},
		{"bad task type", "---\nname: p\ntaskTypes: [fix, chores]\n---\nbody", 3, `unknown task type "chores"`},
		{"bad mode", "---\nname: p\n\nmode: boss\n---\nbody", 4, `unknown mode "boss"`},
		{"bad tool rule", "---\nname: p\nallowedTools:\n  - Read\n  - \"Bash(a, b)\"\n---\nbody", 4, "not a tool rule"},
		{"bad name", "---\nname: ../etc\n---\nbody", 2, "may only use"},
		{"empty body", "---\nname: p\n---\n\n", 4, "no template"},
		{"bad network", "---\nname: p\nnetwork: [go.dev, \"*\"]\n---\nbody", 3, `network: "*" is not a domain`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d := testDirs(t)
			path := filepath.Join(d.Workspace, "profiles", "p.md")
			writeFile(t, path, tt.content)
			s := Load(d)
			errs := s.Errors()
			if len(errs) != 1 {
				t.Fatalf("errors = %v, want one", errs)
			}
			fe := errs[0]
			if fe.Path != path || fe.Line != tt.line || !strings.Contains(fe.Message, tt.text) {
				t.Fatalf("error = %q, want %s:%d containing %q", fe, path, tt.line, tt.text)
			}
			if want := path + ":" + strconv.Itoa(tt.line) + ":"; !strings.HasPrefix(fe.Error(), want) {
				t.Errorf("Error() = %q, want prefix %q", fe.Error(), want)
			}
			// Asking for it by name gives the same error; so does a task of
			// a type it could claim.
			if _, err := s.Build(Request{Context: Context{Title: "t"}, Profile: "p"}); err == nil || err.Error() != fe.Error() {
				t.Errorf("Build(p) err = %v, want %v", err, fe)
			}
			if !errors.Is(fe, ErrInvalid) {
				t.Errorf("not ErrInvalid")
			}
		})
	}
}

func TestBrokenProfileIsNotSkipped(t *testing.T) {
	_, d := testDirs(t)
	// A broken workspace fix.md must not fall back to the global or built-in fix.
	writeFile(t, filepath.Join(d.Global, "profiles", "fix.md"), "GLOBAL {{.Title}}")
	writeFile(t, filepath.Join(d.Workspace, "profiles", "fix.md"), "---\nname: fix\n---\n{{.Title}\n")
	// A profile whose frontmatter is broken may have claimed any type.
	writeFile(t, filepath.Join(d.Workspace, "profiles", "notes.md"), "---\nname: [\n---\nx")
	s := Load(d)
	if len(s.Errors()) != 2 {
		t.Fatalf("errors = %v", s.Errors())
	}
	_, err := s.Resolve("", TypeFix)
	if err == nil {
		t.Fatal("a broken fix profile resolved")
	}
	if _, err := s.Resolve("", TypeImplement); err == nil || !strings.Contains(err.Error(), "notes.md:2:") {
		t.Errorf("implement with a broken unknown profile: %v", err)
	}
	// An explicit, good profile still works.
	if p, err := s.Resolve("implement", TypeImplement); err != nil || p.Name != "implement" {
		t.Errorf("explicit: %v %v", p, err)
	}
	for _, p := range s.List() {
		if p.Name == "fix" || p.Name == "notes" {
			t.Errorf("broken profile %s listed", p.Name)
		}
	}
}

func TestDuplicateNamesInOneDirectory(t *testing.T) {
	_, d := testDirs(t)
	dir := filepath.Join(d.Workspace, "profiles")
	writeFile(t, filepath.Join(dir, "a.md"), profileFile("same", "", "A {{.Title}}"))
	writeFile(t, filepath.Join(dir, "b.md"), profileFile("same", "", "B {{.Title}}"))
	s := Load(d)
	if _, err := s.Resolve("same", ""); err == nil || !strings.Contains(err.Error(), "b.md:1: profile \"same\" is already defined in") {
		t.Fatalf("err = %v", err)
	}
}

func TestPromptOverride(t *testing.T) {
	spec, err := Builtin().Build(Request{
		Context:        Context{Title: "Rename Foo", Description: "Rename Foo to Bar.", AcceptanceCriteria: []string{"builds"}, Type: TypeRefactor},
		PromptOverride: "Do it my way. {{.NotATemplate}}",
	})
	if err != nil {
		t.Fatal(err)
	}
	text := spec.Prompt.Text
	for _, want := range []string{"Do it my way. {{.NotATemplate}}", "# Task: Rename Foo", "Rename Foo to Bar.", "- builds", `starts with "BLOCKED:"`} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "You are refactoring") {
		t.Errorf("the profile's instructions were not replaced:\n%s", text)
	}
	if !strings.HasPrefix(text, "Do it my way.") {
		t.Errorf("the override does not come first")
	}
}

func TestPlainBodyGetsTheContext(t *testing.T) {
	_, d := testDirs(t)
	writeFile(t, filepath.Join(d.Workspace, "profiles", "plain.md"), "---\ndescription: no template actions\n---\nBe brief.\n")
	writeFile(t, filepath.Join(d.Workspace, "profiles", "own.md"), "---\n---\nTitle is {{.Title | upper}}; {{join .AcceptanceCriteria \"/\"}}\n")
	s := Load(d)
	spec, err := s.Build(Request{Context: Context{Title: "Add X", AcceptanceCriteria: []string{"a", "b"}}, Profile: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(spec.Prompt.Text, "Be brief.") || !strings.Contains(spec.Prompt.Text, "# Task: Add X") {
		t.Errorf("plain body:\n%s", spec.Prompt.Text)
	}
	spec, err = s.Build(Request{Context: Context{Title: "Add X", AcceptanceCriteria: []string{"a", "b"}}, Profile: "own"})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Prompt.Text != "Title is ADD X; a/b" {
		t.Errorf("own template: %q", spec.Prompt.Text)
	}
}

func TestProfileToolsMerge(t *testing.T) {
	_, d := testDirs(t)
	writeFile(t, filepath.Join(d.Workspace, "profiles", "lint.md"),
		"---\nallowedTools: [\"Bash(make lint:*)\", Read]\ndisallowedTools: WebFetch\n---\n{{template \"context\" .}}")
	s := Load(d)
	for _, tt := range []struct {
		mode          string
		allowed, deny string
	}{
		{ModeExecutor, "Bash(make lint:*) Read", "WebFetch"},
		{ModeArchitect, "Read", "Write Edit MultiEdit NotebookEdit Bash ExitPlanMode WebFetch"},
		{ModeAuditor, "Read Grep Glob Bash(go test:*) Bash(npm test:*) Bash(pytest:*) Bash(cargo test:*) Bash(make lint:*)", "Write Edit MultiEdit NotebookEdit WebFetch"},
	} {
		spec, err := s.Build(Request{Context: Context{Title: "t", Mode: tt.mode}, Profile: "lint"})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(spec.Flags.AllowedTools, " "); got != tt.allowed {
			t.Errorf("%s allowed = %q, want %q", tt.mode, got, tt.allowed)
		}
		if got := strings.Join(spec.Flags.DisallowedTools, " "); got != tt.deny {
			t.Errorf("%s disallowed = %q, want %q", tt.mode, got, tt.deny)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	s := Builtin()
	if _, err := s.Build(Request{Context: Context{Title: "t", Mode: "boss"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad mode: %v", err)
	}
	huge := strings.Repeat("x", maxPromptBytes)
	if _, err := s.Build(Request{Context: Context{Title: "t", Description: huge}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "KiB") {
		t.Errorf("huge prompt: %v", err)
	}
	if _, err := s.Build(Request{Context: Context{Title: "t"}, PromptOverride: huge}); !errors.Is(err, ErrInvalid) {
		t.Errorf("huge override: %v", err)
	}
}

func TestCompatBuild(t *testing.T) {
	p, err := Build(Context{Title: "Fix crash", Type: TypeFix, HintFiles: []string{"a.go"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Text, "You are fixing a bug") || !strings.Contains(p.Text, "- a.go") {
		t.Errorf("prompt:\n%s", p.Text)
	}
	if !strings.HasPrefix(p.AppendSystemPrompt, Guidance) || !strings.Contains(p.AppendSystemPrompt, "executor mode") {
		t.Errorf("system prompt:\n%s", p.AppendSystemPrompt)
	}
}

// TestGoldenPrompts pins each built-in profile's rendered prompt, for a first
// attempt and a retry. Run with -update to rewrite them after a deliberate
// change.
func TestGoldenPrompts(t *testing.T) {
	tracked := []string{
		"README.md", "go.mod", "cmd/familiar/main.go", "worktree/create.go", "worktree/create_test.go",
		"worktree/list.go", "orchestrator/run.go", "orchestrator/queue.go", "profiles/profiles.go",
	}
	full := Context{
		Title:              "Make worktree creation safe under concurrency",
		Description:        "Two tasks starting at once can both create the same worktree branch.",
		AcceptanceCriteria: []string{"two concurrent creates give two worktrees", "go test -race passes"},
		Notes:              "The lock lives in worktree/repo.go.",
		HintFiles:          []string{"worktree/repo.go"},
		OtherTasks:         []string{"Document the JSON-RPC protocol"},
	}
	for _, name := range []string{"default", "implement", "fix", "refactor", "test"} {
		for _, variant := range []string{"first", "retry"} {
			t.Run(name+"-"+variant, func(t *testing.T) {
				c := full
				if variant == "retry" {
					c.PriorAttempt = &Attempt{Summary: "Added a mutex around git worktree add.", BlockedReason: "the race test needs two repositories", LastError: "exit status 128"}
					c.Mode = ModeArchitect
				}
				spec, err := Builtin().Build(Request{Context: c, Profile: name, Tracked: tracked,
					Skills: []Skill{{Name: "go-style", Description: "How Go code is written here.", Content: "Wrap errors with %w."}}})
				if err != nil {
					t.Fatal(err)
				}
				got := spec.Prompt.Text + "\n\n==== system prompt ====\n" + spec.Prompt.AppendSystemPrompt + "\n"
				golden := filepath.Join("testdata", "golden", name+"-"+variant+".txt")
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from the rendered prompt (go test -update to accept):\n%s", golden, got)
				}
			})
		}
	}
}

// A task named after the first line of its description (familiar acp names
// a session's task so) gives the model that line once.
func TestTitleThatIsTheFirstLineIsNotRepeated(t *testing.T) {
	for _, tc := range []struct {
		name, title, desc string
		heading           string
	}{
		{"first line", "Fix the flaky login test", "Fix the flaky login test\nIt fails one run in ten.", "# Task\n"},
		{"cut first line", "Explain why the cache is slow when…", "Explain why the cache is slow when the keys are long and the values short", "# Task\n"},
		{"whole prompt", "What does main.go do?", "What does main.go do?", "# Task\n"},
		{"own title", "Rename Foo", "Rename Foo to Bar.", "# Task: Rename Foo\n"},
		{"no description", "Add a README", "", "# Task: Add a README\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := Builtin().Build(Request{Context: Context{Title: tc.title, Description: tc.desc, Type: TypeImplement}})
			if err != nil {
				t.Fatal(err)
			}
			text := spec.Prompt.Text
			if !strings.Contains(text, tc.heading) {
				t.Errorf("prompt lacks %q:\n%s", tc.heading, text)
			}
			first, _, _ := strings.Cut(cmp.Or(tc.desc, tc.title), "\n")
			if n := strings.Count(text, first); n != 1 {
				t.Errorf("the line %q is in the prompt %d times:\n%s", first, n, text)
			}
		})
	}
}

// A profile's network allow-list reaches the spec (issue 37).
func TestProfileNetwork(t *testing.T) {
	p, _, _, _, err := parseProfile("p.md", []byte("---\nname: p\nnetwork: [go.dev, \"*.npmjs.org\"]\n---\nbody {{.Title}}\n"), SourceWorkspace)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Network) != 2 || p.Network[1] != "*.npmjs.org" {
		t.Errorf("network = %q", p.Network)
	}
}
