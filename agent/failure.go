package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Failure kinds: why a turn ended with an error, as far as the CLI said.
// They are the names of the blocked reasons the orchestrator uses for them.
const (
	// FailureAPI: the Messages API kept failing (overloaded, 5xx, a refused
	// connection) until claude gave up retrying, or refused the request.
	FailureAPI = "api_error"
	// FailureAuth: claude has no usable credentials (not logged in, a bad
	// or expired key or token).
	FailureAuth = "auth"
	// FailureUsageLimit: the claude.ai subscription's usage limit was
	// reached; ResetsAt says when it resets, if claude said.
	FailureUsageLimit = "usage_limit"
)

// Failure is what is known about a failed turn.
type Failure struct {
	Kind     string    `json:"kind"`             // one of the Failure* constants
	Status   int       `json:"status,omitempty"` // the API's HTTP status, 0 for a connection failure or unknown
	Message  string    `json:"message"`          // what claude said, as it said it
	ResetsAt time.Time `json:"resetsAt,omitzero"`
	// Retries is how many times claude itself retried the failed call
	// before it gave up (0: it did not retry, or nobody could tell).
	Retries int `json:"retries,omitempty"`
}

// AuthFix is what the person does about a FailureAuth. CLI 2.1.330 has no
// `claude login` (it starts a session with "login" as its prompt): the
// command is `claude auth login`, or /login inside claude.
const AuthFix = "run `claude auth login` (or /login inside claude), or set ANTHROPIC_API_KEY"

// APIRetry reports that claude is retrying a failed API call: the task is
// not stuck, the API is.
type APIRetry struct {
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"maxAttempts,omitempty"`
	Status      int    `json:"status,omitempty"` // HTTP status; 0 for a connection failure
	Message     string `json:"message"`
}

// Summary is the one line a person reads: "model error 500, retrying (3 of
// 10): boom", "model API unreachable, retrying (1 of 10): Connection
// refused".
func (r APIRetry) Summary() string {
	msg := strings.TrimSpace(r.Message)
	var what string
	switch {
	case r.Status != 0:
		what = fmt.Sprintf("model error %d", r.Status)
		// The transcript's message starts with the status ("500 boom").
		msg = strings.TrimSpace(strings.TrimPrefix(msg, strconv.Itoa(r.Status)))
	case msg == "" || unreachableText.MatchString(msg):
		what = "model API unreachable"
	default:
		what = "model error"
	}
	if msg == "API error" {
		msg = "" // the screen's line before it knows the status says no more
	}
	s := fmt.Sprintf("%s, retrying (%d", what, r.Attempt)
	if r.MaxAttempts > 0 {
		s += fmt.Sprintf(" of %d", r.MaxAttempts)
	}
	s += ")"
	if msg != "" {
		s += ": " + msg
	}
	return s
}

// failureOf is the failure of a turn that ended while claude retried r.
func failureOf(r APIRetry, msg string) Failure {
	if msg == "" {
		msg = r.Summary()
	}
	return Failure{Kind: classifyFailure(r.Status, "", r.Message, msg), Status: r.Status, Message: msg, Retries: r.Attempt}
}

// unreachableText matches what claude says of a call that got no HTTP
// answer at all.
var unreachableText = regexp.MustCompile(`(?i)connect|ECONN|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|unreachable|timed out|timeout|socket|fetch failed|network`)

// Auth reports whether the API refused the credentials: retrying the same
// ones is no use, and claude retries a 401 like a 5xx (CLI 2.1.330: ten
// times over about three minutes).
func (r APIRetry) Auth() bool {
	return classifyFailure(r.Status, "", r.Message, r.Message) == FailureAuth
}

// classifyFailure names the kind of a failed turn from what the CLI
// reported: the HTTP status, its api_error code ("usage_limit_reached",
// "authentication_failed", …), the assistant message's error field
// ("rate_limit", "authentication_failed", …) and the message text.
func classifyFailure(status int, apiError, errField, msg string) string {
	switch {
	case apiError == "usage_limit_reached":
		return FailureUsageLimit
	case status == 401 || status == 403 || errField == "authentication_failed" || errField == "oauth_org_not_allowed" || loginMessage(msg):
		return FailureAuth
	case usageLimitText.MatchString(msg):
		return FailureUsageLimit
	}
	return FailureAPI
}

// loginMessage reports whether a message is the CLI telling the person to
// log in (CLAUDE-CLI.md; testdata login-error).
func loginMessage(msg string) bool {
	for _, s := range []string{"Not logged in", "Please run /login", "Invalid API key", "OAuth token has expired", "OAuth token revoked", "Fix external API key"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// usageLimitText matches the CLI's usage-limit message: "You've hit your
// 5-hour limit · resets 7:33pm (UTC)" (CLI 2.1.330), and the older "Claude
// AI usage limit reached|<epoch>".
var usageLimitText = regexp.MustCompile(`(?i)(hit your .*limit|usage limit reached)`)

// resetsText finds the reset time in a usage-limit message: "resets 7:33pm
// (UTC)", "resets 12am (Europe/Paris)", "resets Nov 24, 3pm (UTC)".
var resetsText = regexp.MustCompile(`resets (?:([A-Z][a-z]{2} \d{1,2}), )?(\d{1,2})(?::(\d{2}))?\s*(am|pm)(?: \(([^)]+)\))?`)

// legacyReset is the old "Claude AI usage limit reached|1795462425" form.
var legacyReset = regexp.MustCompile(`usage limit reached\|(\d{9,11})`)

// parseResetTime reads when a usage limit resets from the CLI's message,
// taking the next such time after now. ok is false when the message says
// nothing usable.
func parseResetTime(msg string, now time.Time) (time.Time, bool) {
	if m := legacyReset.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return time.Unix(n, 0), true
	}
	m := resetsText.FindStringSubmatch(msg)
	if m == nil {
		return time.Time{}, false
	}
	loc := time.Local
	if m[5] != "" {
		if l, err := time.LoadLocation(m[5]); err == nil {
			loc = l
		}
	}
	hour, _ := strconv.Atoi(m[2])
	minute, _ := strconv.Atoi(m[3])
	if hour == 12 {
		hour = 0
	}
	if m[4] == "pm" {
		hour += 12
	}
	now = now.In(loc)
	// The CLI shows the minute, not the second: the limit resets within
	// it, so the end of the minute is the first time it has surely reset.
	day := time.Date(now.Year(), now.Month(), now.Day(), hour, minute, 0, 0, loc).Add(time.Minute)
	if m[1] != "" {
		if d, err := time.ParseInLocation("Jan 2 2006", m[1]+" "+strconv.Itoa(now.Year()), loc); err == nil {
			day = time.Date(d.Year(), d.Month(), d.Day(), hour, minute, 0, 0, loc).Add(time.Minute)
			if day.Before(now.Add(-24 * time.Hour)) {
				day = day.AddDate(1, 0, 0)
			}
			return day, true
		}
	}
	if !day.After(now) {
		day = day.AddDate(0, 0, 1)
	}
	return day, true
}

// transcriptError is the part of a transcript line familiar reads to learn
// why a turn failed: the CLI records the failed call as a synthetic
// assistant message (CLI 2.1.330).
type transcriptError struct {
	Type              string `json:"type"`
	IsAPIErrorMessage bool   `json:"isApiErrorMessage"`
	APIError          string `json:"apiError"`
	APIErrorStatus    int    `json:"apiErrorStatus"`
	Error             string `json:"error"`
	APIErrorParams    struct {
		RateLimitInfo struct {
			ResetsAt int64 `json:"resetsAt"`
		} `json:"rate_limit_info"`
	} `json:"apiErrorParams"`
	Message struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"message"`
}

// transcriptTail bounds how much of a transcript is read to find the last
// API error: it is the last line or close to it.
const transcriptTail = 512 << 10

// lastAPIError reads the session transcript (its path comes with every hook)
// and returns the failure its last assistant message records, or nil when
// the last assistant message is not an API error.
func lastAPIError(path string) *Failure {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > transcriptTail {
		if _, err := f.Seek(fi.Size()-transcriptTail, io.SeekStart); err != nil {
			return nil
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, transcriptTail))
	if err != nil {
		return nil
	}
	lines := bytes.Split(b, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		line := bytes.TrimSpace(lines[i])
		if len(line) == 0 || !bytes.Contains(line, []byte(`"assistant"`)) && !bytes.Contains(line, []byte(`"user"`)) {
			continue
		}
		var kind struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &kind) != nil {
			continue
		}
		if kind.Type == "user" {
			return nil // the turn after it has not answered (yet)
		}
		var e transcriptError
		if kind.Type != "assistant" || json.Unmarshal(line, &e) != nil {
			continue
		}
		if !e.IsAPIErrorMessage {
			return nil
		}
		var text []string
		for _, c := range e.Message.Content {
			if c.Type == "text" && c.Text != "" {
				text = append(text, c.Text)
			}
		}
		if e.APIErrorStatus == 0 {
			e.APIErrorStatus = messageStatus(strings.Join(text, "\n"))
		}
		fl := &Failure{
			Status:  e.APIErrorStatus,
			Message: strings.Join(text, "\n"),
			Kind:    classifyFailure(e.APIErrorStatus, e.APIError, e.Error, strings.Join(text, "\n")),
		}
		if r := e.APIErrorParams.RateLimitInfo.ResetsAt; r > 0 {
			fl.ResetsAt = time.Unix(r, 0)
		}
		return fl
	}
	return nil
}

// apiErrorStatus reads the status of "API Error: 529 …".
var apiErrorStatus = regexp.MustCompile(`API Error: ([45]\d\d)\b`)

// messageStatus is the HTTP status an error message names, 0 if none.
func messageStatus(msg string) int {
	if m := apiErrorStatus.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// transcriptLag bounds the wait for the CLI to write the failed call into
// the transcript: StopFailure fires before it does (CLI 2.1.330).
const transcriptLag = 2 * time.Second

// awaitAPIError is lastAPIError, looking again every 50 ms for up to
// transcriptLag while the transcript does not hold the failure yet.
func awaitAPIError(ctx context.Context, path string) *Failure {
	if path == "" {
		return nil
	}
	deadline := time.Now().Add(transcriptLag)
	for {
		if f := lastAPIError(path); f != nil || time.Now().After(deadline) {
			return f
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// screenFailure builds a Failure from what the screen shows (the fallback
// when no hook told), reading the reset time of a usage limit from the text.
func screenFailure(text, status string, now time.Time) *Failure {
	n, _ := strconv.Atoi(status)
	if n == 0 {
		n = messageStatus(text)
	}
	f := &Failure{Status: n, Message: text, Kind: classifyFailure(n, "", "", text)}
	if f.Kind == FailureUsageLimit {
		if t, ok := parseResetTime(text, now); ok {
			f.ResetsAt = t
		}
	}
	return f
}

// retryLine reads the CLI's retry status line: "API error · retrying in 1s ·
// attempt 1/10", "Connection refused — a firewall or proxy may be blocking
// it (ECONNREFUSED) · retrying in 4s · attempt 4/10" (testdata api-retry,
// api-retry-refused). Up to 2.1.300 it says "Retrying": "401 invalid
// x-api-key · Retrying in 2s · attempt 3/10", "Unable to connect to API
// (ConnectionRefused) · Retrying in 1s · attempt 1/10" (2.1.200); read as
// "retrying", a task on those versions stayed "thinking" through claude's
// ten retries (issue 37).
var retryLine = regexp.MustCompile(`^(.*?) · [Rr]etrying in \S+ · attempt (\d+)/(\d+)`)

// httpStatus finds an HTTP error status in a retry message.
var httpStatus = regexp.MustCompile(`\b[45]\d\d\b`)

// parseRetryLine turns the retry status line into an APIRetry.
func parseRetryLine(text string) (APIRetry, bool) {
	m := retryLine.FindStringSubmatch(text)
	if m == nil {
		return APIRetry{}, false
	}
	r := APIRetry{Message: m[1]}
	r.Attempt, _ = strconv.Atoi(m[2])
	r.MaxAttempts, _ = strconv.Atoi(m[3])
	if s := httpStatus.FindString(m[1]); s != "" {
		r.Status, _ = strconv.Atoi(s)
	}
	return r, true
}
