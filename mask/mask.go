package mask

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Masker masks the shapes of secret this package knows and, in addition,
// literal secrets it was given. The zero value (and nil) masks shapes only.
// A Masker is immutable and safe for concurrent use.
type Masker struct {
	literals []string
}

// minLiteral is the shortest literal worth masking everywhere: shorter
// values (a "1", "true") would mangle ordinary text.
const minLiteral = 8

// NewMasker returns a Masker that also masks, wherever they appear, the
// values of the variables in env ("NAME=value", as from os.Environ) whose
// names name a secret (see IsSecretName), and the secrets given (such as
// values from settings): a key pasted into a prompt, echoed by a tool or
// printed in an error is then caught even if it has no known shape.
//
// Values shorter than 8 bytes are ignored, and so are values that could be
// part of the masked form itself ("…", "[", "]", or only the letters and
// digits of "masked 12 chars"), because masking could never get rid of them.
func NewMasker(env []string, secrets ...string) *Masker {
	m := &Masker{}
	add := func(v string) {
		if usableLiteral(v) && !slices.Contains(m.literals, v) {
			m.literals = append(m.literals, v)
		}
	}
	for _, e := range env {
		if name, value, ok := strings.Cut(e, "="); ok && IsSecretName(name) {
			add(value)
		}
	}
	for _, v := range secrets {
		add(v)
	}
	return m
}

func usableLiteral(v string) bool {
	if len(v) < minLiteral || strings.ContainsAny(v, "…[]") {
		return false
	}
	return strings.Trim(v, "maskedchr 0123456789") != ""
}

var (
	plain   = &Masker{}
	finders = sync.Pool{New: func() any { return new([maxShapes]finder) }}
)

// String masks the secrets in s.
func String(s string) string { return plain.String(s) }

// Env masks an environment: see Masker.Env.
func Env(env []string) []string { return plain.Env(env) }

// String masks the secrets in s. Text with escape sequences (a terminal's
// output, a tool's coloured output quoted in a message) is masked as a
// terminal shows it, as Terminal does.
func (m *Masker) String(s string) string {
	if m == nil {
		m = plain
	}
	if strings.IndexByte(s, 0x1b) >= 0 {
		return m.Terminal(s)
	}
	return m.text(s)
}

// text masks s as plain text: escape sequences are characters like others.
func (m *Masker) text(s string) string {
	spans := m.find(s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.start])
		writeMasked(&b, s[sp.start:sp.end], m.literals)
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// Env returns env ("NAME=value" entries) with the values of variables whose
// names name a secret masked whole, and secrets masked in the others.
func (m *Masker) Env(env []string) []string {
	if m == nil {
		m = plain
	}
	out := make([]string, len(env))
	for i, e := range env {
		name, value, ok := strings.Cut(e, "=")
		switch {
		case !ok:
			out[i] = m.String(e)
		case IsSecretName(name):
			out[i] = name + "=" + m.whole(value)
		default:
			out[i] = name + "=" + m.String(value)
		}
	}
	return out
}

// whole masks all of v (but for the usual prefix) unless it is already in
// the masked form.
func (m *Masker) whole(v string) string {
	if v == "" || isMaskedForm(v) {
		return v
	}
	var b strings.Builder
	writeMasked(&b, v, m.literals)
	return b.String()
}

const (
	maxKeep    = 8
	markerHead = "…[masked "
	markerTail = " chars]"
)

// keepFor is how many characters of an n-character secret stay visible.
func keepFor(n int) int { return min(maxKeep, n/3) }

// writeMasked writes the masked form of secret. The kept prefix is cut
// short where it would hold a whole literal: a literal can begin a longer
// secret (an 8-byte literal would otherwise be kept entire).
func writeMasked(b *strings.Builder, secret string, literals []string) {
	n := utf8.RuneCountInString(secret)
	keep := keepFor(n)
	cut := 0
	for range keep {
		_, size := utf8.DecodeRuneInString(secret[cut:])
		cut += size
	}
	for _, lit := range literals {
		if i := strings.Index(secret[:cut], lit); i >= 0 {
			cut = i
			keep = utf8.RuneCountInString(secret[:cut])
		}
	}
	b.WriteString(secret[:cut])
	b.WriteString(markerHead)
	b.WriteString(strconv.Itoa(n - keep))
	b.WriteString(markerTail)
}

// isMaskedForm reports whether v is exactly what writeMasked makes.
func isMaskedForm(v string) bool {
	z, ok := markerAt(v, strings.Index(v, markerHead))
	return ok && z.start == 0 && z.end == len(v)
}

// span is a byte range of s to mask.
type span struct{ start, end int }

// find returns the spans to mask, sorted and disjoint.
func (m *Masker) find(s string) []span {
	var spans []span
	var zones []zone
	if strings.Contains(s, markerHead) {
		zones = maskedZones(s)
	}
	// find runs for every string of a JSON value: the cursors are reused,
	// and taken only for text where some shape may match.
	var fs *[maxShapes]finder
	starts(s, func(at, k int) {
		if fs == nil {
			fs = finders.Get().(*[maxShapes]finder)
		}
		fs[k].s = s
		if a, b := shapes[k].match(&fs[k], at); a < b {
			spans = appendOutside(spans, span{a, b}, zones)
		}
	})
	if fs != nil {
		*fs = [maxShapes]finder{} // forget s and the cursors
		finders.Put(fs)
	}
	for _, lit := range m.literals {
		for off := 0; ; {
			i := strings.Index(s[off:], lit)
			if i < 0 {
				break
			}
			start := off + i
			spans = append(spans, span{start: start, end: start + len(lit)})
			off = start + 1
		}
	}
	return merge(spans)
}

// A zone is an earlier masking's output (the kept prefix and the marker):
// matches inside one are not masked again, which makes masking idempotent.
type zone struct{ start, end int }

func maskedZones(s string) []zone {
	var zones []zone
	for off := 0; ; {
		i := strings.Index(s[off:], markerHead)
		if i < 0 {
			return zones
		}
		z, ok := markerAt(s, off+i)
		if ok {
			zones = append(zones, z)
			off = z.end
		} else {
			off += i + len(markerHead)
		}
	}
}

// markerAt parses a marker starting at byte i of s; the zone it returns
// covers the marker and the characters before it that a masking with that
// count could have kept (at least as many as it did keep).
func markerAt(s string, i int) (zone, bool) {
	if i < 0 {
		return zone{}, false
	}
	j := i + len(markerHead)
	k := j
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	if k == j || k-j > 18 || !strings.HasPrefix(s[k:], markerTail) {
		return zone{}, false
	}
	hidden, _ := strconv.Atoi(s[j:k])
	start := i
	for range min(maxKeep, hidden/2) {
		if start == 0 {
			break
		}
		_, size := utf8.DecodeLastRuneInString(s[:start])
		start -= size
	}
	return zone{start: start, end: k + len(markerTail)}, true
}

// appendOutside appends the parts of sp that lie outside every zone.
func appendOutside(spans []span, sp span, zones []zone) []span {
	// Zones are sorted and disjoint: start at the first that ends after sp
	// starts.
	first, _ := slices.BinarySearchFunc(zones, sp.start, func(z zone, p int) int { return z.end - p - 1 })
	for _, z := range zones[first:] {
		if z.start >= sp.end {
			break
		}
		if z.start > sp.start {
			spans = append(spans, span{start: sp.start, end: z.start})
		}
		sp.start = z.end
		if sp.start >= sp.end {
			return spans
		}
	}
	return append(spans, sp)
}

func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.start > last.end {
			out = append(out, sp)
			continue
		}
		last.end = max(last.end, sp.end)
	}
	return out
}
