package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// interrupts turns Ctrl-C into two stages for the interactive commands: the
// first cancels ctx (stop gracefully), the second closes force (stop now).
// stop releases the signal handler.
func interrupts() (ctx context.Context, force <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	f := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		cancel()
		select {
		case <-sigs:
			close(f)
		case <-done:
		}
	}()
	return ctx, f, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
