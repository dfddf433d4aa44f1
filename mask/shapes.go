package mask

import "strings"

// shape is one kind of secret. Shapes are matched by hand, not by regexp.
// One pass over the text finds where matches can begin: at the start of a
// word with a known prefix (sk-, ghp_, AKIA, Bearer, …) or at a ":" or "="
// (key: value, scheme://). From there a shape reads runs of characters
// through cursors that never read a byte twice. A regexp tried at each such
// place would re-read a long value from every place inside it, which is
// quadratic on text such as "sort_key=sort_key=…"; this way masking stays
// linear in the input whatever it holds.
type shape struct {
	name string
	// words are prefixes, in lower case and compared without regard to
	// ASCII case, of the word a match begins with.
	words []string
	// separators: matches are tried at every ":" and "=" instead.
	separators bool
	// match tries a match at byte at of f.s and returns the secret as
	// [a, b), with a == b for none. Calls come in increasing order of at.
	match func(f *finder, at int) (a, b int)
}

// maxShapes bounds len(shapes), so that their cursors fit in an array.
const maxShapes = 16

var shapes = []shape{
	{
		name:  "anthropic key", // sk-ant-api03-…
		words: []string{"sk-ant-"},
		match: func(f *finder, at int) (int, int) {
			if !f.literalAt(at, "sk-ant-") {
				return 0, 0
			}
			e := f.run(0, isToken, at+7)
			return at, cut(at, e, e-(at+7) >= 20)
		},
	},
	{
		// Other sk- keys (OpenAI's and others). The digit keeps out
		// kebab-case words such as sk-learn-compatible-estimator.
		name:  "sk- key",
		words: []string{"sk-"},
		match: func(f *finder, at int) (int, int) {
			if !f.literalAt(at, "sk-") {
				return 0, 0
			}
			e := f.run(0, isToken, at+3)
			return at, cut(at, e, e-(at+3) >= 17 && f.hasDigit(at+3, e))
		},
	},
	{
		name:  "bearer token",
		words: []string{"bearer"},
		match: func(f *finder, at int) (int, int) {
			if !f.wordStart(at) {
				return 0, 0
			}
			a := f.blanks(at + 6)
			if a == at+6 {
				return 0, 0
			}
			e := f.run(0, isBearer, a)
			// Prose ("Bearer authentication") has no digits and is short.
			return a, cut(a, e, e-a >= 8 && (e-a >= 32 || f.hasDigit(a, e)))
		},
	},
	{
		name:       "authorization value", // Authorization: Basic …, authorization="…"
		separators: true,
		match: func(f *finder, sep int) (int, int) {
			ks, ke := f.keyBefore(sep)
			at := ke - len("authorization")
			if at < ks || !hasPrefixFold(f.s[at:], "authorization") || !f.wordStart(at) {
				return 0, 0
			}
			i := f.quote(f.blanks(sep + 1))
			for _, scheme := range []string{"bearer", "basic", "token", "digest", "bot", "apikey"} {
				if hasPrefixFold(f.s[i:], scheme) {
					if j := f.blanks(i + len(scheme)); j > i+len(scheme) {
						i = j
					}
					break
				}
			}
			e := f.run(1, isAuthValue, i)
			return i, cut(i, e, e-i >= 8)
		},
	},
	{
		name:  "github token",
		words: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		match: func(f *finder, at int) (int, int) {
			if f.literalAt(at, "github_pat_") {
				e := f.run(1, isWord, at+11)
				return at, cut(at, e, e-(at+11) >= 20)
			}
			for _, p := range []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"} {
				if f.literalAt(at, p) {
					e := f.run(0, isAlnum, at+4)
					return at, cut(at, e, e-(at+4) >= 30)
				}
			}
			return 0, 0
		},
	},
	{
		name:  "aws access key id", // AKIA or ASIA and 16 upper-case letters or digits
		words: []string{"akia", "asia"},
		match: func(f *finder, at int) (int, int) {
			if !f.literalAt(at, "AKIA") && !f.literalAt(at, "ASIA") {
				return 0, 0
			}
			e := at + 4
			for e < len(f.s) && e < at+21 && isUpperAlnum(f.s, e) {
				e++
			}
			return at, cut(at, e, e-(at+4) == 16 && (e == len(f.s) || !isWord(f.s, e)))
		},
	},
	{
		name:  "slack token",
		words: []string{"xox"},
		match: func(f *finder, at int) (int, int) {
			s := f.s
			if !f.literalAt(at, "xox") || at+5 > len(s) || !strings.Contains("abposr", s[at+3:at+4]) || s[at+4] != '-' {
				return 0, 0
			}
			e := f.run(0, isAlnumDash, at+5)
			return at, cut(at, e, e-(at+5) >= 10)
		},
	},
	{
		name:  "google api key", // AIza and 35 more
		words: []string{"aiza"},
		match: func(f *finder, at int) (int, int) {
			if !f.literalAt(at, "AIza") {
				return 0, 0
			}
			e := at + 4
			for e < len(f.s) && e < at+39 && isToken(f.s, e) {
				e++
			}
			return at, cut(at, e, e == at+39)
		},
	},
	{
		name:  "jwt", // three base64url parts, the first two JSON objects
		words: []string{"eyj"},
		match: func(f *finder, at int) (int, int) {
			s := f.s
			if !f.literalAt(at, "eyJ") {
				return 0, 0
			}
			e1 := f.run(0, isToken, at+3)
			if e1-(at+3) < 8 || !strings.HasPrefix(s[e1:], ".eyJ") {
				return 0, 0
			}
			e2 := f.run(1, isToken, e1+4)
			if e2-(e1+4) < 8 || e2 >= len(s) || s[e2] != '.' {
				return 0, 0
			}
			e3 := f.run(2, isToken, e2+1)
			return at, cut(at, e3, e3-(e2+1) >= 8)
		},
	},
	{
		name:       "password in a url", // scheme://user:password@host
		separators: true,
		match: func(f *finder, at int) (int, int) {
			s := f.s
			if !strings.HasPrefix(s[at:], "://") {
				return 0, 0
			}
			start := at
			for start > 0 && isScheme(s, start-1) {
				start--
			}
			if start == at || !isLetter(s[start]) || !f.wordStart(start) {
				return 0, 0
			}
			u := f.run(0, isURLUser, at+3)
			if u == at+3 || u >= len(s) || s[u] != ':' {
				return 0, 0
			}
			p := f.run(1, isURLPassword, u+1)
			return u + 1, cut(u+1, p, p > u+1 && p < len(s) && s[p] == '@')
		},
	},
	{
		// The body between the markers or, without an end marker (output
		// cut short), everything after the begin marker.
		name:  "private key",
		words: []string{"private key-----"},
		match: func(f *finder, at int) (int, int) {
			s := f.s
			b := at
			for b > 0 && isMarkerWord(s, b-1) {
				b--
			}
			if !f.literalAt(at, "PRIVATE KEY-----") || b < 5 || s[b-5:b] != "-----" || !strings.HasPrefix(s[b:], "BEGIN ") {
				return 0, 0
			}
			body := at + len("PRIVATE KEY-----")
			return body, f.endMarker(body)
		},
	},
	{
		// A value whose key names a secret: password=…, token: …,
		// "client_secret": "…", --api-key=…, ?access_token=…&.
		name:       "keyed value",
		separators: true,
		match:      keyedValue,
	},
}

// keyWords are in every key isSecretKey accepts: a cheap test first.
var keyWords = newWordSet("pass", "pwd", "secret", "token", "credential", "key")

func keyedValue(f *finder, sep int) (int, int) {
	s := f.s
	ks, ke := f.keyBefore(sep)
	if ks == ke || !containsAnyFold(s[ks:ke], keyWords) {
		return 0, 0
	}
	i := f.blanks(sep + 1)
	if i >= len(s) {
		return 0, 0
	}
	var a, e int
	switch s[i] {
	case '"':
		a = i + 1
		e = f.run(1, isDoubleQuoted, a)
	case '\'':
		a = i + 1
		e = f.run(2, isSingleQuoted, a)
	case '=', ':': // := and the like: code, not a value
		return 0, 0
	default:
		a = i
		e = f.run(3, isValue, a)
	}
	switch {
	case a >= e, !isSecretKey(s[ks:ke]), !plausibleValue(s[a:e]):
		return 0, 0
	case ks > 0 && s[ks-1] == '/':
		// A URL's user ("https://x-access-token:…@"): the url shape masks
		// its password up to the "@".
		return 0, 0
	}
	return a, e
}

// cut returns b if ok, else a: the end of a secret starting at a.
func cut(a, b int, ok bool) int {
	if ok {
		return b
	}
	return a
}

// finder holds the text and the cursors of one shape's matches.
type finder struct {
	s      string
	runs   [4]cursor // one per place in a shape where a run is read
	digits cursor    // from: a position; end: the first digit at or after it
	ends   cursor    // from: a position; end: the first private key end marker at or after it
}

// keyBefore returns the key that a separator at sep follows: password in
// "password = x", "password": x, and 'password': x.
func (f *finder) keyBefore(sep int) (start, end int) {
	end = sep
	for end > 0 && (f.s[end-1] == ' ' || f.s[end-1] == '\t') {
		end--
	}
	if end > 0 && (f.s[end-1] == '"' || f.s[end-1] == '\'') {
		end--
	}
	start = end
	for start > 0 && isKey(f.s, start-1) {
		start--
	}
	return start, end
}

// cursor records that the run starting at from ends at end. Queries with a
// position inside a recorded run are answered without reading; others read
// from their position. As a shape's queries of one cursor come in
// increasing order, each byte is read once per cursor.
type cursor struct {
	from, end int
	set       bool
}

func (c *cursor) covers(p int) bool { return c.set && c.from <= p && p <= c.end }

// run returns the end of the run of bytes in class starting at p. A slot
// must always be used with the same class.
func (f *finder) run(slot int, in func(string, int) bool, p int) int {
	c := &f.runs[slot]
	if c.covers(p) {
		return c.end
	}
	e := p
	for e < len(f.s) && in(f.s, e) {
		e++
	}
	*c = cursor{from: p, end: e, set: true}
	return e
}

func (f *finder) hasDigit(a, b int) bool {
	if !f.digits.covers(a) {
		e := a
		for e < len(f.s) && !isDigit(f.s[e]) {
			e++
		}
		f.digits = cursor{from: a, end: e, set: true}
	}
	return f.digits.end < b
}

// endMarker returns where the private key body starting at p ends: at the
// next "-----END … PRIVATE KEY-----", or at the end of the text.
func (f *finder) endMarker(p int) int {
	if f.ends.covers(p) {
		return f.ends.end
	}
	e := len(f.s)
	for k := p; ; {
		i := strings.Index(f.s[k:], "-----END ")
		if i < 0 {
			break
		}
		j := k + i + len("-----END ")
		for j < len(f.s) && isMarkerWord(f.s, j) && !strings.HasPrefix(f.s[j:], "PRIVATE KEY-----") {
			j++
		}
		if strings.HasPrefix(f.s[j:], "PRIVATE KEY-----") {
			e = k + i
			break
		}
		k = j
	}
	f.ends = cursor{from: p, end: e, set: true}
	return e
}

func (f *finder) literalAt(at int, lit string) bool {
	return strings.HasPrefix(f.s[at:], lit) && f.wordStart(at)
}

// wordStart reports whether a match may begin at i: not inside a word.
func (f *finder) wordStart(i int) bool { return i == 0 || !isWord(f.s, i-1) }

// blanks skips spaces and tabs. What it skips follows one place where a
// match can begin and ends before the next, so it is read once.
func (f *finder) blanks(i int) int {
	for i < len(f.s) && (f.s[i] == ' ' || f.s[i] == '\t') {
		i++
	}
	return i
}

// quote skips one quote, as after a quoted key.
func (f *finder) quote(i int) int {
	if i < len(f.s) && (f.s[i] == '"' || f.s[i] == '\'') {
		return i + 1
	}
	return i
}

// hasPrefixFold is strings.HasPrefix ignoring ASCII case; prefix is lower
// case.
// mayBeginShape reports whether v begins with one of the shapes' words, or
// with the start of one that v ends inside.
func mayBeginShape(v []byte) bool {
	for _, w := range byFirstByte[lower[v[0]]] {
		k := min(len(w.word), len(v))
		i := 0
		for i < k && lower[v[i]] == w.word[i] {
			i++
		}
		if i == k {
			return true
		}
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if lower[s[i]] != prefix[i] {
			return false
		}
	}
	return true
}

// wordSet is a set of lower case words with their first bytes, either case,
// in a table: finding one in a key is one lookup per byte, mostly.
type wordSet struct {
	words []string
	first [256]bool
}

func newWordSet(words ...string) *wordSet {
	ws := &wordSet{words: words}
	for _, w := range words {
		ws.first[w[0]] = true
		ws.first[w[0]-'a'+'A'] = true
	}
	return ws
}

// containsAnyFold reports whether s holds one of the words, ignoring ASCII
// case.
func containsAnyFold(s string, ws *wordSet) bool {
	for i := 0; i < len(s); i++ {
		if !ws.first[s[i]] {
			continue
		}
		for _, w := range ws.words {
			if hasPrefixFold(s[i:], w) {
				return true
			}
		}
	}
	return false
}

// lower maps ASCII upper case letters to lower case and other bytes to
// themselves.
var lower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] += 'a' - 'A'
		}
	}
	return t
}()

// starts finds, in one pass, the places where the shapes' matches can
// begin, and calls try with each place and the index of the shape, in
// increasing order of place.
func starts(s string, try func(at, shape int)) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ':' || c == '=':
			for _, k := range separatorShapes {
				try(i, k)
			}
			i++
		case isWordByte[c] && (i == 0 || !isWordByte[s[i-1]]):
			for _, w := range byFirstByte[lower[c]] {
				if hasPrefixFold(s[i:], w.word) {
					try(i, w.shape)
				}
			}
			// The rest of the word starts nothing (":" and "=" are not
			// word bytes): skip it in a tight loop.
			for i++; i < len(s) && isWordByte[s[i]]; i++ {
			}
		default:
			i++
		}
	}
}

type wordOf struct {
	word  string
	shape int
}

var (
	separatorShapes = func() (ks []int) {
		for k, sh := range shapes {
			if sh.separators {
				ks = append(ks, k)
			}
		}
		return ks
	}()
	// byFirstByte lists the shapes' words by their first byte.
	byFirstByte = func() (t [256][]wordOf) {
		for k, sh := range shapes {
			for _, w := range sh.words {
				t[w[0]] = append(t[w[0]], wordOf{w, k})
			}
		}
		return t
	}()
	isWordByte = func() (t [256]bool) {
		for i := range t {
			c := byte(i)
			t[i] = isLetter(c) || isDigit(c) || c == '_'
		}
		return t
	}()
)

// Byte classes. They take the text and an index so that "…" (three bytes)
// can end a run: it starts the masked form, which must never extend a match.

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isAlnum(s string, i int) bool     { return isLetter(s[i]) || isDigit(s[i]) }
func isWord(s string, i int) bool      { return isAlnum(s, i) || s[i] == '_' }
func isToken(s string, i int) bool     { return isWord(s, i) || s[i] == '-' }
func isAlnumDash(s string, i int) bool { return isAlnum(s, i) || s[i] == '-' }
func isKey(s string, i int) bool       { return isToken(s, i) || s[i] == '.' }
func isScheme(s string, i int) bool    { return isAlnumDash(s, i) || s[i] == '+' || s[i] == '.' }
func isUpperAlnum(s string, i int) bool {
	return s[i] >= 'A' && s[i] <= 'Z' || isDigit(s[i])
}
func isMarkerWord(s string, i int) bool { return isUpperAlnum(s, i) || s[i] == ' ' }
func isBearer(s string, i int) bool     { return isToken(s, i) || strings.IndexByte("._~+/=", s[i]) >= 0 }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isEllipsis(s string, i int) bool { return strings.HasPrefix(s[i:], "…") }

func isAuthValue(s string, i int) bool {
	return !isSpace(s[i]) && strings.IndexByte(`"',;`, s[i]) < 0 && !isEllipsis(s, i)
}

func isURLUser(s string, i int) bool {
	return !isSpace(s[i]) && strings.IndexByte(`:/@"'<>`, s[i]) < 0
}

func isURLPassword(s string, i int) bool {
	return !isSpace(s[i]) && strings.IndexByte(`/@"'<>`, s[i]) < 0 && !isEllipsis(s, i)
}

// isValue: an unquoted value stops at quotes, separators and brackets.
func isValue(s string, i int) bool {
	return !isSpace(s[i]) && strings.IndexByte("\"'`&,;<>{}[]()", s[i]) < 0 && !isEllipsis(s, i)
}

// isDoubleQuoted: up to an unescaped quote or the end of the line.
func isDoubleQuoted(s string, i int) bool {
	switch s[i] {
	case '\n':
		return false
	case '"':
		n := 0
		for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
			n++
		}
		return n%2 == 1
	}
	return !isEllipsis(s, i)
}

func isSingleQuoted(s string, i int) bool {
	return s[i] != '\'' && s[i] != '\n' && !isEllipsis(s, i)
}
