package orchestrator_test

import (
	"context"
	"testing"

	"github.com/familiar-dev/familiar/protocol"
)

// A cancelled task is the person's choice, not a failure: server/stats
// counts it by status but leaves it out of the success rate.
func TestStatsCancelledIsNotFailure(t *testing.T) {
	e := open(t, nil, &protocol.SettingsUpdate{MaxConcurrent: intp(1)})
	a := e.create(t, "finishes", "go\n@@TEXT Done.", 0)
	b := e.create(t, "cancelled while queued", "go\n@@TEXT Never.", 0)
	if _, err := e.o.TaskCancel(context.Background(), &protocol.TaskIDParams{ID: b.ID}); err != nil {
		t.Fatal(err)
	}
	e.notes.wait(t, "a completed", is(protocol.NotifyTaskCompleted, a.ID))
	st, err := e.o.ServerStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Tasks.ByStatus[protocol.StatusCancelled] != 1 || st.SuccessRate != 1 {
		t.Fatalf("stats = %+v (success rate %v)", st.Tasks.ByStatus, st.SuccessRate)
	}
}
