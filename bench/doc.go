// Package bench measures familiar's speed and scale (issue 9): how fast a
// question reaches familiar, what an idle session costs it, how much PTY
// output its path takes per second, how long a task takes to start, and how
// task/list and notifications hold up with 60 tasks. Run prints a table and
// returns a Report, which `familiar bench` writes as JSON to bench/results/.
//
// It drives the real packages (procs, agent, orchestrator, worktree) with
// children that stand in for claude — internal/fakeagent, built on the fly
// with the go tool — and, where a figure is about the real CLI, the pinned
// claude against the scripted model of package demomodel. Everything listens on loopback only and
// lives in a temporary directory that Run removes. It runs git itself only to
// make throwaway repositories and for the `git worktree add` baseline.
//
// It is a measuring tool: it never changes familiar's behaviour and is not
// imported by familiar's packages.
package bench
