package main

import (
	"net"
	"time"
)

// socketLive reports whether a familiar accepts connections on path.
func socketLive(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
