package mask

import (
	"regexp"
	"strings"
)

// Which names of keys and variables say that their value is a secret.

var (
	// Values that are references or placeholders, not secrets.
	notSecrets  = map[string]bool{"null": true, "none": true, "true": true, "false": true, "nil": true, "undefined": true}
	dottedIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)
)

// plausibleValue keeps code and templates out: token = self.token,
// password: ${DB_PASSWORD}, secret: null.
func plausibleValue(v string) bool {
	switch {
	case len(v) <= 9 && notSecrets[strings.ToLower(v)]:
		return false
	case strings.HasPrefix(v, "$"), strings.HasPrefix(v, "%"):
		return false
	case len(v) <= 256 && dottedIdent.MatchString(v): // bounded: it runs per key
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
// accessToken and x-api-key are. It runs for every key that holds a key
// word, so it does not allocate.
func isSecretKey(key string) bool {
	var buf [32]byte
	secret, prevKind := false, false
	lastLower := ""
	forEachWord(key, func(w string) bool {
		if len(w) > len(buf) {
			prevKind = false
			lastLower = ""
			return true
		}
		for i := 0; i < len(w); i++ {
			buf[i] = lower[w[i]]
		}
		lw := buf[:len(w)]
		if secretKeyWords[string(lw)] || string(lw) == "key" && prevKind {
			secret = true
			return false
		}
		prevKind = keyKinds[string(lw)]
		lastLower = w
		return true
	})
	if secret {
		return true
	}
	// Run-together environment names: PGPASSWORD, NPMTOKEN.
	for _, end := range []string{"password", "passwd", "passphrase", "secret", "token", "apikey"} {
		if len(lastLower) >= len(end) && hasPrefixFold(lastLower[len(lastLower)-len(end):], end) {
			return true
		}
	}
	return false
}

// forEachWord calls yield with the words of s, split at anything not a
// letter or digit and before an upper case letter that follows a lower case
// one, until yield returns false.
func forEachWord(s string, yield func(string) bool) {
	start := -1
	for i := 0; i <= len(s); i++ {
		var c byte
		if i < len(s) {
			c = s[i]
		}
		alnum := isLetter(c) || isDigit(c)
		camel := i > 0 && c >= 'A' && c <= 'Z' && s[i-1] >= 'a' && s[i-1] <= 'z'
		if start >= 0 && (!alnum || camel) {
			if !yield(s[start:i]) {
				return
			}
			start = -1
		}
		if alnum && start < 0 {
			start = i
		}
	}
}

// secretNames make a JSON key or environment variable name a secret when
// they occur anywhere in it: values there are masked whole.
var secretNames = newWordSet("key", "token", "secret", "password", "passwd", "credential", "authorization", "cookie")

// IsSecretName reports whether a JSON key or environment variable name
// names a secret, so that its value is masked whole.
func IsSecretName(name string) bool { return containsAnyFold(name, secretNames) }
