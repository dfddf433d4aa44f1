//go:build !linux

package store

// procStartTime is unknown outside Linux; the pid alone identifies the holder.
func procStartTime(pid int) (uint64, bool) { return 0, false }
