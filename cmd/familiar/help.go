package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/familiar-dev/familiar/agent"
)

// Each subcommand's --help: what it does, its flags (printed from the flag
// set after this text) and its exit codes.

const serveHelp = `Usage: familiar serve (--stdio | --listen unix:PATH) [flags]

Serves an editor (or any client) over JSON-RPC 2.0 with LSP framing, as
described in PROTOCOL.md. In a repository, --stdio forwards stdin/stdout to
the repository's background familiar (started if none runs), so editor
windows come and go while agents keep running and every window sees the same
tasks; --no-daemon serves in this process instead. --listen serves any number
of clients on a unix socket. Nothing but protocol frames is ever written to
stdout; logs go to stderr and to familiar.log in the data dir.

Exit codes:
  0  the client sent shutdown and exit (or closed stdin)
  1  the workspace could not be opened (e.g. another familiar holds it) or
     serving failed
  2  bad usage

Flags:
`

const acpHelp = `Usage: familiar acp

Speaks the Agent Client Protocol (v1) on stdin/stdout, for editors that use
ACP agents: each ACP session is a familiar task of the repository it names,
run by that repository's background familiar (started if none runs), so
the task is also visible to every other client. Nothing but protocol
messages is written to stdout; warnings and errors go to stderr.

familiar acp login runs claude auth login (an ACP client's terminal auth
method runs it): familiar's agents use claude's own login.

Its tasks run claude with the stream driver unless --driver says
otherwise: an ACP editor shows no terminal, and stream-json gives the
agent's text and thinking as they stream (the PTY driver reads them from
the session file, a block at a time).

With --no-daemon a repository is served in a child of familiar acp
(familiar serve --stdio --no-daemon) instead of the background familiar;
its agents stop when its last client leaves.

Exit codes:
  0  the client closed the connection
  1  serving failed
  2  bad usage

Flags:
`

const stopHelp = `Usage: familiar stop [flags]

Stops the background familiar of the repository in the current directory (or
--workspace): its agents are stopped gracefully (SIGTERM, then SIGKILL after
the grace) and their tasks stay resumable with task/resume.

Exit codes:
  0  it stopped, or none was running
  1  it could not be stopped
  2  bad usage, or not in a git repository

Flags:
`

const runHelp = `Usage: familiar run [flags] FILE

Runs the tasks of a YAML or JSON tasks file headless, from the root of a git
repository: each task in its own worktree, at most "concurrency" at once.
Progress is shown live on a terminal, one line per event otherwise; --json
prints a machine-readable report on stdout at the end. Nobody is asked
anything: permissions come only from the file's policy, and a request it
leaves to "ask" is denied after approvalTimeoutSec.

Tasks file (examples/tasks.yaml):
  settings:                     # optional
    concurrency: 2              # tasks at once, 1..64 (default 3)
    driver: pty                 # pty or stream, for tasks that name none
    baseRef: main               # what worktrees start from (default HEAD)
    approvalTimeoutSec: 60      # how long an undecided request waits
    noProgressTimeoutSec: 900   # stop a task silent this long
    termGraceSec: 10            # SIGTERM → SIGKILL grace
    commandTimeoutSec: 3600     # stop a command that writes nothing this long
    maxBudgetUsd: 5             # block a task that spent this much (0: none)
    sandbox: "on"               # claude's sandbox for Bash: on, off, required
    merge: queue                # at the end, merge finished tasks through the queue
    verify: go test ./...       # the queue's check of each task before its merge
    mergeStrategy: merge        # merge | squash | rebase
    permissionPolicy:
      default: ask              # ask | allow | deny
      allow: ["Read", "Bash(go test:*)"]
      deny:  ["Bash(rm:*)"]     # a deny rule always wins
  tasks:                        # required; or the file is just this list
    - title: Fix the login bug  # required
      description: …            # required
      # any other task/create field of PROTOCOL.md: type, profile, mode,
      # acceptanceCriteria, priority, baseRef, driver, skills, hints, …

The file's JSON Schema is editors/vscode/schemas/tasks.schema.json (the VS
Code extension validates tasks files with it as you type).

--check checks the file and the repository's .familiar/config.yaml (an
unknown key there is an error naming it) in the words familiar doctor uses,
and runs nothing: exit 0 when both are valid, 2 when one is not.

Ctrl-C once stops the agents gracefully (SIGTERM, then SIGKILL after the
grace), keeps every worktree and prints the report; Ctrl-C twice kills them
at once.

Exit codes:
  0  every task finished (merging or merged)
  1  a task was blocked or cancelled (Ctrl-C included), or familiar could not
     run
  2  the file is wrong (the message says file:line:col: field: what) or bad
     usage

Flags:
`

const demoHelp = `Usage: familiar demo [flags]

Makes a throwaway repository, starts familiar's built-in SCRIPTED demo model
on loopback (no credentials; it is not Claude), runs two tasks through the
real claude CLI against it — one asks a permission, answered by the demo
policy, one just finishes — then prints the report and the diff. Ctrl-C once
stops it gracefully, twice at once.

Exit codes:
  0  both tasks finished
  1  a task failed, or claude is missing
  2  bad usage

Flags:
`

const auditHelp = `Usage: familiar audit export [flags]

Writes the audit log of the repository in the current directory as JSON
lines on stdout: every permission decision (who or which rule decided),
allow-always grant and revocation, status change, merge and undo. Secrets are
masked. Reads through the running familiar when there is one, else the store.

Exit codes:
  0  the log was written
  1  the store could not be read
  2  bad usage (e.g. --since is not an RFC 3339 time), or not in a repository

Flags:
`

const doctorHelp = `Usage: familiar doctor

Checks what familiar needs and prints one line per check, with a fix for
each problem: git, the claude CLI (found, version at least ` + agent.MinVersion + `),
credentials (present; never printed), the data dir, its lock, the worktrees
dir, loopback for hooks, and what the MCP presets require.

Environment: FAMILIAR_CLAUDE, FAMILIAR_TOOLS_DIR (see familiar --help).

Exit codes:
  0  nothing blocking failed (warnings may be printed)
  1  a blocking check failed
  2  bad usage
`

const versionHelp = `Usage: familiar version [--json | --notices]

Prints familiar's version and the protocol version it speaks (PROTOCOL.md):
"familiar 0.2.0 (protocol 1)". With --json, one line
{"version":"0.2.0","protocolVersion":1}, which the VS Code extension reads
before it runs a binary. A binary built from a checkout without a release
stamp says so: "0.2.0-dev+<commit>".

--notices prints familiar's NOTICE and licence (Apache-2.0) and the licence
and notice texts of the third-party software it links (docs/THIRD-PARTY.md).

Exit codes:
  0  printed
  2  an unknown argument
`

// wantsHelp reports whether args ask for help (before any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if slices.Contains([]string{"-h", "-help", "--help", "help"}, a) {
			return true
		}
	}
	return false
}

// withHelp makes fs print help (then its flags) on stdout for -h/--help.
func withHelp(fs *flag.FlagSet, help string, stdout io.Writer) {
	fs.Usage = func() {
		fmt.Fprint(stdout, help)
		out := fs.Output()
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
}

// parseFlags parses args; on -h/--help it has printed the help and returns
// exit code 0 and done, on a bad flag 2 and done.
func parseFlags(fs *flag.FlagSet, args []string) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	return 0, false
}

// printHelp prints a help text without flags.
func printHelp(w io.Writer, help string) int {
	fmt.Fprint(w, strings.TrimLeft(help, "\n"))
	return 0
}
