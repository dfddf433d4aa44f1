package orchestrator

import (
	"fmt"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
)

// onStoreHealth warns every client when the store cannot write, and says
// when it can again. Sent unstored: while the disk is full it could not be
// written either.
func (o *Orchestrator) onStoreHealth(h store.Health) {
	n := protocol.ServerMessageNotification{Level: protocol.LevelInfo,
		Text: fmt.Sprintf("familiar can save again; %d changes were refused meanwhile and not made.", h.Failed)}
	if !h.OK {
		n = protocol.ServerMessageNotification{Level: protocol.LevelError,
			Text: "familiar cannot save its state, so it refuses new tasks and changes until it can (it retries by itself): " + h.Err.Error()}
	}
	o.pub.publishUnstored("", n)
}
