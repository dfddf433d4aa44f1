// Package jsonrpc is familiar's transport: LSP Content-Length framing on stdio
// and unix sockets, the typed method table of PROTOCOL.md, parameter decoding,
// mapping of errors to JSON-RPC codes, $/cancelRequest, and fan-out of
// notifications to every connected client.
//
// It never knows about PTYs, git or claude; it calls the orchestrator
// through protocol.Server.
//
// Three tiers, one file each:
//   - stream.go: framing. A custom jsonrpc2.ObjectStream (not
//     VSCodeObjectCodec, which closes the connection on any bad frame and has
//     no size limit) answers a body that is not JSON with -32700, a
//     Content-Length over 16 MiB with -32600 after discarding the body as it
//     streams by (never buffered), and a non-request with -32600 — all with
//     the connection still usable. Only unparseable headers close it, since
//     the next frame can no longer be found.
//   - table.go: the method table. Params are decoded into the protocol
//     package's structs (ill-typed → -32602 with data.field) and validated
//     (Validate), then the protocol.Server method runs.
//   - conn.go: per-connection rules. initialize first (-32002 before it; server/stop is
//     accepted before it, so a client of another protocol version can stop
//     the daemon),
//     -32601 for unknown methods, $/cancelRequest cancels the request's
//     context (-32800), shutdown then exit closes the connection. Requests run
//     on their own goroutines (jsonrpc2.AsyncHandler), so a slow method never
//     blocks reading; at most maxInFlight (128) run at once per connection,
//     beyond which reading waits (backpressure rather than unbounded memory).
//
// errors.go holds rpcError, the one function that turns errors into codes.
//
// serve.go holds the listener, and the forwarder's side of a connection:
// ForwardConn relays bytes unchanged between an editor's stdio and the
// familiar serving it, ReadFirstFrame and ForwardFirst hold the editor's
// initialize until that familiar has begun to answer (so one that went away
// first can be replaced), and NewRefusal answers every request with why a
// forwarder can reach no familiar.
//
// Notifications go through a Hub with a bounded queue per client; a client
// that does not keep up is disconnected (and logged) rather than allowed to
// block others or grow memory, and catches up with task/events after it
// reconnects. See Hub.
//
// Nothing here writes to stdout except frames; logs go to the *slog.Logger
// given to NewServer and NewHub.
package jsonrpc
