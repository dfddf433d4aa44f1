package jsonrpc

import (
	"encoding/json"
	"log/slog"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/familiar-dev/familiar/protocol"
)

// rpcError is where a method's error becomes a JSON-RPC error object; which
// code and text it gets is protocol.Wire's (the one mapping of errors to the
// protocol). An internal error's text goes to the log, never to the client.
// method is for the log.
func rpcError(err error, log *slog.Logger, method string) *jsonrpc2.Error {
	pe, internal := protocol.Wire(err)
	if internal {
		log.Error("internal error", "method", method, "err", err)
	}
	e := &jsonrpc2.Error{Code: int64(pe.Code), Message: pe.Message}
	if pe.Data != nil {
		if data, merr := json.Marshal(pe.Data); merr == nil {
			e.Data = (*json.RawMessage)(&data)
		} else {
			log.Error("dropping error data that cannot be encoded", "method", method, "err", merr)
		}
	}
	return e
}
