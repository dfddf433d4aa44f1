package orchestrator

import (
	"fmt"

	"github.com/familiar-dev/familiar/protocol"
)

// transitions is PROTOCOL.md's state machine: from each status, the statuses
// a task may move to. Every status change goes through transition, so an
// illegal one is rejected in this one place.
var transitions = map[protocol.Status][]protocol.Status{
	protocol.StatusQueued:    {protocol.StatusStarting, protocol.StatusCancelled},
	protocol.StatusStarting:  {protocol.StatusRunning, protocol.StatusBlocked, protocol.StatusCancelled, protocol.StatusQueued},
	protocol.StatusRunning:   {protocol.StatusStarting, protocol.StatusWaiting, protocol.StatusMerging, protocol.StatusBlocked, protocol.StatusCancelled, protocol.StatusPaused},
	protocol.StatusWaiting:   {protocol.StatusRunning, protocol.StatusMerging, protocol.StatusBlocked, protocol.StatusCancelled, protocol.StatusPaused},
	protocol.StatusPaused:    {protocol.StatusQueued, protocol.StatusCancelled},
	protocol.StatusMerging:   {protocol.StatusMerged, protocol.StatusRunning, protocol.StatusQueued, protocol.StatusBlocked},
	protocol.StatusMerged:    {protocol.StatusMerging},
	protocol.StatusBlocked:   {protocol.StatusQueued, protocol.StatusCancelled},
	protocol.StatusCancelled: nil,
}

// canTransition reports whether from → to is allowed.
func canTransition(from, to protocol.Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// errTransition is the FailedPrecondition for an action the state forbids.
func errTransition(action string, from protocol.Status) error {
	return protocol.FailedPrecondition(fmt.Sprintf("cannot %s a task that is %s", action, from), from)
}

// live reports whether a task in status s holds (or is about to hold) an
// agent process.
func live(s protocol.Status) bool {
	return s == protocol.StatusStarting || s == protocol.StatusRunning || s == protocol.StatusWaiting
}
