// Package mcp owns MCP server configurations: session defaults, per-task
// overrides, presets, availability checks, and the per-task file passed to
// claude with --mcp-config.
//
// At a task's start the orchestrator calls Prepare (Merge, then Expand, then
// WriteConfig) and passes the file with --mcp-config FILE --strict-mcp-config.
// Secrets stay out of settings and presets as ${NAME} references to
// familiar's environment; they are resolved only into that file (mode 0600)
// and never appear in an error or a check result.
//
// It never starts an agent.
package mcp
