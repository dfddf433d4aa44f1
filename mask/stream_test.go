package mask

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// streamAll feeds chunks to a fresh Stream of m and returns everything it
// emitted, flushing at the end.
func streamAll(m *Masker, chunks ...string) string {
	s := m.NewStream(0)
	var out []byte
	for _, c := range chunks {
		out = append(out, s.Write([]byte(c))...)
	}
	return string(append(out, s.Flush(true)...))
}

// shown is what a terminal shows of raw, as the DEC/xterm parser reads it:
// escape sequences removed, horizontal cursor moves as a space, vertical
// ones as a newline, other control bytes dropped. A string (OSC, DCS, SOS,
// PM, APC) ends at BEL or ST, and any other ESC cancels it. An unfinished
// sequence at the end shows as text without its ESC.
func shown(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '[' && b.Len() > 0 && joinable(b.String()[b.Len()-1]):
			// As claude shows a model's escape sequences: without the ESC.
			if end, drawn, ok := remnant([]byte(raw), i); ok {
				if drawn != 0 {
					b.WriteByte(drawn)
				}
				i = end
				continue
			}
			b.WriteByte(c)
			i++
		case c != 0x1b:
			if c >= 0x20 && c != 0x7f || c == '\n' || c == '\r' || c == '\t' {
				b.WriteByte(c)
			}
			i++
		case i+1 >= len(raw):
			i++
		case raw[i+1] == '[':
			j := i + 2
			for j < len(raw) && raw[j] >= 0x20 && raw[j] <= 0x3f {
				j++
			}
			switch {
			case j >= len(raw): // unfinished: its ESC goes
				i++
			case raw[j] < 0x40 || raw[j] > 0x7e: // cancelled
				i = j
			default:
				switch raw[j] {
				case 'C', 'D', 'G', '`', 'a', 'I', 'Z', 'X':
					b.WriteByte(' ')
				case 'A', 'B', 'E', 'F', 'H', 'f', 'd', 'e', 'r':
					b.WriteByte('\n')
				}
				i = j + 1
			}
		case strings.IndexByte("]PX^_", raw[i+1]) >= 0:
			j := i + 2
			for j < len(raw) && raw[j] != 0x07 && raw[j] != 0x1b {
				j++
			}
			switch {
			case j >= len(raw) || raw[j] == 0x1b && j+1 >= len(raw): // unfinished
				i++
			case raw[j] == 0x07:
				i = j + 1
			case raw[j+1] == '\\':
				i = j + 2
			default: // cancelled by the ESC at j
				i = j
			}
		default:
			j := i + 1
			for j < len(raw) && raw[j] >= 0x20 && raw[j] <= 0x2f {
				j++
			}
			if j >= len(raw) {
				i++
				continue
			}
			if raw[j] == 'M' || raw[j] == 'D' || raw[j] == 'E' {
				b.WriteByte('\n')
			}
			i = j + 1
		}
	}
	return b.String()
}

// leaks reports whether out shows any of the secrets, or a run of 12 of their
// characters, raw or as a terminal would show them.
func leaks(out string, secrets ...string) string {
	for _, text := range []string{out, shown(out)} {
		for _, sec := range secrets {
			for i := 0; i+12 <= len(sec); i++ {
				if part := sec[i : i+12]; strings.Contains(text, part) {
					return part
				}
			}
		}
	}
	return ""
}

// split cuts s into pieces of n bytes.
func split(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// shapeAtWrap is a key whose 18th character starts "xox" (Slack's shape):
// wrapped there, its second line may be the start of a key of its own.
var shapeAtWrap = "sk-" + "ant-api03-aKiaxoxEyJ" + anthropicKey[23:]

// keyBody is a private key's body with no line breaks; bearerToken is a
// token with no shape of its own, a secret only after "Bearer".
const (
	keyBody     = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
	bearerToken = "q7Zt2mWx9LpR4vKc"
)

func TestStreamMasksWhatATerminalShows(t *testing.T) {
	lit := "Zq9-custom-credential-value"
	m := NewMasker([]string{"FAMILIAR_TEST_TOKEN=" + lit})
	half := len(anthropicKey) / 2
	for _, tc := range []struct {
		name    string
		chunks  []string
		secrets []string
		want    string // the whole output, when given
	}{
		{name: "plain", chunks: []string{"key " + anthropicKey + "\n"}, secrets: []string{anthropicKey},
			want: "key " + masked(anthropicKey) + "\n"},
		{name: "cursor column move before the key", chunks: []string{"key:\x1b[27G" + anthropicKey + "\r\n"}, secrets: []string{anthropicKey},
			want: "key:\x1b[27G" + masked(anthropicKey) + "\r\n"},
		{name: "cursor down before the key", chunks: []string{"x\x1b[1B" + anthropicKey + "\r\n"}, secrets: []string{anthropicKey}},
		{name: "bearer after a cursor move", chunks: []string{"Authorization: Bearer\x1b[1C" + jwt + "\n"}, secrets: []string{jwt}},
		{name: "authorization with cursor moves for every space",
			chunks:  []string{"Authorization:\x1b[1CBearer\x1b[1Cabcdefgh12345678\x1b[K\n"},
			secrets: []string{"abcdefgh12345678"}},
		{name: "colour inside a key", chunks: []string{"\x1b[1m" + anthropicKey[:20] + "\x1b[31m" + anthropicKey[20:] + "\x1b[0m\n"},
			secrets: []string{anthropicKey}, want: "\x1b[1m" + masked(anthropicKey) + "\x1b[31m\x1b[0m\n"},
		{name: "grep --color in a bearer header",
			chunks:  []string{"curl -H 'Authorization: \x1b[01;31m\x1b[KBearer\x1b[m\x1b[K " + ghp + "'\n"},
			secrets: []string{ghp}},
		{name: "two halves", chunks: []string{"key " + anthropicKey[:half], anthropicKey[half:] + " done\n"}, secrets: []string{anthropicKey},
			want: "key " + masked(anthropicKey) + " done\n"},
		{name: "two halves with colour between", chunks: []string{"key " + anthropicKey[:half] + "\x1b[3", "2m" + anthropicKey[half:] + "\n"},
			secrets: []string{anthropicKey}},
		{name: "byte by byte", chunks: split("Authorization: Bearer "+jwt+"\n", 1), secrets: []string{jwt}},
		{name: "bearer at the end of a chunk", chunks: []string{"Authorization: Bearer ", jwt + "\n"}, secrets: []string{jwt}},
		{name: "literal split", chunks: []string{"echo " + lit[:5], lit[5:] + "\n"}, secrets: []string{lit}},
		{name: "literal split by colour", chunks: []string{"echo " + lit[:10] + "\x1b[0m" + lit[10:] + "\n"}, secrets: []string{lit}},
		{name: "keyed value across chunks", chunks: []string{"GITHUB_TOKEN", "=" + ghp[:9], ghp[9:] + "\n"}, secrets: []string{ghp}},
		{name: "private key across chunks",
			chunks:  []string{"-----BEGIN RSA PRIVATE KEY-----\n", "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n", "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onL\n", "-----END RSA PRIVATE KEY-----\nok\n"},
			secrets: []string{"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo", "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onL"}},
		{name: "private key on one line, cut in its end marker",
			chunks:  []string{"-----BEGIN PRIVATE KEY-----" + keyBody + "----", "-END PRIVATE KEY-----\n"},
			secrets: []string{keyBody}, want: "-----BEGIN PRIVATE KEY-----" + masked(keyBody) + "-----END PRIVATE KEY-----\n"},
		{name: "key wrapped by the TUI", chunks: []string{"\x1b[38;5;246m  ⎿  $ echo build done; K='" + anthropicKey[:15] + "\x1b[39m\x1b[K\r\x1b[1B     \x1b[38;5;246m" + anthropicKey[15:] + "'\x1b[39m\r\n"},
			secrets: []string{anthropicKey}},
		{name: "keyed value wrapped across chunks", chunks: []string{"  ⎿  $ printf ok; export SERVICE_TOKEN='" + ghp[:8], "\r\x1b[1B\x1b[5C" + ghp[8:] + "'\r\n"},
			secrets: []string{ghp}},
		{name: "key drawn under a long line", chunks: []string{"\x1b[35;1H\x1b[38;5;174m✻\x1b[39m Ruminating… (3s · ↓ 44 tokens) t=1763929000\x1b[K\x1b[38;3H" + anthropicKey[:13], anthropicKey[13:] + " \r\n"},
			secrets: []string{anthropicKey[13:]}},
		{name: "key on the line after a long one", chunks: []string{strings.Repeat("word", 12) + "\r\n" + ghp[:3], ghp[3:] + "\r\n"}, secrets: []string{ghp[3:]}},
		{name: "key wrapped before a word that begins a shape", chunks: []string{"\x1b[38;5;246m  ⎿  $ echo build done; K='" + shapeAtWrap[:17] + "\x1b[39m\x1b[K\r\x1b[1B     \x1b[38;5;246m" + shapeAtWrap[17:] + "'\x1b[39m\r\n"},
			secrets: []string{shapeAtWrap}},
		{name: "short lines are not joined", chunks: []string{"title: x\nnext line\n"}, want: "title: x\nnext line\n"},
		{name: "sequences that lost their ESC", chunks: []string{"header Bearer[1C" + ghp + ". key " + anthropicKey[:20] + "[1m" + anthropicKey[20:] + " ok\n"},
			secrets: []string{ghp, anthropicKey}},
		{name: "a sequence that lost its ESC, cut inside it", chunks: []string{"header Bearer[1", "C" + bearerToken + " ok\n"},
			secrets: []string{bearerToken}},
		{name: "a sequence that lost its ESC, cut before it", chunks: []string{"header Bearer", "[1C" + bearerToken + " ok\n"},
			secrets: []string{bearerToken}},
		{name: "brackets in code are text", chunks: []string{"x := a[1]; y[2m] = 3 // [0m\n"}, want: "x := a[1]; y[2m] = 3 // [0m\n"},
		{name: "osc title", chunks: []string{"\x1b]0;" + ghp + "\x07ok\n"}, secrets: []string{ghp}},
		{name: "clean text passes unchanged", chunks: []string{"\x1b[32m✓\x1b[0m compiled 42 ", "modules\x1b[27Gin 1.2s\r\n", "task: skip the sketch"},
			want: "\x1b[32m✓\x1b[0m compiled 42 modules\x1b[27Gin 1.2s\r\ntask: skip the sketch"},
		{name: "unfinished escape at the end", chunks: []string{"ok \x1b["}, want: "ok ["},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := streamAll(m, tc.chunks...)
			if p := leaks(out, tc.secrets...); p != "" {
				t.Errorf("output shows %q:\n%q", p, out)
			}
			if tc.want != "" && out != tc.want {
				t.Errorf("output\n%q\nwant\n%q", out, tc.want)
			}
			if len(tc.secrets) > 0 && !strings.Contains(out, "[masked ") {
				t.Errorf("no masked form in %q", out)
			}
		})
	}
}

// A private key block with no line breaks, cut into three reads anywhere,
// masks to what the one-shot masker leaves as it is: its end marker comes
// out whole, so the block is closed (a read cut in the marker made the body
// take the marker's first dashes in 418 of the 5,671 cuts).
func TestStreamOneLineKeyEveryCut(t *testing.T) {
	m := NewMasker(nil)
	text := "-----BEGIN PRIVATE KEY-----" + keyBody + "-----END PRIVATE KEY-----\n"
	for i := 0; i <= len(text); i++ {
		for j := i; j <= len(text); j++ {
			out := streamAll(m, text[:i], text[i:j], text[j:])
			if p := leaks(out, keyBody); p != "" {
				t.Fatalf("cut %d,%d: output shows %q:\n%q", i, j, p, out)
			}
			if sh := shown(out); m.String(sh) != sh || !strings.HasSuffix(out, "-----END PRIVATE KEY-----\n") {
				t.Fatalf("cut %d,%d: end marker not whole:\n%q", i, j, out)
			}
		}
	}
}

// Every way of cutting a text with secrets into two or three chunks masks
// them all, and clean text comes out as it went in.
func TestStreamEveryCut(t *testing.T) {
	lit := "Zq9-custom-credential-value"
	m := NewMasker([]string{"FAMILIAR_TEST_TOKEN=" + lit})
	text := "ok\x1b[1C\x1b[1mBearer\x1b[0m\x1b[27G" + jwt[:30] + "\x1b[33m" + jwt[30:] + "\r\n" +
		"echo " + lit + "; key=" + anthropicKey[:40] + "\x1b[1m" + anthropicKey[40:] + "\n"
	secrets := []string{jwt, lit, anthropicKey}
	for i := 1; i < len(text); i++ {
		for _, j := range []int{i + 1, i + 7, len(text)} {
			if j > len(text) {
				continue
			}
			out := streamAll(m, text[:i], text[i:j], text[j:])
			if p := leaks(out, secrets...); p != "" {
				t.Fatalf("cut at %d,%d shows %q:\n%q", i, j, p, out)
			}
		}
	}
	clean := strings.Repeat("=== RUN TestX\r\n\x1b[32m--- PASS\x1b[0m:\x1b[1CTestX (0.00s)\n", 20)
	for i := 1; i < len(clean); i += 3 {
		if out := streamAll(m, clean[:i], clean[i:]); out != clean {
			t.Fatalf("clean text cut at %d changed:\n%q", i, out)
		}
	}
}

// A key the TUI wrapped onto a second line, cut into two reads anywhere,
// at any wrap point, is masked whole: the read may end right after the
// line break, where the first half is the view's last word but for the
// break. Also when the second line begins like a key of its own ("xox").
func TestStreamWrappedKeyEveryCut(t *testing.T) {
	m := NewMasker(nil)
	for _, key := range []string{anthropicKey, shapeAtWrap} {
		for split := 15; split < 30; split++ {
			text := "\x1b[38;5;246m  ⎿  $ echo build done; K='" + key[:split] + "\x1b[39m\x1b[K\r\x1b[1B     \x1b[38;5;246m" + key[split:] + "'\x1b[39m\r\n"
			for i := 1; i < len(text); i++ {
				out := streamAll(m, text[:i], text[i:])
				if p := leaks(out, key); p != "" {
					t.Fatalf("wrapped at %d, cut at %d: shows %q:\n%q", split, i, p, out)
				}
			}
		}
	}
}

// A key at the start of the line after a long one (a spinner line, a
// sentence, an indented line), cut into three reads anywhere, is masked
// whole: the break before it may be a wrap, or a new line.
func TestStreamKeyUnderALongLineEveryCut(t *testing.T) {
	m := NewMasker(nil)
	for _, key := range []string{anthropicKey, ghp, shapeAtWrap} {
		for _, pre := range []string{
			"\x1b[35;1H\x1b[38;5;174m✻\x1b[39m Ruminating… (3s · ↓ 44 tokens) t=1763929000\x1b[K\x1b[38;3H",
			"the quick brown fox jumps over the lazy dog again\r\n",
			"the quick brown fox jumps over the lazy dog again\r\n   ",
		} {
			text := pre + key + " \r\n"
			for i := 1; i < len(text); i++ {
				for _, j := range []int{i + 1, i + 5, len(text)} {
					if j > len(text) {
						continue
					}
					out := streamAll(m, text[:i], text[i:j], text[j:])
					if p := leaks(out, key[3:]); p != "" {
						t.Fatalf("%q + key, cut at %d,%d: shows %q:\n%q", pre, i, j, p, out)
					}
				}
			}
		}
	}
}

// A key written in two halves with a pause between them: Flush runs between
// the halves and must not let the second half out.
func TestStreamFlushBetweenHalves(t *testing.T) {
	for _, sec := range []string{anthropicKey, ghp, awsID, jwt, openaiKey} {
		for _, cut := range []int{3, 5, 9, len(sec) / 2, len(sec) - 3} {
			s := NewMasker(nil).NewStream(0)
			var out []byte
			out = append(out, s.Write([]byte("export X="+sec[:cut]))...)
			out = append(out, s.Flush(false)...)
			out = append(out, s.Write([]byte(sec[cut:]+" done\n"))...)
			out = append(out, s.Flush(true)...)
			if p := leaks(string(out), sec[min(cut, 4):]); p != "" {
				t.Errorf("%s cut at %d shows %q: %q", sec[:4], cut, p, out)
			}
		}
	}
	// A quiet prompt with no secret is emitted whole by Flush.
	s := NewMasker(nil).NewStream(0)
	out := string(s.Write([]byte("Continue? [y/N] ")))
	out += string(s.Flush(false))
	if out != "Continue? [y/N] " {
		t.Errorf("prompt: %q", out)
	}
}

// Memory stays bounded: a long line without spaces is cut at MaxHold.
func TestStreamBounded(t *testing.T) {
	s := NewMasker(nil).NewStream(1024)
	for range 1000 {
		s.Write(bytes.Repeat([]byte("x"), 100))
		if s.Held() > 2*1024+100 {
			t.Fatalf("held %d bytes", s.Held())
		}
	}
	// An endless escape sequence is not waited for either.
	s = NewMasker(nil).NewStream(0)
	s.Write([]byte("\x1b]0;"))
	for range 100 {
		s.Write(bytes.Repeat([]byte("y"), 100))
	}
	if s.Held() > maxEscape+100 {
		t.Fatalf("held %d bytes of an escape", s.Held())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestWriterFlushesWhenQuiet(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	var buf syncBuffer
	w := NewMasker(nil).NewWriter(&buf, clk, time.Second)
	// A word that cannot start a secret goes out at once; one that may
	// ("TOKEN=ab" may go on) waits for the quiet deadline.
	if _, err := w.Write([]byte("line one\nprompt>")); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "line one\nprompt>" {
		t.Fatalf("a plain last word: %q", got)
	}
	if _, err := w.Write([]byte(" TOKEN=ab")); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "line one\nprompt> " {
		t.Fatalf("before the deadline: %q", got)
	}
	clk.Advance(time.Second)
	if !testenv.Eventually(5*time.Second, func() bool { return strings.HasPrefix(buf.String(), "line one\nprompt> TOKEN=") }) {
		t.Fatalf("after the deadline: %q", buf.String())
	}
	if _, err := w.Write([]byte("sk-ant-api03-" + anthropicKey[13:40])); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if p := leaks(buf.String(), anthropicKey); p != "" {
		t.Errorf("close shows %q: %q", p, buf.String())
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Errorf("write after close accepted")
	}
}

var markers = regexp.MustCompile(`…\[masked [0-9]+ chars\]`)

// visible is what of s is not a masked form or blank.
func visible(s string) string {
	return strings.Join(strings.Fields(markers.ReplaceAllString(s, " ")), "")
}

func FuzzStream(f *testing.F) {
	f.Add("key "+anthropicKey+"\n", uint8(7), uint8(3))
	f.Add("Authorization:\x1b[1CBearer\x1b[27G"+jwt+"\r\n", uint8(1), uint8(50))
	f.Add("\x1b[1m"+ghp[:10]+"\x1b[0m"+ghp[10:], uint8(11), uint8(0))
	f.Add("-----BEGIN PRIVATE KEY-----\nabcdefghijklmnop\n-----END PRIVATE KEY-----\n", uint8(9), uint8(2))
	f.Add(strings.Repeat("spinner ", 6)+"t=1763929000\x1b[K\x1b[38;3H"+anthropicKey+" \r\n", uint8(70), uint8(9))
	// A private key block with no line breaks, cut inside its body (leaked
	// the key's body up to its END line before the fix).
	f.Add("-----BEGIN PRIVATE KEY-----"+strings.Repeat("0", 40)+"-----END PRIVATE KEY-----", uint8(7), uint8(63))
	// Sequences that lost their ESC around a bearer token.
	f.Add("0[CBeArer[0C00000000", uint8(11), uint8(9))
	f.Fuzz(func(t *testing.T, text string, a, b uint8) {
		m := NewMasker(nil)
		i := min(int(a), len(text))
		j := min(i+int(b), len(text))
		out := streamAll(m, text[:i], text[i:j], text[j:])
		// Nothing the one-shot masker finds in what the terminal shows of
		// the output but its own masked forms, and blanks between them
		// (a private key's body masked piece by piece).
		if sh := shown(out); visible(m.String(sh)) != visible(sh) {
			t.Fatalf("stream of %q (cut %d,%d) left a secret:\n%q\nshown %q\nmasks to %q", text, i, j, out, sh, m.String(sh))
		}
		// Text without a secret passes unchanged.
		if !strings.ContainsAny(text, "…\x1b") && m.String(shown(text)) == shown(text) && !strings.Contains(out, "[masked") && out != text {
			t.Fatalf("clean %q changed to %q", text, out)
		}
	})
}

func BenchmarkStream(b *testing.B) {
	s := typicalOutput(1 << 20)
	m := NewMasker([]string{"ANTHROPIC_API_KEY=" + anthropicKey, "OTHER_TOKEN=Zq9-literal-x"})
	chunks := split(s, 4096)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		st := m.NewStream(0)
		for _, c := range chunks {
			st.Write([]byte(c))
		}
		st.Flush(true)
	}
}

// One-shot masking (summaries, hook payloads, questions) sees through escape
// sequences too, and leaves a sequence cut off at the end as it is.
func TestStringThroughEscapes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"key:\x1b[27G" + anthropicKey + "\r\n", "key:\x1b[27G" + masked(anthropicKey) + "\r\n"},
		{"\x1b[1m" + anthropicKey[:20] + "\x1b[31m" + anthropicKey[20:] + "\x1b[0m", "\x1b[1m" + masked(anthropicKey) + "\x1b[31m\x1b[0m"},
		{"Authorization:\x1b[1CBearer\x1b[1Cabcdefgh12345678 ok", "Authorization:\x1b[1CBearer\x1b[1C" + masked("abcdefgh12345678") + " ok"},
		{"\x1b[32mok\x1b[0m AKIA", "\x1b[32mok\x1b[0m AKIA"},
		{"done \x1b[3", "done \x1b[3"},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) =\n%q, want\n%q", tc.in, got, tc.want)
		}
	}
	j := JSON([]byte(`{"stdout":"\u001b[1m` + ghp[:10] + `\u001b[0m` + ghp[10:] + `"}`))
	if p := leaks(string(j), ghp); p != "" {
		t.Errorf("JSON shows %q: %s", p, j)
	}
}

// adversarial streams: long words with escape sequences or separators in
// them, unfinished strings, that a naive "match everything held on every
// write" would make quadratic.
var adversarial = []string{
	strings.Repeat("\x1b[1mpassword=", 1<<12),
	strings.Repeat("\x1b[1Ckey", 1<<13),
	strings.Repeat("\x1b]0;sk-", 1<<12),
	"\x1b[1m-----BEGIN PRIVATE KEY-----" + strings.Repeat("ab\n", 1<<14),
	strings.Repeat("sk-\x1b[0m", 1<<13),
	strings.Repeat("x", 1<<16),
}

// The work stays linear in the stream however it arrives: counted in bytes
// examined, not timed.
func TestStreamLinear(t *testing.T) {
	for _, in := range adversarial {
		for _, n := range []int{1, 7, 4096} {
			s := NewMasker(nil).NewStream(0)
			for i := 0; i < len(in); i += n {
				s.Write([]byte(in[i:min(i+n, len(in))]))
			}
			s.Flush(true)
			if s.examined > 16*len(in) {
				t.Errorf("%q… in %d-byte writes: %d bytes examined for %d", in[:12], n, s.examined, len(in))
			}
		}
		if out := String(in); String(out) != out {
			t.Errorf("String not idempotent on %q…", in[:12])
		}
	}
}

func BenchmarkStreamAdversarial(b *testing.B) {
	var total int
	for _, in := range adversarial {
		total += len(in)
	}
	b.SetBytes(int64(total))
	for b.Loop() {
		for _, in := range adversarial {
			s := NewMasker(nil).NewStream(0)
			for i := 0; i < len(in); i += 7 {
				s.Write([]byte(in[i:min(i+7, len(in))]))
			}
			s.Flush(true)
		}
	}
}

// A chunk's last word goes out at once unless it could be, or begin, a
// secret that the next chunk completes: only those wait for the quiet
// flush (the output lag of every other frame).
func TestStreamHoldsOnlyWhatCouldStartASecret(t *testing.T) {
	m := NewMasker([]string{"MY_SECRET=Zq9xLiteralValue42"})
	for _, tc := range []struct {
		chunk string
		held  bool
	}{
		{"spinner (3s · ↓ 40 tokens) t=1763929", false},
		{"\x1b[38;5;174m✻\x1b[39m Ruminating… \x1b[38;5;246m(12s", false},
		{"prompt>", false},
		{"key: s", true},             // may go on as sk-…
		{"Authorization: Bea", true}, // may go on as Bearer
		{"Authorization: Bearer ab", true},
		{"TOKEN=ab12", true},   // a keyed value that may go on
		{"echo Zq9xLit", true}, // the start of a literal
		{"password", false},    // the left context masks a value that follows
		{"-----BEGIN PRIVATE KEY-----\nMIIE", true},
	} {
		s := m.NewStream(0)
		out := string(s.Write([]byte(tc.chunk)))
		if held := s.Held() > 0; held != tc.held {
			t.Errorf("%q: held %v (emitted %q), want held %v", tc.chunk, held, out, tc.held)
		}
	}
}
