// Package transcript reads what a Claude Code session did — its text, its
// thinking, its tool calls, its plan and its token usage — from the two
// places the CLI writes it as JSON: the session transcript file
// ($CLAUDE_CONFIG_DIR/projects/<mangled cwd>/<session id>.jsonl, whose path
// every hook payload carries as transcript_path; the PTY driver tails it) and
// the stream-json stdout of `claude -p` (the stream driver feeds it line by
// line). Both carry the same `assistant` and `user` message lines, so one
// Reader turns either into the same Entries.
//
// The lines it reads (claude 2.1.330, samples in testdata/2.1.330):
//
//   - {"type":"assistant","message":{"id","model","content":[block],"usage"},"timestamp"}:
//     one line per content block; the lines of one API message share
//     message.id and repeat its usage, which is therefore counted once per id.
//     Blocks: text, thinking, tool_use {id,name,input}.
//   - {"type":"user","message":{"content":"prompt" | [tool_result…]},
//     "toolUseResult" (file) | "tool_use_result" (stream)}: the prompt, or the
//     results of tool calls {tool_use_id, content, is_error}, with the tool's
//     structured result (Edit: filePath, oldString, newString, structuredPatch).
//   - everything else (attachments, api-request*, file-history-*, mode,
//     stream-json system/result lines) is skipped here; the driver reads what
//     it needs of those itself.
//
// It never starts processes and never decides anything: it only reports.
package transcript
