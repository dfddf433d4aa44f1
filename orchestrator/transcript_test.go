package orchestrator

import (
	"testing"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// Transcript entries are published as they come; the steps keep each tool
// call once, at its latest status; usage adds up on the Task.
func TestTranscriptInput(t *testing.T) {
	s := mk(protocol.StatusRunning, agentUp)
	feed := func(e protocol.TranscriptEntry) []effect {
		t.Helper()
		next, effs, err := step(s, inTranscript{entry: e}, testEnv)
		if err != nil {
			t.Fatal(err)
		}
		s = next
		return effs
	}
	effs := feed(protocol.TranscriptEntry{Kind: "tool_call", ToolCall: &protocol.ToolCall{ID: "a", Name: "Bash", Status: "pending"}})
	if got := names(effs); len(got) != 1 || got[0] != "publish task/transcript" {
		t.Errorf("effects = %v", got)
	}
	feed(protocol.TranscriptEntry{Kind: "tool_call", ToolCall: &protocol.ToolCall{ID: "b", Name: "Read", Status: "pending"}})
	feed(protocol.TranscriptEntry{Kind: "tool_call", ToolCall: &protocol.ToolCall{ID: "a", Name: "Bash", Status: "completed"}})
	if len(s.steps) != 2 || s.steps[0].ID != "a" || s.steps[0].Status != "completed" || s.steps[1].ID != "b" {
		t.Errorf("steps = %+v", s.steps)
	}
	feed(protocol.TranscriptEntry{Kind: "usage", Usage: &protocol.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 5, CostUSD: 0.5}})
	feed(protocol.TranscriptEntry{Kind: "usage", Usage: &protocol.Usage{InputTokens: 100, OutputTokens: 20, CacheWriteTokens: 7, CostUSD: 0.25}})
	u := s.T.Usage
	if u == nil || u.InputTokens != 200 || u.OutputTokens != 40 || u.CacheReadTokens != 5 || u.CacheWriteTokens != 7 || u.CostUSD != 0.75 || u.Responses != 2 {
		t.Errorf("usage = %+v", u)
	}
	// The turn's usage is kept per turn; the CLI's own cost wins.
	s, _, _ = step(s, inTurnEnded{turn: agent.TurnEnded{LastMessage: "done", CostUSD: 0.7,
		Usage: &protocol.Usage{InputTokens: 200, OutputTokens: 40, CostUSD: 0.75, Responses: 2}}}, testEnv)
	if len(s.T.Usage.Turns) != 1 || s.T.Usage.Turns[0].CostUSD != 0.7 || s.T.Usage.Turns[0].Responses != 2 {
		t.Errorf("turns = %+v", s.T.Usage.Turns)
	}
}

// task/interrupt: only a live agent's turn; the turn it ends is over, not
// failed (the stream driver reports it as an error result).
func TestInterrupt(t *testing.T) {
	if _, _, err := step(mk(protocol.StatusMerging, agentNone), cmdInterrupt{}, testEnv); err == nil {
		t.Error("interrupt of a finished task was accepted")
	}
	s, _, err := step(mk(protocol.StatusRunning, agentUp), cmdInterrupt{}, testEnv)
	if err != nil || !s.interrupting {
		t.Fatalf("interrupt: %v %+v", err, s.interrupting)
	}
	s, effs, _ := step(s, inTurnEnded{turn: agent.TurnEnded{Failed: true, Error: "aborted_streaming: "}}, testEnv)
	if s.T.Status == protocol.StatusBlocked || s.interrupting {
		t.Errorf("after the interrupted turn: status %s, interrupting %v, effects %v", s.T.Status, s.interrupting, names(effs))
	}
}
