package screen

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/charmbracelet/x/vt"
)

// elideCase is one stream for the differential test: the emulator fed
// through the elider must end every write in the state the emulator fed the
// same writes directly is in.
type elideCase struct {
	cols, rows int
	ops        []elideOp
}

type elideOp struct {
	write      []byte
	cols, rows int // a resize instead of a write, when non-zero
}

// drained returns an emulator whose answers to queries are read and dropped
// (otherwise a query in the stream blocks Write), and a func that stops the
// reader.
func drained(cols, rows int) (*vt.Emulator, func()) {
	emu := vt.NewEmulator(cols, rows)
	emu.SetScrollbackSize(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, emu)
	}()
	return emu, func() {
		if c, ok := emu.InputPipe().(io.Closer); ok {
			_ = c.Close()
		}
		<-done
	}
}

// errRefPanicked is the diff of a case the emulator itself cannot take: it
// indexes out of range on some sequences (margins beyond the screen, and
// others), whether or not the elider is in front of it.
const errRefPanicked = "the emulator panicked"

// runElideCase runs c both ways and returns the first difference, and how
// many runs were cut.
func runElideCase(c elideCase) (diff string, cuts int) {
	ref, stopRef := drained(c.cols, c.rows)
	defer stopRef()
	emu, stopEmu := drained(c.cols, c.rows)
	defer stopEmu()
	el := newScrollElider(emu, c.cols, c.rows)
	for i, op := range c.ops {
		if op.cols > 0 {
			ref.Resize(op.cols, op.rows)
			emu.Resize(op.cols, op.rows)
			el.resize(op.cols, op.rows)
			continue
		}
		if !writeRecover(ref, op.write) {
			return errRefPanicked, cuts
		}
		_, _ = el.Write(op.write)
		cuts += el.cuts
		el.cuts = 0
		if d := compareEmulators(ref, emu); d != "" {
			return fmt.Sprintf("after op %d (%q): %s", i, op.write, d), cuts
		}
	}
	return "", cuts
}

func writeRecover(emu *vt.Emulator, p []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, _ = emu.Write(p)
	return true
}

func compareEmulators(ref, got *vt.Emulator) string {
	if ref.IsAltScreen() != got.IsAltScreen() {
		return fmt.Sprintf("alt screen %v, want %v", got.IsAltScreen(), ref.IsAltScreen())
	}
	if ref.CursorPosition() != got.CursorPosition() {
		return fmt.Sprintf("cursor %v, want %v\ngot:\n%s\nwant:\n%s", got.CursorPosition(), ref.CursorPosition(), got.String(), ref.String())
	}
	for y := 0; y < ref.Height(); y++ {
		for x := 0; x < ref.Width(); x++ {
			a, b := ref.CellAt(x, y), got.CellAt(x, y)
			if (a == nil) != (b == nil) || (a != nil && !a.Equal(b)) {
				return fmt.Sprintf("cell %d,%d = %+v, want %+v\ngot:\n%s\nwant:\n%s", x, y, b, a, got.String(), ref.String())
			}
		}
	}
	return ""
}

// genElideCase makes a random stream that is mostly long runs of lines (so
// that the elider cuts) with the sequences that change what a cut may assume
// mixed in, split into writes at random places.
func genElideCase(r *rand.Rand) elideCase {
	c := elideCase{cols: 3 + r.IntN(18), rows: 1 + r.IntN(8)}
	var stream bytes.Buffer
	words := []string{"a", "lorem", "ipsum", "0123456789", "x y z", "字", "é", "e\u0301", "👍", "\u00a0", "#", "q", "ab\tcd", "qqq", "Q", "\x1b[2b"}
	sgr := []string{"\x1b[m", "\x1b[0m", "\x1b[31m", "\x1b[42m", "\x1b[1;44m", "\x1b[0;7m", "\x1b[38;5;200m", "\x1b[48:2::1:2:3m", "\x1b[;41m", "\x1b[00m"}
	other := []string{
		"\x1b[H", "\x1b[3;2H", "\x1b[J", "\x1b[2J", "\x1b[1J", "\x1b[K", "\x1b[2K",
		// Margins stay inside the screen: the emulator indexes out of range
		// with a bottom or right margin beyond it (a bug of its own).
		"\x1b[r", "\x1b[2;%dr", "\x1b[1;%dr", "\x1b[0;0r", "\x1b[%d;%dr",
		"\x1b[?1049h", "\x1b[?1049l", "\x1b[?1047h", "\x1b[?1047l", "\x1b[?1048h", "\x1b[?1048l", "\x1b[49m", "\x1b[41m",
		"\x1b[?69h", "\x1b[?69l", "\x1b[2;%cs", "\x1b[1;%cs", "\x1b[s", "\x1b[u",
		"\x1b(0", "\x1b(B", "\x1b)0", "\x1b(A", "\x1b*0", "\x1b+A", "\x1b+0", "\x1b*B", "\x0e", "\x0f", "\x8e", "\x8f", "\x1bN", "\x1bn", "\x1bo",
		"\x1bc", "\x1b[3b", "\x1b[b", "\x1b[?7l", "\x1b[?7h", "\x1b[20h", "\x1b[20l", "\x1b[4h", "\x1b[4l",
		"\x1b[?6h", "\x1b[?6l", "\b", "\v", "\f", "\x1bM", "\x1bD", "\x1bE", "\x1b7", "\x1b8",
		"\x1b[2S", "\x1b[T", "\x1b[2L", "\x1b[M", "\x1b[3@", "\x1b[2P", "\x1b[5X", "\x1b[6n", "\x1b[c",
		"\xe2", "\xe2\x94", "\xff", "\xc2\x85", "\x9b31m", "\x90q\x1b\\", "\x1bP1$r\x1b\\", "\x1b[?25l",
		"\x1b[1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18;19;20;21;22;23;24;25;26;27;28;29;30;31;32;33;34m",
		"\x1b[", "\x1b", "\x18", "\x7f",
	}
	for n := 2 + r.IntN(12); n > 0; n-- {
		switch r.IntN(3) {
		case 0:
			s := other[r.IntN(len(other))]
			switch strings.Count(s, "%d") {
			case 1:
				s = fmt.Sprintf(s, 1+r.IntN(c.rows))
			case 2:
				s = fmt.Sprintf(s, 1+r.IntN(c.rows), 1+r.IntN(c.rows))
			}
			s = strings.Replace(s, "%c", fmt.Sprint(1+r.IntN(c.cols)), 1)
			stream.WriteString(s)
		default:
			for lines := r.IntN(5 * c.rows); lines > 0; lines-- {
				for w := r.IntN(5); w > 0; w-- {
					if r.IntN(4) == 0 {
						stream.WriteString(sgr[r.IntN(len(sgr))])
					}
					stream.WriteString(words[r.IntN(len(words))])
					stream.WriteByte(' ')
				}
				if r.IntN(8) == 0 {
					stream.WriteString("\x1b[K")
				}
				switch r.IntN(12) {
				case 0:
					stream.WriteString("\n")
				case 1:
					stream.WriteString("\r")
				default:
					stream.WriteString("\r\n")
				}
			}
		}
	}
	b := stream.Bytes()
	for len(b) > 0 {
		if r.IntN(10) == 0 {
			c.ops = append(c.ops, elideOp{cols: 3 + r.IntN(18), rows: 1 + r.IntN(8)})
		}
		n := len(b)
		if r.IntN(3) > 0 {
			n = 1 + r.IntN(len(b))
		}
		c.ops = append(c.ops, elideOp{write: b[:n]})
		b = b[n:]
	}
	return c
}

var elideCases = flag.Int("elide-cases", 300, "random streams TestScrollEliderMatchesEmulator tries")

// TestScrollEliderMatchesEmulator checks the elider against the emulator on
// random streams.
func TestScrollEliderMatchesEmulator(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := *elideCases
	totalCuts, panics := 0, 0
	for i := range n {
		c := genElideCase(r)
		diff, cuts := runElideCase(c)
		totalCuts += cuts
		if diff == errRefPanicked {
			panics++
			continue
		}
		if diff != "" {
			var stream []string
			for _, op := range c.ops {
				if op.cols > 0 {
					stream = append(stream, fmt.Sprintf("resize %dx%d", op.cols, op.rows))
				} else {
					stream = append(stream, fmt.Sprintf("%q", op.write))
				}
			}
			t.Fatalf("case %d (%dx%d): %s\nops:\n%s", i, c.cols, c.rows, diff, strings.Join(stream, "\n"))
		}
	}
	if totalCuts < n/4 {
		t.Errorf("only %d cuts in %d cases: the test does not exercise the elider", totalCuts, n)
	}
	t.Logf("%d cuts in %d cases (%d skipped: the emulator panicked)", totalCuts, n, panics)
}

// FuzzScrollElider runs the same comparison on fuzzed streams, split in two
// writes at a fuzzed place.
func FuzzScrollElider(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		c := genElideCase(r)
		var b []byte
		for _, op := range c.ops {
			b = append(b, op.write...)
		}
		f.Add(uint8(c.cols), uint8(c.rows), uint16(len(b)/2), b)
	}
	f.Fuzz(func(t *testing.T, cols, rows uint8, split uint16, stream []byte) {
		c := elideCase{cols: 1 + int(cols)%40, rows: 1 + int(rows)%12}
		s := min(int(split), len(stream))
		c.ops = []elideOp{{write: stream[:s]}, {write: stream[s:]}}
		switch diff, _ := runElideCase(c); diff {
		case "":
		case errRefPanicked:
			t.Skip(diff)
		default:
			t.Fatal(diff)
		}
	})
}

// TestScrollEliderCases pins the conditions a cut depends on with streams
// made to break each one.
func TestScrollEliderCases(t *testing.T) {
	lines := func(line string, n int) string { return strings.Repeat(line+"\r\n", n) }
	tests := []struct {
		name    string
		stream  string
		wantCut bool
	}{
		{"plain lines", lines("some text", 20) + "end", true},
		{"lines in colour", "\x1b[44m" + lines("\x1b[31mred\x1b[0;42m green", 20) + "x", true},
		{"head's pen", "\x1b[41m" + lines("a", 12) + "\x1b[0;43m" + lines("b", 6) + "\x1b[m" + lines("c", 6), true},
		{"repeat the last character", lines("Q", 12) + lines("q", 6) + "\x1b[3b", true},
		// The last character printed is not remembered for a character
		// mapped to line drawing.
		{"line drawing", "\x1b(0" + lines("Q", 12) + lines("q", 6) + "\x1b[3b", false},
		// A single shift maps the next character printed, which the cut
		// would move from the head to the tail.
		{"single shift", "\x1b*0\x8e" + lines("q", 12) + lines("", 5) + "q", false},
		{"margins", "\x1b[2;4r" + lines("m", 20) + "x", false},
		{"margins on the other screen", "\x1b[?1049h\x1b[2;4r\x1b[?1049l" + lines("m", 20) + "\x1b[?1049h" + lines("n", 20) + "x", true},
		{"margins reset", "\x1b[2;4r\x1b[r" + lines("m", 20) + "x", true},
		{"left and right margins", "\x1b[?69h\x1b[2;5s" + lines("m", 20) + "x", false},
		{"bare LF", strings.Repeat("abc\n", 20) + "x", false},
		// The background the tail's rows are blank in decides where it can
		// start; the pen it starts with comes from wherever the cursor came
		// from. The tail here is the five b lines: at 5 rows it starts with
		// the SGR.
		{"pen of the main screen", "\x1b[41m\x1b[?1049h" + lines("a", 12) + "\x1b[49m" + lines("b", 5) + "x", true},
		{"pen of DECRC", "\x1b[41m\x1b7\x1b[49m\x1b8" + lines("a", 12) + "\x1b[49m" + lines("b", 5) + "x", true},
		{"pen of SCOSC", "\x1b[41m\x1b[s\x1b[49m\x1b8" + lines("a", 12) + "\x1b[49m" + lines("b", 5) + "x", true},
		{"pen of mode 1048", "\x1b[41m\x1b[?1048h\x1b[49m\x1b[?1048l" + lines("a", 12) + "\x1b[49m" + lines("b", 5) + "x", true},
		{"background changes in the tail", lines("a", 12) + "\x1b[41m" + lines("b", 5) + "x", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, size := range [][2]int{{10, 5}, {7, 1}, {12, 3}} {
				c := elideCase{cols: size[0], rows: size[1], ops: []elideOp{{write: []byte(tt.stream)}}}
				diff, cuts := runElideCase(c)
				if diff != "" {
					t.Fatalf("%dx%d: %s", size[0], size[1], diff)
				}
				// One row is too few for the margins in these streams.
				if size[1] > 1 && (cuts > 0) != tt.wantCut {
					t.Errorf("%dx%d: %d cuts, want cut: %v", size[0], size[1], cuts, tt.wantCut)
				}
			}
		})
	}
}

// TestScrollEliderKnownRow pins the shorter head a run may have when it
// starts a Write and the cursor's row is known: it must still end on the
// bottom row, or the tail would draw over what is below the cursor.
func TestScrollEliderKnownRow(t *testing.T) {
	// Four lines take the cursor from the top row of five to the bottom one;
	// the tail needs five.
	for lfs, wantCuts := range map[int]int{8: 0, 9: 1} {
		c := elideCase{cols: 10, rows: 5, ops: []elideOp{
			{write: []byte("\x1b[5;1HLONG LONG\x1b[1;1H")},
			{write: []byte(strings.Repeat("ab\r\n", lfs) + "x")},
		}}
		diff, cuts := runElideCase(c)
		if diff != "" {
			t.Fatalf("%d lines: %s", lfs, diff)
		}
		if cuts != wantCuts {
			t.Errorf("%d lines: %d cuts, want %d", lfs, cuts, wantCuts)
		}
	}
}
