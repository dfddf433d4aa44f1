package screen

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzOSCFilter feeds arbitrary bytes to the OSC filter in one write, in two
// writes split anywhere, and byte by byte. Whatever the bytes: no panic; the
// three give the same output and title (a PTY read may end anywhere); no OSC
// start (ESC ]) ever reaches the emulator; nothing is added; bytes without
// an ESC pass unchanged; and the filter never holds more than maxOSCPayload.
func FuzzOSCFilter(f *testing.F) {
	for _, s := range []string{
		"", "plain", "a\x1b]0;✳ Claude Code\x07b", "\x1b]2;t\x1b\\", "\x1b]0;✳ x\x9c y\x07z",
		"\x1b]8;;file:///tmp/a\x07a\x1b]8;;\x07", "\x1b]0;half\x1b[2Jrest", "\x1b]0;a\x1b\x1b]0;b\x07c",
		"\x1b]0;t\x18after", "\x1b\x1b\x1b]", "\x1b]52;c;" + strings.Repeat("QUFB", 1500) + "\x07after",
		"\x1b]0;" + strings.Repeat("x", maxOSCPayload) + "\x07", "\x1b", "\x1b]", "\x1b]0;x\x1b",
	} {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint16) {
		whole, wholeTitle := oscFilter(t, data)
		k := int(split) % (len(data) + 1)
		halves, halvesTitle := oscFilter(t, data[:k], data[k:])
		var bytewise [][]byte
		for i := range data {
			bytewise = append(bytewise, data[i:i+1])
		}
		single, singleTitle := oscFilter(t, bytewise...)

		if !bytes.Equal(whole, halves) || !bytes.Equal(whole, single) {
			t.Fatalf("output depends on how the input is split:\nwhole  %q\nsplit  %q (at %d)\nbytes  %q", whole, halves, k, single)
		}
		if wholeTitle != halvesTitle || wholeTitle != singleTitle {
			t.Fatalf("title depends on how the input is split: %q, %q, %q", wholeTitle, halvesTitle, singleTitle)
		}
		if bytes.Contains(whole, []byte("\x1b]")) {
			t.Fatalf("an OSC start got through: %q", whole)
		}
		if len(whole) > len(data) {
			t.Fatalf("the filter added bytes: %d in, %d out", len(data), len(whole))
		}
		if !bytes.ContainsRune(data, esc) && !bytes.Equal(whole, data) {
			t.Fatalf("text without ESC changed: %q became %q", data, whole)
		}
		if len(wholeTitle) > maxOSCPayload {
			t.Fatalf("title of %d bytes", len(wholeTitle))
		}
	})
}

// oscFilter runs the writes through a new filter, checking the bound on what
// it keeps after each one.
func oscFilter(t *testing.T, writes ...[]byte) ([]byte, string) {
	t.Helper()
	var out bytes.Buffer
	f := NewOSCFilter(&out)
	for _, w := range writes {
		if n, err := f.Write(w); n != len(w) || err != nil {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(w))
		}
		if len(f.payload) > maxOSCPayload {
			t.Fatalf("the filter keeps %d bytes of one OSC", len(f.payload))
		}
	}
	return out.Bytes(), f.Title()
}

// FuzzScreen writes arbitrary bytes to a Screen of a fuzzed size and
// classifies the snapshot: no panic or hang in the emulator or the
// classifier, a snapshot of as many lines as rows, and a classification that
// keeps checkClassification's rules. The seeds are the real CLI's output
// streams under testdata/.
func FuzzScreen(f *testing.F) {
	for _, raw := range recordedStreams(f) {
		f.Add(raw, uint8(120), uint8(40))
	}
	for _, s := range []string{"", "\x1b[6n\x1b[c", "\x1b[?1049h\x1b[2J\x1b[H❯ hi", "\x1b[8;1000;1000t", "\x1b[999;999H\x1b[99999L", "\x1b#8"} {
		f.Add([]byte(s), uint8(80), uint8(24))
	}
	f.Fuzz(func(t *testing.T, data []byte, cols, rows uint8) {
		c, r := int(cols)%200+1, int(rows)%60+1
		s := New(c, r, nil)
		defer s.Close()
		half := len(data) / 2
		for _, p := range [][]byte{data[:half], data[half:]} {
			if n, err := s.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		snap := s.Snapshot()
		if len(snap.Lines) != snap.Rows || snap.Rows < 1 || snap.Cols < 1 {
			t.Fatalf("snapshot of %d lines for %dx%d", len(snap.Lines), snap.Cols, snap.Rows)
		}
		if len(snap.Title) > maxOSCPayload {
			t.Fatalf("title of %d bytes", len(snap.Title))
		}
		checkClassification(t, snap)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write([]byte("x")); err != ErrClosed {
			t.Fatalf("Write after Close = %v, want ErrClosed", err)
		}
	})
}

// FuzzClassify classifies arbitrary screen text (lines split at \n), which
// reaches the patterns far more often than bytes through the emulator do.
// The seeds are the recorded screens under testdata/.
func FuzzClassify(f *testing.F) {
	for _, lines := range recordedScreens(f) {
		f.Add(lines)
	}
	for _, s := range []string{
		"", "\n\n", "❯", "────────\n❯\n────────", "────────\n❯ 1. Yes\n────────\n",
		"Do you want to proceed?\n❯ 1. Yes\nEsc to cancel · Tab to amend",
		"────────\n ☐ Q\nWhich?\n❯ 1. A\n  2. B\nEnter to select · Esc to cancel",
		"Accessing workspace:\n❯ x\nEnter to confirm · Esc to cancel",
		"✳ Thinking…\nesc to interrupt", "❯ hi\n  ⎿  API Error: 500 x\n────────\n❯\n────────",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		lines := strings.Split(text, "\n")
		cols := 0
		for _, l := range lines {
			cols = max(cols, len([]rune(l)))
		}
		checkClassification(t, Snapshot{Lines: lines, Rows: len(lines), Cols: cols})
	})
}

// anchors are what some pattern needs on the screen before it can match:
// the footers of dialogs and of a running turn, and the rules of the
// prompt box and of a question. A screen with none of them is unrecognised.
var anchors = regexp.MustCompile(`Esc to cancel|Enter to confirm|esc to interrupt|─{8,}`)

// checkClassification holds Classify to what the driver relies on:
//   - it is deterministic;
//   - Unknown comes with nothing else, and a screen without an anchor is Unknown;
//   - a known state names a pattern of that state;
//   - options exist exactly where a person must choose: permission and
//     choice dialogs always have some, select dialogs (Dialog) may, and
//     working, idle and interrupted screens never do;
//   - every word of every text it returns is on the screen: nothing is
//     made up, least of all an option to press.
func checkClassification(t *testing.T, snap Snapshot) {
	t.Helper()
	c := Classify(snap)
	if again := Classify(snap); !reflect.DeepEqual(c, again) {
		t.Fatalf("Classify is not deterministic: %+v, then %+v", c, again)
	}
	screenText := strings.Join(snap.Lines, "\n")
	if c.State == Unknown {
		if !reflect.DeepEqual(c, Classification{}) {
			t.Fatalf("Unknown with content: %+v", c)
		}
		return
	}
	if !anchors.MatchString(screenText) {
		t.Fatalf("classified %s (%s) without any anchor on the screen:\n%s", c.State, c.Pattern, screenText)
	}
	i := slices.IndexFunc(patterns, func(p pattern) bool { return p.name == c.Pattern })
	if i < 0 || patterns[i].state != c.State {
		t.Fatalf("state %s with pattern %q", c.State, c.Pattern)
	}
	switch c.State {
	case Permission, Choice:
		if len(c.Options) == 0 {
			t.Fatalf("%s without options:\n%s", c.State, screenText)
		}
	case Working, Idle, Interrupted:
		if c.Options != nil {
			t.Fatalf("%s with options %+v", c.State, c.Options)
		}
	}
	texts := map[string]string{"title": c.Title, "text": c.Text, "detail": c.Detail}
	for i, o := range c.Options {
		if o.Digit < 0 || o.Digit > 9 {
			t.Fatalf("option %d has digit %d", i, o.Digit)
		}
		texts["option "+strconv.Itoa(i)+" label"] = o.Label
		texts["option "+strconv.Itoa(i)+" description"] = o.Description
	}
	for what, s := range texts {
		for _, w := range strings.Fields(s) {
			if !strings.Contains(screenText, w) {
				t.Fatalf("%s %s: %q has %q, which is not on the screen:\n%s", c.Pattern, what, s, w, screenText)
			}
		}
	}
}

// recordedScreens returns the screens of testdata's recordings as text.
func recordedScreens(f *testing.F) []string {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*", "*.txt"))
	if len(paths) == 0 {
		f.Fatal("no recorded screens under testdata")
	}
	var screens []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if _, body, ok := strings.Cut(string(data), "\n\n"); ok {
			screens = append(screens, strings.TrimSuffix(body, "\n"))
		}
	}
	return screens
}

// recordedStreams returns the bytes the real CLI wrote in each recording.
func recordedStreams(f *testing.F) [][]byte {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*", "*.raw.gz"))
	var streams [][]byte
	for _, p := range paths {
		fh, err := os.Open(p)
		if err != nil {
			f.Fatal(err)
		}
		zr, err := gzip.NewReader(fh)
		if err != nil {
			f.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		fh.Close()
		if err != nil {
			f.Fatal(err)
		}
		streams = append(streams, raw)
	}
	return streams
}
