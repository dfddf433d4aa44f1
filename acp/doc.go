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
//	session/new            the repository of cwd; task/prepare starts the session's claude in its
//	                       worktree beside the answer (not waited for), and the first prompt's
//	                       task/create takes it (prepared); session/close, session/delete and the
//	                       editor's exit release it unused
//	session/prompt         task/create, later task/send (task/respond for a question asked in prose);
//	                       it returns when the turn ends, with its stopReason, or with
//	                       auth_required when the API refused claude's login (words that
//	                       fit how claude logs in: a refused key is replaced, not set)
//	session/update         from task/transcript (text, thinking, tool calls, plan, usage),
//	                       task/question, task/updated (each "retrying (n of m)" of
//	                       claude's as familiar's words, while it retries; a task familiar
//	                       stops is said once: claude's own error message is not repeated)
//	request_permission     with locations: the file an edit or a read is about
//	request_permission     a permission question that policy left to a person
//	session/cancel         task/interrupt: ends the turn, keeps the task
//	session/set_mode       task/setMode: executor, architect, auditor
//	session/set_config_option  the mode (as set_mode), the model (task/create's model;
//	                       chosen before the first prompt: claude keeps its model for a session),
//	                       think (category thought_level) and elevated, on or off: task/create's
//	                       directives, chosen before the first prompt too; skills (the
//	                       profile's defaults, none, all, or one of skills/list); verbose
//	                       (hook calls as notices) under --driver pty for clients with notices
//	session/load, /list    replayed from the store (task/events, task/list); the first user
//	                       message is the person's own text (the task's description); list
//	                       entries carry _meta.familiar {taskId, status, state (in words)}
//	session/resume         as load, without the replay, but for what streamed since the
//	                       session's last client went (acp/seen/<session id>: the task and
//	                       the seq it was last sent, kept at session/close and the editor's exit)
//	several clients        one session followed by several editors (each its familiar acp):
//	                       each update once per client (a load while a turn runs sends what
//	                       the store had, then only what came after); a prompt waits while
//	                       the task works on another client's turn, then is sent, and its
//	                       turn ends with its own answer; another client's prompt is shown
//	                       as the person's message; a task the session goes on from (/merge
//	                       then a prompt, /retry) is its past, not an entry of session/list
//	                       (acp/previous/<task id>)
//	session/close          cancels the turn, pauses the task's agent; the task stays
//	session/delete         task/remove (with its branch) only if the worktree holds no unmerged
//	                       change, else refused naming the files; the task leaves session/list
//	authenticate, logout   auth methods that say how to log claude in (claude auth login, or
//	                       ANTHROPIC_API_KEY; `familiar acp login` for clients with terminal
//	                       auth); session/new and authenticate answer auth_required when
//	                       familiar's claude.auth says tasks could not log in; logout runs
//	                       claude auth logout
//	/diff /merge /undo /retry and _familiar/diff|merge|undo|retry|archive (/diff: ACP diff content,
//	                       then the task's conflict forecast in words);
//	                       a prompt after /merge starts a new task from the merged base
//	/archive               task/archive of the session's task (it leaves session/list)
//	/grants, /revoke N|rule  policy/list and policy/revoke of the grants that hold for the
//	                       session's task (_familiar/grants answers them as data); /merge says
//	                       how long /undo holds (the task's undoableUntil)
//	notices                familiar's warnings and errors (server/message: a session's MCP
//	                       server that cannot start or failed in claude, the policy's warning
//	                       before autonomy, a usage limit) reach the sessions they concern as
//	                       `notice` updates where the client takes them (session.notices), else
//	                       as familiar's words in the conversation; turning elevated on says
//	                       familiar's warning before autonomy in the session
//	_familiar/queue        {sessionId, ids?, strategy?, verify?}: queue/merge on the session's
//	                       repository (every ready task by default); familiar's refusals keep
//	                       their codes
//
// A permission for a file edit carries its diff (the whole file before and
// after) and is titled by the path in the worktree; "Allow always" options
// name the rule they grant; "Reject, and stop this turn" interrupts the turn
// before the model reads the refusal. Updates about a new session follow the
// response that gives its id.
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
// Nothing but ACP frames goes to stdout; logs go to the logger, and only
// warnings and errors reach stderr (ACP clients show every stderr line as an
// error).
package acp
