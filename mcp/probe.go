package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"
)

// ProbeTimeout is how long a stdio server gets to answer initialize: the
// time claude gives a server to connect (MCP_TIMEOUT, 30 s by default).
const ProbeTimeout = 30 * time.Second

// ConfigServers reads the mcpServers of a --mcp-config file (WriteConfig's,
// or the agent's merge of it with the user's servers).
func ConfigServers(path string) (map[string]Server, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read MCP config: %w", err)
	}
	var f struct {
		MCPServers map[string]Server `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("read MCP config %s: %w", path, err)
	}
	return f.MCPServers, nil
}

// ProblemCannotStart starts a ProbeResult.Problem whose command could not
// be started at all (Checker says the same before a task starts).
const ProblemCannotStart = "cannot start"

// ProbeResult is one stdio server's answer to the probe: Problem is empty
// when it answered initialize.
type ProbeResult struct {
	Name    string
	Problem string
}

// Probe starts each stdio server of servers (already expanded, as in the
// config file claude reads) as claude does, in dir with env plus the
// server's own, sends MCP initialize and waits for the answer: a server
// that exits first or does not answer within timeout would fail inside
// claude too. This is how a failure shows under the PTY driver, whose
// screen says nothing of it (the stream driver reads it from system/init).
// Each result goes to report as soon as that server is done (from the
// server's own goroutine: a quick failure is not held back by a slow
// server); a server still starting when ctx ends is not reported. Every
// server is stopped (its process group killed) before Probe returns. Problems never carry what a server wrote
// (its stderr can hold a secret), only how it failed. HTTP and SSE
// servers are left out: Checker reaches their URL before the task starts.
func Probe(ctx context.Context, servers map[string]Server, dir string, env []string, timeout time.Duration, report func(ProbeResult)) {
	names := make([]string, 0, len(servers))
	for n, s := range servers {
		if s.Type == "" || s.Type == TypeStdio {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	done := make(chan struct{})
	for _, n := range names {
		go func() {
			defer func() { done <- struct{}{} }()
			problem := probeOne(ctx, servers[n], dir, env, timeout)
			if ctx.Err() == nil {
				report(ProbeResult{Name: n, Problem: problem})
			}
		}()
	}
	for range names {
		<-done
	}
}

// initializeRequest is what claude 2.1.330 sends first (CLAUDE-CLI.md §5).
const initializeRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"familiar-probe","version":"1"}}}` + "\n"

func probeOne(ctx context.Context, s Server, dir string, env []string, timeout time.Duration) string {
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), env...), envList(s.Env)...)
	// A group of its own: what the server starts (npx's node) goes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return ProblemCannotStart + ": " + err.Error()
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return ProblemCannotStart + ": " + err.Error()
	}
	if err := cmd.Start(); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return ProblemCannotStart + ": " + pe.Err.Error()
		}
		return ProblemCannotStart
	}
	answered := make(chan bool, 1)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		// The answer to id 1; notifications and logs on stdout before it are skipped.
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && string(m.ID) == "1" && m.Result != nil {
				answered <- true
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
		}
		answered <- false
	}()
	_, _ = io.WriteString(stdin, initializeRequest)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	problem := ""
	select {
	case ok := <-answered:
		if !ok {
			problem = "exited before it answered"
		}
	case <-timer.C:
		problem = fmt.Sprintf("did not answer within %s", timeout)
	case <-ctx.Done():
	}
	_ = stdin.Close()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	// Wait closes stdout: the reader is done with it first, unless
	// something outside the group holds it open.
	select {
	case <-readerDone:
	case <-time.After(5 * time.Second):
	}
	err = cmd.Wait()
	if problem == "exited before it answered" {
		var xe *exec.ExitError
		if errors.As(err, &xe) && xe.ExitCode() > 0 {
			problem = fmt.Sprintf("exited with status %d before it answered", xe.ExitCode())
		}
	}
	return problem
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
