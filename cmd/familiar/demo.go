package main

import (
	"flag"
	"io"
	"log/slog"
	"os"

	"github.com/familiar-dev/familiar/demo"
)

func runDemo(args []string, stdout, stderr io.Writer, logger *slog.Logger) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keep := fs.Bool("keep", false, "keep the throwaway repository and its worktrees")
	withHelp(fs, demoHelp, stdout)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	ctx, force, stop := interrupts()
	defer stop()
	return demo.Run(ctx, demo.Options{
		ClaudePath: os.Getenv("FAMILIAR_CLAUDE"),
		ToolsDir:   toolsDir(),
		Out:        stdout,
		Terminal:   isTerminal(stdout),
		Force:      force,
		Keep:       *keep,
	})
}
