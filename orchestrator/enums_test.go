package orchestrator

import (
	"slices"
	"testing"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// The agent's activity names and question kinds map onto the protocol's,
// one to one: a name added on one side and not the other fails here rather
// than going out as an unknown string.
func TestAgentEnumsMapOntoProtocol(t *testing.T) {
	for _, a := range []string{agent.ActivityThinking, agent.ActivityWriting, agent.ActivityRunningCommand, agent.ActivityIdle, agent.ActivityUnknown} {
		p, ok := activities[a]
		if !ok || !slices.Contains(protocol.Activities, p) {
			t.Errorf("agent activity %q maps to %q", a, p)
		}
	}
	for _, k := range []string{agent.KindPermission, agent.KindChoice, agent.KindQuestion, agent.KindDialog} {
		p, ok := questionKinds[k]
		if !ok || !slices.Contains(protocol.QuestionKinds, p) {
			t.Errorf("agent question kind %q maps to %q", k, p)
		}
	}
	if len(activities) != len(protocol.Activities) || len(questionKinds) != len(protocol.QuestionKinds) {
		t.Errorf("the maps cover %d/%d activities and %d/%d kinds", len(activities), len(protocol.Activities), len(questionKinds), len(protocol.QuestionKinds))
	}
}
