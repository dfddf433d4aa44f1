// Package screen knows what Claude Code's TUI shows. It keeps a terminal
// emulator of the agent's PTY (Screen, behind an OSCFilter that also tracks
// the window title), takes snapshots of it, and classifies a snapshot into a
// State with the named patterns of patterns.go, each proven by screens
// recorded from the real CLI under testdata/<cli version>/.
//
// It never writes to the PTY except the terminal's own answers to queries,
// never sends keystrokes, and never guesses: a screen no pattern matches is
// Unknown.
package screen
