// Package procs starts and supervises child processes: under a PTY or with
// pipes, in their own session and process group, with input, resize, output
// fan-out (log file, ring buffer of the tail, subscribers), exit as a closed
// channel, graceful-then-forced termination of the whole process tree, and a
// no-progress watchdog.
//
// It never knows what program it runs: nothing here is specific to claude.
package procs
