// Package acp makes familiar an Agent Client Protocol agent: an editor (Zed,
// a JetBrains IDE, Neovim's CodeCompanion, Emacs' agent-shell) starts
// `familiar acp` and speaks ACP v1 to it over stdio — newline-delimited
// JSON-RPC 2.0, conforming to schema/v1/schema.json of
// @agentclientprotocol/sdk 2.4.0.
//
// It holds no agents itself. Each ACP session is a familiar task in the
// per-repository familiar that editors share (it connects the way a second
// editor window does), so a session started from Zed shows in VS Code's task
// view and the other way round:
//
//	session/new            the repository of cwd; the task starts on the first prompt
//	session/prompt         task/create, later task/send (task/respond for a question asked in prose);
//	                       it returns when the turn ends, with its stopReason
//	session/update         from task/transcript (text, thinking, tool calls, plan, usage),
//	                       task/question, task/updated
//	request_permission     a permission question that policy left to a person
//	session/cancel         task/interrupt: ends the turn, keeps the task
//	session/set_mode       task/setMode: executor, architect, auditor
//	session/load, /list    replayed from the store (task/events, task/list)
//	/diff /merge /undo /retry and _familiar/diff|merge|undo|retry (/diff: ACP diff content)
//
// Its tasks run claude under the stream driver by default (Options.Driver):
// an ACP editor shows no terminal, and stream-json gives the text and
// thinking as they stream. The client's MCP servers (stdio, http, sse)
// become the task's.
//
// The ACP session id of a session whose task exists is kept in the
// workspace's data dir (acp/<session id>), so session/load finds it after a
// restart.
//
// Nothing but ACP frames goes to stdout; logs go to the logger.
package acp
