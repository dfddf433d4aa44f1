package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/familiar-dev/familiar/daemon"
	"github.com/familiar-dev/familiar/jsonrpc"
	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/workspace"
)

// protocolVersion is the protocol this binary speaks (a variable so the
// end-to-end tests can run a familiar that speaks another).
var protocolVersion = protocol.ProtocolVersion

// serveDaemon is the background familiar of one repository: it serves
// clients on the socket in dd until it is stopped (familiar stop,
// server/stop, SIGTERM) or has been idle for idleExitSec, then stops the
// agents gracefully; they stay resumable.
func serveDaemon(ctx context.Context, root, dd string, opts workspace.Options, stderr io.Writer) int {
	// No terminal to hang up on: it runs in its own session. A SIGHUP sent
	// to it anyway is not a reason to stop agents.
	signal.Ignore(syscall.SIGHUP)
	if err := os.MkdirAll(dd, 0o700); err != nil {
		fmt.Fprintf(stderr, "familiar daemon: %v\n", err)
		return 1
	}
	logFile, err := os.OpenFile(filepath.Join(dd, "familiar.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintf(stderr, "familiar daemon: log: %v\n", err)
		return 1
	}
	defer logFile.Close()
	logger := slog.New(slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: logLevel()})).With("daemon", os.Getpid())

	hub := jsonrpc.NewHub(logger, 0)
	opts.Notifier, opts.Logger = hub, logger
	ws, err := workspace.Open(ctx, root, opts)
	if err != nil {
		logger.Error("cannot open the workspace", "err", err)
		fmt.Fprintf(stderr, "familiar daemon: %v\n", err)
		return 1
	}
	closeWS := sync.OnceFunc(func() {
		if err := ws.Close(); err != nil {
			logger.Error("close workspace", "err", err)
		}
	})
	defer closeWS()
	inner := workspace.NewService(func(context.Context, string) (*workspace.Workspace, error) { return ws, nil }, ws, version)
	inner.Clients = hub.Clients

	stopRequested := make(chan struct{})
	stored := storedSettings(ws, logger)
	svc := daemon.NewService(inner, stored.IdleExitSec)
	svc.Version, svc.ProtocolVersion, svc.Logger = version, protocolVersion, logger
	// The daemon leads its own session (startDaemon): under autogroup
	// scheduling it would otherwise get as much CPU as the whole editor
	// while it masks and logs a flooding agent's output.
	own := procs.NewOwnSession(nil, logger)
	defer own.Close()
	svc.Yield = own.SetNice
	own.SetNice(stored.AgentNice)
	svc.Clients = hub.Clients
	svc.Busy = daemon.StatsBusy(ws.Orch.ServerStats)
	svc.Stop = sync.OnceFunc(func() { close(stopRequested) })

	srv := jsonrpc.NewServer(svc, hub, logger)
	// Published before the socket accepts, so whoever connects can tell
	// which familiar (and protocol version) it reached.
	info := daemon.Info{PID: os.Getpid(), Version: version, ProtocolVersion: protocolVersion,
		Socket: workspace.SocketPath(dd), Started: time.Now().UTC()}
	if err := daemon.WriteInfo(dd, info); err != nil {
		logger.Error("cannot publish daemon info", "err", err)
	}
	defer daemon.RemoveInfo(dd, info.PID)
	// The listener has its own context: on stop it is closed first, so no
	// client joins a familiar that is going away.
	ln, err := srv.Listen(context.Background(), "unix:"+info.Socket)
	if err != nil {
		logger.Error("cannot listen", "err", err)
		fmt.Fprintf(stderr, "familiar daemon: %v\n", err)
		return 1
	}
	defer ln.Close()
	logger.Info("background familiar ready", "workspace", ws.Root, "socket", ln.Path(),
		"version", version, "protocolVersion", protocolVersion, "idleExit", svc.IdleExit())

	idleCtx, stopIdle := context.WithCancel(ctx)
	idle := make(chan error, 1)
	go func() {
		idle <- daemon.WaitIdle(idleCtx, daemon.IdleOptions{Clients: hub.Clients, Busy: svc.Busy, Timeout: svc.IdleExit})
	}()
	var why string
	select {
	case <-ctx.Done():
		why = "signal"
	case <-stopRequested:
		why = "stop requested"
	case err := <-idle:
		if err == nil {
			why = "idle"
		}
		idle <- err
	}
	stopIdle()
	<-idle
	logger.Info("stopping the background familiar; running agents stop gracefully and stay resumable", "why", why)
	// The workspace first: requests still waiting on a task are answered
	// (familiar is shutting down) while their clients are connected; then
	// the clients go.
	closeWS()
	ln.Close()
	logger.Info("background familiar stopped", "why", why)
	return 0
}

// storedSettings are the settings the workspace starts with.
func storedSettings(ws *workspace.Workspace, logger *slog.Logger) protocol.Settings {
	s := protocol.DefaultSettings()
	if b, err := ws.Store.GetSetting("settings"); err == nil {
		if err := json.Unmarshal(b, &s); err != nil {
			logger.Warn("stored settings unreadable; the daemon uses the defaults", "err", err)
			s = protocol.DefaultSettings()
		}
	}
	return s
}

// forwardToDaemon is `serve --stdio`: join (or start) the background familiar
// of root and forward stdio to it. Only this forwarder ends when the editor
// leaves.
//
// The editor's initialize is held until the familiar joined has begun to
// answer it: a familiar killed (or stopping) as the forwarder joins it may
// take the connection into its socket's backlog and then drop it, and the
// initialize then goes to the next familiar, which Join starts.
func forwardToDaemon(ctx context.Context, root, dd string, extra []string, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) int {
	br := bufio.NewReader(stdin)
	first, err := jsonrpc.ReadFirstFrame(br)
	// Every byte the editor sent, for whoever serves it.
	all := io.MultiReader(bytes.NewReader(first.Bytes), br)
	hold := err == nil && first.Request && first.Method == protocol.MethodInitialize
	if err := os.MkdirAll(dd, 0o700); err != nil {
		return refuse(ctx, startupRefusal(dd, err), all, stdout, stderr, logger)
	}
	for attempt := 1; ; attempt++ {
		conn, info, err := daemon.Join(ctx, daemon.JoinOptions{
			DataDir: dd, Socket: workspace.SocketPath(dd),
			Version: version, ProtocolVersion: protocolVersion,
			Start: startDaemon(root, dd, extra), Logger: logger,
		})
		var mismatch *daemon.MismatchError
		if errors.As(err, &mismatch) {
			return refuse(ctx, protocol.InvalidParams("protocolVersion", mismatch.Error()), all, stdout, stderr, logger)
		}
		if err != nil {
			return refuse(ctx, startupRefusal(dd, err), all, stdout, stderr, logger)
		}
		in := all
		if hold {
			answered, err := jsonrpc.ForwardFirst(ctx, conn, first.Bytes, stdout)
			if !answered {
				conn.Close()
				if ctx.Err() != nil {
					return 0
				}
				if attempt >= maxJoins {
					return refuse(ctx, startupRefusal(dd, fmt.Errorf("the background familiar closed the connection before answering initialize, %d times (last: %w)", attempt, err)),
						all, stdout, stderr, logger)
				}
				logger.Warn("the background familiar closed the connection before answering initialize (killed, crashed or stopping); joining again",
					"pid", info.PID, "attempt", attempt, "err", err)
				// Its socket refuses connections once it is gone, so
				// the next Join starts a new one.
				if err := daemon.WaitGone(ctx, info.PID); err != nil {
					return 0
				}
				continue
			}
			if err != nil {
				logger.Error("forward", "err", err)
				conn.Close()
				return 1
			}
			in = br
		}
		logger.Info("forwarding to the background familiar", "pid", info.PID, "version", info.Version, "dataDir", dd)
		if err := jsonrpc.ForwardConn(ctx, conn, in, stdout); err != nil && !errors.Is(err, context.Canceled) {
			logger.Error("forward", "err", err)
			return 1
		}
		return 0
	}
}

// maxJoins bounds how often a forwarder joins a familiar that closes the
// connection before answering initialize; each was killed or was stopping.
const maxJoins = 10

// refuse answers every request of the editor on stdio with why familiar
// cannot serve it, until the editor leaves, and returns 1. Editors show an
// error response to initialize; what a server they started wrote on its
// stderr before exiting, they do not.
func refuse(ctx context.Context, why *protocol.Error, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) int {
	logger.Error("cannot serve the editor; answering its requests with why", "err", why.Message)
	fmt.Fprintf(stderr, "familiar serve: %s\n", why.Message)
	if err := jsonrpc.NewRefusal(why, logger).ServeStdio(ctx, stdin, stdout); err != nil {
		logger.Error("stdio", "err", err)
	}
	return 1
}

// startupRefusal says why familiar cannot serve a repository whose data dir
// is dd: a data dir it cannot create or write is named with what to do;
// otherwise the reason (a protocol error as it is, such as the store being
// held by another familiar) and where the log is.
func startupRefusal(dd string, err error) *protocol.Error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	var path *fs.PathError
	if errors.As(err, &path) && (strings.HasPrefix(dd+"/", path.Path+"/") || strings.HasPrefix(path.Path, dd+"/")) {
		return protocol.Unavailable(fmt.Sprintf("familiar cannot write its data dir %s (%s %s: %v); make it a directory familiar can write, or give familiar another one with --data-dir or XDG_STATE_HOME.",
			dd, path.Op, path.Path, path.Err))
	}
	return protocol.Unavailable(fmt.Sprintf("familiar cannot serve this repository: %v. Its log is in %s.", err, dd))
}

// startDaemon starts `familiar serve --daemon` for root in its own session
// (setsid: no editor's process group, terminal or signals reach it), with
// stdin on /dev/null and stdout/stderr in daemon.err in the data dir.
func startDaemon(root, dd string, extra []string) func() (<-chan error, error) {
	return func() (<-chan error, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		errFile, err := os.OpenFile(filepath.Join(dd, daemon.ErrFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		defer errFile.Close() // the child has its own copy
		args := append([]string{"serve", "--daemon", "--workspace", root, "--data-dir", dd}, extra...)
		cmd := exec.Command(exe, args...)
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = errFile, errFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		// Registered with procs' reaper: in a session of its own the daemon
		// would otherwise look like an orphan to it.
		wait, err := procs.StartCommand(cmd)
		if err != nil {
			return nil, err
		}
		// Reaps the daemon if it exits while this forwarder runs; when the
		// forwarder exits first, the daemon is reparented and lives on.
		exited := make(chan error, 1)
		go func() { exited <- wait() }()
		return exited, nil
	}
}

// stopCommand is `familiar stop`: stop the background familiar of the
// repository (agents stop gracefully and stay resumable).
func stopCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workspaceFlag := fs.String("workspace", "", "the repository whose familiar to stop (default: the current directory)")
	dataDir := fs.String("data-dir", "", "the data dir of the familiar to stop")
	withHelp(fs, stopHelp, stdout)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	dd := *dataDir
	if dd == "" {
		root := *workspaceFlag
		if root == "" {
			root, _ = os.Getwd()
		}
		loc, ok := workspace.Locate(root)
		if !ok {
			abs, _ := filepath.Abs(root)
			fmt.Fprintf(stderr, "familiar stop: %s is not in a git repository; give --workspace or --data-dir\n", abs)
			return 2
		}
		dd = loc.DataDir
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	info, err := daemon.Stop(ctx, dd, workspace.SocketPath(dd))
	if errors.Is(err, daemon.ErrNoDaemon) {
		fmt.Fprintln(stdout, "no familiar is running for this repository")
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "familiar stop: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "stopped familiar %s (pid %d); interrupted tasks resume with task/resume\n", info.Version, info.PID)
	return 0
}
