package jsonrpc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
)

func TestPeekInitialize(t *testing.T) {
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	init := frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"workspaceRoot":"/repo"}}`)
	next := frame(`{"jsonrpc":"2.0","id":2,"method":"task/list"}`)
	for _, tc := range []struct {
		name, in, root string
		err            bool
	}{
		{"initialize", init + next, "/repo", false},
		{"another method first", next + init, "", false},
		{"not JSON", frame("{nope"), "", false},
		{"no length", "X: 1\r\n\r\n{}", "", true},
		{"cut short", init[:len(init)-5], "", true},
		{"too long", "Content-Length: 99999999999\r\n\r\n", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReader(strings.NewReader(tc.in))
			got, root, err := PeekInitialize(br)
			if root != tc.root || (err != nil) != tc.err {
				t.Fatalf("root %q err %v", root, err)
			}
			// What was read, then what is left, is the input unchanged.
			rest, _ := io.ReadAll(br)
			if string(got)+string(rest) != tc.in {
				t.Fatalf("replay %q + %q != input", got, rest)
			}
		})
	}
}

func TestReadFirstFrame(t *testing.T) {
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	for _, tc := range []struct {
		name, body, method, root string
		request                  bool
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"workspaceRoot":"/repo"}}`, "initialize", "/repo", true},
		{"initialize, ill-typed params", `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"workspaceRoot":7}}`, "initialize", "", true},
		{"notification", `{"jsonrpc":"2.0","method":"exit"}`, "exit", "", false},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"initialize","params":{}}`, "initialize", "", false},
		{"not JSON", `{nope`, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ReadFirstFrame(bufio.NewReader(strings.NewReader(frame(tc.body))))
			if err != nil || f.Method != tc.method || f.WorkspaceRoot != tc.root || f.Request != tc.request || string(f.Bytes) != frame(tc.body) {
				t.Fatalf("got %+v, %v", f, err)
			}
		})
	}
}

// ForwardFirst tells a familiar that answered from one that closed the
// connection first (killed as the forwarder joined it).
func TestForwardFirst(t *testing.T) {
	checkLeaks(t)
	req := []byte("Content-Length: 2\r\n\r\n{}")
	for _, answer := range []string{"", "Content-Length: 3\r\n\r\n{}\n"} {
		client, server := net.Pipe()
		got := make(chan []byte, 1)
		go func() {
			defer server.Close()
			b := make([]byte, len(req))
			io.ReadFull(server, b)
			got <- b
			if answer != "" {
				server.Write([]byte(answer))
			}
		}()
		var out strings.Builder
		answered, err := ForwardFirst(context.Background(), client, req, &out)
		client.Close()
		if string(<-got) != string(req) {
			t.Fatal("the request did not reach the familiar whole")
		}
		if answered != (answer != "") || out.String() != answer {
			t.Fatalf("answer %q: answered %v (%v), relayed %q", answer, answered, err, out.String())
		}
	}
}
