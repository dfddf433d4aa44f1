package jsonrpc

import (
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"
)

// A client that asked for task/output without data gets wake-ups: data "",
// one queued per task at a time, in order with the other notifications;
// a client that did not gets every notification whole.
func TestOutputWakeUpsAreCoalescedPerTask(t *testing.T) {
	h := NewHub(slog.New(slog.DiscardHandler), 0)
	var mu sync.Mutex
	var full, woken []string
	sending := make(chan struct{}, 16)
	gate := make(chan struct{})
	subFull := h.subscribe(1, false, func(m string, p json.RawMessage) error {
		mu.Lock()
		defer mu.Unlock()
		full = append(full, m+" "+string(p))
		return nil
	}, func() {})
	subWake := h.subscribe(2, true, func(m string, p json.RawMessage) error {
		sending <- struct{}{}
		<-gate
		mu.Lock()
		defer mu.Unlock()
		woken = append(woken, m+" "+string(p))
		return nil
	}, func() {})
	subFull.start()
	subWake.start()

	h.Notify("task/output", json.RawMessage(`{"seq":1,"id":"t1","data":"a"}`))
	<-sending // the first wake-up is being sent: the next one for t1 queues
	h.Notify("task/output", json.RawMessage(`{"seq":2,"id":"t1","data":"bb"}`))
	h.Notify("task/output", json.RawMessage(`{"seq":3,"id":"t1","data":"ccc"}`)) // coalesced into seq 2
	h.Notify("task/output", json.RawMessage(`{"data":"d\"}","id":"t2","seq":4}`))
	h.Notify("task/updated", json.RawMessage(`{"seq":5,"task":{"id":"t1"}}`))
	close(gate)

	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := len(full) == 5 && len(woken) == 4
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("full %v, woken %v", full, woken)
		}
		time.Sleep(time.Millisecond) // the senders run on their own goroutines
	}
	subFull.detach()
	subWake.detach()
	wantWoken := []string{
		`task/output {"seq":1,"id":"t1","data":""}`,
		`task/output {"seq":2,"id":"t1","data":""}`,
		`task/output {"seq":4,"id":"t2","data":""}`,
		`task/updated {"seq":5,"task":{"id":"t1"}}`,
	}
	if !slices.Equal(woken, wantWoken) {
		t.Errorf("wake-only client got\n%q\nwant\n%q", woken, wantWoken)
	}
	if len(full) != 5 || full[2] != `task/output {"seq":3,"id":"t1","data":"ccc"}` {
		t.Errorf("the other client got %q", full)
	}
}
