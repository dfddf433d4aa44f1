package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/familiar-dev/familiar/acp"
	"github.com/familiar-dev/familiar/orchestrator"
)

// runACP serves one ACP client (an editor) on stdio. Its sessions are tasks
// of the repository's shared familiar, joined like an editor window joins.
func runACP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) int {
	fs := flag.NewFlagSet("acp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	// --help serves nothing, so stdout is free for it.
	driver := fs.String("driver", "stream", "the driver of the tasks ACP sessions create: stream, pty, or default (the workspace's defaultDriver)")
	withHelp(fs, acpHelp, stdout)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	switch *driver {
	case "stream", "pty":
	case "default":
		*driver = ""
	default:
		fmt.Fprintf(stderr, "familiar acp: --driver must be stream, pty or default, not %q\n", *driver)
		return 2
	}
	cwd, _ := os.Getwd()
	err := acp.Serve(ctx, stdin, stdout, acp.Options{
		Dial: dialServe(stderr, logger),
		RepoRoot: func(dir string) string {
			if real, err := filepath.EvalSymlinks(dir); err == nil {
				dir = real
			}
			return repoTop(dir)
		},
		DataDir: orchestrator.DefaultDataDir,
		Driver:  *driver,
		Cwd:     cwd,
		Version: version,
		Logger:  logger,
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "familiar acp: %v\n", err)
		return 1
	}
	return 0
}

// dialServe connects to a repository's familiar the way an editor does: it
// runs `familiar serve --stdio` for the repository, which joins the familiar
// already serving it (or becomes it), and talks to its stdio. When serve
// --stdio starts or joins a background daemon, this follows for free.
func dialServe(stderr io.Writer, logger *slog.Logger) acp.Dialer {
	return func(ctx context.Context, root string) (io.ReadWriteCloser, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find familiar: %w", err)
		}
		cmd := exec.Command(exe, "serve", "--stdio", "--workspace", root)
		cmd.Dir = root
		cmd.Stderr = stderr
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
