// Package orchestrator owns the Task: its state machine, the queue
// (concurrency, priority), approvals and their timeouts, retries, the undo
// window, the event bus and recovery at start. It drives worktree, profiles,
// mcp and agent, and persists through store.
//
// It never formats JSON-RPC frames (that is package jsonrpc) and never runs git
// or child processes directly.
package orchestrator
