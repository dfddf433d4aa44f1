// Package jsonrpc is familiar's transport: LSP Content-Length framing on stdio
// and unix sockets, the typed method table of PROTOCOL.md, parameter decoding,
// mapping of errors to JSON-RPC codes, $/cancelRequest, and fan-out of
// notifications to every connected client.
//
// It never knows about PTYs, git or claude; it calls the orchestrator.
package jsonrpc
