package orchestrator

import "github.com/familiar-dev/familiar/protocol"

// mapError makes err a protocol error by its kind (protocol.ErrorOf, the
// one mapping): what names the operation; field names the request field an
// invalid value came from, so the client knows what to fix.
func mapError(err error, what, field string) error {
	return protocol.ErrorOf(err, protocol.ErrorContext{What: what, Field: field})
}
