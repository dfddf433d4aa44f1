package agent

import (
	"slices"
	"testing"

	"github.com/familiar-dev/familiar/protocol"
)

// A driver the protocol offers (capabilities, task/create driver) is one
// familiar can run, and familiar runs none the protocol does not name.
func TestEveryProtocolDriverRuns(t *testing.T) {
	var want []string
	for _, d := range protocol.Drivers {
		want = append(want, string(d))
		if err := checkDriver(string(d)); err != nil {
			t.Errorf("protocol driver %q: %v", d, err)
		}
	}
	var have []string
	for name := range drivers {
		have = append(have, name)
	}
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(have, want) {
		t.Errorf("agent's drivers %v, protocol.Drivers %v", have, want)
	}
	if err := checkDriver("tmux"); err == nil || err.Error() != `unknown driver "tmux" (want pty or stream)` {
		t.Errorf("checkDriver(tmux) = %v", err)
	}
}
