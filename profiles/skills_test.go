package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/clock"
)

func TestParseSkill(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    Skill
		errLine int
		errText string
	}{
		{name: "full", content: "---\nname: go-style\ndescription: How we write Go.\nmode: executor\nallowedTools: [Read, \"Bash(gofmt:*)\"]\n---\n\nWrap errors.\n",
			want: Skill{Name: "go-style", Description: "How we write Go.", Mode: "executor", AllowedTools: []string{"Read", "Bash(gofmt:*)"}, Content: "Wrap errors."}},
		{name: "name from the directory", content: "Just content.", want: Skill{Name: "go-style", Content: "Just content."}},
		{name: "claude's own format", content: "---\nname: go-style\ndescription: d\nallowed-tools: Read, Grep\nlicense: MIT\nmetadata: {a: 1}\n---\nbody",
			want: Skill{Name: "go-style", Description: "d", AllowedTools: []string{"Read", "Grep"}, Content: "body"}},
		{name: "name differs from directory", content: "---\nname: other\n---\nbody", errLine: 2, errText: "does not match"},
		{name: "bad mode", content: "---\nmode: sleepy\n---\nbody", errLine: 2, errText: `unknown mode "sleepy"`},
		{name: "bad tool", content: "---\ndescription: d\nallowedTools: [\"Bash(a,b)\"]\n---\nbody", errLine: 3, errText: "not a tool rule"},
		{name: "no content", content: "---\ndescription: d\n---\n\n\n", errLine: 4, errText: "no content"},
		{name: "broken yaml", content: "---\ndescription: \"unclosed\n---\nbody", errLine: 2, errText: "frontmatter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join("/skills", "go-style", "SKILL.md")
			got, err := parseSkill(path, []byte(tt.content), SourceGlobal)
			if tt.errLine != 0 {
				var fe *FileError
				if !errors.As(err, &fe) || fe.Line != tt.errLine || fe.Path != path || !strings.Contains(fe.Message, tt.errText) {
					t.Fatalf("err = %v, want line %d with %q", err, tt.errLine, tt.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Source, tt.want.Path = SourceGlobal, path
			if !sameSkill(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func skillPath(root, name string) string { return filepath.Join(root, "skills", name, skillFile) }

func skillText(desc, body string) string {
	return "---\ndescription: " + desc + "\n---\n" + body + "\n"
}

func TestLoadSkills(t *testing.T) {
	_, d := testDirs(t)
	writeFile(t, skillPath(d.Global, "shared"), skillText("global shared", "G"))
	writeFile(t, skillPath(d.Global, "only-global"), skillText("g", "OG"))
	writeFile(t, skillPath(d.Workspace, "shared"), skillText("workspace shared", "W"))
	writeFile(t, skillPath(d.Workspace, "broken"), "---\nmode: x\n---\nb")
	writeFile(t, filepath.Join(d.Workspace, "skills", "no-skill-file", "notes.txt"), "x")
	writeFile(t, filepath.Join(d.Workspace, "skills", "loose.md"), "a file, not a skill directory")

	s := LoadSkills(d)
	defer s.Close()
	var names []string
	for _, sk := range s.List() {
		names = append(names, sk.Name+":"+string(sk.Source))
	}
	if want := []string{"only-global:global", "shared:workspace"}; !slices.Equal(names, want) {
		t.Errorf("List = %v, want %v", names, want)
	}
	if sk, ok := s.Get("shared"); !ok || sk.Content != "W" || sk.Path != skillPath(d.Workspace, "shared") {
		t.Errorf("Get(shared) = %+v, %v", sk, ok)
	}
	if errs := s.Errors(); len(errs) != 1 || errs[0].Path != skillPath(d.Workspace, "broken") || errs[0].Line != 2 {
		t.Errorf("Errors = %v", errs)
	}
	got, err := s.Resolve([]string{"shared", "only-global", "shared"})
	if err != nil || len(got) != 2 || got[0].Name != "shared" || got[1].Name != "only-global" {
		t.Errorf("Resolve = %v, %v", got, err)
	}
	if _, err := s.Resolve([]string{"shared", "nope"}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Resolve unknown: %v", err)
	}

	// A task's skills go into its prompt and their tools into its flags.
	skills, _ := s.Resolve([]string{"shared"})
	writeFile(t, skillPath(d.Workspace, "tools"), "---\nallowedTools: [\"Bash(make:*)\"]\n---\nUse make.")
	tools, _ := LoadSkills(d).Resolve([]string{"tools"})
	spec, err := Builtin().Build(Request{Context: Context{Title: "t"}, Skills: append(skills, tools...)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(spec.Prompt.Text, "## Skill: shared\nworkspace shared\n\nW") || !strings.Contains(spec.Prompt.Text, "Use make.") {
		t.Errorf("prompt:\n%s", spec.Prompt.Text)
	}
	if !slices.Equal(spec.Flags.AllowedTools, []string{"Bash(make:*)"}) {
		t.Errorf("allowed = %v", spec.Flags.AllowedTools)
	}
}

// changes collects OnChange calls.
type changes chan SkillsChange

// waitFor returns the first change for which ok holds, failing after a
// deadline. When clk is set, it advances the fake clock whenever the
// debounce timer is armed, so the test never depends on real time passing.
func (c changes) waitFor(t *testing.T, clk *clock.Fake, what string, ok func(SkillsChange) bool) SkillsChange {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	start := time.Now()
	for {
		var poll <-chan time.Time
		if clk != nil {
			if clk.WaitForTimers(1, 10*time.Millisecond) {
				clk.Advance(100 * time.Millisecond)
			}
			poll = time.After(0)
		}
		select {
		case ch := <-c:
			if ok(ch) {
				t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond))
				return ch
			}
		case <-deadline.C:
			t.Fatalf("no skills change with %s", what)
		case <-poll:
		}
	}
}

func goroutines() int { return runtime.NumGoroutine() }

// checkNoLeak fails if goroutines started during the test are still running.
func checkNoLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for goroutines() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left over:\n%s", goroutines()-before, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}

func TestWatchSkillsHotReload(t *testing.T) {
	before := goroutines()
	repo, d := testDirs(t)
	// Neither .familiar nor the global skills directory exists yet.
	if err := os.MkdirAll(d.Global, 0o755); err != nil {
		t.Fatal(err)
	}
	c := make(changes, 32)
	s, err := WatchSkills(SkillsOptions{Dirs: d, OnChange: func(ch SkillsChange) { c <- ch }})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.List()) != 0 {
		t.Fatalf("List = %v", s.List())
	}
	ws := skillPath(d.Workspace, "review")

	// Create: the directories appear too.
	writeFile(t, ws, skillText("v1", "Review carefully."))
	c.waitFor(t, nil, "review added", func(ch SkillsChange) bool { return slices.Equal(ch.Added, []string{"review"}) })
	if sk, ok := s.Get("review"); !ok || sk.Description != "v1" || sk.Source != SourceWorkspace {
		t.Fatalf("Get = %+v %v", sk, ok)
	}

	// Edit in place.
	if err := os.WriteFile(ws, []byte(skillText("v2", "Review very carefully.")), 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, nil, "review updated in place", func(ch SkillsChange) bool {
		sk, _ := s.Get("review")
		return slices.Equal(ch.Updated, []string{"review"}) && sk.Description == "v2"
	})

	// Save by rename, as editors do.
	writeFile(t, ws, skillText("v3", "Review."))
	c.waitFor(t, nil, "review updated by rename", func(ch SkillsChange) bool {
		sk, _ := s.Get("review")
		return slices.Equal(ch.Updated, []string{"review"}) && sk.Description == "v3"
	})

	// Broken: reported, and the last good version stays.
	writeFile(t, ws, "---\nmode: [nope\n---\nbody")
	ch := c.waitFor(t, nil, "an error", func(ch SkillsChange) bool { return len(ch.Errors) == 1 })
	if ch.Errors[0].Path != ws || ch.Errors[0].Line != 2 || len(ch.Added)+len(ch.Updated)+len(ch.Removed) != 0 {
		t.Errorf("change = %+v", ch)
	}
	if sk, ok := s.Get("review"); !ok || sk.Description != "v3" {
		t.Errorf("last good version lost: %+v %v", sk, ok)
	}

	// A global skill of the same name is hidden by the workspace one; a new
	// global one appears.
	writeFile(t, skillPath(d.Global, "review"), skillText("global", "G"))
	writeFile(t, skillPath(d.Global, "style"), skillText("style", "S"))
	c.waitFor(t, nil, "style added", func(ch SkillsChange) bool { return slices.Contains(ch.Added, "style") })
	if sk, _ := s.Get("review"); sk.Source != SourceWorkspace {
		t.Errorf("the global skill won: %+v", sk)
	}

	// Fixed: updated, error gone.
	writeFile(t, ws, skillText("v4", "Fixed."))
	c.waitFor(t, nil, "fixed", func(ch SkillsChange) bool {
		return slices.Equal(ch.Updated, []string{"review"}) && len(ch.Errors) == 0
	})

	// Delete the workspace skill: the global one shows through.
	if err := os.RemoveAll(filepath.Dir(ws)); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, nil, "global review visible", func(ch SkillsChange) bool {
		sk, _ := s.Get("review")
		return slices.Equal(ch.Updated, []string{"review"}) && sk.Source == SourceGlobal
	})

	// Delete the whole workspace skills directory and the global skill.
	if err := os.RemoveAll(filepath.Join(repo, ".familiar")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Dir(skillPath(d.Global, "review"))); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, nil, "review removed", func(ch SkillsChange) bool { return slices.Equal(ch.Removed, []string{"review"}) })
	if _, ok := s.Get("review"); ok {
		t.Errorf("review still there")
	}

	// And the workspace directory can come back.
	writeFile(t, skillPath(d.Workspace, "again"), skillText("again", "A"))
	c.waitFor(t, nil, "again added", func(ch SkillsChange) bool { return slices.Equal(ch.Added, []string{"again"}) })

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	checkNoLeak(t, before)
}

func TestWatchSkillsDebounce(t *testing.T) {
	_, d := testDirs(t)
	clk := clock.NewFake(time.Unix(0, 0))
	c := make(changes, 32)
	s, err := WatchSkills(SkillsOptions{Dirs: d, Clock: clk, Debounce: 100 * time.Millisecond, OnChange: func(ch SkillsChange) { c <- ch }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	writeFile(t, skillPath(d.Workspace, "a"), skillText("a", "A"))
	if !clk.WaitForTimers(1, 10*time.Second) {
		t.Fatal("no debounce timer armed")
	}
	// Time has not passed: nothing may be reported yet.
	select {
	case ch := <-c:
		t.Fatalf("reported before the debounce: %+v", ch)
	default:
	}
	if _, ok := s.Get("a"); ok {
		t.Fatal("loaded before the debounce")
	}
	clk.Advance(50 * time.Millisecond)
	select {
	case ch := <-c:
		t.Fatalf("reported after half the debounce: %+v", ch)
	default:
	}
	c.waitFor(t, clk, "a added", func(ch SkillsChange) bool { return slices.Equal(ch.Added, []string{"a"}) })

	// A change that changes nothing (the same content) reports nothing: the
	// next report is about b.
	writeFile(t, skillPath(d.Workspace, "a"), skillText("a", "A"))
	writeFile(t, skillPath(d.Workspace, "b"), skillText("b", "B"))
	ch := c.waitFor(t, clk, "b added", func(ch SkillsChange) bool { return true })
	if !slices.Equal(ch.Added, []string{"b"}) || len(ch.Updated) != 0 {
		t.Errorf("change = %+v", ch)
	}
}
