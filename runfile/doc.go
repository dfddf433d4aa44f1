// Package runfile reads the tasks file of `familiar run`: run settings and a
// list of tasks, in YAML or JSON. It owns the file format and its error
// messages; it never runs anything, never talks to the orchestrator and does
// no I/O beyond Load reading the file.
//
// # Format
//
// A mapping with two keys, settings (optional) and tasks (required, at least
// one task):
//
//	settings:
//	  concurrency: 2            # tasks running at once, 1..64; default 3
//	  driver: pty               # pty | stream; default: familiar's default
//	  baseRef: main             # base ref of every task that names none
//	  approvalTimeoutSec: 60    # an unanswered permission is denied after this
//	  noProgressTimeoutSec: 900 # a task without progress this long is blocked
//	  termGraceSec: 10          # SIGTERM to SIGKILL grace; 0 kills at once
//	  commandTimeoutSec: 3600   # a command that writes nothing this long is stopped
//	  maxBudgetUsd: 5           # a task that spent this much is blocked; 0: none
//	  sandbox: "on"             # claude's sandbox for Bash: on (default), off, required
//	  merge: queue              # at the end, merge the finished tasks through the merge queue
//	  verify: go test ./...     # the queue's check of each task before its merge
//	  mergeStrategy: merge      # merge | squash | rebase; default merge
//	  permissionPolicy:         # the only source of permissions in a headless run
//	    default: deny           # ask | allow | deny, for tool uses no rule matches
//	    allow: ["Bash(go test:*)", "Read", "Edit"]
//	    deny: ["Bash(git push:*)"]
//	tasks:
//	  - title: Fix the login redirect
//	    description: After login users land on /home instead of the page they came from.
//	    type: fix
//	    acceptanceCriteria: ["redirects to the original page"]
//	    priority: 1
//	    hints: {files: [auth/login.go]}
//
// Each task takes exactly the params of task/create in PROTOCOL.md, with the
// same camelCase names: title, description, acceptanceCriteria, type,
// profile, promptOverride, mode, priority, baseRef, driver, mcpServers,
// skills, hints {files, notes}, directives {think, verbose, elevated},
// noProgressTimeoutSec, commandTimeoutSec, maxBudgetUsd, model,
// warmAgentSec, permissionPolicy {default, allow, deny}. The file may also be
// just the list of tasks, with no settings.
//
// # Plans
//
// A task may say which tasks its work builds on: needs: [ids], naming other
// tasks by their id: (default task1, task2, ... by place). A file where a
// task has needs runs as a plan (issue 39): every task whose needs are
// merged starts, from the base that has their work; each is merged through
// the merge queue (settings.verify checking it) as soon as it finishes;
// merge: queue goes without saying. A plan's step takes id, title,
// description, acceptanceCriteria, mode, profile, hints.files and needs
// only; any other task field is refused there, and so are needs naming no
// task and tasks that need each other in a circle.
//
//	tasks:
//	  - id: api
//	    title: Add the login endpoint
//	    description: ...
//	  - title: Add the login form
//	    description: ...
//	    needs: [api]
//
// testdata/example.yaml is a complete example; the file's JSON Schema,
// generated from these types by package schema, is
// editors/vscode/schemas/tasks.schema.json.
//
// JSON is read as JSON (a .json file, or a file that starts with { or [ and is
// valid JSON), so its strings, escapes and numbers mean exactly what they mean
// in JSON; anything else is YAML (one document; aliases are allowed, merge
// keys are not).
//
// # Strictness
//
// Unlike a JSON-RPC request, where unknown fields are ignored, a tasks file is
// written by hand and run unattended, so a typo must not be silently dropped:
// an unknown or duplicated key, at any depth, is an error, and so is a value
// of the wrong type (priority: high; in YAML a string field takes any scalar
// as written, so baseRef: 1.10 is "1.10", while JSON wants a string). After
// decoding, every task passes protocol's TaskCreateParams.Validate and the
// settings are checked against the same ranges as settings/update.
//
// # Errors
//
// Every error is an *Error naming the file, the line and column of the
// offending key or value, the field as a path ("tasks[2].title",
// "settings.concurrency", "tasks[0].hints.files[1]") and one sentence:
//
//	tasks.yaml:12:5: tasks[2].title: title is required
//
// A value of the wrong type is reported at the value; a field that is missing
// at the task (or mapping) that lacks it. YAML syntax errors carry a line but
// no column, because the YAML parser does not report one; JSON syntax errors
// carry both. Parse reports the first error only, in file order, so a person
// fixes one thing at a time.
package runfile
