// Command fakemodel serves the scripted fake Messages API (fakeapi.PromptScript)
// on loopback for tests that run outside Go, such as the VS Code extension's
// UI tests: it prints the environment that points claude at it as one JSON
// line on stdout, then serves until stdin closes or it is signalled.
//
// With -requests FILE it appends one JSON line per main request: the last
// user text and the tool results it carries, so a test can check what an
// answer given in the UI told the model. With -find A,B each line also
// lists which of those strings the whole request held (a skill's
// description in claude's listing, say), which the last user text alone
// does not show.
//
// It is a test helper, never shipped: the model it serves is a script, not
// Claude.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/familiar-dev/familiar/internal/fakeapi"
)

func main() {
	requests := flag.String("requests", "", "append a JSON line per main request to this file")
	find := flag.String("find", "", "comma-separated strings; each request line lists those its whole body holds")
	flag.Parse()
	srv := fakeapi.Start(fakeapi.PromptScript())
	defer srv.Close()
	if *requests != "" {
		f, err := os.OpenFile(*requests, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakemodel:", err)
			os.Exit(1)
		}
		defer f.Close()
		var mu sync.Mutex // guards f
		srv.OnResponseDone(func(req fakeapi.Request, _ fakeapi.Reply) {
			if req.IsSideRequest() {
				return
			}
			type result struct {
				Content string `json:"content"`
				IsError bool   `json:"isError,omitempty"`
			}
			rec := struct {
				LastUserText string   `json:"lastUserText"`
				ToolResults  []result `json:"toolResults"`
				Found        []string `json:"found,omitempty"`
			}{LastUserText: req.LastUserText()}
			for _, s := range strings.Split(*find, ",") {
				if s != "" && bytes.Contains(req.Raw, []byte(s)) {
					rec.Found = append(rec.Found, s)
				}
			}
			for _, b := range req.ToolResults() {
				rec.ToolResults = append(rec.ToolResults, result{Content: b.Content, IsError: b.IsError})
			}
			line, _ := json.Marshal(rec)
			mu.Lock()
			defer mu.Unlock()
			_, _ = f.Write(append(line, '\n'))
		})
	}
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
