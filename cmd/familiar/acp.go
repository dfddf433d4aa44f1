package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/acp"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/workspace"
)

// runACP serves one ACP client (an editor) on stdio. Its sessions are tasks
// of the repository's shared familiar, joined like an editor window joins.
func runACP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) int {
	fs := flag.NewFlagSet("acp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// --help serves nothing, so stdout is free for it.
	driver := fs.String("driver", "stream", "the driver of the tasks ACP sessions create: stream, pty, or default (the workspace's defaultDriver)")
	noDaemon := fs.Bool("no-daemon", false, "serve each repository in a familiar serve --stdio --no-daemon child instead of the background familiar; its agents stop when the last client leaves")
	withHelp(fs, acpHelp, stdout)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.Arg(0) == "login" {
		// An ACP client's terminal auth method runs `familiar acp login`.
		return claudeAuth(ctx, "login", stdin, stdout, stderr)
	}
	switch {
	case *driver == "default":
		*driver = ""
	case !protocol.Driver(*driver).Valid():
		var names []string
		for _, d := range protocol.Drivers {
			names = append(names, string(d))
		}
		fmt.Fprintf(stderr, "familiar acp: --driver must be %s or default, not %q\n", strings.Join(names, ", "), *driver)
		return 2
	}
	cwd, _ := os.Getwd()
	err := acp.Serve(ctx, stdin, stdout, acp.Options{
		Dial: dialServe(*noDaemon, stderr, logger),
		RepoRoot: func(dir string) string {
			loc, _ := workspace.Locate(dir)
			return loc.Root
		},
		DataDir: workspace.DefaultDataDir,
		Driver:  *driver,
		Cwd:     cwd,
		Version: version,
		Logger:  logger,
		Logout: func(ctx context.Context) error {
			var out bytes.Buffer
			if code := claudeAuth(ctx, "logout", nil, &out, &out); code != 0 {
				return fmt.Errorf("exit status %d: %s", code, strings.TrimSpace(out.String()))
			}
			return nil
		},
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "familiar acp: %v\n", err)
		return 1
	}
	return 0
}

// dialServe connects to a repository's familiar the way an editor does: it
// runs `familiar serve --stdio` for the repository, which joins the familiar
// already serving it (or starts the background one), and talks to its
// stdio; with noDaemon, `serve --stdio --no-daemon`, which serves in the
// child unless another familiar already serves the repository.
func dialServe(noDaemon bool, stderr io.Writer, logger *slog.Logger) acp.Dialer {
	return func(ctx context.Context, root string) (io.ReadWriteCloser, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find familiar: %w", err)
		}
		args := []string{"serve", "--stdio", "--workspace", root}
		if noDaemon {
			args = append(args, "--no-daemon")
		}
		cmd := exec.Command(exe, args...)
		cmd.Dir = root
		// serve logs what it does at INFO; ACP clients show every stderr
		// line as an error, so only warnings and errors reach them (the
		// background familiar keeps its whole log in familiar.log).
		cmd.Stderr = &warningsOnly{w: stderr}
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start familiar serve: %w", err)
		}
		logger.Debug("familiar serve started", "root", root, "pid", cmd.Process.Pid)
		return &childConn{cmd: cmd, in: in, out: out}, nil
	}
}

// childConn is the stdio of a `familiar serve --stdio` child.
type childConn struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out io.ReadCloser
}

func (c *childConn) Read(p []byte) (int, error)  { return c.out.Read(p) }
func (c *childConn) Write(p []byte) (int, error) { return c.in.Write(p) }

// childGrace is how long Close waits for serve to stop its agents after
// its client left.
const childGrace = 30 * time.Second

// Close ends the client side; serve goes on serving other windows until
// they leave, then stops (its agents gracefully). It is never killed here:
// other editors may be using it.
func (c *childConn) Close() error {
	_ = c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(childGrace):
		return nil // still serving other windows
	}
}

// claudeAuth runs `claude auth <verb>` (login or logout): familiar's agents
// use claude's own login.
func claudeAuth(ctx context.Context, verb string, stdin io.Reader, stdout, stderr io.Writer) int {
	claude := os.Getenv("FAMILIAR_CLAUDE")
	if claude == "" {
		claude = "claude"
	}
	cmd := exec.CommandContext(ctx, claude, "auth", verb)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintf(stderr, "familiar acp: claude auth %s: %v\n", verb, err)
		return 1
	}
	return 0
}

// warningsOnly passes on the lines of a JSON log at WARN and above, and
// every line that is not a log record (a panic, a message of its own).
type warningsOnly struct {
	w    io.Writer
	mu   sync.Mutex
	part []byte // an unfinished line
}

func (f *warningsOnly) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.part = append(f.part, p...)
	for {
		i := bytes.IndexByte(f.part, '\n')
		if i < 0 {
			break
		}
		line := f.part[:i+1]
		if !quietLogLine(line) {
			if _, err := f.w.Write(line); err != nil {
				return len(p), err
			}
		}
		f.part = f.part[i+1:]
	}
	if len(f.part) > 64<<10 {
		// Not a log line: pass it on rather than hold it.
		_, _ = f.w.Write(f.part)
		f.part = nil
	}
	return len(p), nil
}

// quietLogLine: a JSON log record below WARN.
func quietLogLine(line []byte) bool {
	var rec struct {
		Level string `json:"level"`
	}
	if json.Unmarshal(line, &rec) != nil {
		return false
	}
	// slog writes levels between the named ones as "INFO+2" and the like.
	return strings.HasPrefix(rec.Level, "DEBUG") || strings.HasPrefix(rec.Level, "INFO")
}
