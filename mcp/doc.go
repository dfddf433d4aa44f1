// Package mcp owns MCP server configurations: session defaults, per-task
// overrides, presets, availability checks, and the per-task file passed to
// claude with --mcp-config.
//
// It never starts an agent.
package mcp
