package orchestrator

import (
	"sync"
)

// agentCount counts the agents being started or running, so that Close can
// wait until every one has gone.
type agentCount struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    int
}

func (c *agentCount) init() { c.cond = sync.NewCond(&c.mu) }

// Add counts a start.
func (c *agentCount) Add(n int) {
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
}

// Done counts an agent gone (or a start that failed).
func (c *agentCount) Done() {
	c.mu.Lock()
	c.n--
	if c.n <= 0 {
		c.cond.Broadcast()
	}
	c.mu.Unlock()
}

// Wait returns once no agent runs or starts.
func (c *agentCount) Wait() {
	c.mu.Lock()
	for c.n > 0 {
		c.cond.Wait()
	}
	c.mu.Unlock()
}
