// Package procs starts and supervises child processes: under a PTY or with
// pipes, in their own session and process group, with input, resize, output
// fan-out (log file, ring buffer of the tail, subscribers), exit as a closed
// channel, graceful-then-forced termination of the whole process tree, and a
// no-progress watchdog.
//
// It never knows what program it runs: nothing here is specific to claude.
//
// # Lifetime
//
// Start starts the child under a PTY (Setsid+Setctty: its own session, the
// PTY as controlling terminal) or with pipes (Setpgid: its own process group).
// It owns three kinds of goroutines, all waited for by Process.Close: exactly
// one waiter per child, which collects the exit status and then closes Done;
// one reader per output stream; and the watchdog's timer callbacks.
// Done does not wait for output: descendants can keep the PTY or pipe open
// after the child exits, so each stream says separately when it has been read
// to its end (Output.Done). Close terminates whatever is left, waits for the
// streams, and releases everything.
//
// # Output
//
// Every byte goes, in order, to the stream's log file (mode 0600), to a ring
// buffer of the tail, and to each subscriber's bounded queue. A slow
// subscriber never slows the child: when its queue is full it misses output,
// and the next chunk it gets says how many bytes it missed, as a range of the
// log file (see Output.Subscribe). Subscribers get text cut only at UTF-8
// character boundaries. A log write error stops the log and is reported
// (Output.LogErr, Config.OnLogError); the child is not affected.
//
// # Termination
//
// Terminate sends SIGTERM to the child, to every descendant and to their
// process groups, waits the grace period on the injected clock, then sends
// SIGKILL, and polls the process table until nothing of the tree is left.
// The tree is found by parent links, by a token in the environment
// (TreeEnv) that descendants inherit, and by the sessions and process groups
// of the root and of every descendant seen (see lineage), so it includes
// commands that started their own session (claude runs each Bash tool
// command with setsid; those survive a SIGKILL of claude) and processes
// reparented after their parent died, even where their environment cannot
// be read (macOS hides that of Apple's binaries). On Linux, EnableSubreaper makes such orphans reparent to familiar
// instead of init, Terminate reaps the ones that belong to the tree, and
// signals go through pidfds, so a recycled pid is never signalled.
//
// An Identity (pid, process group, start time, boot, tree token) outlives
// familiar: a restarted familiar uses Identity.Alive to see whether a task's
// process is still the same one, and TerminateTree to stop it.
//
// # Platform
//
// One portable core — sessions and process groups, kill(-pgid), wait4, the
// SIGTERM → grace → SIGKILL sequence, the tree found by parent links and
// TreeEnv — over the process table of proctable: /proc on Linux, sysctl
// kern.proc.* and kern.procargs2 on macOS. What only Linux has lives in
// native_linux.go (pidfds, the child subreaper) and autogroup_linux.go (the
// scheduling group of an agent's session). portable.go stands in for
// native_linux.go on macOS, and on Linux when built with the portableprocs
// tag, so that the way macOS runs is tested on Linux: no subreaper, orphans
// reparented to init and found by their TreeEnv token, their session or
// group, or the record a Process keeps of its descendants every second.
package procs
