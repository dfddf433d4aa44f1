package screen

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
	"github.com/charmbracelet/x/vt"
)

// scrollElider sits between the OSCFilter and the emulator and keeps a flood
// of text from costing the emulator one full-screen copy per line: the
// emulator moves every cell of the screen up on each line it scrolls (rows ×
// cols cells of ~110 bytes: half a megabyte at 120×40), which made it take
// PTY output at 1–2 MB/s.
//
// Within one Write, a run of plain lines — printable text, CR, LF, HT, SGR
// and EL sequences, nothing that moves the cursor otherwise — is cut at a CR
// LF that leaves a screen's worth of lines after it (the tail) and enough
// before it (the head) to end on the bottom row: a screen of lines, or fewer
// when the run starts a Write and the cursor's row is known. The head cannot
// be visible once the tail has been written: the tail scrolls every row the
// head drew off the screen. The head is replaced by what it leaves behind
// that the tail can see: the cursor at the left of the bottom row (CR, then
// CUP) and the pen (the head's SGR sequences, replayed). When the background
// of the pen does not change in the tail, every row the tail shows is blank
// in that background before it is drawn, so the tail is started at the top
// of a screen erased in it instead (CUP home, ED): the same screen with one
// screen fewer of scrolling.
//
// The result is the screen, cursor and every piece of terminal state the
// emulator would have had without the cut; elide_test.go checks that against
// the emulator fed the uncut stream. The cut is made only where that argument
// holds, which needs knowing the emulator's state at the run: a shadow
// parser (the emulator's own state machine) tells whether a run starts in the
// ground state, and the few pieces of state the argument depends on are
// mirrored from the sequences that change them — margins other than the full
// screen and the pen (per screen, main and alternate, with the saved cursor's
// pen), character sets other than ASCII and pending single shifts. Where the
// mirror is unsure it errs toward "not safe": then the run is written as it
// came. Runs end at Write boundaries, where the emulator ends grapheme
// clusters; Screen batches output into few, large Writes under load.
//
// A scrollElider is not safe for concurrent use; Screen holds its mutex.
type scrollElider struct {
	emu        *vt.Emulator
	p          *ansi.Parser // the shadow parser: same state machine as emu's
	cols, rows int

	alt      bool        // the alternate screen is shown
	vMargins [2]bool     // [main, alt]: top/bottom margins other than the full screen may be set
	hMargins [2]bool     // [main, alt]: left/right margins may be set
	pen      [2]uv.Style // [main, alt]: the cursor's pen
	saved    [2]uv.Style // [main, alt]: the pen of the saved cursor
	lrmm     bool        // DECLRMM: CSI s sets left/right margins
	charsets [4]bool     // G0–G3 designated to something other than ASCII
	gl       int         // the character set invoked into GL
	single   bool        // a single shift applies to the next character

	cuts int // runs cut so far (tests)

	lfs []int  // scratch: LF positions in a run
	out []byte // scratch: what goes to the emulator after a cut
}

func newScrollElider(emu *vt.Emulator, cols, rows int) *scrollElider {
	e := &scrollElider{emu: emu, cols: cols, rows: rows}
	e.p = ansi.NewParser()
	// The parameter size changes how sequences parse; the data size only how
	// much of a string sequence is kept, which the elider never reads.
	e.p.SetParamsSize(parser.MaxParamsSize)
	e.p.SetDataSize(256)
	e.p.SetHandler(ansi.Handler{
		Print:     func(rune) { e.single = false },
		Execute:   e.execute,
		HandleCsi: e.csi,
		HandleEsc: e.esc,
	})
	return e
}

// resize follows the emulator's Resize, which resets both screens' margins.
func (e *scrollElider) resize(cols, rows int) {
	e.cols, e.rows = cols, rows
	e.vMargins, e.hMargins = [2]bool{}, [2]bool{}
}

// Write passes p to the emulator in one Write, with the invisible heads of
// long runs of lines cut out.
func (e *scrollElider) Write(p []byte) (int, error) {
	var out []byte // nil until the first cut: then what goes to the emulator
	for i := 0; i < len(p); {
		if e.p.State() == parser.GroundState {
			if n := runLen(p[i:]); n > 0 {
				run := p[i : i+n]
				// At the start of a Write the emulator's cursor is where
				// the run starts.
				row := -1
				if i == 0 {
					row = e.emu.CursorPosition().Y
				}
				c, top, ok := e.cut(run, row)
				switch {
				case ok:
					e.cuts++
					if out == nil {
						out = append(e.out[:0], p[:i]...)
					}
					out = e.appendCut(out, run, c, top)
				case out != nil:
					out = append(out, run...)
				}
				i += n
				continue
			}
		}
		e.p.Advance(p[i])
		if out != nil {
			out = append(out, p[i])
		}
		i++
	}
	if out == nil {
		return e.emu.Write(p)
	}
	_, err := e.emu.Write(out)
	if cap(out) > 1<<20 {
		out = nil // don't pin a large buffer after a large write
	}
	e.out = out[:0]
	return len(p), err
}

// cut decides where to cut a run, and follows the run's effect on the
// mirrored state: run[:c] is the head to leave out; top says the tail can
// start at the top of an erased screen. row is the cursor's row when the run
// starts, -1 if unknown. ok is false when the run is to be written as it is.
func (e *scrollElider) cut(run []byte, row int) (c int, top, ok bool) {
	a := e.screen()
	// The head must bring the cursor to the bottom row: from an unknown row
	// that takes a screen of lines.
	headLFs := e.rows
	if row >= 0 {
		headLFs = max(1, e.rows-1-row)
	}
	if e.single || e.vMargins[a] || e.hMargins[a] || e.charsets[e.gl] || bytes.Count(run, []byte{'\n'}) < headLFs+e.rows {
		if e.single && hasPrint(run) {
			e.single = false
		}
		e.feedPens(run)
		return 0, false, false
	}
	lfs := e.lfs[:0]
	for i, b := range run {
		if b == '\n' {
			lfs = append(lfs, i)
		}
	}
	e.lfs = lfs
	// The head keeps lfs[:t+1], enough to end on the bottom row; the tail
	// keeps the rest and must hold a screen of lines (so every row the head
	// drew scrolls off). The head ends with CR LF, so the cursor is at the
	// left margin.
	c = -1
	for t := len(lfs) - 1 - e.rows; t >= headLFs-1; t-- {
		if k := lfs[t]; k > 0 && run[k-1] == '\r' {
			c = k + 1
			break
		}
	}
	if c < 0 || !hasPrint(run[c:]) {
		// (The emulator remembers the last character printed, for REP; the
		// tail has to print one for the head's to be forgotten.)
		e.feedPens(run)
		return 0, false, false
	}
	e.feedPens(run[:c])
	bg := e.pen[a].Bg
	top = e.feedPens(run[c:], bg)
	return c, top, true
}

// feedPens gives the SGR and EL sequences of a run to the shadow parser, so
// the mirrored pen follows them, and reports whether the background stayed
// equal to each of bgs throughout.
func (e *scrollElider) feedPens(run []byte, bgs ...any) (same bool) {
	same = true
	a := e.screen()
	for i := 0; i < len(run); {
		j := bytes.IndexByte(run[i:], esc)
		if j < 0 {
			break
		}
		i += j
		n := penOrEraseLen(run[i:])
		for _, b := range run[i : i+n] {
			e.p.Advance(b)
		}
		for _, bg := range bgs {
			if !sameColor(e.pen[a].Bg, bg) {
				same = false
			}
		}
		i += n
	}
	return same
}

// sameColor compares colors the emulator stores as values (none of them are
// uncomparable; if one were, the colors count as different).
func sameColor(a, b any) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// appendCut appends run with its head run[:c] replaced by what the tail
// sees of it: the cursor at the left of the bottom row, and the pen.
func (e *scrollElider) appendCut(out, run []byte, c int, top bool) []byte {
	out = append(out, '\r')
	out = appendPen(out, run[:c])
	if top {
		out = append(out, "\x1b[H\x1b[J"...)
	} else {
		out = append(out, "\x1b["...)
		out = strconv.AppendInt(out, int64(e.rows), 10)
		out = append(out, ";1H"...)
	}
	return append(out, run[c:]...)
}

func (e *scrollElider) screen() int {
	if e.alt {
		return 1
	}
	return 0
}

// runLen returns how long the run of plain lines at the start of p is: text
// (printable ASCII and valid UTF-8 from U+00A0 on), CR, LF, HT, and complete
// SGR and EL sequences. In the ground state, none of these leaves it or
// changes any state the elider mirrors.
func runLen(p []byte) int {
	i := 0
	for i < len(p) {
		switch b := p[i]; {
		case b >= 0x20 && b < 0x7f, b == '\r', b == '\n', b == '\t':
			i++
		case b == esc:
			n := penOrEraseLen(p[i:])
			if n == 0 {
				return i
			}
			i += n
		case b >= 0x80:
			r, size := utf8.DecodeRune(p[i:])
			if (r == utf8.RuneError && size == 1) || r < 0xa0 {
				return i
			}
			i += size
		default:
			return i
		}
	}
	return i
}

// penOrEraseLen returns the length of the SGR (CSI … m) or EL (CSI … K)
// sequence at the start of p, or 0 if p does not start with a complete one
// with plain parameters.
func penOrEraseLen(p []byte) int {
	if len(p) < 3 || p[0] != esc || p[1] != '[' {
		return 0
	}
	for i := 2; i < len(p); i++ {
		switch b := p[i]; {
		case b >= '0' && b <= '9', b == ';', b == ':':
		case b == 'm', b == 'K':
			return i + 1
		default:
			return 0
		}
	}
	return 0
}

// hasPrint reports whether a run prints an ASCII character.
func hasPrint(run []byte) bool {
	for i := 0; i < len(run); {
		switch b := run[i]; {
		case b == esc:
			i += penOrEraseLen(run[i:])
		case b >= 0x20 && b < 0x7f:
			return true
		default:
			i++
		}
	}
	return false
}

// appendPen appends the SGR sequences of a run that decide the pen at its
// end: those from the last one that starts by resetting it.
func appendPen(out, run []byte) []byte {
	from := -1
	for i := 0; i < len(run); {
		if run[i] != esc {
			i++
			continue
		}
		n := penOrEraseLen(run[i:])
		if run[i+n-1] == 'm' && (from < 0 || resetsPen(run[i:i+n])) {
			from = i
		}
		i += n
	}
	if from < 0 {
		return out
	}
	for i := from; i < len(run); {
		if run[i] != esc {
			i++
			continue
		}
		n := penOrEraseLen(run[i:])
		if run[i+n-1] == 'm' {
			out = append(out, run[i:i+n]...)
		}
		i += n
	}
	return out
}

// resetsPen reports whether an SGR sequence begins with a reset (a first
// parameter that is missing or zero, not followed by sub-parameters).
func resetsPen(seq []byte) bool {
	for _, b := range seq[2:] {
		switch b {
		case '0':
		case ';', 'm':
			return true
		default:
			return false
		}
	}
	return false
}

// execute mirrors the control codes that change character sets.
func (e *scrollElider) execute(b byte) {
	switch b {
	case ansi.SO:
		e.gl = 1
	case ansi.SI:
		e.gl = 0
	case ansi.SS2, ansi.SS3:
		e.single = true
	}
}

// csi mirrors margins, DECLRMM, the alternate screen and the pens.
func (e *scrollElider) csi(cmd ansi.Cmd, params ansi.Params) {
	a := e.screen()
	switch {
	case cmd.Prefix() == 0 && cmd.Intermediate() == 0 && cmd.Final() == 'm':
		uv.ReadStyle(params, &e.pen[a])
	case cmd.Prefix() == 0 && cmd.Intermediate() == 0 && cmd.Final() == 'r':
		// DECSTBM, as the emulator reads it.
		top, _, _ := params.Param(0, 1)
		if top < 1 {
			top = 1
		}
		bottom, _, _ := params.Param(1, e.rows)
		if bottom < 1 {
			bottom = e.rows
		}
		if top < bottom {
			e.vMargins[a] = top != 1 || bottom != e.rows
		}
	case cmd.Prefix() == 0 && cmd.Intermediate() == 0 && cmd.Final() == 's' && e.lrmm:
		// DECSLRM (without DECLRMM it saves the cursor).
		left, _, _ := params.Param(0, 1)
		if left < 1 {
			left = 1
		}
		right, _, _ := params.Param(1, e.cols)
		if right < 1 {
			right = e.cols
		}
		if left < right {
			e.hMargins[a] = left != 1 || right != e.cols
		}
	case cmd.Prefix() == 0 && cmd.Intermediate() == 0 && cmd.Final() == 's':
		e.saved[a] = e.pen[a] // SCOSC
	case cmd.Prefix() == '?' && cmd.Intermediate() == 0 && (cmd.Final() == 'h' || cmd.Final() == 'l'):
		set := cmd.Final() == 'h'
		for _, p := range params {
			switch p.Param(-1) {
			case 69:
				e.lrmm = set
			case 1048:
				e.saveRestore(set)
			case 1049:
				if set {
					e.saveRestore(true)
				}
				e.setAlt(set)
			case 1047:
				e.setAlt(set)
			}
		}
	}
}

// setAlt follows a switch of screens: the alternate screen starts with the
// main screen's cursor.
func (e *scrollElider) setAlt(on bool) {
	if on && !e.alt {
		e.pen[1] = e.pen[0]
	}
	e.alt = on
}

// saveRestore follows a save (DECSC) or restore (DECRC) of the cursor.
func (e *scrollElider) saveRestore(save bool) {
	a := e.screen()
	if save {
		e.saved[a] = e.pen[a]
	} else {
		e.pen[a] = e.saved[a]
	}
}

// esc mirrors full resets, saved cursors and character set changes.
func (e *scrollElider) esc(cmd ansi.Cmd) {
	switch inter, final := cmd.Intermediate(), cmd.Final(); {
	case inter == 0 && final == 'c':
		// RIS resets both screens but stays on the one shown.
		e.vMargins, e.hMargins = [2]bool{}, [2]bool{}
		e.pen, e.saved = [2]uv.Style{}, [2]uv.Style{}
		e.lrmm = false
		e.charsets = [4]bool{}
		e.gl = 0
		e.single = false
	case inter >= '(' && inter <= '+' && (final == 'A' || final == 'B' || final == '0'):
		e.charsets[inter-'('] = final != 'B'
	case inter == 0 && (final == '7' || final == '8'):
		e.saveRestore(final == '7')
	case inter == 0 && final == 'n':
		e.gl = 2
	case inter == 0 && final == 'o':
		e.gl = 3
	case inter == 0 && (final == 'N' || final == 'O'):
		// Not single shifts in this emulator; assumed to be, to err safe.
		e.single = true
	}
}

// collector is an io.Writer that keeps what is written to it.
type collector struct{ b []byte }

func (c *collector) Write(p []byte) (int, error) {
	c.b = append(c.b, p...)
	return len(p), nil
}

// reset empties c, dropping a buffer grown large by one big write.
func (c *collector) reset() {
	if cap(c.b) > 1<<20 {
		c.b = nil
	}
	c.b = c.b[:0]
}
