package mask

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Masker masks the patterns of this package and, in addition, literal
// secrets it was given. The zero value (and nil) masks patterns only. A
// Masker is immutable and safe for concurrent use.
type Masker struct {
	literals []string
}

// minLiteral is the shortest literal worth masking everywhere: shorter
// values (a "1", "true") would mangle ordinary text.
const minLiteral = 8

// NewMasker returns a Masker that also masks the values of the variables in
// env ("NAME=value", as from os.Environ) whose names name a secret (see
// IsSecretName): a key pasted into a prompt, echoed by a tool or printed in
// an error is then caught even if no pattern knows its shape.
//
// Values shorter than 8 bytes are ignored, and so are values that could be
// part of the masked form itself ("…", "[", "]", or only the letters and
// digits of "masked 12 chars"), because masking could never get rid of them.
func NewMasker(env []string) *Masker {
	m := &Masker{}
	for _, e := range env {
		name, value, ok := strings.Cut(e, "=")
		if ok && IsSecretName(name) && usableLiteral(value) && !slices.Contains(m.literals, value) {
			m.literals = append(m.literals, value)
		}
	}
	return m
}

func usableLiteral(v string) bool {
	if len(v) < minLiteral || strings.ContainsAny(v, "…[]") {
		return false
	}
	return strings.Trim(v, "maskedchr 0123456789") != ""
}

var plain = &Masker{}

// String masks the secrets in s.
func String(s string) string { return plain.String(s) }

// Env masks an environment: see Masker.Env.
func Env(env []string) []string { return plain.Env(env) }

// String masks the secrets in s.
func (m *Masker) String(s string) string {
	if m == nil {
		m = plain
	}
	spans := m.find(s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.start])
		keepLimit := -1
		if sp.literalAt >= 0 {
			keepLimit = utf8.RuneCountInString(s[sp.start:sp.literalAt])
		}
		writeMasked(&b, s[sp.start:sp.end], keepLimit)
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
	keepLimit := -1
	for _, lit := range m.literals {
		if i := strings.Index(v, lit); i >= 0 {
			if n := utf8.RuneCountInString(v[:i]); keepLimit < 0 || n < keepLimit {
				keepLimit = n
			}
		}
	}
	var b strings.Builder
	writeMasked(&b, v, keepLimit)
	return b.String()
}

const (
	maxKeep    = 8
	markerHead = "…[masked "
	markerTail = " chars]"
)

// keepFor is how many characters of an n-character secret stay visible.
func keepFor(n int) int { return min(maxKeep, n/3) }

// writeMasked writes the masked form of secret, keeping at most keepLimit
// characters when keepLimit >= 0 (so that no literal is kept whole).
func writeMasked(b *strings.Builder, secret string, keepLimit int) {
	n := utf8.RuneCountInString(secret)
	keep := keepFor(n)
	if keepLimit >= 0 {
		keep = min(keep, keepLimit)
	}
	cut := 0
	for range keep {
		_, size := utf8.DecodeRuneInString(secret[cut:])
		cut += size
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
type span struct {
	start, end int
	literalAt  int // where the first literal starts inside the span, or -1
}

// find returns the spans to mask, sorted and disjoint.
func (m *Masker) find(s string) []span {
	var spans []span
	lower := asciiLower(s) // triggers are found without regard to case
	zones := maskedZones(s)
	for i := range patterns {
		p := &patterns[i]
		for _, r := range p.regions(lower) {
			for _, sp := range p.matches(s, r.start, r.end) {
				spans = appendOutside(spans, sp, zones)
			}
		}
	}
	for _, lit := range m.literals {
		for off := 0; ; {
			i := strings.Index(s[off:], lit)
			if i < 0 {
				break
			}
			start := off + i
			spans = append(spans, span{start: start, end: start + len(lit), literalAt: start})
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
	for _, z := range zones {
		if z.end <= sp.start || z.start >= sp.end {
			continue
		}
		if z.start > sp.start {
			spans = append(spans, span{start: sp.start, end: z.start, literalAt: -1})
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
		if sp.literalAt >= 0 && (last.literalAt < 0 || sp.literalAt < last.literalAt) {
			last.literalAt = sp.literalAt
		}
	}
	return out
}

// regions are the lines of s holding a trigger of p (for a multiline
// pattern, from such a line to the end), merged.
func (p *pattern) regions(lower string) []zone {
	var at []int
	for _, t := range p.triggers {
		for off := 0; ; {
			i := strings.Index(lower[off:], t)
			if i < 0 {
				break
			}
			at = append(at, off+i)
			off += i + len(t)
		}
	}
	if len(at) == 0 {
		return nil
	}
	slices.Sort(at)
	var rs []zone
	for _, i := range at {
		if len(rs) > 0 && i < rs[len(rs)-1].end {
			continue
		}
		start := strings.LastIndexByte(lower[:i], '\n') + 1
		end := len(lower)
		if !p.multiline {
			if e := strings.IndexByte(lower[i:], '\n'); e >= 0 {
				end = i + e
			}
		}
		if len(rs) > 0 && start <= rs[len(rs)-1].end {
			rs[len(rs)-1].end = end
			continue
		}
		rs = append(rs, zone{start, end})
	}
	return rs
}

// matches returns the secrets p finds in s[start:end].
func (p *pattern) matches(s string, start, end int) []span {
	var out []span
	text := s[start:end]
	for pos := 0; pos < len(text); {
		loc := p.re.FindStringSubmatchIndex(text[pos:])
		if loc == nil {
			break
		}
		first := 1
		if p.keyed {
			first = 2
		}
		a, b := -1, -1
		for g := first; 2*g < len(loc); g++ {
			if loc[2*g] >= 0 {
				a, b = loc[2*g], loc[2*g+1]
				break
			}
		}
		next := pos + max(loc[1], 1)
		if a >= 0 && a < b {
			secret := text[pos+a : pos+b]
			switch {
			case p.keyed && !isSecretKey(text[pos+loc[2]:pos+loc[3]]):
				// Not a secret's key, but its value may hold one
				// ("user=x:password=y"): look again from the value.
				next = pos + a
			case p.ok != nil && !p.ok(secret):
			default:
				out = append(out, span{start: start + pos + a, end: start + pos + b, literalAt: -1})
			}
		}
		if next <= pos {
			next = pos + 1
		}
		pos = next
	}
	return out
}
