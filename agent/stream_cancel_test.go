package agent

import (
	"context"
	"testing"
	"time"
)

// A can_use_tool request the CLI withdraws (control_cancel_request, which
// an interrupt sends) is resolved before the turn's result that follows it
// is read: a consumer that saw the turn end with the permission pending
// took the turn as waiting on the person, and the withdrawal after it
// left the task running with an idle claude (ACP's session/cancel whose
// prompt never returned). The asker runs in a goroutine of its own, so
// without the reader's wait the order was the scheduler's: repeated.
func TestStreamWithdrawnPermissionBeforeTurnEnd(t *testing.T) {
	lines := []string{
		`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"touch x"},"tool_use_id":"toolu_1"}}`,
		`{"type":"control_cancel_request","request_id":"r1"}`,
		`{"type":"result","subtype":"error_during_execution","is_error":true,"result":"interrupted"}`,
	}
	for i := range 200 {
		evs := make(chan Event, 64)
		opts := Options{CLI: CLI{Path: "claude"}, Driver: DriverStream, Dir: t.TempDir(), ConfigDir: t.TempDir(),
			OnEvent: func(ev Event) { evs <- ev }}
		if err := opts.defaults(); err != nil {
			t.Fatal(err)
		}
		s := &Session{opts: opts, logger: opts.Logger, changed: make(chan struct{}), done: make(chan struct{})}
		s.ctx, s.cancel = context.WithCancel(context.Background())
		s.tr = newTranscriptFeed(s)
		d, err := newStreamDriver(s)
		if err != nil {
			t.Fatal(err)
		}
		s.drv = d
		s.ev = newEmitter(opts.OnEvent)
		for _, l := range lines {
			d.(*streamDriver).handleLine([]byte(l))
		}
		var order []EventKind
		deadline := time.After(30 * time.Second)
	wait:
		for {
			select {
			case ev := <-evs:
				switch ev.Kind {
				case EventQuestion, EventQuestionResolved, EventTurnEnded:
					order = append(order, ev.Kind)
				}
				if ev.Kind == EventTurnEnded {
					break wait
				}
			case <-deadline:
				t.Fatalf("run %d: no turn end; saw %v", i, order)
			}
		}
		s.cancel()
		s.wg.Wait()
		s.ev.close()
		if len(order) != 3 || order[0] != EventQuestion || order[1] != EventQuestionResolved {
			t.Fatalf("run %d: events %v; want the question, its withdrawal, then the turn's end", i, order)
		}
	}
}
