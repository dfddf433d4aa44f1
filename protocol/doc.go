// Package protocol is the wire contract of PROTOCOL.md in Go: the objects
// (Task, Question, Settings, …), the params and result of every JSON-RPC
// method, the notifications, the error kinds and their codes, and the Server
// interface that the orchestrator implements.
//
// JSON names here are the contract: they must match PROTOCOL.md exactly and
// may be added to, never renamed. The package holds no behaviour beyond
// validating params (Validate methods, which report the offending field as a
// JSON path such as "settings.maxConcurrent" or "acceptanceCriteria[2]") and
// filling in defaults; it never does I/O and never imports another familiar
// package, so every package can depend on it.
//
// Arrays that PROTOCOL.md shows as always present are marshalled as [] even
// when the Go slice is nil, because editor code indexes them without a null
// check. Times are marshalled as RFC 3339 in UTC.
package protocol
