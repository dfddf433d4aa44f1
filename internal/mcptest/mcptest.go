// Package mcptest is a tiny stdio MCP server for end-to-end tests: it offers
// one tool, write_marker, that writes the word "marker" into a file. Tests run
// it by re-executing their own binary (see Main), so no separate build step
// is needed.
//
// It is for tests only and speaks just enough of MCP for the claude CLI.
package mcptest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// HelperEnv, when set in a test binary's environment, makes Main serve MCP.
const HelperEnv = "FAMILIAR_MCPTEST_SERVER"

// Main serves MCP on stdin/stdout and exits if HelperEnv is set; otherwise it
// returns at once. Call it first thing in TestMain.
func Main() {
	if os.Getenv(HelperEnv) == "" {
		return
	}
	Serve(os.Stdin, os.Stdout)
	os.Exit(0)
}

// Config is the --mcp-config document that starts this server as "study",
// re-executing the test binary exe.
func Config(exe string) map[string]any {
	return map[string]any{"mcpServers": map[string]any{
		"study": map[string]any{
			"type": "stdio", "command": exe, "args": []string{"-test.run=^$"},
			"env": map[string]string{HelperEnv: "1"},
		},
	}}
}

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Serve answers newline-delimited JSON-RPC until in ends.
func Serve(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var req request
		if json.Unmarshal(sc.Bytes(), &req) != nil || len(req.ID) == 0 {
			continue // notifications need no answer
		}
		_ = enc.Encode(reply(req))
	}
}

func handle(req request) (any, map[string]any) {
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		return map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "study", "version": "1.0.0"},
		}, nil
	case "tools/list":
		return map[string]any{"tools": []any{map[string]any{
			"name":        "write_marker",
			"description": "Write the word 'marker' into the given file path.",
			"inputSchema": map[string]any{
				"type":       "object",
				"properties": map[string]any{"path": map[string]any{"type": "string"}},
				"required":   []string{"path"},
			},
		}}}, nil
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Path string `json:"path"`
			} `json:"arguments"`
		}
		_ = json.Unmarshal(req.Params, &p)
		text := "wrote marker"
		if err := os.WriteFile(p.Arguments.Path, []byte("marker"), 0o644); err != nil {
			text = err.Error()
		}
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}, nil
	case "ping":
		return map[string]any{}, nil
	}
	return nil, map[string]any{"code": -32601, "message": fmt.Sprintf("method not found: %s", req.Method)}
}

// reply answers one request: its result or its error.
func reply(req request) map[string]any {
	result, rpcErr := handle(req)
	resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	if rpcErr != nil {
		resp["error"] = rpcErr
	} else {
		resp["result"] = result
	}
	return resp
}
