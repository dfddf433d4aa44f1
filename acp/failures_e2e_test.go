package acp_test

import (
	"encoding/json"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// failureRun is what the client's failure scenario saw.
type failureRun struct {
	SentAt int64 `json:"sentAt"` // ms since the epoch, the client's clock (this machine's)
	SaidAt int64 `json:"saidAt"`
	End    struct {
		StopReason string `json:"stopReason"`
		Error      *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		At int64 `json:"at"`
	} `json:"end"`
	Messages []struct {
		At   int64  `json:"at"`
		Text string `json:"text"`
	} `json:"messages"`
}

func (w *world) failure(env ...string) failureRun {
	w.t.Helper()
	out := w.runWith("failure", env)
	for _, l := range strings.Split(out, "\n") {
		var r struct {
			Failure *failureRun `json:"failure"`
		}
		if json.Unmarshal([]byte(l), &r) == nil && r.Failure != nil {
			return *r.Failure
		}
	}
	w.t.Fatalf("no failure line in the client's output:\n%s", out)
	return failureRun{}
}

func ms(at int64) time.Time { return time.UnixMilli(at) }

// failWhen fails every main request whose conversation holds marker with r,
// and answers the rest from the prompts' directives.
func failWhen(marker string, r fakeapi.Reply) fakeapi.Script {
	script := fakeapi.PromptScript()
	return func(req fakeapi.Request) fakeapi.Reply {
		if !req.IsSideRequest() && strings.Contains(string(req.Raw), marker) {
			return r
		}
		return script(req)
	}
}

// Issue 37 items 3 and 4, in an ACP editor: what VS Code says, said while
// claude retries (each "retrying (n of m)" as a message, when it happens),
// the error once at the end, a refused login as auth_required in words
// that name the fix. The times from the first failed request (the prompt,
// for an unreachable API, where no request arrives) are logged.
func TestACPFailuresSaidWhileClaudeRetries(t *testing.T) {
	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := "http://" + l.Addr().String()
		l.Close()
		w := newWorld(t)
		r := w.failure("ANTHROPIC_BASE_URL="+closed, "ACP_FAIL_PROMPT=go", `ACP_FAIL_SAID=model API unreachable, retrying \(1 of 10\)`)
		if r.SaidAt == 0 {
			t.Fatalf("the unreachable API was never said: %+v", r)
		}
		t.Logf("claude %s: the unreachable API said %s after the prompt", claudeVersion(t), ms(r.SaidAt).Sub(ms(r.SentAt)))
	})
	t.Run("500", func(t *testing.T) {
		w := newWorldWith(t, failWhen("FAIL-EVERY-500", fakeapi.Reply{Status: 500, Error: "fake boom", Retryable: true}))
		r := w.failure("CLAUDE_CODE_MAX_RETRIES=3", "ACP_FAIL_PROMPT=go FAIL-EVERY-500", `ACP_FAIL_SAID=model error.*retrying \(1 of 3\)`, "ACP_FAIL_END=1")
		reqs := w.api.MainRequests()
		if len(reqs) == 0 || r.SaidAt == 0 {
			t.Fatalf("%d requests, said at %d: %+v", len(reqs), r.SaidAt, r)
		}
		t.Logf("claude %s: the first retry said %s after the first failed request", claudeVersion(t), ms(r.SaidAt).Sub(reqs[0].At).Round(time.Millisecond))
		var texts []string
		for _, m := range r.Messages {
			texts = append(texts, m.Text)
		}
		all := strings.Join(texts, "\n")
		for _, n := range []string{"1 of 3", "2 of 3", "3 of 3"} {
			if strings.Count(all, "retrying ("+n+")") != 1 {
				t.Errorf("retrying (%s) said %d times, want once:\n%s", n, strings.Count(all, "retrying ("+n+")"), all)
			}
		}
		// The error once: claude's own message says it (under the stream
		// driver; the PTY's transcript has none, and familiar's end says
		// it); familiar's end adds what it knows (the retries), not the
		// error again. The retry lines may name it: they are not the end.
		if n := strings.Count(all, "API Error: 500 fake boom"); n != 1 {
			t.Errorf("the error said %d times, want once:\n%s", n, all)
		}
		if r.End.StopReason != "end_turn" || !strings.Contains(texts[len(texts)-1], "claude gave up after 3 retries") {
			t.Errorf("ended %+v, last message %q: want familiar's end saying claude gave up", r.End, texts[len(texts)-1])
		}
		t.Logf("messages:\n%s\nend: %+v", all, r.End)
	})
	t.Run("401", func(t *testing.T) {
		w := newWorldWith(t, failWhen("FAIL-EVERY-401", fakeapi.Reply{Status: 401, Error: "invalid x-api-key", Retryable: true}))
		r := w.failure("ACP_FAIL_PROMPT=go FAIL-EVERY-401", "ACP_FAIL_SAID=refused the key", "ACP_FAIL_END=1")
		reqs := w.api.MainRequests()
		if r.End.Error == nil || r.End.Error.Code != -32000 {
			t.Fatalf("the prompt ended %+v, want auth_required", r.End)
		}
		msg := r.End.Error.Message
		if !strings.Contains(msg, "refused the key in ANTHROPIC_API_KEY") || !strings.Contains(msg, "401") || strings.Contains(msg, "retrying") {
			t.Errorf("auth_required says %q", msg)
		}
		if len(reqs) > 0 {
			t.Logf("claude %s: auth_required %s after the first refused request: %q", claudeVersion(t), ms(r.End.At).Sub(reqs[0].At).Round(time.Millisecond), msg)
		}
	})
}

// claudeVersion is the version of the claude under test, as it says it.
func claudeVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(testenv.Claude(t), "--version").Output()
	if err != nil {
		return "?"
	}
	v, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	return v
}
