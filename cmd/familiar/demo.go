package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/familiar-dev/familiar/internal/demo"
)

func runDemo(args []string, stdout, stderr io.Writer, logger *slog.Logger) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keep := fs.Bool("keep", false, "keep the throwaway repository and its worktrees")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	force := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		<-sigs
		cancel()
		if _, ok := <-sigs; ok {
			close(force)
		}
	}()
	return demo.Run(ctx, demo.Options{
		ClaudePath: os.Getenv("FAMILIAR_CLAUDE"),
		ToolsDir:   toolsDir(),
		Out:        stdout,
		Terminal:   isTerminal(stdout),
		Force:      force,
		Keep:       *keep,
	})
}
