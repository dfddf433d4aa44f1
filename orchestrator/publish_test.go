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
