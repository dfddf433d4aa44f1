package orchestrator

import (
	"fmt"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
)

// OnStoreHealth warns every client when the store cannot write, and says
// when it can again. Sent unstored: while the disk is full it could not be
// written either.
func (o *Orchestrator) OnStoreHealth(h store.Health) {
	refused := fmt.Sprintf("%d changes were", h.Failed)
	if h.Failed == 1 {
		refused = "1 change was"
	}
	n := protocol.ServerMessageNotification{Level: protocol.LevelInfo,
		Text: "familiar can save again; " + refused + " refused meanwhile and not made."}
	if !h.OK {
		n = protocol.ServerMessageNotification{Level: protocol.LevelError,
			Text: "familiar cannot save its state, so it refuses new tasks and changes until it can (it retries by itself): " + h.Err.Error()}
	}
	o.pub.publishUnstored("", n)
}
