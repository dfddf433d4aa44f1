// Command fakemodel serves the scripted fake Messages API (fakeapi.PromptScript)
// on loopback for tests that run outside Go, such as the VS Code extension's
// UI tests: it prints the environment that points claude at it as one JSON
// line on stdout, then serves until stdin closes or it is signalled.
//
// It is a test helper, never shipped: the model it serves is a script, not
// Claude.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/familiar-dev/familiar/internal/fakeapi"
)

func main() {
	srv := fakeapi.Start(fakeapi.PromptScript())
	defer srv.Close()
	line, err := json.Marshal(srv.Env())
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(1)
	}
	fmt.Printf("%s\n", line)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The parent closing our stdin (or dying) ends the server too.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	<-ctx.Done()
}
