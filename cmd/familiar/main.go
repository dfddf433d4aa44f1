// Command familiar runs Claude Code agents in git worktrees for an editor
// (serve), for batch runs (run), and checks the machine (doctor).
//
// main only wires packages together; logic lives in the packages.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/familiar-dev/familiar/doctor"
	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/release"
)

// version is set at build time with -ldflags "-X main.version=…"; main
// resolves an unstamped one (go install, go build) from the build info.
var version = "dev"

const usage = `familiar — runs Claude Code agents, one git worktree per task.

Usage:
  familiar serve --stdio     serve an editor over JSON-RPC on stdin/stdout, through
                             the repository's background familiar (started if
                             needed; --no-daemon serves in this process)
  familiar stop              stop the repository's background familiar (agents
                             stop gracefully and stay resumable)
  familiar acp               an Agent Client Protocol agent on stdin/stdout
                             (Zed, JetBrains, CodeCompanion, agent-shell)
  familiar run [--json] FILE run the tasks of a YAML/JSON file headless
  familiar demo              run two tasks through the real claude against a
                             built-in scripted model (no credentials needed)
  familiar audit export [--since T] [--task ID]
                             the audit log as JSON lines
  familiar bench [flags]     measure detection latency, overhead, throughput,
                             task start and scale (from the source tree)
  familiar doctor            check git, claude, credentials and the data dir
  familiar version           print the version (--notices: the licences of the
                             software familiar links)
  familiar help COMMAND      a command's help (same as COMMAND --help)

Every command takes --help: what it does, its flags and its exit codes.
See README.md for installing and using familiar, and PROTOCOL.md for the
JSON-RPC contract editors speak (both in familiar's source tree).

Environment:
  FAMILIAR_LOG               log level on stderr: debug, info, warn, error
  FAMILIAR_CLAUDE            path of the claude CLI (default: .tools, then PATH)
  FAMILIAR_TOOLS_DIR         project-local tools dir holding the pinned CLI
`

func main() {
	info, _ := debug.ReadBuildInfo()
	version = release.BuildVersion(version, info)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	// The editor's server logs what it does; interactive commands only
	// warnings, so their own output stays readable. FAMILIAR_LOG overrides.
	level := slog.LevelWarn
	if args[0] == "serve" {
		level = logLevel()
	} else if v := os.Getenv("FAMILIAR_LOG"); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	switch args[0] {
	case "serve":
		// The server logs JSON, to stderr and to familiar.log in the data dir
		// (serve adds the file once it knows the workspace).
		logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
		// Orphaned descendants of agents reparent to familiar, so stopping
		// a task can find and reap them.
		defer subreaper(logger)()
		return serve(ctx, args[1:], os.Stdin, stdout, stderr, logger)
	case "acp":
		return runACP(ctx, args[1:], os.Stdin, stdout, stderr, logger)
	case "run":
		// run --check starts nothing, so it adopts no orphans: a subreaper
		// it left set in a process that goes on (the tests call run
		// in-process) collected every later orphan as a zombie nobody reaps.
		if !slices.Contains(args[1:], "--check") {
			defer subreaper(logger)()
		}
		return runBatch(args[1:], stdout, stderr, logger)
	case "demo":
		defer subreaper(logger)()
		return runDemo(args[1:], stdout, stderr, logger)
	case "stop":
		return stopCommand(ctx, args[1:], stdout, stderr)
	case "audit":
		return auditExport(ctx, args[1:], stdout, stderr)
	case "bench":
		return runBench(ctx, args[1:], stdout, stderr)
	case "doctor":
		if wantsHelp(args[1:]) {
			return printHelp(stdout, doctorHelp)
		}
		if len(args) > 1 {
			fmt.Fprintf(stderr, "familiar doctor takes no arguments\n\n%s", doctorHelp)
			return 2
		}
		return doctor.Run(ctx, doctor.Options{
			ClaudePath: os.Getenv("FAMILIAR_CLAUDE"),
			ToolsDir:   toolsDir(),
			Logger:     logger,
		}, stdout)
	case "version", "--version":
		if wantsHelp(args[1:]) {
			return printHelp(stdout, versionHelp)
		}
		switch {
		case len(args) == 2 && args[1] == "--json":
			// For the VS Code extension, which checks the protocol of the
			// binary it is about to run before it starts it.
			b, _ := json.Marshal(map[string]any{"version": version, "protocolVersion": protocolVersion})
			fmt.Fprintf(stdout, "%s\n", b)
		case len(args) == 2 && args[1] == "--notices":
			// The licences of what the binary links, which it must carry.
			fmt.Fprint(stdout, release.Notices)
		case len(args) > 1:
			fmt.Fprintf(stderr, "familiar version: unknown argument %q\n\n%s", args[1], versionHelp)
			return 2
		default:
			fmt.Fprintf(stdout, "familiar %s (protocol %d)\n", version, protocolVersion)
		}
		return 0
	case "help", "-h", "--help":
		if len(args) > 1 && args[1] != "help" && !strings.HasPrefix(args[1], "-") {
			// familiar help run = familiar run --help
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "familiar: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

// toolsDir is where the pinned claude CLI is installed for this checkout:
// $FAMILIAR_TOOLS_DIR, else .tools in the working directory.
func toolsDir() string {
	if d := os.Getenv("FAMILIAR_TOOLS_DIR"); d != "" {
		return d
	}
	if wd, err := os.Getwd(); err == nil {
		return wd + "/.tools"
	}
	return ""
}

// logLevel is the server's log level: info, or FAMILIAR_LOG.
func logLevel() slog.Level {
	level := slog.LevelInfo
	if v := os.Getenv("FAMILIAR_LOG"); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	return level
}

// subreaper makes familiar a child subreaper, so orphaned descendants of
// agents reparent to it and stopping a task can find them, and starts the
// reaper that collects them as they exit. It returns the reaper's Close.
func subreaper(logger *slog.Logger) func() {
	if err := procs.EnableSubreaper(); err != nil {
		logger.Warn("cannot become a subreaper; orphaned tool processes may outlive their task", "err", err)
		return func() {}
	}
	return procs.StartReaper(logger).Close
}
