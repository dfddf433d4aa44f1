//go:build !unix

package store

// processAlive cannot tell on this platform; saying no makes the lock error
// admit it does not know the holder rather than name a stale pid.
func processAlive(pid int) bool { return false }
