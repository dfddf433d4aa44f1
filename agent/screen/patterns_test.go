package screen_test

import (
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/agent/screen"
)

// Shorthands for the expected options.
func yes(d int, label string) screen.Option { return screen.Option{Digit: d, Label: label} }

func sel(o screen.Option) screen.Option { o.Selected = true; return o }

func kind(o screen.Option, k screen.OptionKind) screen.Option { o.Kind = k; return o }

func desc(o screen.Option, d string) screen.Option { o.Description = d; return o }

func checked(o screen.Option) screen.Option { o.Checked = true; return o }

const (
	autoModeOption   = "Yes, and switch to auto mode · auto mode handles these prompts for you"
	acceptEditOption = "Yes, and switch to accept edits (auto-approve file edits and common file commands) for this session (shift+tab)"
)

// recordedScreens is what each recorded screen must classify as. Paths of
// the scratch repository read "<repo>" and the fake API's port "PORT" (see
// normalize).
var recordedScreens = []struct {
	name string
	want screen.Classification
}{
	{"idle", screen.Classification{State: screen.Idle, Pattern: "idle",
		Detail: "⏸ manual mode on · ? for shortcuts · ← for agents"}},
	{"idle-after-turn", screen.Classification{State: screen.Idle, Pattern: "idle",
		Detail: "⏸ manual mode on · ? for shortcuts · ← for agents"}},
	// Esc before the turn produced anything puts the prompt back in the box.
	{"interrupted-early", screen.Classification{State: screen.Idle, Pattern: "idle",
		Text: "@@DELAY 60s\n@@TEXT too late", Detail: "⏸ manual mode on"}},
	{"working", screen.Classification{State: screen.Working, Pattern: "working",
		Text: "<spinner>", Detail: "⏸ manual mode on · esc to interrupt · ← for agents"}},
	{"api-retry", screen.Classification{State: screen.Working, Pattern: "api-retry",
		Text: "API error · retrying in Ns · attempt N/10", Detail: "⏸ manual mode on · esc to interrupt · ← for agents"}},
	{"interrupted", screen.Classification{State: screen.Interrupted, Pattern: "interrupted",
		Text: "Interrupted · What should Claude do instead?"}},
	{"interrupted-permission", screen.Classification{State: screen.Interrupted, Pattern: "interrupted",
		Text: "Interrupted · What should Claude do instead?"}},
	{"permission-bash", screen.Classification{State: screen.Permission, Pattern: "permission",
		Title: "Bash command", Text: "Do you want to proceed?",
		Detail: "Create a file\necho hi > created.txt",
		Options: []screen.Option{
			sel(yes(1, "Yes")),
			yes(2, "Yes, and always allow access to <repo> from this project"),
			yes(3, autoModeOption),
			yes(4, "No"),
		}}},
	{"permission-bash-rule", screen.Classification{State: screen.Permission, Pattern: "permission",
		Title: "Bash command", Text: "Do you want to proceed?",
		Detail: "Print a number\npython3 -c \"print(42)\"\nThis command requires approval",
		Options: []screen.Option{
			sel(yes(1, "Yes")),
			yes(2, "Yes, and don’t ask again for: python3 *"),
			yes(3, autoModeOption),
			yes(4, "No"),
		}}},
	{"permission-write", screen.Classification{State: screen.Permission, Pattern: "permission",
		Title: "Create file", Text: "Do you want to create new.txt?",
		Detail:  "new.txt\n1 hello world",
		Options: []screen.Option{sel(yes(1, "Yes")), yes(2, acceptEditOption), yes(3, "No")}}},
	// Taller than the screen: the title has scrolled away.
	{"permission-write-long", screen.Classification{State: screen.Permission, Pattern: "permission",
		Text:    "Do you want to create long.txt?",
		Detail:  "<the visible end of the file>",
		Options: []screen.Option{sel(yes(1, "Yes")), yes(2, acceptEditOption), yes(3, "No")}}},
	{"permission-edit", screen.Classification{State: screen.Permission, Pattern: "permission",
		Title: "Edit file", Text: "Do you want to make this edit to hello.txt?",
		Detail:  "hello.txt\n1 -hello world\n1 +hello edited",
		Options: []screen.Option{sel(yes(1, "Yes")), yes(2, acceptEditOption), yes(3, "No")}}},
	{"choice-single", screen.Classification{State: screen.Choice, Pattern: "choice",
		Title: "☐ Color", Text: "Which color?",
		Options: []screen.Option{
			sel(desc(yes(1, "Red"), "Warm and bright")),
			desc(yes(2, "Blue"), "Cool and calm"),
			kind(yes(3, "Type something."), screen.OptionTypeSomething),
			kind(yes(4, "Chat about this"), screen.OptionChat),
		}}},
	// "3" moved the highlight onto "Type something.", which is now a text
	// field holding what was typed.
	{"choice-typing", screen.Classification{State: screen.Choice, Pattern: "choice",
		Title: "☐ Color", Text: "Which color?",
		Options: []screen.Option{
			desc(yes(1, "Red"), "Warm and bright"),
			desc(yes(2, "Blue"), "Cool and calm"),
			sel(kind(yes(3, "Green"), screen.OptionTypeSomething)),
			kind(yes(4, "Chat about this"), screen.OptionChat),
		}}},
	{"choice-multi", screen.Classification{State: screen.Choice, Pattern: "choice",
		Title: "←  ☐ Database  ☐ Features  ✔ Submit  →", Text: "Which database should we use?",
		Options: []screen.Option{
			sel(desc(yes(1, "Postgres (Recommended)"), "Relational, robust")),
			desc(yes(2, "SQLite"), "Embedded, simple"),
			kind(yes(3, "Type something."), screen.OptionTypeSomething),
			kind(yes(4, "Chat about this"), screen.OptionChat),
		}}},
	{"choice-multi-select", screen.Classification{State: screen.Choice, Pattern: "choice",
		Title: "←  ☒ Database  ☐ Features  ✔ Submit  →", Text: "Which features do you want?",
		Options: []screen.Option{
			sel(kind(desc(yes(1, "Auth"), "Login support"), screen.OptionToggle)),
			kind(desc(yes(2, "Search"), "Full-text search"), screen.OptionToggle),
			kind(desc(yes(3, "Export"), "CSV export"), screen.OptionToggle),
			kind(yes(4, "Type something"), screen.OptionTypeSomething),
			kind(yes(5, "Chat about this"), screen.OptionChat),
		}}},
	// Digits toggle without moving the highlight; the tab is ticked once
	// something is.
	{"choice-multi-checked", screen.Classification{State: screen.Choice, Pattern: "choice",
		Title: "←  ☒ Database  ☒ Features  ✔ Submit  →", Text: "Which features do you want?",
		Options: []screen.Option{
			sel(checked(kind(desc(yes(1, "Auth"), "Login support"), screen.OptionToggle))),
			kind(desc(yes(2, "Search"), "Full-text search"), screen.OptionToggle),
			checked(kind(desc(yes(3, "Export"), "CSV export"), screen.OptionToggle)),
			kind(yes(4, "Type something"), screen.OptionTypeSomething),
			kind(yes(5, "Chat about this"), screen.OptionChat),
		}}},
	{"choice-review", screen.Classification{State: screen.Choice, Pattern: "choice",
		Title: "←  ☒ Database  ☒ Features  ✔ Submit  →", Text: "Review your answers",
		Detail:  "● Which database should we use?\n→ SQLite\n● Which features do you want?\n→ Auth, Export",
		Options: []screen.Option{sel(yes(1, "Submit answers")), yes(2, "Cancel")}}},
	{"api-error", screen.Classification{State: screen.Failed, Pattern: "api-error",
		Text: "API Error: 400 fake bad request", Detail: "400"}},
	{"api-error-500", screen.Classification{State: screen.Failed, Pattern: "api-error",
		Text:   "API Error: 500 fake server error. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:PORT).",
		Detail: "500"}},
	{"login-error", screen.Classification{State: screen.Failed, Pattern: "login-error",
		Text: "Invalid API key · Fix external API key"}},
	// Issue 13 §2: claude gives up on the API; issue 14: the login is
	// missing, the usage limit is reached. None of them is a question.
	{"api-retry-refused", screen.Classification{State: screen.Working, Pattern: "api-retry",
		Text:   "Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED) · retrying in Ns · attempt N/2",
		Detail: "⏸ manual mode on · esc to interrupt · ← for agents"}},
	// Issue 37: an unreachable API while claude retries ten times.
	{"api-retry-unreachable", screen.Classification{State: screen.Working, Pattern: "api-retry",
		Text:   "Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED) · retrying in Ns · attempt N/10",
		Detail: "⏸ manual mode on · esc to interrupt · ← for agents"}},
	// Issue 22: the retry line names the status from the third retry on.
	{"api-retry-status", screen.Classification{State: screen.Working, Pattern: "api-retry",
		Text: "500 fake boom · retrying in Ns · attempt N/3", Detail: "⏸ manual mode on · esc to interrupt · ← for agents"}},
	{"api-retry-401", screen.Classification{State: screen.Working, Pattern: "api-retry",
		Text: "401 fake invalid x-api-key · retrying in Ns · attempt N/3", Detail: "⏸ manual mode on · esc to interrupt · ← for agents"}},
	{"api-gave-up-refused", screen.Classification{State: screen.Failed, Pattern: "api-error",
		Text: "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"}},
	{"api-gave-up", screen.Classification{State: screen.Failed, Pattern: "api-error",
		Text:   "API Error: 529 fake overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:PORT).",
		Detail: "529"}},
	{"not-logged-in", screen.Classification{State: screen.Failed, Pattern: "login-error",
		Text: "Not logged in · Please run /login"}},
	{"usage-limit", screen.Classification{State: screen.Failed, Pattern: "usage-limit",
		Text: "You've hit your 5-hour limit · resets 7:33pm (UTC)"}},
	{"dialog-api-key", screen.Classification{State: screen.Dialog, Pattern: "api-key",
		Title: "Detected a custom API key in your environment", Text: "Do you want to use this API key?",
		Detail:  "ANTHROPIC_API_KEY: sk-ant-...api-0123456789abcdef",
		Options: []screen.Option{{Label: "Yes"}, {Label: "No (recommended)", Selected: true}}}},
	{"dialog-trust", screen.Classification{State: screen.Dialog, Pattern: "trust",
		Title: "Accessing workspace:", Text: "Accessing workspace:",
		Detail: "<repo>\nQuick safety check: Is this a project you created or one you trust? (Like your own code, a well-known open source\n" +
			"project, or work from your team). If not, take a moment to review what's in this folder first.\n" +
			"Claude Code'll be able to read, edit, and execute files here.\nSecurity guide",
		Options: []screen.Option{{Label: "No, exit", Selected: true}, {Label: "Yes, I trust this folder"}}}},
}

// olderScreens is how older CLI versions show what recordedScreens expects of
// the newest: always the same state and pattern, with details that changed
// between releases. Up to 2.1.200: the footer has no permission mode, the
// permission dialogs offer no auto mode, a Bash dialog shows the command
// above its description, multi-select questions put descriptions at the
// option's indent (not kept), and dialogs number their options. Up to
// 2.1.300: the review tab ends with "Ready to submit your answers?".
var usageLimit330 = screen.Classification{State: screen.Failed, Pattern: "usage-limit",
	Text: "You've hit your 5-hour limit · resets Nov 25, 7:33pm (UTC)"}

var olderScreens = []struct {
	version, name string
	want          screen.Classification
}{
	// 2.1.330 named the day of a reset in the past; 2.1.332 (which also
	// says it will continue by itself) does not. The older versions show
	// 2.1.330's screen.
	{"2.1.330", "usage-limit", usageLimit330},
	{"2.1.300", "usage-limit", usageLimit330},
	{"2.1.200", "usage-limit", usageLimit330},
	{"2.1.200", "idle", screen.Classification{State: screen.Idle, Pattern: "idle",
		Detail: "? for shortcuts · ← for agents"}},
	{"2.1.200", "idle-after-turn", screen.Classification{State: screen.Idle, Pattern: "idle",
		Detail: "? for shortcuts · ← for agents"}},
	{"2.1.200", "interrupted-early", screen.Classification{State: screen.Idle, Pattern: "idle",
		Text: "@@DELAY 60s\n@@TEXT too late"}},
	{"2.1.200", "working", screen.Classification{State: screen.Working, Pattern: "working",
		Text: "<spinner>", Detail: "esc to interrupt · ← for agents"}},
	{"2.1.200", "api-retry", screen.Classification{State: screen.Working, Pattern: "api-retry",
		Text: "API error · retrying in Ns · attempt N/10", Detail: "esc to interrupt · ← for agents"}},
	// Up to 2.1.300 the retry line says "Retrying" (normalize hides it;
	// the agent's TestParseRetryLine reads these lines as they are), and
	// 2.1.200 names a refused connection in its own words.
	{"2.1.200", "api-retry-unreachable", screen.Classification{State: screen.Working, Pattern: "api-retry",
		Text: "Unable to connect to API (ConnectionRefused) · retrying in Ns · attempt N/10", Detail: "esc to interrupt · ← for agents"}},
	{"2.1.200", "api-retry-refused", screen.Classification{State: screen.Working, Pattern: "api-retry",
		Text: "Unable to connect to API (ConnectionRefused) · retrying in Ns · attempt N/2", Detail: "esc to interrupt · ← for agents"}},
	{"2.1.200", "api-gave-up-refused", screen.Classification{State: screen.Failed, Pattern: "api-error",
		Text: "API Error: Unable to connect to API (ConnectionRefused)"}},
	{"2.1.200", "api-retry-status", screen.Classification{State: screen.Working, Pattern: "api-retry",
		Text: "500 fake boom · retrying in Ns · attempt N/3", Detail: "esc to interrupt · ← for agents"}},
	{"2.1.200", "api-retry-401", screen.Classification{State: screen.Working, Pattern: "api-retry",
		Text: "401 fake invalid x-api-key · retrying in Ns · attempt N/3", Detail: "esc to interrupt · ← for agents"}},
	{"2.1.200", "permission-bash", screen.Classification{State: screen.Permission, Pattern: "permission",
		Title: "Bash command", Text: "Do you want to proceed?", Detail: "echo hi > created.txt\nCreate a file",
		Options: []screen.Option{
			{Digit: 1, Label: "Yes", Selected: true},
			{Digit: 2, Label: "Yes, and always allow access to 001/ from this project"},
			{Digit: 3, Label: "No"},
		}}},
	{"2.1.200", "permission-bash-rule", screen.Classification{State: screen.Permission, Pattern: "permission",
		Title: "Bash command", Text: "Do you want to proceed?", Detail: "python3 -c \"print(42)\"\nPrint a number\nThis command requires approval",
		Options: []screen.Option{
			{Digit: 1, Label: "Yes", Selected: true},
			{Digit: 2, Label: "Yes, and don’t ask again for: python3 *"},
			{Digit: 3, Label: "No"},
		}}},
	{"2.1.200", "permission-write", screen.Classification{State: screen.Permission, Pattern: "permission",
		Title: "Create file", Text: "Do you want to create new.txt?", Detail: "new.txt\n1 hello world",
		Options: []screen.Option{
			{Digit: 1, Label: "Yes", Selected: true},
			{Digit: 2, Label: "Yes, allow all edits during this session (shift+tab)"},
			{Digit: 3, Label: "No"},
		}}},
	{"2.1.200", "permission-write-long", screen.Classification{State: screen.Permission, Pattern: "permission",
		Text: "Do you want to create long.txt?", Detail: "<the visible end of the file>",
		Options: []screen.Option{
			{Digit: 1, Label: "Yes", Selected: true},
			{Digit: 2, Label: "Yes, allow all edits during this session (shift+tab)"},
			{Digit: 3, Label: "No"},
		}}},
	{"2.1.200", "permission-edit", screen.Classification{State: screen.Permission, Pattern: "permission",
		Title: "Edit file", Text: "Do you want to make this edit to hello.txt?", Detail: "hello.txt\n1 -hello world\n1 +hello edited",
		Options: []screen.Option{
			{Digit: 1, Label: "Yes", Selected: true},
			{Digit: 2, Label: "Yes, allow all edits during this session (shift+tab)"},
			{Digit: 3, Label: "No"},
		}}},
	{"2.1.200", "choice-multi-select", screen.Classification{State: screen.Choice, Pattern: "choice",
		Title: "←  ☒ Database  ☐ Features  ✔ Submit  →", Text: "Which features do you want?",
		Options: []screen.Option{
			{Digit: 1, Label: "Auth", Selected: true, Kind: screen.OptionToggle},
			{Digit: 2, Label: "Search", Kind: screen.OptionToggle},
			{Digit: 3, Label: "Export", Kind: screen.OptionToggle},
			{Digit: 4, Label: "Type something", Kind: screen.OptionTypeSomething},
			{Digit: 5, Label: "Chat about this", Kind: screen.OptionChat},
		}}},
	{"2.1.200", "choice-multi-checked", screen.Classification{State: screen.Choice, Pattern: "choice",
		Title: "←  ☒ Database  ☒ Features  ✔ Submit  →", Text: "Which features do you want?",
		Options: []screen.Option{
			{Digit: 1, Label: "Auth", Selected: true, Checked: true, Kind: screen.OptionToggle},
			{Digit: 2, Label: "Search", Kind: screen.OptionToggle},
			{Digit: 3, Label: "Export", Checked: true, Kind: screen.OptionToggle},
			{Digit: 4, Label: "Type something", Kind: screen.OptionTypeSomething},
			{Digit: 5, Label: "Chat about this", Kind: screen.OptionChat},
		}}},
	{"2.1.200", "choice-review", screen.Classification{State: screen.Choice, Pattern: "choice",
		Title: "←  ☒ Database  ☒ Features  ✔ Submit  →", Text: "Review your answers", Detail: "● Which database should we use?\n→ SQLite\n● Which features do you want?\n→ Auth, Export\nReady to submit your answers?",
		Options: []screen.Option{
			{Digit: 1, Label: "Submit answers", Selected: true},
			{Digit: 2, Label: "Cancel"},
		}}},
	{"2.1.200", "dialog-api-key", screen.Classification{State: screen.Dialog, Pattern: "api-key",
		Title: "Detected a custom API key in your environment", Text: "Do you want to use this API key?", Detail: "ANTHROPIC_API_KEY: sk-ant-...api-0123456789abcdef",
		Options: []screen.Option{
			{Digit: 1, Label: "Yes"},
			{Digit: 2, Label: "No (recommended)", Selected: true},
		}}},
	{"2.1.200", "dialog-trust", screen.Classification{State: screen.Dialog, Pattern: "trust",
		Title: "Accessing workspace:", Text: "Accessing workspace:", Detail: "<repo>\nQuick safety check: Is this a project you created or one you trust? (Like your own code, a well-known open source\nproject, or work from your team). If not, take a moment to review what's in this folder first.\nClaude Code'll be able to read, edit, and execute files here.\nSecurity guide",
		Options: []screen.Option{
			{Digit: 1, Label: "Yes, I trust this folder", Selected: true},
			{Digit: 2, Label: "No, exit"},
		}}},
	{"2.1.300", "choice-review", screen.Classification{State: screen.Choice, Pattern: "choice",
		Title: "←  ☒ Database  ☒ Features  ✔ Submit  →", Text: "Review your answers", Detail: "● Which database should we use?\n→ SQLite\n● Which features do you want?\n→ Auth, Export\nReady to submit your answers?",
		Options: []screen.Option{
			{Digit: 1, Label: "Submit answers", Selected: true},
			{Digit: 2, Label: "Cancel"},
		}}},
}

// wantOn is what screen name must classify as on version.
func wantOn(version, name string, newest screen.Classification) screen.Classification {
	for _, o := range olderScreens {
		if o.version == version && o.name == name {
			return o.want
		}
	}
	return newest
}

// detailPatterns stand for a Detail that depends on how far the CLI
// scrolled a dialog.
var detailPatterns = map[string]*regexp.Regexp{
	"<the visible end of the file>": regexp.MustCompile(`^(\d+ line \d+ of a long file\n){10,}120 line 120 of a long file$`),
}

var (
	// The recorder's scratch repositories live in t.TempDir().
	reScratchRepo = regexp.MustCompile(`\S*/TestRecord[^/\s]*/\d+`)
	reLoopback    = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	reRetryCount  = regexp.MustCompile(`[Rr]etrying in \d+s · attempt \d+/`)
	// The spinner's glyph, verb and counters change every run.
	reSpinnerLine = regexp.MustCompile(`^[·✢✳✶✻✽*] \S+….*$`)
)

// normalize replaces what differs between recordings of the same screen.
func normalize(c screen.Classification) screen.Classification {
	n := func(s string) string {
		s = reScratchRepo.ReplaceAllString(s, "<repo>")
		s = reLoopback.ReplaceAllString(s, "127.0.0.1:PORT")
		s = reRetryCount.ReplaceAllString(s, "retrying in Ns · attempt N/")
		return reSpinnerLine.ReplaceAllString(s, "<spinner>")
	}
	c.Title, c.Text, c.Detail = n(c.Title), n(c.Text), n(c.Detail)
	c.Options = slices.Clone(c.Options)
	for i := range c.Options {
		c.Options[i].Label = n(c.Options[i].Label)
		c.Options[i].Description = n(c.Options[i].Description)
	}
	return c
}

func TestClassifyRecordedScreens(t *testing.T) {
	for _, version := range recordedVersions(t) {
		for _, tt := range recordedScreens {
			if !shown(version, tt.name) {
				continue
			}
			t.Run(version+"/"+tt.name, func(t *testing.T) {
				rec := loadRecording(t, version, tt.name)
				got := normalize(screen.Classify(rec.Snap))
				want := wantOn(version, tt.name, tt.want)
				if re, ok := detailPatterns[want.Detail]; ok {
					if !re.MatchString(got.Detail) {
						t.Errorf("Detail %q does not match %s", got.Detail, re)
					}
					want.Detail = got.Detail
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("Classify:\n got %s\nwant %s\nscreen:\n%s", show(got), show(want), rec.Snap.Text())
				}
			})
		}
	}
}

func show(c screen.Classification) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s title=%q text=%q detail=%q", c.State, c.Pattern, c.Title, c.Text, c.Detail)
	for _, o := range c.Options {
		fmt.Fprintf(&b, "\n    %+v", o)
	}
	return b.String()
}

// The window title says whether a turn runs.
func TestTitleWorking(t *testing.T) {
	for _, version := range recordedVersions(t) {
		for name, working := range map[string]bool{"working": true, "idle": false, "permission-bash": false, "choice-single": false} {
			rec := loadRecording(t, version, name)
			if got := screen.TitleWorking(rec.Snap.Title); got != working {
				t.Errorf("%s/%s: TitleWorking(%q) = %v, want %v", version, name, rec.Snap.Title, got, working)
			}
		}
	}
}

// Replaying the bytes the CLI wrote reproduces the recorded screen, however
// the stream is cut into writes: the emulator and the OSC filter see what
// they saw when it was recorded.
func TestReplayRecordedScreens(t *testing.T) {
	for _, version := range recordedVersions(t) {
		for _, tt := range recordedScreens {
			if !shown(version, tt.name) {
				continue
			}
			rec := loadRecording(t, version, tt.name)
			if rec.RawPath == "" {
				continue
			}
			raw := readRaw(t, rec)
			for _, chunk := range []int{len(raw), 4096, 7, 1} {
				t.Run(fmt.Sprintf("%s/%s/chunk%d", version, tt.name, chunk), func(t *testing.T) {
					s := screen.New(rec.Snap.Cols, rec.Snap.Rows, io.Discard)
					defer s.Close()
					for p := raw; len(p) > 0; {
						n := min(chunk, len(p))
						s.Write(p[:n])
						p = p[n:]
					}
					got := s.Snapshot()
					if !slices.Equal(got.Lines, rec.Snap.Lines) || got.Title != rec.Snap.Title || got.AltScreen != rec.Snap.AltScreen {
						t.Errorf("replay differs from the recording:\n%s\nwant:\n%s", got.String(), rec.Snap.String())
					}
				})
			}
		}
	}
}

// Every pattern is proven by a screen: a recording, or for dialogs that
// cannot be recorded here, the capture in CLAUDE-CLI.md (TestDocumentedScreens).
func TestEveryPatternHasAScreen(t *testing.T) {
	proven := map[string]bool{}
	for _, tt := range recordedScreens {
		proven[tt.want.Pattern] = true
	}
	for _, tt := range documentedScreens {
		proven[tt.want.Pattern] = true
	}
	for _, name := range screen.PatternNames() {
		if !proven[name] {
			t.Errorf("pattern %q has no screen in its tests", name)
		}
	}
}

// documentedScreens are captures from CLAUDE-CLI.md of dialogs the recorder
// does not produce (familiar avoids them, or they need an MCP server), placed
// in a 120x40 screen.
var documentedScreens = []struct {
	name   string
	screen string
	want   screen.Classification
}{
	{"permission-mcp", `
  Calling study…
────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────
 Tool use
 study — Write Marker Tool: (MCP)
╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌
 path: "/repo/marker.txt"
╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌
 About the study — Write Marker Tool:
 │ Write the word 'marker' into the given file path.
 Do you want to proceed?
 ❯ 1. Yes
   2. Yes, and don't ask again for study — Write Marker commands in /repo
   3. No
 Esc to cancel · Tab to amend`,
		screen.Classification{State: screen.Permission, Pattern: "permission",
			Title: "Tool use", Text: "Do you want to proceed?",
			Detail: "study — Write Marker Tool: (MCP)\npath: \"/repo/marker.txt\"\nAbout the study — Write Marker Tool:\n│ Write the word 'marker' into the given file path.",
			Options: []screen.Option{
				sel(yes(1, "Yes")),
				yes(2, "Yes, and don't ask again for study — Write Marker commands in /repo"),
				yes(3, "No"),
			}}},
	{"bypass-permissions", `
────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────
  WARNING: Claude Code running in Bypass Permissions mode
  In Bypass Permissions mode, Claude Code will not ask for your approval before running potentially dangerous
  commands.
  ❯ No, exit
    Yes, I accept
  Enter to confirm · Esc to cancel`,
		screen.Classification{State: screen.Dialog, Pattern: "bypass-permissions",
			Title:   "WARNING: Claude Code running in Bypass Permissions mode",
			Text:    "WARNING: Claude Code running in Bypass Permissions mode",
			Detail:  "In Bypass Permissions mode, Claude Code will not ask for your approval before running potentially dangerous\ncommands.",
			Options: []screen.Option{{Label: "No, exit", Selected: true}, {Label: "Yes, I accept"}}}},
	{"mcp-server", `
────────────────────────────────────────────────────────────────────────────────────────────────────────────────────────
  New MCP server found in this project: projsrv
  MCP servers may execute code or access system resources. All tool calls require approval. Learn more in the MCP
  documentation.
    Use this MCP server
    Use this and all future MCP servers in this project
  ❯ Continue without using this MCP server
  Enter to confirm · Esc to cancel`,
		screen.Classification{State: screen.Dialog, Pattern: "mcp-server",
			Title:  "New MCP server found in this project: projsrv",
			Text:   "New MCP server found in this project: projsrv",
			Detail: "MCP servers may execute code or access system resources. All tool calls require approval. Learn more in the MCP\ndocumentation.",
			Options: []screen.Option{
				{Label: "Use this MCP server"},
				{Label: "Use this and all future MCP servers in this project"},
				{Label: "Continue without using this MCP server", Selected: true},
			}}},
}

func snapshotOf(text string) screen.Snapshot {
	lines := strings.Split(strings.TrimPrefix(text, "\n"), "\n")
	for len(lines) < 40 {
		lines = append(lines, "")
	}
	return screen.Snapshot{Lines: lines, Cols: 120, Rows: 40}
}

func TestDocumentedScreens(t *testing.T) {
	for _, tt := range documentedScreens {
		t.Run(tt.name, func(t *testing.T) {
			if got := screen.Classify(snapshotOf(tt.screen)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Classify:\n got %s\nwant %s", show(got), show(tt.want))
			}
		})
	}
}

// Screens that look like a state without being one stay what they are, or
// Unknown: the classifier never guesses.
func TestLookalikes(t *testing.T) {
	version := recordedVersions(t)[len(recordedVersions(t))-1]
	edit := func(name string, f func(lines []string) []string) screen.Snapshot {
		rec := loadRecording(t, version, name)
		snap := rec.Snap
		snap.Lines = f(slices.Clone(snap.Lines))
		return snap
	}
	replace := func(lines []string, old, new string) []string {
		for i, l := range lines {
			if strings.Contains(l, old) {
				lines[i] = strings.Replace(l, old, new, 1)
				return lines
			}
		}
		t.Fatalf("no line contains %q", old)
		return nil
	}
	// setLine replaces the last line containing sub.
	setLine := func(lines []string, sub, line string) []string {
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.Contains(lines[i], sub) {
				lines[i] = line
				return lines
			}
		}
		t.Fatalf("no line contains %q", sub)
		return nil
	}
	drop := func(lines []string, sub string) []string {
		for i, l := range lines {
			if strings.Contains(l, sub) {
				lines[i] = ""
			}
		}
		return lines
	}
	tests := []struct {
		name string
		snap screen.Snapshot
		want screen.State
	}{
		{"blank screen", screen.Snapshot{Lines: make([]string, 40), Cols: 120, Rows: 40}, screen.Unknown},
		{"model text asks to proceed", edit("idle-after-turn", func(l []string) []string {
			return replace(l, "I can do A or B. Which one do you prefer?", "Do you want to proceed?")
		}), screen.Idle},
		{"model text mentions an interrupt", edit("idle-after-turn", func(l []string) []string {
			return replace(l, "I can do A or B. Which one do you prefer?", "Interrupted · What should Claude do instead?")
		}), screen.Idle},
		{"model text quotes an API error mid-line", edit("idle-after-turn", func(l []string) []string {
			return replace(l, "I can do A or B. Which one do you prefer?", "The log said API Error: 500 earlier.")
		}), screen.Idle},
		{"permission without its footer", edit("permission-bash", func(l []string) []string {
			return drop(l, "Esc to cancel")
		}), screen.Unknown},
		{"permission without options", edit("permission-write", func(l []string) []string {
			for _, o := range []string{"1. Yes", "2. Yes", "3. No"} {
				l = drop(l, o)
			}
			return l
		}), screen.Unknown},
		{"choice without its header", edit("choice-single", func(l []string) []string {
			return drop(l, "☐ Color")
		}), screen.Unknown},
		{"interrupt of an earlier turn", edit("interrupted", func(l []string) []string {
			l = setLine(l, "Read 1 file", "  ⎿  Interrupted · What should Claude do instead?")
			return setLine(l, "⎿  Interrupted", "❯ a later prompt")
		}), screen.Idle},
		{"trust dialog without a highlighted option", edit("dialog-trust", func(l []string) []string {
			return replace(l, "❯ No, exit", "  No, exit")
		}), screen.Unknown},
		{"working footer wins over the prompt box", edit("idle", func(l []string) []string {
			return replace(l, "? for shortcuts", "esc to interrupt")
		}), screen.Working},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := screen.Classify(tt.snap)
			if got.State != tt.want {
				t.Errorf("state %s (pattern %q), want %s\nscreen:\n%s", got.State, got.Pattern, tt.want, tt.snap.Text())
			}
			if got.State == screen.Unknown && !reflect.DeepEqual(got, screen.Classification{}) {
				t.Errorf("Unknown with content: %s", show(got))
			}
		})
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[screen.State]string{
		screen.Unknown: "unknown", screen.Working: "working", screen.Idle: "idle", screen.Permission: "permission",
		screen.Choice: "choice", screen.Interrupted: "interrupted", screen.Dialog: "dialog", screen.State(42): "state(42)",
	} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}

// The versions with recorded screens are the ones familiar says it tested,
// and an older version keeps only the screens that differ from a newer one's.
func TestRecordedVersionsAreTheTestedOnes(t *testing.T) {
	if got := recordedVersions(t); !slices.Equal(got, agent.TestedVersions) {
		t.Fatalf("testdata has %v, agent.TestedVersions is %v", got, agent.TestedVersions)
	}
	for _, version := range recordedVersions(t) {
		paths, _ := filepath.Glob(filepath.Join(testdataDir, version, "*.txt"))
		for _, p := range paths {
			name := strings.TrimSuffix(filepath.Base(p), ".txt")
			if newer := newerRecording(t, version, name); newer != "" &&
				sameScreen(loadRecording(t, version, name), loadRecording(t, filepath.Base(newer), name)) {
				t.Errorf("%s/%s is the same screen as %s's; remove it (the tests fall back to the newer one)", version, name, newer)
			}
		}
	}
}
