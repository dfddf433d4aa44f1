package mask

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A Stream masks one output stream (a task's terminal) as a terminal shows
// it, chunk by chunk. Masking each chunk with String misses what a person
// sees as one secret:
//
//   - escape sequences inside it: colour codes (grep --color, ESC[1m in a
//     Bearer header) split a key in two, and claude draws spaces as cursor
//     moves (ESC[27G, ESC[1C, ESC[1B), which glue "Bearer" to the key that
//     follows and defeat the word-start check;
//   - chunk boundaries: a key written in two halves, or in two reads of the
//     PTY.
//
// So a Stream matches on the text a terminal would show (the view): escape
// sequences that draw nothing are left out of it, cursor moves become a space
// or a newline, and the view of text already emitted stays as left context
// for the next chunk. What it emits is the raw stream with each secret's
// printable bytes replaced by the masked form; escape sequences inside a
// secret are kept so the screen's colours and cursor stay right, and the text
// of OSC/DCS strings (titles, hyperlinks) is masked too.
//
// It holds back the tail that could still be the start of a secret: the last
// word of the view (and anything that could be the start of a literal the
// Masker was given), at most MaxHold bytes of it, and an unfinished escape
// sequence. Write returns what is safe to emit now; the caller emits the rest
// with Flush once the stream has been quiet for a short deadline, and at its
// end. Flush masks a held word that looks like the start of a secret whole,
// and then masks the word's continuation in the next chunk too, so a key
// written in two halves with a pause between them does not leak its second
// half either. Memory is bounded by MaxHold plus one chunk.
//
// A Stream is not safe for concurrent use: one per stream, fed in order.
type Stream struct {
	m         *Masker
	ownMasker bool // m is this stream's copy, with what it learned
	learned   int  // secrets learned (learn)
	maxHold   int

	pending []byte // raw bytes not yet emitted
	// ctx is the view of the last text emitted, unmasked, cut at a space:
	// "Authorization: Bearer " at the end of one chunk makes the next one's
	// first word a secret.
	ctx string
	// open says the last emitted text ended inside a secret (emitted by a
	// forced cut or Flush): the next chunk's first word continues it.
	open bool
	// inKey says a private key block has begun and not ended: everything up
	// to its end marker is masked.
	inKey bool
	// complete: the text is whole (Terminal), so its last word is not the
	// start of a secret still to come.
	complete bool
	// retryAt: Write skips matching until pending is this long, unless the
	// new bytes may end the held word (0: always match).
	retryAt int
	// examined counts the bytes matched over, for the test that keeps the
	// work linear in the stream.
	examined int

	// Scratch, reused between calls.
	view   []byte
	rawOff []int32 // rawOff[i]: where view byte i starts in pending
	rawEnd []int32 // rawEnd[i]: where it ends (an escape sequence may draw it)
	cols   []int32 // cols[i]: the cursor's column before view byte i
	// startCol is the column where pending starts (where the emitted text
	// left the cursor); endCol where the parsed part of it ends.
	startCol, endCol int
	wrapAt           int // a possible wrap at the end of the view (its index), or -1
	// joins are where a wrap was joined before a word that begins, or may
	// begin, a secret's shape ("sk-", "ghp_"): view indices of that word's
	// start. A line break after a long line is a wrap or a new line; the
	// text is matched both ways there (joinSpans), or a key drawn at the
	// start of the line after a long one would lose its word start.
	joins []int
	segs  []segment
	out   []byte
}

// segment is an escape sequence or control byte of pending that draws no
// printable byte: it is copied through (OSC and DCS strings masked), also
// from inside a secret.
type segment struct {
	start, end int
	text       bool // an OSC/DCS/APC string whose payload is text to mask
	// remnant: a sequence that lost its ESC, i.e. text: dropped with the
	// secret it is inside, as it sets no terminal state.
	remnant bool
}

const (
	// DefaultMaxHold is how many bytes of view a Stream holds back at most.
	// Secrets are shorter; a longer word is cut and, if it looked like a
	// secret, masked to its end.
	DefaultMaxHold = 4096
	// ctxLen bounds the left context kept from emitted text.
	ctxLen = 256
	// maxEscape bounds an unfinished escape sequence held back: a longer
	// one is not an escape sequence a terminal would wait for.
	maxEscape = 4096
	// keyBegin stands in for a private key's begin marker in the context
	// once the marker itself has gone by.
	keyBegin = "-----BEGIN PRIVATE KEY-----\n"
)

// NewStream returns a Stream that masks with m (nil: shapes only). maxHold
// <= 0 means DefaultMaxHold.
func (m *Masker) NewStream(maxHold int) *Stream {
	if m == nil {
		m = plain
	}
	if maxHold <= 0 {
		maxHold = DefaultMaxHold
	}
	return &Stream{m: m, maxHold: maxHold}
}

// Write takes the next chunk of the stream and returns the masked bytes that
// are safe to emit now (possibly none). The result is only valid until the
// next call.
func (s *Stream) Write(p []byte) []byte {
	s.pending = append(s.pending, p...)
	// Holding more is always safe. While the held word grows with no
	// place to cut in sight, look again only when it has doubled (or
	// reached MaxHold): matching stays linear in the stream even when a
	// long word arrives a few bytes at a time.
	if len(s.pending) < s.retryAt && !mayCut(p) {
		return nil
	}
	out := s.process(false)
	s.retryAt = 0
	if len(out) == 0 && len(s.pending) > 0 {
		s.retryAt = min(2*len(s.pending), 2*s.maxHold+1)
	}
	return out
}

// mayCut reports whether p may end the held word: it has a blank or an
// escape sequence that draws one. (A sequence split across writes is missed;
// that only holds the word a little longer.)
func mayCut(p []byte) bool {
	for i, c := range p {
		if isSpace(c) {
			return true
		}
		if c == 0x1b {
			if _, drawn, _, ok := escapeEnd(p, i); ok && drawn != 0 {
				return true
			}
		}
	}
	return false
}

// Flush returns everything held back, masked; call it when the stream has
// been quiet for a short while (the terminal shows the held text by then) and
// at its end. An unfinished escape sequence stays held unless final is set.
func (s *Stream) Flush(final bool) []byte {
	out := append([]byte(nil), s.process(true)...)
	for final && len(s.pending) > 0 {
		// An escape sequence cut off by the end of the stream: drop its ESC,
		// which draws nothing, and mask the rest as text in its context.
		s.pending = s.pending[1:]
		out = append(out, s.process(true)...)
	}
	if final {
		s.ctx, s.open, s.inKey, s.startCol = "", false, false, 0
	}
	return out
}

// Terminal masks s, a whole piece of terminal output, as a terminal shows
// it: through colour codes and cursor moves (see Stream). An escape sequence
// cut off at the end of s is kept as it is, so s may be one chunk of a longer
// stream; but a secret split across chunks needs a Stream.
func (m *Masker) Terminal(s string) string {
	if m == nil {
		m = plain
	}
	st := m.NewStream(len(s) + 1)
	st.complete = true
	out := append([]byte(nil), st.Write([]byte(s))...)
	out = append(out, st.process(true)...)
	if len(st.pending) > 0 {
		out = append(out, m.text(string(st.pending))...)
	}
	return string(out)
}

// Held reports how many raw bytes the Stream holds back: at most about
// twice MaxHold (escape sequences inside the held word) plus one write.
func (s *Stream) Held() int { return len(s.pending) }

// parse builds the view of pending and returns how many bytes of pending
// it covers (an unfinished escape sequence at the end is left out, and
// unless flush is set, the start of a sequence that lost its ESC).
func (s *Stream) parse(flush bool) int {
	s.view, s.rawOff, s.rawEnd, s.segs, s.cols = s.view[:0], s.rawOff[:0], s.rawEnd[:0], s.segs[:0], s.cols[:0]
	p := s.pending
	s.examined += len(p)
	if cap(s.view) < len(p) {
		// One allocation, not a doubling per append, for a big piece.
		s.view, s.rawOff, s.rawEnd, s.cols = make([]byte, 0, len(p)), make([]int32, 0, len(p)), make([]int32, 0, len(p)), make([]int32, 0, len(p))
	}
	col := s.startCol
	draw := func(c byte, start, end int) {
		s.view = append(s.view, c)
		s.rawOff = append(s.rawOff, int32(start))
		s.rawEnd = append(s.rawEnd, int32(end))
		s.cols = append(s.cols, int32(col))
	}
	i := 0
	for i < len(p) {
		c := p[i]
		switch {
		case c > 0x20 && c < 0x7f && c != '[':
			// A run of printable ASCII (the bulk of any output) draws one
			// column a byte: filled in one go, not byte by byte.
			j := i + 1
			for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f && p[j] != '[' {
				j++
			}
			base := len(s.view)
			s.view = append(s.view, p[i:j]...)
			s.rawOff = slices.Grow(s.rawOff, j-i)[:base+j-i]
			s.rawEnd = slices.Grow(s.rawEnd, j-i)[:base+j-i]
			s.cols = slices.Grow(s.cols, j-i)[:base+j-i]
			for k := range j - i {
				s.rawOff[base+k] = int32(i + k)
				s.rawEnd[base+k] = int32(i + k + 1)
				s.cols[base+k] = int32(col + k)
			}
			col += j - i
			i = j
		case c == 0x1b:
			end, drawn, text, ok := escapeEnd(p, i)
			if !ok {
				if len(p)-i < maxEscape {
					s.endCol = col
					s.joinWrapped(i)
					return i
				}
				end, drawn, text = i+1, 0, false // not a sequence: skip the ESC alone
			}
			s.segs = append(s.segs, segment{start: i, end: end, text: text})
			if drawn != 0 {
				draw(drawn, i, end)
			}
			col = cursorColumn(p[i:end], col)
			i = end
		case c == '[' && s.afterWord():
			// A sequence that lost its ESC on the way (claude shows a
			// model's text without control characters: "Bearer[1C…",
			// "sk-ant-…[1m…"): inside a word, take it for the sequence.
			if !flush && remnantUnfinished(p, i) {
				// "Bearer[0" at the end of a read may be "Bearer[0C" and
				// a token: drawn as text, "[0" hid the blank the next read
				// makes of it, and the token went out as a new word.
				s.endCol = col
				s.joinWrapped(i)
				return i
			}
			if end, drawn, ok := remnant(p, i); ok {
				s.segs = append(s.segs, segment{start: i, end: end, remnant: true})
				if drawn != 0 {
					draw(drawn, i, end)
				}
				i = end
				continue
			}
			draw(c, i, i+1)
			col++
			i++
		case c == '\n' || c == '\r' || c == '\t' || c >= 0x20 && c != 0x7f:
			draw(c, i, i+1)
			switch {
			case c == '\n' || c == '\r':
				col = 0
			case c == '\t':
				col = (col/8 + 1) * 8
			case c < 0x80 || c >= 0xc0: // not a UTF-8 continuation byte
				col++
			}
			i++
		default: // other control bytes draw nothing
			s.segs = append(s.segs, segment{start: i, end: i + 1})
			i++
		}
	}
	s.endCol = col
	s.joinWrapped(i)
	return i
}

// wrapColumn is how far right a line must reach for a line break after it
// to be taken for a wrap: claude draws long lines (a command, its output)
// wrapped at its width, so a key may go on at the start of the next line.
const wrapColumn = 40

// joinable bytes may continue a wrapped word.
func joinable(c byte) bool {
	return isLetter(c) || isDigit(c) || strings.IndexByte("-_./+=~", c) >= 0
}

// joinWrapped takes out of the view the line breaks (and the indentation
// after them) that look like wraps: the line before reached wrapColumn and
// both sides are inside a word. Their bytes stay in the output as segments.
// A break at the end of the view that may turn out to be one is noted in
// s.wrapAt for the cut to hold the word before it.
func (s *Stream) joinWrapped(covered int) {
	s.wrapAt = -1
	s.joins = s.joins[:0]
	v := s.view
	n := len(v)
	removed := false
	w := 0
	// Only runs of blanks with a line break in them can be wraps: jump from
	// break to break, moving the bytes between (once something was taken
	// out) in bulk.
	nextLF, nextCR := -1, -1 // n: none left
	for r := 0; r < n; {
		if nextLF < r {
			nextLF = indexFrom(v, '\n', r)
		}
		if nextCR < r {
			nextCR = indexFrom(v, '\r', r)
		}
		b := min(nextLF, nextCR)
		if b == n {
			w = s.move(w, r, n)
			break
		}
		rs, e := b, b
		for rs > r && isSpace(v[rs-1]) {
			rs--
		}
		for e < n && isSpace(v[e]) {
			e++
		}
		w = s.move(w, r, rs)
		wrap := rs > 0 && joinable(v[rs-1]) && s.cols[rs] >= wrapColumn
		switch {
		case wrap && e < n && joinable(v[e]):
			// Joined: the run's real bytes become segments.
			if mayBeginShape(v[e:]) {
				s.joins = append(s.joins, w)
			}
			for k := rs; k < e; k++ {
				if a, b := int(s.rawOff[k]), int(s.rawEnd[k]); b-a == 1 && isSpace(s.pending[a]) {
					s.segs = append(s.segs, segment{start: a, end: b})
				}
			}
			removed = true
		case wrap && e == n:
			s.wrapAt = w
			fallthrough
		default:
			w = s.move(w, rs, e)
		}
		r = e
	}
	s.view, s.rawOff, s.rawEnd, s.cols = v[:w], s.rawOff[:w], s.rawEnd[:w], s.cols[:w]
	if removed {
		slices.SortFunc(s.segs, func(a, b segment) int { return a.start - b.start })
	}
	_ = covered
}

// indexFrom is the index of c in v at or after from, or len(v).
func indexFrom(v []byte, c byte, from int) int {
	if i := bytes.IndexByte(v[from:], c); i >= 0 {
		return from + i
	}
	return len(v)
}

// move moves view bytes [from, to) to position w (w <= from) and returns
// the position after them.
func (s *Stream) move(w, from, to int) int {
	if w != from {
		copy(s.view[w:], s.view[from:to])
		copy(s.rawOff[w:], s.rawOff[from:to])
		copy(s.rawEnd[w:], s.rawEnd[from:to])
		copy(s.cols[w:], s.cols[from:to])
	}
	return w + to - from
}

// afterWord reports whether the next view byte would go on a word: the
// view's last byte, or before anything in it, the emitted text's.
func (s *Stream) afterWord() bool {
	if len(s.view) > 0 {
		return joinable(s.view[len(s.view)-1])
	}
	return len(s.ctx) > 0 && joinable(s.ctx[len(s.ctx)-1])
}

// remnantUnfinished reports whether p[i:], a '[' at the end of p, may be the
// start of a remnant (see remnant) that more bytes would finish.
func remnantUnfinished(p []byte, i int) bool {
	j := i + 1
	for j < len(p) && j-i < 12 && (isDigit(p[j]) || p[j] == ';') {
		j++
	}
	return j == len(p) || j == len(p)-1 && strings.IndexByte("mKCG", p[j]) >= 0
}

// remnant reads "[1m", "[0;31m", "[1C", "[27G" at p[i] followed by a byte
// that may go on a word, and returns its end and what it draws.
func remnant(p []byte, i int) (end int, drawn byte, ok bool) {
	j := i + 1
	for j < len(p) && j-i < 12 && (isDigit(p[j]) || p[j] == ';') {
		j++
	}
	// Followed by a word, or by an earlier masking's "…".
	if j >= len(p)-1 || !joinable(p[j+1]) && p[j+1] != markerHead[0] {
		return 0, 0, false
	}
	switch p[j] {
	case 'm', 'K':
		return j + 1, 0, true
	case 'C', 'G':
		return j + 1, ' ', true
	}
	return 0, 0, false
}

// cursorColumn returns the column after the escape sequence seq, starting
// from col: horizontal moves and positioning count, others leave it.
func cursorColumn(seq []byte, col int) int {
	if len(seq) < 3 || seq[1] != '[' {
		if len(seq) == 2 && seq[1] == 'E' {
			return 0
		}
		return col
	}
	params := seq[2 : len(seq)-1]
	first, second := 0, 0
	nth := 0
	for _, c := range params {
		switch {
		case c >= '0' && c <= '9' && nth == 0:
			first = min(first*10+int(c-'0'), 1<<16)
		case c >= '0' && c <= '9' && nth == 1:
			second = min(second*10+int(c-'0'), 1<<16)
		case c == ';':
			nth++
		}
	}
	switch seq[len(seq)-1] {
	case 'C', 'a':
		return col + max(first, 1)
	case 'D':
		return max(col-max(first, 1), 0)
	case 'G', '`':
		return max(first, 1) - 1
	case 'H', 'f':
		return max(second, 1) - 1
	case 'E', 'F':
		return 0
	}
	return col
}

// escapeEnd reads the escape sequence at p[i] (an ESC) and returns its end,
// what it draws in the view (0: nothing; ' ' for horizontal cursor moves,
// '\n' for vertical ones and positioning), and whether it carries a text
// string. ok is false if p ends before the sequence does.
func escapeEnd(p []byte, i int) (end int, drawn byte, text, ok bool) {
	if i+1 >= len(p) {
		return 0, 0, false, false
	}
	switch p[i+1] {
	case '[': // CSI: parameters, intermediates, a final byte
		j := i + 2
		for j < len(p) && p[j] >= 0x20 && p[j] <= 0x3f {
			j++
		}
		if j >= len(p) {
			return 0, 0, false, false
		}
		f := p[j]
		if f < 0x40 || f > 0x7e {
			return j, 0, false, true // malformed: drop what we read
		}
		switch f {
		case 'C', 'D', 'G', '`', 'a', 'I', 'Z', 'X':
			drawn = ' '
		case 'A', 'B', 'E', 'F', 'H', 'f', 'd', 'e', 'r':
			drawn = '\n'
		}
		return j + 1, drawn, false, true
	case ']', 'P', 'X', '^', '_': // strings, ended by BEL (OSC) or ST
		for j := i + 2; j < len(p); j++ {
			switch {
			case p[j] == 0x07:
				return j + 1, 0, true, true
			case p[j] == 0x1b && j+1 == len(p):
				return 0, 0, false, false
			case p[j] == 0x1b && p[j+1] == '\\':
				return j + 2, 0, true, true
			case p[j] == 0x1b:
				// Any other ESC cancels the string and starts a sequence
				// of its own, as in a terminal; stopping here also keeps
				// a run of unfinished strings from being read again and
				// again.
				return j, 0, true, true
			}
		}
		return 0, 0, false, false
	default: // ESC, intermediates, a final byte (ESC 7, ESC ( B, ESC M)
		j := i + 1
		for j < len(p) && p[j] >= 0x20 && p[j] <= 0x2f {
			j++
		}
		if j >= len(p) {
			return 0, 0, false, false
		}
		if p[j] == 'M' || p[j] == 'D' || p[j] == 'E' { // reverse index, index, next line
			drawn = '\n'
		}
		return j + 1, drawn, false, true
	}
}

func isViewSpace(c byte) bool { return isSpace(c) }

// process emits what is safe (all of it when flush is set) and keeps the rest.
func (s *Stream) process(flush bool) []byte {
	covered := s.parse(flush)
	view := s.view
	ctx := s.ctx
	if s.inKey {
		ctx = keyBegin
	}
	full := ctx + string(view)
	off := len(ctx)
	spans := s.m.find(full)
	if len(s.joins) > 0 {
		spans = s.joinSpans(full, off, spans)
	}
	s.learn(full, spans)

	// The cut: everything before it is emitted now.
	c := len(view)
	forced := flush
	if !flush {
		c = 0
		for k := len(view) - 1; k >= 0; k-- {
			if isViewSpace(view[k]) {
				c = k + 1
				break
			}
		}
		// A line that may wrap into the next chunk: hold its last word.
		wrapHeld := false
		if s.wrapAt >= 0 && s.wrapAt <= c {
			k := s.wrapAt
			for k > 0 && joinable(view[k-1]) {
				k--
			}
			wrapHeld = k < c
			c = min(c, k)
		}
		c = s.literalStart(full, off, c)
		// Never cut inside an earlier masking's marker ("…[masked 12
		// chars]" has spaces): the part after the cut would look like a
		// new word, or a private key's body.
		if strings.Contains(full, markerHead) {
			for _, z := range maskedZones(full) {
				if z.start < off+c && off+c < z.end {
					c = max(z.start-off, 0)
				}
			}
		}
		// A secret that crosses the cut, or may go on (it reaches the end:
		// a private key's body, a quoted value), is held whole.
		for _, sp := range spans {
			switch {
			case sp.start >= off+c || sp.end <= off+c && sp.end < len(full):
			case sp.start >= off:
				c = sp.start - off
			default:
				// It began in text already emitted (a private key's body):
				// hold only the last line, where its end marker may be
				// arriving.
				c = min(c, lastLineStart(view))
			}
		}
		// Held text that cannot be the start of a secret goes out now:
		// holding every last word made each frame's last word wait for the
		// quiet flush (output lag p99 ~60 ms), and what the flush would
		// emit unmasked can as well be emitted at once. The left context
		// still catches a secret that a later chunk completes.
		if c < len(view) && !s.mayStartSecret(full, off, view, spans) &&
			// The word before a possible wrap is the view's last but a
			// line break: it is asked as if the view ended there (a key
			// the TUI wrapped, cut by a read after the break, went out
			// whole).
			!(wrapHeld && s.mayStartSecret(full[:off+s.wrapAt], off, view[:s.wrapAt], spans)) {
			c = len(view)
			// A joined line break before what may begin a key: what
			// came before the break goes now, unless it may itself be
			// the start of one (a wrapped key); the rest waits.
			if j := s.lastWordJoin(view); j >= 0 {
				c = j
				if s.mayStartSecret(full[:off+j], off, view[:j], spans) {
					for c > 0 && !isViewSpace(view[c-1]) {
						c--
					}
				}
			}
		}
		held := covered
		if c < len(view) {
			held = covered - int(s.rawOff[c])
		}
		if len(view)-c > s.maxHold || held > 2*s.maxHold {
			c, forced = len(view), true
		}
	}
	if c == 0 && !s.open && covered == len(s.pending) && !flush {
		return nil
	}

	// Spans to mask in view[0:c], in view coordinates; cont marks those that
	// continue a secret begun in text already emitted.
	type vspan struct {
		a, b int
		cont bool
	}
	var vs []vspan
	open := false
	if s.open {
		e := 0
		for e < c && !isViewSpace(view[e]) {
			e++
		}
		if e > 0 {
			vs = append(vs, vspan{0, e, true})
		}
		open = e == len(view) && forced
	}
	for _, sp := range spans {
		a, b := sp.start-off, sp.end-off
		if b <= 0 || a >= c {
			continue
		}
		// A private key's body after the stand-in marker continues too.
		cont := a < 0 || a == 0 && s.inKey
		a, b = max(a, 0), min(b, c)
		if a >= b {
			continue
		}
		if sp.end-off >= c && forced && !s.complete {
			open = true
		}
		vs = append(vs, vspan{a, b, cont})
	}
	if forced && c == len(view) && !s.complete {
		a := s.candidate(full, off, view)
		if a < 0 {
			a = s.lastWordJoin(view) // what the line after a long one begins with
		}
		if a >= 0 {
			vs = append(vs, vspan{a, len(view), false})
			open = true
		}
	}
	// Merge (spans from find are sorted; the continuation and candidate
	// may overlap them).
	if len(vs) > 1 {
		sortSpans := func() {
			for i := 1; i < len(vs); i++ {
				for j := i; j > 0 && vs[j].a < vs[j-1].a; j-- {
					vs[j], vs[j-1] = vs[j-1], vs[j]
				}
			}
		}
		sortSpans()
		merged := vs[:1]
		for _, v := range vs[1:] {
			last := &merged[len(merged)-1]
			if v.a <= last.b {
				last.b = max(last.b, v.b)
				continue
			}
			merged = append(merged, v)
		}
		vs = merged
	}

	rawCut := covered
	if c < len(view) {
		rawCut = int(s.rawOff[c])
	}
	s.out = s.out[:0]
	ri, seg := 0, 0
	var b strings.Builder
	for _, v := range vs {
		s.out, seg = s.copyRaw(s.out, ri, int(s.rawOff[v.a]), seg, false)
		b.Reset()
		secret := string(view[v.a:v.b])
		if v.cont {
			b.WriteString(markerHead)
			b.WriteString(strconv.Itoa(utf8.RuneCountInString(secret)))
			b.WriteString(markerTail)
		} else {
			writeMasked(&b, secret, s.m.literals)
		}
		s.out = append(s.out, b.String()...)
		ri = int(s.rawEnd[v.b-1])
		s.out, seg = s.copyRaw(s.out, int(s.rawOff[v.a]), ri, seg, true)
	}
	s.out, _ = s.copyRaw(s.out, ri, rawCut, seg, false)

	// Remember the context and drop what was emitted. A cut at a joined
	// line break keeps the break as a blank: what follows it starts a word.
	emitted := ctx + string(view[:c])
	if c > 0 && c < len(view) && slices.Contains(s.joins, c) {
		emitted += "\n"
	}
	s.inKey = keyOpen(emitted)
	if len(emitted) > ctxLen {
		emitted = emitted[len(emitted)-ctxLen:]
		if k := strings.IndexAny(emitted, " \t\r\n"); k >= 0 {
			emitted = emitted[k+1:]
		}
	}
	s.ctx = emitted
	if c > 0 {
		s.open = open
	}
	if c < len(view) {
		s.startCol = int(s.cols[c])
	} else {
		s.startCol = s.endCol
	}
	s.pending = append(s.pending[:0], s.pending[rawCut:]...)
	return s.out
}

// copyRaw appends pending[from:to] to out: all of it, or with escapesOnly
// only its escape sequences (the printable bytes of a secret are replaced by
// the masked form). OSC and DCS strings are masked as text. seg is the first
// segment that may lie in range; copyRaw returns the next one.
func (s *Stream) copyRaw(out []byte, from, to, seg int, escapesOnly bool) ([]byte, int) {
	for seg < len(s.segs) && s.segs[seg].end <= from {
		seg++
	}
	pos := from
	for ; seg < len(s.segs) && s.segs[seg].start < to; seg++ {
		g := s.segs[seg]
		if !escapesOnly {
			out = append(out, s.pending[pos:g.start]...)
		}
		if g.remnant && escapesOnly {
			pos = g.end
			continue
		}
		if g.text {
			out = append(out, s.m.text(string(s.pending[g.start:g.end]))...)
		} else {
			out = append(out, s.pending[g.start:g.end]...)
		}
		pos = g.end
	}
	if !escapesOnly && pos < to {
		out = append(out, s.pending[pos:to]...)
	}
	return out, seg
}

// literalStart moves the cut c back to where a literal secret may begin in
// the held-back view: a suffix of full that is a proper prefix of a literal.
func (s *Stream) literalStart(full string, off, c int) int {
	for _, lit := range s.m.literals {
		for k := min(len(lit)-1, len(full)-off); k > 0; k-- {
			if strings.HasSuffix(full, lit[:k]) {
				c = min(c, len(full)-off-k)
				break
			}
		}
	}
	return c
}

// heads are the beginnings of words that start a secret or name one: a held
// word that is the start of one of them (a "s" that may go on as "sk-ant-…"
// on the next line) stays held.
var heads = func() []string {
	h := []string{"-----begin ", "authorization", "basic"}
	for _, sh := range shapes {
		for _, w := range sh.words {
			if !strings.Contains(w, " ") {
				h = append(h, w)
			}
		}
	}
	return append(h, keyWords.words...)
}()

// maxHead is the length of the longest of heads.
var maxHead = func() int {
	n := 0
	for _, h := range heads {
		n = max(n, len(h))
	}
	return n
}()

// mayStartSecret reports whether the held end of view (after the cut) may
// be, or begin, a secret that more output would complete: inside a private
// key or a secret already begun, a match that reaches the end, the start of
// a literal, a word that continued would be a secret (candidate), or the
// start of a word in heads.
func (s *Stream) mayStartSecret(full string, off int, view []byte, spans []span) bool {
	// An open secret goes on only if the view begins with its rest: after
	// a blank (a cursor move) it has ended.
	if s.inKey || s.open && (len(view) == 0 || !isViewSpace(view[0])) {
		return true
	}
	for _, sp := range spans {
		if sp.end >= len(full) {
			return true
		}
	}
	a := len(view)
	for a > 0 && !isViewSpace(view[a-1]) {
		a--
	}
	for k := a; k < len(view); k++ {
		w := view[k:]
		atStart := k == 0 && (off == 0 || !isWord(full, off-1)) || k > 0 && !isWord(full, off+k-1)
		for _, lit := range s.m.literals {
			// A literal may begin anywhere: its first bytes count at a
			// word's start, three or more count anywhere.
			if (atStart || len(w) >= 3) && len(w) < len(lit) && lit[:len(w)] == string(w) {
				return true
			}
		}
		if atStart && len(w) <= maxHead {
			for _, h := range heads {
				if len(w) <= len(h) && hasPrefixFold(string(w), h[:len(w)]) {
					return true
				}
			}
		}
	}
	return s.candidate(full, off, view) >= 0
}

// joinSpans adds to spans the secrets found where a joined wrap may have
// been a new line (s.joins): matched from there, as if it began a word.
func (s *Stream) joinSpans(full string, off int, spans []span) []span {
	for _, j := range s.joins {
		at := off + j
		for _, sp := range s.m.find(full[at:]) {
			spans = append(spans, span{start: sp.start + at, end: sp.end + at})
		}
	}
	return merge(spans)
}

// lastWordJoin returns where, inside the last word of view, a joined wrap
// put a word that may begin a secret's shape; -1 if none did.
func (s *Stream) lastWordJoin(view []byte) int {
	a := len(view)
	for a > 0 && !isViewSpace(view[a-1]) {
		a--
	}
	for _, j := range s.joins {
		if j >= a && j < len(view) {
			return j
		}
	}
	return -1
}

// padding continues a held word as a secret would, to ask whether the word
// could be the start of one.
const padding = "A0b1C2d3E4f5G6h7J8k9M0n1P2q3R4s5T6u7V8w9"

// candidate returns where the last word of view starts if, continued, it
// would be a secret (a key cut short by a pause); -1 otherwise.
func (s *Stream) candidate(full string, off int, view []byte) int {
	a := len(view)
	for a > 0 && !isViewSpace(view[a-1]) {
		a--
	}
	if a == len(view) {
		return -1
	}
	word := string(view[a:])
	for _, lit := range s.m.literals {
		for k := min(len(lit)-1, len(word)); k >= 3; k-- {
			if strings.HasSuffix(word, lit[:k]) {
				return len(view) - k
			}
		}
	}
	// Shapes the padding cannot complete: an AWS id has an exact length, a
	// JWT dots inside.
	for k := a; k < len(view); k++ {
		if k > a && isWord(full, off+k-1) {
			continue
		}
		w := string(view[k:])
		for _, p := range []string{"AKIA", "ASIA", "eyJ"} {
			if strings.HasPrefix(w, p) || strings.HasPrefix(p, w) && len(w) >= 3 {
				return k
			}
		}
	}
	// Only the end of the text can take part in a match that reaches
	// into the padding: the word and a context's worth before it (finding
	// over all of a big chunk again cost as much as masking it).
	base := max(0, off+a-ctxLen)
	probe := full[base:] + padding
	for _, sp := range s.m.find(probe) {
		if start := base + sp.start; base+sp.end > len(full) && start-off < len(view) {
			return max(a, start-off) // the key in "TOKEN=ab": only the value
		}
	}
	return -1
}

// lastLineStart returns where the last line of view begins.
func lastLineStart(view []byte) int {
	for k := len(view) - 1; k >= 0; k-- {
		if view[k] == '\n' || view[k] == '\r' {
			return k + 1
		}
	}
	return 0
}

// keyOpen reports whether text ends inside a private key block: its last
// BEGIN … PRIVATE KEY----- marker has no END marker after it.
func keyOpen(text string) bool {
	if !strings.Contains(text, "-----BEGIN ") {
		return false // the common case, found fast (LastIndex is a slow scan)
	}
	i := strings.LastIndex(text, "-----BEGIN ")
	if i < 0 || strings.Contains(text[i:], "-----END ") {
		return false
	}
	line := text[i:]
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	return strings.Contains(line, "PRIVATE KEY-----")
}

// maxLearned bounds the secrets a Stream learns; minLearned is the shortest
// worth learning (a shorter one would mask common words).
const (
	maxLearned = 64
	minLearned = 16
)

// learn remembers what a shape or its context made a secret, so that the
// rest of the stream masks it wherever it shows again. A TUI's differential
// renderer redraws only the cells that changed: a later frame may draw
// "B", jump a column, then "arer <token>", and the context that marked the
// token ("Bearer") is gone from the bytes. The value is not.
func (s *Stream) learn(full string, spans []span) {
	for _, sp := range spans {
		v := full[sp.start:sp.end]
		if strings.Contains(v, "-----") {
			continue // a private key block is masked whole by its markers
		}
		// A private key's body that reaches the end of the text may end in
		// the first dashes of its end marker, still to come: learnt with
		// them, the body masked the marker's start where it showed whole
		// ("…[masked 16 chars]-END PRIVATE KEY-----"), and the marker no
		// longer closed the block. A body has no dashes of its own.
		key := strings.HasSuffix(strings.TrimRight(full[:sp.start], " \t\r\n"), "PRIVATE KEY-----")
		// The span may carry its label ("TOKEN='…", "Bearer …"): learn the
		// long pieces between separators too.
		pieces := append([]string{v}, strings.FieldsFunc(v, func(r rune) bool {
			return r == ' ' || r == '=' || r == ':' || r == '\'' || r == '"' || r == '\n' || r == '\r' || r == '\t'
		})...)
		for _, piece := range pieces {
			if key {
				piece = strings.TrimRight(piece, "-")
			}
			if len(piece) < minLearned || !usableLiteral(piece) || slices.Contains(s.m.literals, piece) {
				continue
			}
			if s.learned >= maxLearned {
				return
			}
			if !s.ownMasker {
				// Masker is shared and immutable: the stream takes a copy.
				s.m = &Masker{literals: slices.Clone(s.m.literals)}
				s.ownMasker = true
			}
			s.m.literals = append(s.m.literals, piece)
			s.learned++
		}
	}
}
