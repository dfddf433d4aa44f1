package orchestrator

import "time"

// SetResetSlack changes the wait after a usage limit's reset time, for
// tests; it returns a func that puts it back.
func SetResetSlack(d time.Duration) func() {
	old := resetSlack
	resetSlack = d
	return func() { resetSlack = old }
}
