package mergequeue

import (
	"errors"

	"github.com/familiar-dev/familiar/protocol"
)

// errorWords is an error's message for a person: a protocol error's own
// message, else the error's text.
func errorWords(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}
