package agent

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/familiar-dev/familiar/agent/screen"
	"github.com/familiar-dev/familiar/protocol"
)

// Drivers, by the protocol's names (protocol.Drivers is the list).
const (
	DriverPTY    = string(protocol.DriverPTY)
	DriverStream = string(protocol.DriverStream)
)

// driver is one way of running claude; a Session holds exactly one, and
// each lives in a file of its own (pty.go, stream.go). Everything that
// differs between drivers is a method here rather than a branch on
// Options.Driver in the session's code, so a new driver that leaves one out
// does not compile.
type driver interface {
	// prepare runs before claude's config is written: the driver registers
	// the hooks it takes, and says which --settings document (nil: none)
	// and environment claude gets and how to unregister the hooks (nil:
	// nothing registered).
	prepare() (settings map[string]any, env map[string]string, unregister func())
	// args is claude's command line after its path.
	args(settingsPath string) []string
	// pipes: claude runs on stdin/stdout pipes, not a PTY.
	pipes() bool
	// logFilter wraps the raw output log around the caller's filter
	// (nil: none), and may be nil itself.
	logFilter(f func(io.Writer) io.WriteCloser) func(io.Writer) io.WriteCloser
	// attach runs once claude's process exists, before its output is read:
	// the driver starts what reads it (goroutines counted in s.wg).
	attach()
	// firstPrompt gives Options.Prompt to claude where its command line
	// did not; called once, after output is being read.
	firstPrompt()
	// output takes each chunk of claude's output in order, from the one
	// reader goroutine.
	output(p []byte)
	// exited releases what the driver holds, once the process and every
	// goroutine of the session have ended.
	exited()

	sendPrompt(text string) error
	interrupt() error
	// input writes keystrokes typed in the editor's terminal.
	input(raw []byte) error
	resize(cols, rows int) error
	screen() screen.Snapshot
}

// drivers make a session's driver, by Options.Driver. Every name of
// protocol.Drivers has one (TestEveryProtocolDriverRuns).
var drivers = map[string]func(*Session) (driver, error){
	DriverPTY:    newPTYDriver,
	DriverStream: newStreamDriver,
}

// checkDriver says whether name is a driver familiar can run.
func checkDriver(name string) error {
	if _, ok := drivers[name]; ok {
		return nil
	}
	return fmt.Errorf("unknown driver %q (want %s)", name, strings.Join(slices.Sorted(maps.Keys(drivers)), " or "))
}
