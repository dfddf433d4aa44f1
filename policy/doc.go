// Package policy decides an agent's permission requests without asking a
// person, from a permission Policy of Claude permission rules ("Bash(go
// test:*)", "Read", "Edit(src/**)", "WebFetch(domain:go.dev)", "mcp__github").
//
// It owns the rule syntax and its meaning, and nothing else: it never reads
// settings files, never talks to the agent and does no I/O of its own (a
// caller may pass ResolveSymlinks, which reads links, in Dirs.Resolve). It has no
// dependency on other familiar packages; the orchestrator converts the
// protocol's Policy into this package's.
//
// # Meaning
//
// A matching deny rule wins over everything: over a matching allow rule, and
// over elevation. An elevated task is allowed every call no deny rule
// matches; otherwise a matching allow rule allows, and a call no rule matches
// gets the policy's default. This mirrors Claude Code, and where Claude's behaviour is unclear
// or a command cannot be understood, the package is conservative in both
// directions at once: an allow rule matches only when it certainly covers the
// call, a deny rule matches whenever it might. So a call is never allowed
// because of a doubt, and a doubt can only turn a would-be Allow into a Deny
// or an Ask.
//
// # Bash
//
// A command is parsed with mvdan.cc/sh/v3/syntax (bash dialect), the parser
// shfmt uses, and every simple command at any depth is a command of its
// own: in lists and pipelines, subshells and groups, if/while/for/case,
// function bodies, coproc, time, and inside $(…), `…`, <(…), >(…), here
// documents and here-strings. A call is allowed only if every one of those
// commands matches an allow rule, and denied if any one matches a deny rule.
//
// Some scripts are uncertain: what they run is only known when they run.
// The parser refuses them; they hold a parameter expansion other than
// $name or ${name} (${x@P}, ${!x}, ${x:=…} can run code stored in a
// variable), arithmetic (which evaluates a[$(cmd)] stored in a name), an
// extended glob, a program named by an expansion, a glob or braces
// ({rm,-rf,x}, /bin/r?); a shell fed from stdin or a process substitution,
// source, eval of a variable; a builtin re-bound (alias, hash -p, enable,
// declare -f) or a variable that changes what runs (PATH, BASH_ENV, GIT_*).
// No prefix or pattern rule allows an uncertain script, and every Bash deny
// rule applies to it.
//
// Strings that programs run as scripts are read as scripts: sh/bash -c
// (-lc, -c --), eval, su -c, env -S, flock -c, script -c, watch, trap,
// mapfile -C, git -c alias.x='!…', and the programs named by go test
// -exec, tar --to-command, rsync -e and the like. Their commands need their
// own rules.
//
// Rule content is "prefix:*" or "prefix *" (the command is prefix, or prefix
// followed by a space and anything), a glob where * matches any text, or the
// exact command. Prefix and glob rules never match a risky command: one that
// runs a substitution, writes to a file (">" to anything but /dev/null or a
// descriptor), opens /dev/tcp, or has a flag from the table in flags.go that
// writes, reads outside the worktree or runs a program (git diff --output,
// --ext-diff, --no-index; go test -exec, -o; npm --script-shell; find
// -exec, -delete; sed -i and its w/e commands; tar --to-command; …). Only a
// rule spelling out that exact command allows it, and "allow always" offers
// only that rule for it. git's harmless global options (--no-pager, -P) are
// left out before matching, so Bash(git diff:*) allows git --no-pager diff;
// the others (-C, -c, --git-dir) make the command risky.
//
// Deny rules are checked against more readings of each command than allow
// rules: with quotes removed and $'…' escapes decoded, with the path
// stripped from the program, after wrappers such as sudo, env, timeout,
// nohup, xargs and find (at every word that could be the wrapped program),
// for git without its global options (git -C . push is git push), and with
// any word only known when it runs (git $(echo push)) taken as whatever
// would make the rule match. A command too long (64 KiB) or nested too
// deeply to check matches every Bash deny rule.
//
// A command that names a path under .claude/, .git/, .vscode/ or .idea/
// with a program that may write there (anything but cat, ls, grep, git, …)
// or redirects into one, and a call with dangerouslyDisableSandbox, are
// guarded: no prefix rule, and no elevation, allows them; a rule spelling
// out the command does.
//
// # Files
//
// Read and Edit rules hold gitignore-style patterns resolved as Claude does:
// "//abs" from the filesystem root, "~/x" from the home directory, "/x" and
// "./x" from the working directory, and a pattern without a slash matches at
// any depth. A pattern that matches a directory matches everything in it.
// Edit rules cover Edit, Write, MultiEdit and NotebookEdit; Read rules cover
// Read and NotebookRead, and (for the directory they search) Grep, Glob and
// LS. A Read deny rule denies a search of what it denies and of a directory
// above the worktree that may hold it, not a search of the rest of the
// worktree. Glob searches where an absolute pattern (or one climbing out
// with "..") says. "~/" in a tool's path is the home directory, and a path
// holding a NUL byte is never allowed and matches every deny rule. With
// Dirs.Resolve, a path is decided on both its written and its resolved
// form: allow rules must cover both, a deny rule either. Writes under
// .claude/, .git/, .vscode/ and .idea/ (where claude and editors read
// hooks, settings and tasks that run outside familiar's policy) are asked,
// elevated or not, unless a rule naming that directory allows them.
// Resolving a relative pattern against an absolute path needs the working
// directory: see DecideIn.
//
// # Other tools
//
// WebFetch(domain:example.com) allows that host exactly, and
// domain:*.example.com its subdomains; a deny rule for a domain covers its
// subdomains too. mcp__server (or mcp__server__*) covers every tool of the
// server, mcp__server__tool one tool. Task(type) and Agent(type) match the
// subagent's type. Content in a rule for any other tool is not understood:
// such a rule never allows, and as a deny rule it stops every call of the
// tool.
package policy
