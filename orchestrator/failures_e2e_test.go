package orchestrator_test

import (
	"context"
	"encoding/json"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/internal/fakeapi"
	"github.com/familiar-dev/familiar/protocol"
)

// retryCount reads n of "retrying (n of m)".
var retryCount = regexp.MustCompile(`retrying \((\d+)`)

// Issue 37: an unreachable API, a refused login and an API that fails
// every time are said to the person while claude retries, on every CLI of
// the window (.ci/e2e-subset runs this on 2.1.200, 2.1.300 and 2.1.332).
// Up to 2.1.300 the TUI's retry line says "Retrying", which familiar did
// not read: a task there stayed "running · thinking" through claude's ten
// retries (about three minutes, more for a refused connection). claude
// keeps its default of ten retries here, as a person's does. Each case is
// named by the retry it is said at (claude's third at the latest: the
// third retry's line is the first to name the status under the PTY
// driver; claude's fourth request comes ~4 s after its first), not by a
// time; the time from the first failed request is logged.
func TestFailuresSaidWhileClaudeRetries(t *testing.T) {
	for _, driver := range bothDrivers {
		t.Run(string(driver), func(t *testing.T) {
			t.Run("unreachable", func(t *testing.T) {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				closed := "http://" + l.Addr().String()
				l.Close()
				e := open(t, nil, nil)
				e.startHook = func(o *agent.Options) { o.ExtraEnv["ANTHROPIC_BASE_URL"] = closed }
				task := e.createOn(t, driver, "unreachable", "go", 0)
				said := e.notes.wait(t, "the unreachable API named", retrying(task.ID, "model API unreachable, retrying ("))
				// No request reaches anything: claude's prompt entry is
				// the nearest known time before its first attempt.
				prompt := e.notes.wait(t, "the prompt", is(protocol.NotifyTaskTranscript, `"kind":"prompt"`))
				var p protocol.TaskTranscriptNotification
				if err := json.Unmarshal(prompt.params, &p); err != nil {
					t.Fatal(err)
				}
				saidBy(t, said, 3)
				t.Logf("claude %s, %s: %q %s after the prompt", claudeVersionOf(t, e, task.ID), driver,
					detailOf(said), said.at.Sub(p.Entry.At).Round(time.Millisecond))
				cancel(t, e, task.ID)
			})
			t.Run("500", func(t *testing.T) {
				e := openWith(t, nil, nil, failEvery(fakeapi.Reply{Status: 500, Error: "fake boom", Retryable: true}))
				task := e.createOn(t, driver, "server error", "go", 0)
				said := e.notes.wait(t, "the status named", retrying(task.ID, "model error 500, retrying ("))
				saidBy(t, said, 3)
				first := e.api.MainRequests()[0].At
				t.Logf("claude %s, %s: %q %s after the first failed request", claudeVersionOf(t, e, task.ID), driver,
					detailOf(said), said.at.Sub(first).Round(time.Millisecond))
				cancel(t, e, task.ID)
			})
			t.Run("401", func(t *testing.T) {
				e := openWith(t, nil, nil, failEvery(fakeapi.Reply{Status: 401, Error: "invalid x-api-key", Retryable: true}))
				task := e.createOn(t, driver, "refused key", "go", 0)
				blocked := e.notes.wait(t, "blocked{auth}", blockedIs(task.ID, protocol.BlockedAuth))
				var before int
				for _, r := range e.api.MainRequests() {
					if r.At.Before(blocked.at) {
						before++
					}
				}
				if before > 4 {
					t.Errorf("blocked{auth} after %d refused requests, want it by claude's third retry", before)
				}
				u, _ := updated(blocked)
				if !strings.Contains(u.Blocked.Detail, "401") || !strings.Contains(u.Blocked.Detail, "claude auth login") {
					t.Errorf("detail %q: the status and the fix", u.Blocked.Detail)
				}
				first := e.api.MainRequests()[0].At
				t.Logf("claude %s, %s: blocked{auth} %s after the first refused request (%d requests)", claudeVersionOf(t, e, task.ID), driver,
					blocked.at.Sub(first).Round(time.Millisecond), before)
				waitProcessGone(t, u.Agent.PID)
			})
		})
	}
}

// failEvery answers every main request with r, side requests harmlessly.
func failEvery(r fakeapi.Reply) fakeapi.Script {
	return func(req fakeapi.Request) fakeapi.Reply {
		if req.IsSideRequest() {
			return fakeapi.SideReply(req)
		}
		return r
	}
}

// retrying matches a task/updated note of a running task whose activity
// detail says words.
func retrying(id, words string) func(note) bool {
	return func(n note) bool {
		u, ok := updated(n)
		return ok && u.ID == id && u.Status == protocol.StatusRunning && strings.Contains(u.ActivityDetail, words)
	}
}

func detailOf(n note) string {
	u, _ := updated(n)
	return u.ActivityDetail
}

// saidBy fails the test when the note was said after claude's retry
// number max.
func saidBy(t *testing.T, n note, max int) {
	t.Helper()
	m := retryCount.FindStringSubmatch(detailOf(n))
	if m == nil {
		t.Fatalf("no retry count in %q", detailOf(n))
	}
	if k, _ := strconv.Atoi(m[1]); k > max {
		t.Errorf("said at claude's retry %d (%q), want by its retry %d", k, detailOf(n), max)
	}
}

func claudeVersionOf(t *testing.T, e *env, id string) string {
	t.Helper()
	if a := e.get(t, id).Agent; a != nil {
		return a.ClaudeVersion
	}
	return "?"
}

func cancel(t *testing.T, e *env, id string) {
	t.Helper()
	if _, err := e.o.TaskCancel(context.Background(), &protocol.TaskIDParams{ID: id}); err != nil {
		t.Fatal(err)
	}
}
