package jsonrpc

import (
	"bufio"
	"fmt"
	"io"
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
