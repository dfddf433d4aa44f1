package orchestrator

// Inputs of a warm agent (warmAgentSec): the finished turn's claude is let go when
// its time is over or the queue or git needs it.

// inWarmOver: warmAgentSec passed with no follow-up.
type inWarmOver struct{}

func (inWarmOver) apply(st *stepper) error { return st.letWarmGo() }

// cmdCool lets a warm agent go: the queue needs its slot, or git the
// worktree.
type cmdCool struct{}

func (cmdCool) apply(st *stepper) error { return st.letWarmGo() }

// letWarmGo lets a warm agent go; its exit frees the slot.
func (st *stepper) letWarmGo() error {
	s := &st.s
	if s.warm && s.agent == agentUp {
		st.emit(effDisarmWarm{})
		st.stopAgent(stopIntent{kind: stopRelease}, false)
	}
	return nil
}
