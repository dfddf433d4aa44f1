package orchestrator_test

import (
	"testing"

	"github.com/familiar-dev/familiar/protocol"
)

// A finished task shows its tool calls as steps on task/get, reports usage
// equal to what the fake API's usage fields add up to, a cost, and its
// transcript went out as task/transcript notifications with the tool call's
// id on the permission question.
func TestTranscriptStepsAndUsage(t *testing.T) {
	e := open(t, nil, nil)
	a := finish(t, e, "steps", "steps.txt")
	if len(a.Steps) != 1 || a.Steps[0].Name != "Bash" || a.Steps[0].Status != "completed" || a.Steps[0].Kind != "execute" {
		t.Fatalf("steps = %+v", a.Steps)
	}
	reqs := int64(len(e.api.MainRequests()))
	u := a.Usage
	if u == nil || u.InputTokens != 100*reqs || u.OutputTokens != 20*reqs || int64(u.Responses) != reqs || len(u.Turns) != 1 {
		t.Fatalf("usage = %+v, want %d responses of 100 in / 20 out", u, reqs)
	}
	if a.Result == nil || a.Result.CostUSD == nil || *a.Result.CostUSD <= 0 {
		t.Errorf("result cost = %+v", a.Result)
	}
	step := a.Steps[0].ID
	e.notes.wait(t, "the question names the tool call", is(protocol.NotifyTaskQuestion, a.ID, `"toolUseId":"`+step+`"`))
	e.notes.wait(t, "the tool call in the transcript", is(protocol.NotifyTaskTranscript, a.ID, `"id":"`+step+`"`, `"status":"completed"`))
}
