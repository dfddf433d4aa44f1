package agent

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// Beyond TestHookServerRejectsCallsWithoutTheSecret: the hook listener is
// loopback only, and a session's route takes its own secret in its own
// header and nothing else — not another session's, not in the query, not
// under another scheme, not on GET.
func TestHookRoutesTakeOnlyTheirOwnSecret(t *testing.T) {
	h, err := NewHookServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	u, err := url.Parse(h.URL())
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		t.Errorf("hook server listens on %s, want a loopback address", u.Host)
	}

	var calls atomic.Int32
	handler := func(context.Context, string, json.RawMessage) any { calls.Add(1); return nil }
	urlA, secretA, unregisterA := h.Register(handler)
	defer unregisterA()
	urlB, secretB, unregisterB := h.Register(handler)
	defer unregisterB()
	if urlA == urlB || secretA == secretB {
		t.Fatalf("two sessions share a route or a secret: %s %s", urlA, urlB)
	}

	body := `{"hook_event_name":"PreToolUse"}`
	for _, tc := range []struct {
		name, method, url, header string
	}{
		{"another session's secret", "POST", urlA, "Bearer " + secretB},
		{"secret in the query", "POST", urlA + "?token=" + secretA, ""},
		{"secret as basic auth", "POST", urlA, "Basic " + secretA},
		{"secret with a suffix", "POST", urlA, "Bearer " + secretA + "x"},
		{"secret prefix", "POST", urlA, "Bearer " + secretA[:len(secretA)-1]},
		{"the route id as secret", "POST", urlA, "Bearer " + urlA[strings.LastIndex(urlA, "/")+1:]},
		{"no route", "POST", h.URL() + "/hook/", "Bearer " + secretA},
		{"a path around the route", "POST", h.URL() + "/hook/../hook/x", "Bearer " + secretA},
		{"GET with the secret", "GET", urlA, "Bearer " + secretA},
	} {
		req, err := http.NewRequest(tc.method, tc.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			t.Errorf("%s: status %d, want a refusal", tc.name, resp.StatusCode)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d refused calls reached a handler", n)
	}
}
