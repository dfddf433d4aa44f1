package procs

import "time"

// Forks make the recorder read the table at once, up to forkBurst times in
// a row, and then at forkRate a second: a build forking compilers by the
// hundred costs a bounded number of reads, while the first forks of a
// command are recorded as they happen (forks_darwin.go).
const (
	forkBurst = 10
	forkRate  = 20 // per second
)

// forkBudget is a token bucket of reads of the table made for forks.
type forkBudget struct {
	tokens   float64
	refilled time.Time
}

func newForkBudget(now time.Time) forkBudget { return forkBudget{tokens: forkBurst, refilled: now} }

// take spends a read at now and returns 0, or says how long until one is
// there (nothing spent).
func (b *forkBudget) take(now time.Time) time.Duration {
	if now.After(b.refilled) {
		b.tokens = min(forkBurst, b.tokens+now.Sub(b.refilled).Seconds()*forkRate)
		b.refilled = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return max(time.Millisecond, time.Duration((1-b.tokens)/forkRate*float64(time.Second)))
}
