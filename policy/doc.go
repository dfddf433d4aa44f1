// Package policy decides an agent's permission requests without asking a
// person, from a permission Policy of Claude permission rules ("Bash(go
// test:*)", "Read", "Edit(src/**)", "WebFetch(domain:go.dev)", "mcp__github").
//
// It owns the rule syntax and its meaning, and nothing else: it never reads
// settings files, never talks to the agent and never does I/O. It has no
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
// A command is cut into the simple commands a shell would run: at ;, &, &&,
// |, ||, newlines and parentheses, and inside $(…), `…`, <(…) and >(…). A
// call is allowed only if every one of those commands matches an allow rule,
// and denied if any one matches a deny rule.
//
// Rule content is "prefix:*" or "prefix *" (the command is prefix, or prefix
// followed by a space and anything), a glob where * matches any text, or the
// exact command. Prefix and glob rules never match a command that runs a
// substitution or redirects output to a file (">" or ">>" to anything but
// /dev/null or another descriptor): only a rule spelling out that exact
// command allows it.
//
// Deny rules are checked against more readings of each command than allow
// rules: with quotes removed and $'…' escapes decoded, with the path
// stripped from the program, after leading variable assignments and
// keywords (then, do, !, {), after wrappers such as sudo, env, timeout,
// nohup, xargs and find (at every word that could be the wrapped program),
// and inside sh -c and eval strings. Where the lexer may disagree with bash
// about what is quoted (an unterminated quote, a heredoc, a comment, a
// substitution), the script is also read with its quotes ignored, so a deny
// rule still sees every word bash might run. A program named by an
// expansion ($X -rf /, eval "$CMD"), and a command too long (64 KiB) or
// nested too deeply to check, match every Bash deny rule.
//
// Heredoc bodies are read as commands, and so are comments: a command with
// either is allowed only by a rule spelling out the whole command.
//
// # Files
//
// Read and Edit rules hold gitignore-style patterns resolved as Claude does:
// "//abs" from the filesystem root, "~/x" from the home directory, "/x" and
// "./x" from the working directory, and a pattern without a slash matches at
// any depth. A pattern that matches a directory matches everything in it.
// Edit rules cover Edit, Write, MultiEdit and NotebookEdit; Read rules cover
// Read and NotebookRead, and (for the directory they search) Grep, Glob and
// LS. Resolving a relative pattern against an absolute path needs the
// working directory: see DecideIn.
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
