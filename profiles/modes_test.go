package profiles

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestModeFlags(t *testing.T) {
	tests := []struct {
		mode       string
		tests      []string
		permission string
		allowed    []string
		disallowed []string
		prompt     string // part of SystemPrompt
	}{
		{"", nil, "default", nil, nil, "executor mode"},
		{ModeExecutor, nil, "default", nil, nil, "executor mode"},
		{ModeArchitect, nil, "plan", nil,
			[]string{"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "ExitPlanMode"}, "plan only"},
		{ModeAuditor, nil, "dontAsk",
			[]string{"Read", "Grep", "Glob", "Bash(go test:*)", "Bash(npm test:*)", "Bash(pytest:*)", "Bash(cargo test:*)"},
			[]string{"Write", "Edit", "MultiEdit", "NotebookEdit"}, "`go test`, `npm test`, `pytest`, `cargo test`"},
		{ModeAuditor, []string{"make check", "Bash(just test:*)"}, "dontAsk",
			[]string{"Read", "Grep", "Glob", "Bash(make check:*)", "Bash(just test:*)"},
			[]string{"Write", "Edit", "MultiEdit", "NotebookEdit"}, "`make check`"},
		{ModeAuditor, []string{}, "dontAsk", []string{"Read", "Grep", "Glob"},
			[]string{"Write", "Edit", "MultiEdit", "NotebookEdit"}, "read and search files; writing"},
	}
	for _, tt := range tests {
		f, err := ModeFlags(tt.mode, tt.tests)
		if err != nil {
			t.Fatalf("%s: %v", tt.mode, err)
		}
		if f.PermissionMode != tt.permission || !slices.Equal(f.AllowedTools, tt.allowed) || !slices.Equal(f.DisallowedTools, tt.disallowed) {
			t.Errorf("%s %v: %+v", tt.mode, tt.tests, f)
		}
		if !strings.Contains(f.SystemPrompt, tt.prompt) {
			t.Errorf("%s: system prompt %q lacks %q", tt.mode, f.SystemPrompt, tt.prompt)
		}
		if len(f.ExtraArgs) != 0 {
			t.Errorf("%s: extra args %v", tt.mode, f.ExtraArgs)
		}
	}
	// The defaults are not shared with the caller.
	f, _ := ModeFlags(ModeArchitect, nil)
	f.DisallowedTools[0] = "changed"
	if g, _ := ModeFlags(ModeArchitect, nil); g.DisallowedTools[0] != "Write" {
		t.Errorf("ModeFlags shares its slices")
	}
}

func TestModeFlagsErrors(t *testing.T) {
	for _, tt := range []struct {
		mode  string
		tests []string
	}{
		{"boss", nil},
		{"Executor", nil},
		{ModeAuditor, []string{"go test, rm -rf /"}},
		{ModeAuditor, []string{"evil)"}},
		{ModeAuditor, []string{""}},
		{ModeAuditor, []string{"Bash(a, b)"}},
	} {
		if _, err := ModeFlags(tt.mode, tt.tests); !errors.Is(err, ErrInvalid) {
			t.Errorf("ModeFlags(%q, %q) err = %v, want ErrInvalid", tt.mode, tt.tests, err)
		}
	}
}

func TestFlagsMerge(t *testing.T) {
	tests := []struct {
		name                string
		base                Flags
		allow, deny         []string
		wantAllow, wantDeny []string
	}{
		{"adds both", Flags{AllowedTools: []string{"Read"}}, []string{"Grep", "Read"}, []string{"WebFetch"},
			[]string{"Read", "Grep"}, []string{"WebFetch"}},
		{"disallowed rule wins", Flags{}, []string{"Bash(rm:*)", "Read"}, []string{"Bash(rm:*)"},
			[]string{"Read"}, []string{"Bash(rm:*)"}},
		{"disallowed tool drops its rules", Flags{DisallowedTools: []string{"Bash"}}, []string{"Bash(go test:*)", "Bash"}, nil,
			nil, []string{"Bash"}},
		{"a rule does not drop the tool", Flags{AllowedTools: []string{"Bash"}}, nil, []string{"Bash(rm:*)"},
			[]string{"Bash"}, []string{"Bash(rm:*)"}},
		{"profile cannot re-allow what the mode removed", mustFlags(t, ModeArchitect), []string{"Edit", "Read"}, nil,
			[]string{"Read"}, []string{"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "ExitPlanMode"}},
	}
	for _, tt := range tests {
		got := tt.base.Merge(tt.allow, tt.deny)
		if !slices.Equal(got.AllowedTools, tt.wantAllow) || !slices.Equal(got.DisallowedTools, tt.wantDeny) {
			t.Errorf("%s: allowed %q disallowed %q; want %q %q", tt.name, got.AllowedTools, got.DisallowedTools, tt.wantAllow, tt.wantDeny)
		}
	}
}

func mustFlags(t *testing.T, mode string) Flags {
	t.Helper()
	f, err := ModeFlags(mode, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestThink(t *testing.T) {
	f := mustFlags(t, ModeExecutor).WithThink()
	if !slices.Equal(f.ExtraArgs, []string{"--effort", "high"}) || !strings.Contains(f.SystemPrompt, "step by step") {
		t.Errorf("%+v", f)
	}
	spec, err := Builtin().Build(Request{Context: Context{Title: "t"}, Think: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(spec.Flags.ExtraArgs, []string{"--effort", "high"}) || !strings.Contains(spec.Prompt.AppendSystemPrompt, "step by step") {
		t.Errorf("Build with think: %+v", spec)
	}
	spec, _ = Builtin().Build(Request{Context: Context{Title: "t"}})
	if len(spec.Flags.ExtraArgs) != 0 || strings.Contains(spec.Prompt.AppendSystemPrompt, "step by step") {
		t.Errorf("Build without think: %+v", spec)
	}
}

func TestEverySystemPromptCarriesGuidance(t *testing.T) {
	for _, mode := range Modes {
		spec, err := Builtin().Build(Request{Context: Context{Title: "t", Mode: mode}})
		if err != nil {
			t.Fatal(err)
		}
		sp := spec.Prompt.AppendSystemPrompt
		if !strings.HasPrefix(sp, Guidance) || !strings.Contains(sp, spec.Flags.SystemPrompt) {
			t.Errorf("%s: system prompt\n%s", mode, sp)
		}
		for _, want := range []string{"denied", "allowed alternative", "ask the person", `"BLOCKED:"`} {
			if !strings.Contains(sp, want) {
				t.Errorf("%s: system prompt lacks %q", mode, want)
			}
		}
	}
}

func TestModeNotice(t *testing.T) {
	n, err := ModeNotice(ModeArchitect, nil)
	if err != nil || !strings.HasPrefix(n, "familiar switched this task to architect mode.") || !strings.Contains(n, "plan only") {
		t.Errorf("%q %v", n, err)
	}
	if _, err := ModeNotice("boss", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad mode: %v", err)
	}
}
