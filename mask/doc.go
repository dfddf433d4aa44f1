// Package mask hides secrets in text and JSON that familiar persists or
// emits but did not write itself: agent output, tool inputs in the audit
// log, environments of child processes shown to a person.
//
// It owns the list of secret shapes (shapes.go) and the masked form, and
// nothing else: a Masker keeps no state beyond its literals and is safe for
// concurrent use.
//
// # Terminal streams
//
// Output is masked as a terminal shows it (stream.go): escape sequences that
// draw nothing are left out of the text matched, cursor moves count as
// blanks or line breaks, lines claude wrapped are joined, and a Stream (one
// per output stream) keeps the left context and holds back the word that may
// still be the start of a secret, so a key split by colour codes, drawn after
// a cursor move or written in two halves is still one key. A Writer puts a
// Stream in front of an io.Writer and flushes what it held after a short
// quiet period (clock injected). String and JSON mask text that holds escape
// sequences the same way, in one piece.
//
// # The masked form
//
// A secret keeps a few leading characters and its length, so a log stays
// useful ("which key was that?") without being usable:
//
//	sk-ant-api03-AbCd…(108 characters)  →  sk-ant-a…[masked 108 chars]
//
// At most 8 characters are kept, never more than a third of the secret, and
// never any part of a literal a Masker was given; N counts the characters
// hidden. Masking is idempotent: text that already holds the masked form is
// left as it is.
//
// # What counts as a secret
//
// Anthropic and other sk- keys, bearer tokens and Authorization values,
// GitHub, Slack and Google tokens, AWS access key ids, JWTs, private key
// blocks, passwords in URLs (user:pass@host) and values of keys that name a
// secret (password=, token:, "client_secret": …, GITHUB_TOKEN=, as written in
// env files, YAML, JSON, flags and query strings). In JSON, and in
// environments, a value whose key contains KEY, TOKEN, SECRET or PASSWORD (or
// PASSWD, CREDENTIAL, AUTHORIZATION, COOKIE) is masked whole. A Masker also
// masks literal values, such as familiar's own API key, wherever they appear.
//
// Patterns are chosen to leave ordinary text alone: words such as task, skip
// or sketch, commit hashes, token counts ("input_tokens": 12).
package mask
