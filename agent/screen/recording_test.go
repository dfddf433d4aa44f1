package screen_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/agent/screen"
)

// A recording is one screen captured from the real CLI, stored as
// testdata/<cli version>/<name>.txt:
//
//	claude-version: 2.1.330
//	size: 120x40
//	renderer: CLAUDE_CODE_NO_FLICKER=1 TERM=xterm-256color
//	title: ✳ Claude Code
//	cursor: 37,2
//	alt-screen: true
//	raw-offset: 48213
//
//	<exactly Rows lines: Snapshot.Lines>
//
// The header ends at the first empty line. The bytes the CLI wrote to the
// PTY are kept next to it in <name>.raw.gz; raw-offset says how many of them
// had been fed to the Screen when the snapshot was taken, so a test can
// replay them and must get the same lines.
type recording struct {
	Name    string
	Version string
	Header  map[string]string
	Snap    screen.Snapshot
	Offset  int64  // raw-offset; -1 if unknown
	RawPath string // "" if there is no raw stream
}

const testdataDir = "testdata"

func formatRecording(version, renderer string, snap screen.Snapshot, offset int64) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "claude-version: %s\n", version)
	fmt.Fprintf(&b, "size: %dx%d\n", snap.Cols, snap.Rows)
	fmt.Fprintf(&b, "renderer: %s\n", renderer)
	fmt.Fprintf(&b, "title: %s\n", snap.Title)
	fmt.Fprintf(&b, "cursor: %d,%d\n", snap.Cursor.Row, snap.Cursor.Col)
	fmt.Fprintf(&b, "alt-screen: %t\n", snap.AltScreen)
	fmt.Fprintf(&b, "raw-offset: %d\n", offset)
	b.WriteString("\n")
	for _, l := range snap.Lines {
		b.WriteString(l)
		b.WriteString("\n")
	}
	return b.Bytes()
}

func parseRecording(name string, data []byte) (recording, error) {
	rec := recording{Name: name, Header: map[string]string{}, Offset: -1}
	text := string(data)
	head, body, ok := strings.Cut(text, "\n\n")
	if !ok {
		return rec, fmt.Errorf("%s: no empty line after the header", name)
	}
	for _, line := range strings.Split(head, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			k, v = strings.TrimSuffix(line, ":"), ""
		}
		rec.Header[k] = v
	}
	rec.Version = rec.Header["claude-version"]
	if _, err := fmt.Sscanf(rec.Header["size"], "%dx%d", &rec.Snap.Cols, &rec.Snap.Rows); err != nil {
		return rec, fmt.Errorf("%s: size %q: %v", name, rec.Header["size"], err)
	}
	if _, err := fmt.Sscanf(rec.Header["cursor"], "%d,%d", &rec.Snap.Cursor.Row, &rec.Snap.Cursor.Col); err != nil {
		return rec, fmt.Errorf("%s: cursor %q: %v", name, rec.Header["cursor"], err)
	}
	rec.Snap.Title = rec.Header["title"]
	rec.Snap.AltScreen = rec.Header["alt-screen"] == "true"
	if v, ok := rec.Header["raw-offset"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return rec, fmt.Errorf("%s: raw-offset %q: %v", name, v, err)
		}
		rec.Offset = n
	}
	body = strings.TrimSuffix(body, "\n")
	rec.Snap.Lines = strings.Split(body, "\n")
	if len(rec.Snap.Lines) != rec.Snap.Rows {
		return rec, fmt.Errorf("%s: %d lines, header says %d rows", name, len(rec.Snap.Lines), rec.Snap.Rows)
	}
	return rec, nil
}

// loadRecording reads the screen name as version showed it:
// testdata/<version>/<name>.txt, or, when that version showed the same screen
// as a newer one (the recorder keeps only screens that differ), the nearest
// newer version's.
func loadRecording(t testing.TB, version, name string) recording {
	t.Helper()
	dir := resolveRecording(t, version, name)
	path := filepath.Join(dir, name+".txt")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("load recording: %v (re-record with: go test ./agent/screen -run TestRecord -record)", err)
	}
	rec, err := parseRecording(name, data)
	if err != nil {
		t.Fatal(err)
	}
	raw := filepath.Join(dir, rawName(name))
	if _, err := os.Stat(raw); err == nil {
		rec.RawPath = raw
	}
	return rec
}

// noneSuffix marks a screen a version does not show: <name>.none.
const noneSuffix = ".none"

// shown reports whether version shows screen name (no <name>.none marker).
func shown(version, name string) bool {
	_, err := os.Stat(filepath.Join(testdataDir, version, name+noneSuffix))
	return err != nil
}

// resolveRecording returns the dir holding version's screen name: its own,
// else the nearest newer version's that has one.
func resolveRecording(t testing.TB, version, name string) string {
	t.Helper()
	for _, v := range recordedVersions(t) {
		if agent.CompareVersions(v, version) < 0 {
			continue
		}
		dir := filepath.Join(testdataDir, v)
		if _, err := os.Stat(filepath.Join(dir, name+".txt")); err == nil {
			return dir
		}
	}
	return filepath.Join(testdataDir, version)
}

// Parts of a screen that differ between recordings of the same screen: the
// scratch repository's path, the fake API's port, the version in the banner,
// the animated logo, the spinner's verb.
var (
	reBannerVersion = regexp.MustCompile(`Claude Code v\d+\.\d+\.\d+`)
	reLogoGlyphs    = regexp.MustCompile(`[▐▛█▜▌▝▘▗▖▀▄▙▟]+`)
)

// sameScreen reports whether two recordings show the same screen to the
// patterns: lines and title equal once the parts that differ between any two
// recordings are normalized. The recorder keeps an older version's screen
// only when it is not the same as the newer version's.
func sameScreen(a, b recording) bool {
	if a.Snap.Title != b.Snap.Title || a.Snap.AltScreen != b.Snap.AltScreen || len(a.Snap.Lines) != len(b.Snap.Lines) {
		return false
	}
	n := func(s string) string {
		s = reScratchRepo.ReplaceAllString(s, "<repo>")
		s = reLoopback.ReplaceAllString(s, "127.0.0.1:PORT")
		s = reBannerVersion.ReplaceAllString(s, "Claude Code vX")
		s = reLogoGlyphs.ReplaceAllString(s, "")
		s = reSpinnerLine.ReplaceAllString(strings.TrimSpace(s), "<spinner>")
		return strings.Join(strings.Fields(s), " ")
	}
	for i := range a.Snap.Lines {
		if n(a.Snap.Lines[i]) != n(b.Snap.Lines[i]) {
			return false
		}
	}
	return true
}

func rawName(name string) string { return name + ".raw.gz" }

// readRaw returns the first n bytes of a recording's raw stream (all if n < 0).
func readRaw(t testing.TB, rec recording) []byte {
	t.Helper()
	f, err := os.Open(rec.RawPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Offset >= 0 && rec.Offset <= int64(len(b)) {
		b = b[:rec.Offset]
	}
	return b
}

// recordedVersions lists the CLI versions under testdata, oldest first.
func recordedVersions(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(testdataDir)
	if err != nil {
		t.Fatalf("read testdata: %v", err)
	}
	var vs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "" && e.Name()[0] >= '0' && e.Name()[0] <= '9' {
			vs = append(vs, e.Name())
		}
	}
	sort.Slice(vs, func(i, j int) bool { return agent.CompareVersions(vs[i], vs[j]) < 0 })
	return vs
}
