package mask

import (
	"regexp"
	"strings"
)

// pattern is one shape of secret. Running a regexp over every byte of a
// megabyte of output for each shape would be the slow part, so each has
// literal triggers that every match contains, at a place that says where
// the match begins: the regexp is only tried there, anchored.
type pattern struct {
	name string
	// triggers are lower-case literals, found without regard to ASCII case.
	triggers []string
	// re matches at the start of its input (it is compiled with ^).
	re *regexp.Regexp
	// start finds where a match around a trigger at byte at of s begins;
	// nil means at the trigger. ok false: no match can begin there.
	start func(s string, at int) (int, bool)
	// wordStart: a match does not begin right after a letter, digit or _.
	wordStart bool
	// keyed: group 1 is a key name (as in password=…), which must name a
	// secret; the secret is the first other group that matched.
	keyed bool
	// ok rejects matches that have the shape but not the look of a secret.
	ok func(secret string) bool
	// multiline matches may run past the end of the line they start on.
	multiline bool
}

// Value characters stop at quotes, separators, brackets and at "…", so that
// the masked form (which starts with "…") never extends a match.
const valueChars = `[^\s"'` + "`" + `&,;<>{}\[\]()…]`

func anchored(re string) *regexp.Regexp { return regexp.MustCompile(`^(?:` + re + `)`) }

var patterns = []pattern{
	{
		name:      "anthropic",
		triggers:  []string{"sk-ant-"},
		re:        anchored(`(sk-ant-[A-Za-z0-9_-]{20,})`),
		wordStart: true,
	},
	{
		// Also OpenAI and others; the digit keeps out kebab-case words such
		// as sk-learn-compatible-estimator.
		name:      "sk",
		triggers:  []string{"sk-"},
		re:        anchored(`(sk-[A-Za-z0-9_-]{17,})`),
		wordStart: true,
		ok:        hasDigit,
	},
	{
		name:      "bearer",
		triggers:  []string{"bearer"},
		re:        anchored(`(?i)bearer\s+([A-Za-z0-9._~+/=-]{8,})`),
		wordStart: true,
		// Prose ("Bearer authentication") has no digits and is short.
		ok: func(s string) bool { return hasDigit(s) || len(s) >= 32 },
	},
	{
		name:     "authorization",
		triggers: []string{"authorization"},
		re: anchored(`(?i)authorization["']?\s*[:=]\s*["']?` +
			`(?:(?:bearer|basic|token|digest|bot|apikey)\s+)?([^\s"',;…]{8,})`),
		wordStart: true,
	},
	{
		name:      "github",
		triggers:  []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		re:        anchored(`((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})`),
		wordStart: true,
	},
	{
		name:      "aws access key id",
		triggers:  []string{"akia", "asia"},
		re:        anchored(`((?:AKIA|ASIA)[A-Z0-9]{16})(?:[^A-Za-z0-9_]|$)`),
		wordStart: true,
	},
	{
		name:      "slack",
		triggers:  []string{"xox"},
		re:        anchored(`(xox[abposr]-[A-Za-z0-9-]{10,})`),
		wordStart: true,
	},
	{
		name:      "google api key",
		triggers:  []string{"aiza"},
		re:        anchored(`(AIza[0-9A-Za-z_-]{35})`),
		wordStart: true,
	},
	{
		name:      "jwt",
		triggers:  []string{"eyj"},
		re:        anchored(`(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})`),
		wordStart: true,
	},
	{
		name:      "url password",
		triggers:  []string{"://"},
		re:        anchored(`[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@"'<>]+:([^\s/@"'<>…]+)@`),
		start:     back(isSchemeByte),
		wordStart: true,
	},
	{
		// The body between the markers; without an end marker (output cut
		// short), everything after the begin marker.
		name:      "private key",
		triggers:  []string{"private key-----"},
		re:        anchored(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(.+?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`),
		start:     beginMarker,
		multiline: true,
	},
	{
		// key=value, key: value, "key": "value", --key=value, ?key=value&…
		name:     "keyed value",
		triggers: []string{"pass", "pwd", "secret", "token", "credential", "key"},
		re: anchored(`([A-Za-z0-9_.-]+)["']?[ \t]*[:=][ \t]*` +
			`(?:"((?:[^"\\\n]|\\.)+)"|'([^'\n]+)'|([^\s"'` + "`" + `&,;<>{}\[\]()…=:]` + valueChars + `*))`),
		start: back(isKeyByte),
		keyed: true,
		ok:    plausibleValue,
	},
}

// back returns a start function that walks back from the trigger over the
// bytes in is.
func back(is func(byte) bool) func(string, int) (int, bool) {
	return func(s string, at int) (int, bool) {
		for at > 0 && is(s[at-1]) {
			at--
		}
		return at, true
	}
}

func isKeyByte(c byte) bool { return isWordByte(c) || c == '.' || c == '-' }

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-'
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// beginMarker finds the "-----BEGIN" on the trigger's line.
func beginMarker(s string, at int) (int, bool) {
	lineStart := strings.LastIndexByte(s[:at], '\n') + 1
	i := strings.LastIndex(s[lineStart:at], "-----BEGIN ")
	return lineStart + i, i >= 0
}

func hasDigit(s string) bool { return strings.ContainsAny(s, "0123456789") }

var (
	// Values that are references or placeholders, not secrets.
	notSecrets  = map[string]bool{"null": true, "none": true, "true": true, "false": true, "nil": true, "undefined": true}
	dottedIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)
)

// plausibleValue keeps code and templates out: token = self.token,
// password: ${DB_PASSWORD}, secret: null.
func plausibleValue(v string) bool {
	switch {
	case notSecrets[strings.ToLower(v)]:
		return false
	case strings.HasPrefix(v, "$"), strings.HasPrefix(v, "%"):
		return false
	case dottedIdent.MatchString(v):
		return false
	}
	return true
}

// secretKeyWords make a key in text (password=…) name a secret when they are
// one of its words; "key" only counts after a word that says what kind.
var (
	// Not "pass": go test prints "--- PASS: TestName".
	secretKeyWords = map[string]bool{"password": true, "passwd": true, "pwd": true,
		"passphrase": true, "secret": true, "secrets": true, "token": true, "credential": true,
		"credentials": true, "apikey": true, "accesskey": true, "secretkey": true, "privatekey": true,
		"authkey": true}
	keyKinds = map[string]bool{"api": true, "access": true, "private": true, "secret": true, "auth": true,
		"client": true, "signing": true, "encryption": true, "master": true, "account": true, "app": true,
		"license": true, "subscription": true, "shared": true, "session": true, "service": true,
		"storage": true, "admin": true, "deploy": true, "webhook": true}
)

// isSecretKey decides for key names found in text, word by word, so that
// max_tokens, tokenizer and sort_key are not secrets but GITHUB_TOKEN,
// accessToken and x-api-key are.
func isSecretKey(key string) bool {
	words := splitWords(key)
	if len(words) > 0 {
		// Run-together environment names: PGPASSWORD, NPMTOKEN.
		last := words[len(words)-1]
		for _, end := range []string{"password", "passwd", "passphrase", "secret", "token", "apikey"} {
			if strings.HasSuffix(last, end) {
				return true
			}
		}
	}
	for i, w := range words {
		if secretKeyWords[w] {
			return true
		}
		if w == "key" && i > 0 && keyKinds[words[i-1]] {
			return true
		}
	}
	return false
}

// splitWords splits at anything not a letter or digit and before an upper
// case letter that follows a lower case one, and lower-cases the words.
func splitWords(s string) []string {
	var words []string
	start := -1
	for i := 0; i <= len(s); i++ {
		var c byte
		if i < len(s) {
			c = s[i]
		}
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		camel := i > 0 && c >= 'A' && c <= 'Z' && s[i-1] >= 'a' && s[i-1] <= 'z'
		if start >= 0 && (!alnum || camel) {
			words = append(words, strings.ToLower(s[start:i]))
			start = -1
		}
		if alnum && start < 0 {
			start = i
		}
	}
	return words
}

// secretNames make a JSON key or environment variable name a secret when
// they occur anywhere in it: values there are masked whole.
var secretNames = []string{"key", "token", "secret", "password", "passwd", "credential", "authorization", "cookie"}

// IsSecretName reports whether a JSON key or environment variable name
// names a secret, so that its value is masked whole.
func IsSecretName(name string) bool {
	lower := asciiLower(name)
	for _, s := range secretNames {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// asciiLower lower-cases ASCII letters only, so byte offsets stay valid.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
