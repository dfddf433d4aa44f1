package demomodel

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// client is an HTTP client whose connections a test closes, so the leak
// check in TestMain sees no transport goroutines.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func post(t *testing.T, c *http.Client, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Claude-Code-Session-Id", "sess-1")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const streamBody = `{"model":"claude-test-1","stream":true,"max_tokens":100,"thinking":{"type":"adaptive"},
	"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"hello"},{"role":"system","content":"# Environment"}]}`

func TestServerStreams(t *testing.T) {
	srv := Start(Sequence(Reply{Text: "Hi!", ToolUses: []ToolUse{{Name: "Bash", Input: map[string]string{"command": "ls"}}}}))
	defer srv.Close()
	type done struct {
		req   Request
		reply Reply
	}
	var (
		mu    sync.Mutex
		dones []done
	)
	srv.OnResponseDone(func(req Request, reply Reply) {
		mu.Lock()
		defer mu.Unlock()
		dones = append(dones, done{req, reply})
	})

	resp := post(t, client(t), srv.URL()+"/v1/messages?beta=true", streamBody)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("content type %q", ct)
	}
	evs, err := ReadEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got, model, err := assemble(evs)
	if err != nil {
		t.Fatal(err)
	}
	if model != "claude-test-1" || got.Text != "Hi!" || len(got.ToolUses) != 1 || got.StopReason != "tool_use" {
		t.Errorf("model %q, reply %+v", model, got)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].SessionID() != "sess-1" || reqs[0].LastUserText() != "hello" || reqs[0].IsSideRequest() {
		t.Fatalf("requests %+v", reqs)
	}
	// The hook ran before the handler returned, and the body is complete
	// only after that, so it has run by now.
	mu.Lock()
	defer mu.Unlock()
	if len(dones) != 1 || dones[0].reply.ToolUses[0].ID != got.ToolUses[0].ID || dones[0].req.At != reqs[0].At {
		t.Errorf("hook calls %+v", dones)
	}
}

func TestServerNonStreaming(t *testing.T) {
	srv := Start(Sequence(Reply{Text: "plain"}))
	defer srv.Close()
	resp := post(t, client(t), srv.URL()+"/v1/messages", strings.Replace(streamBody, `"stream":true`, `"stream":false`, 1))
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	var m struct {
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct{ Type, Text string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.Model != "claude-test-1" || m.StopReason != "end_turn" || len(m.Content) != 1 || m.Content[0].Text != "plain" {
		t.Errorf("message %+v", m)
	}
}

func TestServerErrorStatus(t *testing.T) {
	for _, tt := range []struct {
		reply     Reply
		wantRetry string
	}{
		{Reply{Status: 400, Error: "bad"}, "false"},
		{Reply{Status: 529, Error: "busy", Retryable: true}, ""},
	} {
		srv := Start(Sequence(tt.reply))
		resp := post(t, client(t), srv.URL()+"/v1/messages", streamBody)
		body, _ := io.ReadAll(resp.Body)
		srv.Close()
		if resp.StatusCode != tt.reply.Status || resp.Header.Get("X-Should-Retry") != tt.wantRetry {
			t.Errorf("status %d, x-should-retry %q", resp.StatusCode, resp.Header.Get("X-Should-Retry"))
		}
		if !bytes.Contains(body, []byte(`"message":"`+tt.reply.Error+`"`)) {
			t.Errorf("body %s", body)
		}
	}
}

func TestServerOtherPaths(t *testing.T) {
	srv := Start(Sequence())
	defer srv.Close()
	c := client(t)
	resp := post(t, c, srv.URL()+"/v1/messages/count_tokens", `{"model":"m","messages":[]}`)
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&count); err != nil || count.InputTokens <= 0 {
		t.Errorf("count_tokens: %+v %v", count, err)
	}
	get, err := c.Get(srv.URL() + "/api/hello")
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if get.StatusCode != http.StatusOK {
		t.Errorf("GET /api/hello: %d", get.StatusCode)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d messages requests, want 0", n)
	}
	others := srv.OtherRequests()
	if len(others) != 2 || others[0].Path != "/v1/messages/count_tokens" || others[1].Path != "/api/hello" {
		t.Errorf("others %+v", others)
	}
}

func TestServerBadJSONIsLoggedAndRejected(t *testing.T) {
	srv := Start(func(Request) Reply { t.Error("script called for a bad body"); return Reply{} })
	defer srv.Close()
	resp := post(t, client(t), srv.URL()+"/v1/messages", `{not json`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d", resp.StatusCode)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || string(reqs[0].Raw) != `{not json` {
		t.Errorf("requests %+v", reqs)
	}
}

func TestWaitRequests(t *testing.T) {
	srv := Start(Sequence())
	defer srv.Close()
	if reqs, ok := srv.WaitRequests(1, 20*time.Millisecond); ok || len(reqs) != 0 {
		t.Fatalf("WaitRequests with no traffic = %d, %v", len(reqs), ok)
	}
	c := client(t)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			resp := post(t, c, srv.URL()+"/v1/messages", streamBody)
			_, _ = io.Copy(io.Discard, resp.Body)
		})
	}
	reqs, ok := srv.WaitRequests(3, 30*time.Second)
	if !ok || len(reqs) != 3 {
		t.Fatalf("WaitRequests(3) = %d, %v", len(reqs), ok)
	}
	wg.Wait()
	if _, ok := srv.WaitFor(func(r []Request) bool { return len(r) == 3 && r[0].Model == "claude-test-1" }, time.Second); !ok {
		t.Error("WaitFor on arrived requests failed")
	}
}

func TestDelayEndsWithCancelAndClose(t *testing.T) {
	srv := Start(Sequence(Reply{Text: "late", Delay: time.Hour}, Reply{Text: "late too", Delay: time.Hour}))
	hooked := make(chan struct{}, 2)
	srv.OnResponseDone(func(Request, Reply) { hooked <- struct{}{} })
	c := client(t)

	// A cancelled request ends its handler: the delay must not hold it.
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/v1/messages", strings.NewReader(streamBody))
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	if _, ok := srv.WaitRequests(1, 30*time.Second); !ok {
		t.Fatal("first request did not arrive")
	}
	cancel()
	if err := <-errc; err == nil {
		t.Error("cancelled request succeeded")
	}

	// Close ends a pending delay and returns promptly.
	go func() {
		resp, err := c.Post(srv.URL()+"/v1/messages", "application/json", strings.NewReader(streamBody))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	if _, ok := srv.WaitRequests(2, 30*time.Second); !ok {
		t.Fatal("second request did not arrive")
	}
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close blocked on a delayed reply")
	}
	<-errc
	srv.Close() // idempotent
	if len(hooked) != 0 {
		t.Errorf("hook ran for %d replies that were never sent", len(hooked))
	}
}

func TestScriptCallsAreSerialized(t *testing.T) {
	var (
		mu     sync.Mutex
		inside int
		most   int
	)
	srv := Start(func(Request) Reply {
		mu.Lock()
		inside++
		most = max(most, inside)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond) // widen the window for an overlap; not a wait
		mu.Lock()
		inside--
		mu.Unlock()
		return Reply{Text: "x"}
	})
	defer srv.Close()
	c := client(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			resp := post(t, c, srv.URL()+"/v1/messages", streamBody)
			_, _ = io.Copy(io.Discard, resp.Body)
		})
	}
	wg.Wait()
	if most != 1 {
		t.Errorf("%d script calls overlapped", most)
	}
}

func TestEnv(t *testing.T) {
	srv := Start(Sequence())
	defer srv.Close()
	env := srv.Env()
	if env["ANTHROPIC_BASE_URL"] != srv.URL() || !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") {
		t.Errorf("base URL %q (server %q)", env["ANTHROPIC_BASE_URL"], srv.URL())
	}
	if !strings.HasPrefix(env["ANTHROPIC_API_KEY"], "sk-test-") || env["ANTHROPIC_API_KEY"] != APIKey {
		t.Errorf("API key %q", env["ANTHROPIC_API_KEY"])
	}
	for _, k := range []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER"} {
		if env[k] != "1" {
			t.Errorf("%s = %q", k, env[k])
		}
	}
}
