package main

import (
	"net"
	"time"

	"github.com/familiar-dev/familiar/daemon"
	"github.com/familiar-dev/familiar/workspace"
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

// liveSocket is the socket of dataDir's familiar that accepts: the one its
// daemon.json names first, then the one this binary computes.
func liveSocket(dataDir string) (string, bool) {
	for _, p := range daemon.Sockets(dataDir, workspace.SocketPath(dataDir)) {
		if socketLive(p) {
			return p, true
		}
	}
	return "", false
}
