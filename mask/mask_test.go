package mask

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Fake secrets are assembled at run time so that the source holds nothing a
// secret scanner would flag.
func fake(prefix string, n int) string {
	const alphabet = "aB3dE5fG7hJ9kLmN2pQ4rS6tU8vW0xYz"
	var b strings.Builder
	b.WriteString(prefix)
	for i := range n {
		b.WriteByte(alphabet[(i*7+3)%len(alphabet)])
	}
	return b.String()
}

var (
	anthropicKey = fake("sk-"+"ant-api03-", 95) + "-AbCdEfAA"
	openaiKey    = fake("sk-"+"proj-", 48)
	ghp          = fake("gh"+"p_", 36)
	ghs          = fake("gh"+"s_", 36)
	githubPAT    = fake("github"+"_pat_", 82)
	awsID        = "AKIA" + "IOSFODNN7EXAMPLE"
	awsSecret    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
	slack        = "xox" + "b-" + fake("1234-", 24)
	google       = "AI" + "za" + fake("", 35)
	jwt          = "eyJ" + fake("", 20) + ".eyJ" + fake("", 30) + "." + fake("", 43)
)

// masked is what writeMasked makes of secret.
func masked(secret string) string {
	var b strings.Builder
	writeMasked(&b, secret, nil)
	return b.String()
}

func TestString(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"anthropic key", "key is " + anthropicKey + ".", "key is sk-ant-a…[masked 109 chars]."},
		{"anthropic key alone", anthropicKey, masked(anthropicKey)},
		{"other sk key", "use " + openaiKey + " now", "use " + masked(openaiKey) + " now"},
		{"bearer", "curl -H 'Authorization: Bearer " + jwt + "'", "curl -H 'Authorization: Bearer " + masked(jwt) + "'"},
		{"bearer opaque", "Bearer abcdefgh12345678", "Bearer " + masked("abcdefgh12345678")},
		{"authorization basic", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic " + masked("dXNlcjpwYXNzd29yZA==")},
		{"authorization header value", `authorization="tok_0123456789"`, `authorization="` + masked("tok_0123456789") + `"`},
		{"github ghp", "export X=" + ghp, "export X=" + masked(ghp)},
		{"github ghs in url", "https://x-access-token:" + ghs + "@github.com/o/r.git", "https://x-access-token:" + masked(ghs) + "@github.com/o/r.git"},
		{"github gho", fake("gh"+"o_", 36), masked(fake("gh"+"o_", 36))},
		{"github ghu", fake("gh"+"u_", 36), masked(fake("gh"+"u_", 36))},
		{"github ghr", fake("gh"+"r_", 36), masked(fake("gh"+"r_", 36))},
		{"github pat", githubPAT, masked(githubPAT)},
		{"aws id", "id " + awsID + " ok", "id " + masked(awsID) + " ok"},
		{"aws session id", "ASIA" + "Y34FZKBOKMUTVV7A", masked("ASIA" + "Y34FZKBOKMUTVV7A")},
		{"aws secret", "aws_secret_access_key = " + awsSecret, "aws_secret_access_key = " + masked(awsSecret)},
		{"aws secret env", "AWS_SECRET_ACCESS_KEY=" + awsSecret, "AWS_SECRET_ACCESS_KEY=" + masked(awsSecret)},
		{"slack", slack, masked(slack)},
		{"google", "?key=" + google, "?key=" + masked(google)},
		{"jwt", jwt, masked(jwt)},
		{"password env", "PGPASSWORD=hunter2x psql", "PGPASSWORD=" + masked("hunter2x") + " psql"},
		{"password equals", "password=hunter2x", "password=hu…[masked 6 chars]"},
		{"password colon yaml", "  password: correct-horse", "  password: " + masked("correct-horse")},
		{"password quoted yaml", `password: "two words"`, `password: "` + masked("two words") + `"`},
		{"password single quoted", `export DB_PASSWORD='s3cr3t!'`, `export DB_PASSWORD='` + masked("s3cr3t!") + `'`},
		{"json in text", `{"client_secret": "abc123xyz", "id": 7}`, `{"client_secret": "` + masked("abc123xyz") + `", "id": 7}`},
		{"json compact", `{"token":"abcdefghij"}`, `{"token":"` + masked("abcdefghij") + `"}`},
		{"token flag", "gh --token=abcdef123456 x", "gh --token=" + masked("abcdef123456") + " x"},
		{"secret equals", "SECRET=topsecretvalue", "SECRET=" + masked("topsecretvalue")},
		{"api key camel", `apiKey: "k-123456"`, `apiKey: "` + masked("k-123456") + `"`},
		{"x-api-key header", "x-api-key: abcdef0123", "x-api-key: " + masked("abcdef0123")},
		{"query string", "GET /cb?code=1&access_token=abcdef123&state=x", "GET /cb?code=1&access_token=" + masked("abcdef123") + "&state=x"},
		{"value after a plain key", "user=admin:password=y", "user=admin:password=" + masked("y")},
		{"url password", "postgres://app:pa55word@db:5432/x", "postgres://app:" + masked("pa55word") + "@db:5432/x"},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabcdefgh\n-----END RSA PRIVATE KEY-----\nafter",
			"-----BEGIN RSA PRIVATE KEY-----" + masked("\nMIIEpAIBAAKCAQEA\nabcdefgh\n") + "-----END RSA PRIVATE KEY-----\nafter"},
		{"private key cut short", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk",
			"-----BEGIN OPENSSH PRIVATE KEY-----" + masked("\nb3BlbnNzaC1rZXk")},
		{"two on a line", "a=" + ghp + " b=" + awsID, "a=" + masked(ghp) + " b=" + masked(awsID)},
		{"multiline", "one\nkey: " + anthropicKey + "\nthree", "one\nkey: " + masked(anthropicKey) + "\nthree"},

		// Ordinary text stays as it is.
		{"words", "task skip sketch ask-me-anything desk-lamp risk-free", ""},
		{"kebab sk", "pip install sk-learn-compatible-estimator", ""},
		{"short sk", "sk-12345", ""},
		{"commit hash", "commit 3f2a1c9e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 (HEAD -> main)", ""},
		{"token counts", `"usage":{"input_tokens":12,"output_tokens":340,"cache_read_input_tokens":0}`, ""},
		{"max tokens", "max_tokens=1024 tokenizer=bert", ""},
		{"plain keys", "sort_key=name primary_key: id monkey=banana key=value", ""},
		{"bearer prose", "Bearer authentication uses tokens", ""},
		{"password prose", "passwords must be long; the token is sent", ""},
		{"template", "password: ${DB_PASSWORD} token: $TOKEN secret: %s", ""},
		{"code", "token = self.token\npassword := os.Getenv(\"PW\")", ""},
		{"null", `secret: null, "password": "", token: none`, ""},
		{"git remote", "git@github.com:owner/repo.git https://github.com/owner/repo", ""},
		{"asia", "ASIAN MARKETS ASIATIC", ""},
		{"go test output", "ok  \tgithub.com/familiar-dev/familiar/policy\t0.047s\n--- PASS: TestKeyFunc (0.00s)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = tc.in
			}
			got := String(tc.in)
			if got != want {
				t.Fatalf("String(%q)\n got %q\nwant %q", tc.in, got, want)
			}
			if again := String(got); again != got {
				t.Errorf("not idempotent: %q → %q", got, again)
			}
		})
	}
}

func TestMaskedForm(t *testing.T) {
	marker := regexp.MustCompile(`^(.*)…\[masked (\d+) chars\]$`)
	for n := 1; n <= 130; n++ {
		secret := strings.Repeat("é", n%3) + strings.Repeat("x", n-n%3)
		m := marker.FindStringSubmatch(masked(secret))
		if m == nil {
			t.Fatalf("masked(%d chars) = %q", n, masked(secret))
		}
		kept := utf8.RuneCountInString(m[1])
		if kept > 8 || kept > n/3 || !strings.HasPrefix(secret, m[1]) {
			t.Errorf("%d chars: kept %q", n, m[1])
		}
		if m[2] != fmt.Sprint(n-kept) {
			t.Errorf("%d chars: count %s, want %d", n, m[2], n-kept)
		}
		if !isMaskedForm(masked(secret)) {
			t.Errorf("isMaskedForm(%q) = false", masked(secret))
		}
	}
}

func TestIdempotentAroundMarkers(t *testing.T) {
	for _, s := range []string{
		"password=hu…[masked 6 chars]",
		"x …[masked 3 chars] y …[masked chars] …[masked 99999999999999999999 chars]",
		"sk-ant-a…[masked 108 chars]sk-ant-b…[masked 108 chars]",
		"-----BEGIN PRIVATE KEY-----abc…[masked 20 chars]-----END PRIVATE KEY-----",
	} {
		if got := String(s); got != s {
			t.Errorf("String(%q) = %q, want it unchanged", s, got)
		}
	}
	// A long secret before a marker is still masked: looking masked takes
	// more than ending in a marker.
	s := anthropicKey + "…[masked 5 chars]"
	if got := String(s); strings.Contains(got, anthropicKey[:20]) {
		t.Errorf("String(%q) = %q", s, got)
	}
}

func TestJSON(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"secret keys whole", `{"api_key":"abcdefghijkl","Password":"pw","n":1.50}`,
			`{"api_key":"` + masked("abcdefghijkl") + `","Password":"` + masked("pw") + `","n":1.50}`},
		{"patterns in other values", `{"cmd":"curl -H 'Authorization: Bearer abcdefgh12345678' <x> & y"}`,
			`{"cmd":"curl -H 'Authorization: Bearer ` + masked("abcdefgh12345678") + `' <x> & y"}`},
		{"nested under a secret key", `{"secrets":{"db":"hunter22","list":["aaaaaaaa",7,null,true]}}`,
			`{"secrets":{"db":"` + masked("hunter22") + `","list":["` + masked("aaaaaaaa") + `",7,null,true]}}`},
		{"secret key in an array of objects", `[{"token":"abcdefghij"},{"name":"x"}]`,
			`[{"token":"` + masked("abcdefghij") + `"},{"name":"x"}]`},
		{"key order and spacing kept", "{\n  \"z\": \"" + ghp + "\",\n  \"a\": 1e3\n}",
			"{\n  \"z\": \"" + masked(ghp) + "\",\n  \"a\": 1e3\n}"},
		{"escaped input", `{"text":"key \"` + awsID + `\"\n"}`, `{"text":"key \"` + masked(awsID) + `\"\n"}`},
		{"secret in a key", `{"` + awsID + `":1}`, `{"` + masked(awsID) + `":1}`},
		{"numbers under secret keys stay", `{"input_tokens":12,"max_tokens":4096,"key":false}`, ""},
		{"nothing to mask", `{"kind":"permission","tool":"Bash","input":{"command":"go test ./..."}}`, ""},
		{"top-level string", `"` + ghp + `"`, `"` + masked(ghp) + `"`},
		{"invalid JSON is masked as text", `{"token": "abcdefghij"`, `{"token": "` + masked("abcdefghij") + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = tc.in
			}
			got := JSON(json.RawMessage(tc.in))
			if string(got) != want {
				t.Fatalf("JSON(%s)\n got %s\nwant %s", tc.in, got, want)
			}
			if json.Valid([]byte(tc.in)) && !json.Valid(got) {
				t.Errorf("output is not valid JSON")
			}
			if again := JSON(got); string(again) != string(got) {
				t.Errorf("not idempotent: %s → %s", got, again)
			}
		})
	}
	in := json.RawMessage(`{"a":"b"}`)
	if out := JSON(in); &out[0] != &in[0] {
		t.Errorf("JSON copied input that needed no masking")
	}
}

func TestEnv(t *testing.T) {
	got := Env([]string{
		"ANTHROPIC_API_KEY=" + anthropicKey,
		"GITHUB_TOKEN=short",
		"DATABASE_URL=postgres://app:pa55word@db/x",
		"PATH=/usr/bin:/bin",
		"EMPTY_SECRET=",
		"not an assignment " + ghp,
	})
	want := []string{
		"ANTHROPIC_API_KEY=" + masked(anthropicKey),
		"GITHUB_TOKEN=" + masked("short"),
		"DATABASE_URL=postgres://app:" + masked("pa55word") + "@db/x",
		"PATH=/usr/bin:/bin",
		"EMPTY_SECRET=",
		"not an assignment " + masked(ghp),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Env =\n%q\nwant\n%q", got, want)
	}
}

func TestMasker(t *testing.T) {
	lit := "Zq9-custom-credential-value"
	m := NewMasker([]string{
		"MY_SERVICE_TOKEN=" + lit,
		"SHORT_KEY=1234567", // too short to mask everywhere
		"HOME=/home/u",      // not a secret's name
		"ODD_SECRET=masked 12 chars",
		"DUP_TOKEN=" + lit,
	})
	if len(m.literals) != 1 || m.literals[0] != lit {
		t.Fatalf("literals = %q", m.literals)
	}
	for _, tc := range []struct{ in, want string }{
		{"echo " + lit + " done", "echo Zq9-cust…[masked 19 chars] done"},
		{"glued" + lit + "glued", "glued" + masked(lit) + "glued"},
		{lit + lit, masked(lit + lit)},
		{"token=" + lit + "xyz", "token=" + masked(lit+"xyz")},
		{"/home/u 1234567", "/home/u 1234567"},
	} {
		got := m.String(tc.in)
		if got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, lit) || m.String(got) != got {
			t.Errorf("String(%q) = %q leaks or is not idempotent", tc.in, got)
		}
	}
	j := m.JSON(json.RawMessage(`{"password":"` + lit + `","note":"see ` + lit + `"}`))
	if strings.Contains(string(j), lit) || !json.Valid(j) {
		t.Errorf("JSON leaks: %s", j)
	}
	if env := m.Env([]string{"X=" + lit}); env[0] != "X="+masked(lit) {
		t.Errorf("Env = %q", env)
	}
	if got := NewMasker(nil, "settings-secret-1", "short").String("a settings-secret-1 short"); got != "a "+masked("settings-secret-1")+" short" {
		t.Errorf("explicit secrets: %q", got)
	}
	var none *Masker
	if none.String(ghp) != String(ghp) {
		t.Errorf("nil Masker differs from String")
	}
}

// An 8-byte literal that begins a longer secret would be the whole kept
// prefix: it is cut.
func TestShortLiteralNotKept(t *testing.T) {
	lit := "Ab3$efgh"
	m := NewMasker([]string{"PIN_SECRET=" + lit})
	for _, in := range []string{
		"token=" + lit + strings.Repeat("x", 30),
		"token=x" + lit + strings.Repeat("x", 30),
		`{"password":"` + lit + strings.Repeat("y", 30) + `"}`,
	} {
		out := m.String(in)
		if strings.Contains(out, lit) || !strings.Contains(out, "…[masked ") {
			t.Errorf("String(%q) = %q", in, out)
		}
		if j := m.JSON(json.RawMessage(in)); strings.Contains(string(j), lit) {
			t.Errorf("JSON(%q) = %s", in, j)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	m := NewMasker([]string{"A_TOKEN=abcdefghijkl"})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if strings.Contains(m.String("x abcdefghijkl "+ghp), "abcdefghijkl") {
					t.Error("leak")
				}
				m.JSON(json.RawMessage(`{"token":"abcdefghij"}`))
			}
		})
	}
	wg.Wait()
}

func TestShapesFit(t *testing.T) {
	if len(shapes) > maxShapes {
		t.Fatalf("%d shapes, maxShapes is %d", len(shapes), maxShapes)
	}
}

func TestSecretNames(t *testing.T) {
	for _, n := range []string{"ANTHROPIC_API_KEY", "GITHUB_TOKEN", "client_secret", "PGPASSWORD", "Authorization", "accessToken"} {
		if !IsSecretName(n) {
			t.Errorf("IsSecretName(%q) = false", n)
		}
	}
	for _, n := range []string{"PATH", "HOME", "session_id", "command"} {
		if IsSecretName(n) {
			t.Errorf("IsSecretName(%q) = true", n)
		}
	}
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"password", true}, {"DB_PASSWORD", true}, {"accessToken", true}, {"x-api-key", true},
		{"aws_secret_access_key", true}, {"--token", true}, {"max_tokens", false}, {"tokenizer", false},
		{"sort_key", false}, {"key", false}, {"monkey", false}, {"passes", false},
	} {
		if got := isSecretKey(tc.key); got != tc.want {
			t.Errorf("isSecretKey(%q) = %v", tc.key, got)
		}
	}
}

// FuzzString checks that masking never panics, is idempotent, keeps valid
// UTF-8 valid, never lets a literal it was given through, and keeps JSON
// valid.
func FuzzString(f *testing.F) {
	for _, s := range []string{
		"key " + anthropicKey, "password=hunter2x", "Bearer abcdefgh12345678", ghp, awsID + " " + awsSecret,
		"https://u:p@h", "-----BEGIN PRIVATE KEY-----\nabc", "x-api-key: 'abc def'", "user=a:token=b",
		"hu…[masked 6 chars]", `{"token":"abcdefghij","n":[1,"Zq9-literal-x"]}`, "token=x.Zq9-literal-x",
		"Bearer abcdefghZq9-literal-x rest", "task skip sketch",
	} {
		f.Add(s, "Zq9-literal-x")
	}
	f.Fuzz(func(t *testing.T, s, lit string) {
		m := NewMasker([]string{"FUZZ_TOKEN=" + lit})
		out := m.String(s)
		if again := m.String(out); again != out {
			t.Fatalf("not idempotent:\n in %q\nout %q\n2nd %q", s, out, again)
		}
		if usableLiteral(lit) && strings.Contains(out, lit) {
			t.Fatalf("literal %q left in %q (from %q)", lit, out, s)
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 from %q: %q", s, out)
		}
		if p := String(s); String(p) != p {
			t.Fatalf("String not idempotent on %q", s)
		}
		if json.Valid([]byte(s)) {
			if strings.HasPrefix(s, `"`) {
				var want string
				_ = json.Unmarshal([]byte(s), &want)
				if got := decodeString([]byte(strings.TrimSpace(s))); got != want {
					t.Fatalf("decodeString(%q) = %q, want %q", s, got, want)
				}
			}
			j := m.JSON(json.RawMessage(s))
			if !json.Valid(j) {
				t.Fatalf("JSON(%q) = %q, not valid", s, j)
			}
			if again := m.JSON(j); string(again) != string(j) {
				t.Fatalf("JSON not idempotent: %q → %q → %q", s, j, again)
			}
			if usableLiteral(lit) && strings.Contains(string(j), lit) {
				t.Fatalf("literal %q left in JSON %q", lit, j)
			}
		}
	})
}

// typicalOutput is about size bytes of what agents print: test runs, file
// listings, git logs, stream-json events, code, escape sequences, and now
// and then a secret.
func typicalOutput(size int) string {
	lines := []string{
		"=== RUN   TestDecide/prefix_with_args",
		"--- PASS: TestDecide/prefix_with_args (0.00s)",
		"ok  \tgithub.com/familiar-dev/familiar/policy\t0.047s",
		"-rw-r--r--  1 user  staff   4821 Jan 12 10:14 main.go",
		"drwxr-xr-x  7 user  staff    224 Jan 12 10:14 internal",
		"commit 3f2a1c9e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
		"Author: A Person <a@example.com>",
		`{"type":"assistant","message":{"usage":{"input_tokens":1234,"output_tokens":56,"cache_read_input_tokens":0}}}`,
		`{"type":"stream_event","event":{"delta":{"type":"text_delta","text":"Let me look at the key handling."}}}`,
		"\x1b[32m✓\x1b[0m compiled 42 modules in 1.2s",
		"func (m *Masker) String(s string) string { // the key point",
		"	token := lexer.Next() // task: skip the sketch",
		"    at Object.<anonymous> (/repo/src/index.ts:12:5)",
		"diff --git a/config.yaml b/config.yaml",
		"+  timeout: 30s",
		"https://github.com/familiar-dev/familiar/pull/12",
	}
	secrets := []string{"Authorization: Bearer " + jwt, "export GITHUB_TOKEN=" + ghp, "password: hunter2x", anthropicKey}
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		if i%500 == 499 {
			b.WriteString(secrets[(i/500)%len(secrets)])
		} else {
			b.WriteString(lines[i%len(lines)])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func BenchmarkString(b *testing.B) {
	s := typicalOutput(1 << 20)
	m := NewMasker([]string{"ANTHROPIC_API_KEY=" + anthropicKey, "OTHER_TOKEN=Zq9-literal-x"})
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		m.String(s)
	}
}

func BenchmarkStringClean(b *testing.B) {
	s := strings.ReplaceAll(typicalOutput(1<<20), "key", "kez")
	s = strings.NewReplacer("token", "tokem", "Bearer", "Beaver", "sk-", "sx-", "password", "passw0rd", "ghp_", "ghq_").Replace(s)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		String(s)
	}
}

func BenchmarkJSON(b *testing.B) {
	var events []json.RawMessage
	for _, l := range strings.Split(typicalOutput(1<<20), "\n") {
		j, _ := json.Marshal(map[string]any{"type": "output", "data": l, "n": 1})
		events = append(events, j)
	}
	raw, _ := json.Marshal(events)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		JSON(raw)
	}
}

// TestLinear guards against a slow path sneaking in: masking must not take
// much longer per byte on large input than on small.
func TestLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	worst := []string{
		strings.Repeat("password=", 1<<15),
		strings.Repeat("key ", 1<<16),
		strings.Repeat("a=b:", 1<<16),
		strings.Repeat("…[masked 1 chars]", 1<<14),
		"-----BEGIN PRIVATE KEY-----" + strings.Repeat("ab\n", 1<<16),
		strings.Repeat("sk-", 1<<16),
	}
	for _, s := range worst {
		out := String(s)
		if String(out) != out {
			t.Errorf("not idempotent on %q…", s[:20])
		}
	}
}

func TestDecodeString(t *testing.T) {
	for _, tok := range []string{
		`""`, `"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u20AC"`, `"\ud83d\ude00"`, `"\ud83d x"`,
		`"\ude00"`, `"\ud83d\u0041"`, "\"caf\xc3\xa9\"", "\"bad \xff byte\"", `"\u0000"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(tok), &want); err != nil {
			t.Fatalf("bad test token %s: %v", tok, err)
		}
		if got := decodeString([]byte(tok)); got != want {
			t.Errorf("decodeString(%s) = %q, want %q", tok, got, want)
		}
	}
}
