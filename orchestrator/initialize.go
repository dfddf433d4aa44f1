package orchestrator

import (
	"os"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/protocol"
)

// ClientInitialized tells a client that has just initialized what stands in
// its way (claude missing or outside the tested window, a store repaired or
// unable to write), as server/message to every client, and returns the
// status of claude's credentials for its initialize result.
func (o *Orchestrator) ClientInitialized() *protocol.AuthStatus {
	a := agent.DetectAuth(os.Environ(), o.clk.Now())
	if err := o.cfg.CLIErr; err != nil {
		o.pub.publish("", protocol.ServerMessageNotification{Level: protocol.LevelWarning,
			Text: "claude is not available, so tasks cannot start: " + err.Error()})
	}
	if w := o.cfg.CLI.Warning; w != "" {
		o.pub.publish("", protocol.ServerMessageNotification{Level: protocol.LevelWarning, Text: w})
	}
	// A store found damaged at start was repaired; what was lost is said
	// to every window, as well as in the log and by doctor.
	if r := o.cfg.Store.Recovery(); r != nil {
		o.pub.publish("", protocol.ServerMessageNotification{Level: protocol.LevelError, Text: r.Message()})
	}
	if h := o.cfg.Store.Health(); !h.OK {
		o.pub.publishUnstored("", protocol.ServerMessageNotification{Level: protocol.LevelError,
			Text: "familiar cannot save its state, so it refuses new tasks and changes until it can (it retries by itself): " + h.Err.Error()})
	}
	o.mq.Notice()
	return &protocol.AuthStatus{Method: a.Method, Source: a.Source, Problem: a.Problem}
}
