package agent

import "time"

// SetCommandPoll changes how often a running command is sampled, for tests
// with short timeouts; it returns a func that puts it back.
func SetCommandPoll(d time.Duration) func() {
	old := commandPoll
	commandPoll = d
	return func() { commandPoll = old }
}

// ParseResetTime is parseResetTime for tests.
var ParseResetTime = parseResetTime

// LastAPIError is lastAPIError for tests.
var LastAPIError = lastAPIError
