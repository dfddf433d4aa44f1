package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/familiar-dev/familiar/protocol"
)

// rpcError is the one place where an error becomes a JSON-RPC error object.
// A *protocol.Error anywhere in err's chain passes through with its code,
// message and data; a cancelled context is -32800; anything else is -32603
// with a fixed sentence, because its text may hold paths, command lines or
// tokens, and the full error goes to the log instead. method is for the log.
func rpcError(err error, log *slog.Logger, method string) *jsonrpc2.Error {
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe):
		e := &jsonrpc2.Error{Code: int64(pe.Code), Message: pe.Message}
		if e.Message == "" {
			e.Message = "familiar could not complete the request."
		}
		if pe.Data != nil {
			if data, merr := json.Marshal(pe.Data); merr == nil {
				e.Data = (*json.RawMessage)(&data)
			} else {
				log.Error("dropping error data that cannot be encoded", "method", method, "err", merr)
			}
		}
		return e
	case errors.Is(err, context.Canceled):
		return &jsonrpc2.Error{Code: protocol.CodeRequestCancelled, Message: "The request was cancelled."}
	default:
		log.Error("internal error", "method", method, "err", err)
		return &jsonrpc2.Error{Code: protocol.CodeInternalError,
			Message: "familiar failed with an internal error; its log has the details."}
	}
}
