package orchestrator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/familiar-dev/familiar/protocol"
)

// withSeq splices the seq into params that begin with the placeholder: every
// notification type must begin so, or it pays a decode and encode.
func TestNotificationsStartWithSeq(t *testing.T) {
	for _, n := range []protocol.Notification{
		protocol.TaskUpdatedNotification{}, protocol.TaskOutputNotification{}, protocol.TaskQuestionNotification{},
		protocol.TaskQuestionResolvedNotification{}, protocol.TaskCompletedNotification{}, protocol.SkillsChangedNotification{},
		protocol.ServerMessageNotification{}, protocol.TaskHookNotification{},
	} {
		b, _ := json.Marshal(n)
		if !strings.HasPrefix(string(b), seqPlaceholder) {
			t.Errorf("%s encodes as %.40s…, not starting with %s", n.Method(), b, seqPlaceholder)
		}
		out, err := withSeq(b, 42)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil || m["seq"] != float64(42) {
			t.Errorf("%s: %s (%v)", n.Method(), out, err)
		}
	}
	// Anything else still gets its seq.
	out, err := withSeq(json.RawMessage(`{"a":1}`), 7)
	if err != nil || !strings.Contains(string(out), `"seq":7`) {
		t.Errorf("fallback: %s %v", out, err)
	}
}

// Queued chunks merge: output of one task, and streamed text of one message;
// nothing else, and never across tasks, kinds or messages.
func TestMergeQueuedChunks(t *testing.T) {
	text := func(task, kind, msg, s string) pending {
		return pending{taskID: task, n: protocol.TaskTranscriptNotification{ID: task, Entry: protocol.TranscriptEntry{Kind: kind, MessageID: msg, Text: s}}}
	}
	last := text("t1", "text", "m1", "The answer ")
	if !mergeOutput(&last, text("t1", "text", "m1", "is 42.")) {
		t.Fatal("two chunks of one message did not merge")
	}
	if got := last.n.(protocol.TaskTranscriptNotification).Entry.Text; got != "The answer is 42." {
		t.Errorf("merged text %q", got)
	}
	for _, next := range []pending{
		text("t2", "text", "m1", "x"),     // another task
		text("t1", "thinking", "m1", "x"), // another kind
		text("t1", "text", "m2", "x"),     // another message
		text("t1", "prompt", "m1", "x"),   // not streamed
		{taskID: "t1", n: protocol.TaskOutputNotification{ID: "t1", Data: "x"}},
	} {
		before := last
		if mergeOutput(&last, next) {
			t.Errorf("merged %+v into %+v", next.n, before.n)
		}
	}
	out := pending{taskID: "t1", n: protocol.TaskOutputNotification{ID: "t1", Data: "ab"}}
	if !mergeOutput(&out, pending{taskID: "t1", n: protocol.TaskOutputNotification{ID: "t1", Data: "cd"}}) ||
		out.n.(protocol.TaskOutputNotification).Data != "abcd" {
		t.Errorf("output did not merge: %+v", out.n)
	}
}
