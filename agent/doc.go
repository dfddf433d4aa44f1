// Package agent drives one Claude Code session: it builds the command line and
// an isolated config dir, reads structured signals (HTTP hooks, the stream-json
// control protocol), keeps a screen model of the terminal and classifies it,
// and turns answers into keystrokes or control responses. Everything it sees is
// reduced to a few Events.
//
// It never manages worktrees, queues or the store.
package agent
