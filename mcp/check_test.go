package mcp

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakePath is a PATH lookup that knows only the given commands.
func fakePath(known ...string) func(string) (string, error) {
	return func(file string) (string, error) {
		for _, k := range known {
			if k == file {
				return "/fake/bin/" + file, nil
			}
		}
		return "", errors.New("executable file not found in $PATH")
	}
}

// noDial fails the test if a check tries to reach the network.
func noDial(t *testing.T) func(context.Context, string, string) (net.Conn, error) {
	return func(_ context.Context, _, addr string) (net.Conn, error) {
		t.Errorf("dialled %s", addr)
		return nil, errors.New("no dialling in this test")
	}
}

// loopbackListener returns the address of a listening loopback port and
// of one that refuses connections.
func loopbackListener(t *testing.T) (open, closed string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed = l2.Addr().String()
	l2.Close()
	return l.Addr().String(), closed
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "server.sh")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExe := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(notExe, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	open, closed := loopbackListener(t)
	secret := "tok-do-not-show"
	t.Setenv("MCP_TEST_SECRET", secret)

	tests := []struct {
		name      string
		s         Server
		available bool
		problem   string // part of Problem; "" = none
	}{
		{"command on PATH", Server{Command: "node"}, true, ""},
		{"missing command names it", Server{Command: "no-such-mcp-binary"}, false, `command "no-such-mcp-binary" is not on PATH`},
		{"absolute path", Server{Command: exe}, true, ""},
		{"path that does not exist", Server{Command: filepath.Join(dir, "nope")}, false, "does not exist"},
		{"path that is not executable", Server{Command: notExe}, false, "not an executable file"},
		{"directory", Server{Command: dir}, false, "not an executable file"},
		{"unset variable", Server{Command: "node", Env: map[string]string{"T": "${MCP_TEST_UNSET}"}}, false, "environment variable MCP_TEST_UNSET is not set"},
		{"command from a variable is shown unexpanded", Server{Command: "${MCP_TEST_SECRET}"}, false, `command "${MCP_TEST_SECRET}" is not on PATH`},
		{"invalid", Server{Type: TypeHTTP}, false, "absolute http"},
		{"http loopback open", Server{Type: TypeHTTP, URL: "http://" + open + "/mcp?token=" + secret}, true, ""},
		{"sse loopback closed", Server{Type: TypeSSE, URL: "http://user:" + secret + "@" + closed + "/sse?key=${MCP_TEST_SECRET}"}, false, "cannot connect to " + closed},
		{"localhost name", Server{Type: TypeHTTP, URL: "http://localhost:" + port(closed) + "/mcp"}, false, "cannot connect to localhost:" + port(closed)},
	}
	servers := map[string]Server{}
	for i, tt := range tests {
		servers["s"+strconv.Itoa(i)] = tt.s
	}
	results := Checker{LookPath: fakePath("node", "npx"), NpmCache: t.TempDir()}.Check(context.Background(), servers)
	if len(results) != len(tests) {
		t.Fatalf("%d results", len(results))
	}
	byName := map[string]Result{}
	for _, r := range results {
		byName[r.Name] = r
	}
	for i, tt := range tests {
		r := byName["s"+strconv.Itoa(i)]
		if r.Available != tt.available || (tt.problem == "") != (r.Problem == "") || !strings.Contains(r.Problem, tt.problem) {
			t.Errorf("%s: %+v, want available=%v problem %q", tt.name, r, tt.available, tt.problem)
		}
		if strings.Contains(r.Problem, secret) {
			t.Errorf("%s: the problem shows the secret: %q", tt.name, r.Problem)
		}
	}
	for i := 1; i < len(results); i++ {
		if results[i-1].Name >= results[i].Name {
			t.Errorf("results not in name order: %v", results)
		}
	}
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func TestCheckDoesNotDialRemoteHosts(t *testing.T) {
	servers := map[string]Server{
		"remote": {Type: TypeHTTP, URL: "https://mcp.example.com/mcp"},
		"ip":     {Type: TypeSSE, URL: "http://192.0.2.1:9/sse"},
	}
	for _, r := range (Checker{Dial: noDial(t)}).Check(context.Background(), servers) {
		if !r.Available || r.Problem != "" {
			t.Errorf("%+v", r)
		}
	}
	// With DialRemote the (fake) dialer is asked, with the default port.
	var dialled []string
	c := Checker{DialRemote: true, Dial: func(_ context.Context, _, addr string) (net.Conn, error) {
		dialled = append(dialled, addr)
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	}}
	r := c.Check(context.Background(), map[string]Server{"remote": servers["remote"]})
	if len(dialled) != 1 || dialled[0] != "mcp.example.com:443" || r[0].Available || r[0].Problem != "cannot connect to mcp.example.com:443: connection refused" {
		t.Errorf("dialled %v, result %+v", dialled, r)
	}
}

func TestCheckDialTimeout(t *testing.T) {
	c := Checker{DialTimeout: 20 * time.Millisecond, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	r := c.Check(context.Background(), map[string]Server{"slow": {Type: TypeHTTP, URL: "http://127.0.0.1:1/mcp"}})
	if r[0].Available || !strings.Contains(r[0].Problem, "no answer within 20ms") {
		t.Errorf("%+v", r[0])
	}
}

func TestCheckNpxPackage(t *testing.T) {
	cache := t.TempDir()
	pkgDir := filepath.Join(cache, "_npx", "0123abcd", "node_modules", "@modelcontextprotocol", "server-filesystem")
	if err := os.MkdirAll(pkgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkgDir, "package.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	worktree := t.TempDir()
	local := filepath.Join(worktree, "node_modules", "local-mcp")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, "package.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := Checker{LookPath: fakePath("npx"), NpmCache: cache, Env: Env{Worktree: worktree}}
	servers := map[string]Server{
		"cached":     Presets("")[0].Server,
		"versioned":  {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem@2025.1.1", "/x"}},
		"local":      {Command: "npx", Args: []string{"local-mcp"}},
		"package":    {Command: "npx", Args: []string{"--yes", "--package=local-mcp", "run-it"}},
		"not cached": Presets("")[2].Server,
	}
	for _, r := range c.Check(context.Background(), servers) {
		switch r.Name {
		case "not cached":
			if !r.Available || !strings.Contains(r.Problem, "npm package @modelcontextprotocol/server-puppeteer is not installed") {
				t.Errorf("%+v", r)
			}
		default:
			if !r.Available || r.Problem != "" {
				t.Errorf("%+v", r)
			}
		}
	}
}

func TestNpxPackage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-y", "@scope/pkg", "arg"}, "@scope/pkg"},
		{[]string{"@scope/pkg@1.2.3"}, "@scope/pkg"},
		{[]string{"pkg@latest", "--flag"}, "pkg"},
		{[]string{"-p", "pkg@2", "bin"}, "pkg"},
		{[]string{"--package", "other", "bin"}, "other"},
		{[]string{"--", "pkg"}, "pkg"},
		{[]string{"-y"}, ""},
		{nil, ""},
	} {
		if got := npxPackage(tt.args); got != tt.want {
			t.Errorf("npxPackage(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestCheckRealPath(t *testing.T) {
	// The zero Checker uses the real PATH: sh is everywhere.
	r := Check(context.Background(), map[string]Server{"sh": {Command: "sh"}, "none": {Command: "familiar-no-such-command-xyz"}})
	if !r[1].Available || r[0].Available || !strings.Contains(r[0].Problem, "familiar-no-such-command-xyz") {
		t.Errorf("%+v", r)
	}
}
