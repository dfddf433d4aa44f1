package screen_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/agent/screen"
)

func TestOSCFilter(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantOut   string
		wantTitle string
	}{
		{"plain text passes", "hello \x1b[1mworld\x1b[0m", "hello \x1b[1mworld\x1b[0m", ""},
		{"title with BEL", "a\x1b]0;✳ Claude Code\x07b", "ab", "✳ Claude Code"},
		{"title with ST", "a\x1b]2;✶ Working\x1b\\b", "ab", "✶ Working"},
		{"0x9C inside UTF-8 is not ST", "\x1b]0;✳ x\x9c y\x07z", "z", "✳ x\x9c y"},
		{"icon name is not the title", "\x1b]1;icon\x07", "", ""},
		{"hyperlink removed", "\x1b]8;;file:///tmp/a\x07a\x1b]8;;\x07", "a", ""},
		{"other escapes untouched", "\x1b[?1049h\x1bM\x1b7\x1b8", "\x1b[?1049h\x1bM\x1b7\x1b8", ""},
		{"ESC not starting ST aborts the OSC", "\x1b]0;half\x1b[2Jrest", "\x1b[2Jrest", ""},
		{"ESC ESC ] starts a new OSC", "\x1b]0;a\x1b\x1b]0;b\x07c", "c", "b"},
		{"CAN cancels", "\x1b]0;t\x18after", "after", ""},
		{"latest title wins", "\x1b]0;one\x07\x1b]0;two\x07", "", "two"},
		{"empty title", "\x1b]0;x\x07\x1b]0;\x07", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			f := screen.NewOSCFilter(&out)
			if _, err := f.Write([]byte(tt.in)); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != tt.wantOut {
				t.Errorf("output %q, want %q", got, tt.wantOut)
			}
			if got := f.Title(); got != tt.wantTitle {
				t.Errorf("title %q, want %q", got, tt.wantTitle)
			}
		})
	}
}

// Every split of a stream into two writes gives the same output and title as
// one write: sequences may end up anywhere in a PTY read.
func TestOSCFilterSplitWrites(t *testing.T) {
	stream := "\x1b[2J\x1b]0;✳ Claude Code\x07❯ hi\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x1b]2;✶ Busy\x07\x1b[0m done"
	var want bytes.Buffer
	whole := screen.NewOSCFilter(&want)
	whole.Write([]byte(stream))
	for i := 0; i <= len(stream); i++ {
		for j := i; j <= len(stream); j++ {
			var got bytes.Buffer
			f := screen.NewOSCFilter(&got)
			f.Write([]byte(stream[:i]))
			f.Write([]byte(stream[i:j]))
			f.Write([]byte(stream[j:]))
			if got.String() != want.String() || f.Title() != whole.Title() {
				t.Fatalf("split at %d,%d: output %q title %q; want %q title %q", i, j, got.String(), f.Title(), want.String(), whole.Title())
			}
		}
	}
	if want.String() != "\x1b[2J❯ hilink\x1b[0m done" || whole.Title() != "✶ Busy" {
		t.Fatalf("output %q title %q", want.String(), whole.Title())
	}
}

// An OSC that never ends costs bounded memory, is not taken as a title, and
// the filter recovers at the next escape sequence.
func TestOSCFilterLongSequence(t *testing.T) {
	var out bytes.Buffer
	f := screen.NewOSCFilter(&out)
	f.Write([]byte("\x1b]0;"))
	chunk := []byte(strings.Repeat("x", 1<<10))
	for range 1 << 10 { // 1 MiB of payload
		f.Write(chunk)
	}
	f.Write([]byte("\x07after"))
	if out.String() != "after" {
		t.Errorf("output %q, want %q", out.String(), "after")
	}
	if f.Title() != "" {
		t.Errorf("an overlong OSC became the title (%d bytes)", len(f.Title()))
	}
	f.Write([]byte("\x1b]0;ok\x07"))
	if f.Title() != "ok" {
		t.Errorf("title %q after an overlong OSC, want ok", f.Title())
	}
}

// Without the filter the emulator ends the title at the 0x9C byte inside ✳
// and prints the rest of it onto the screen; with it the screen stays clean.
func TestScreenTitleDoesNotLeak(t *testing.T) {
	s := screen.New(40, 3, nil)
	defer s.Close()
	s.Write([]byte("\x1b]0;✳ Claude Code\x07❯ ready"))
	snap := s.Snapshot()
	if snap.Lines[0] != "❯ ready" {
		t.Errorf("line 0 = %q, want %q (title leaked onto the screen?)", snap.Lines[0], "❯ ready")
	}
	if snap.Title != "✳ Claude Code" {
		t.Errorf("title %q", snap.Title)
	}
}
