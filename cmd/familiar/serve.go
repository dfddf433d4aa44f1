package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/familiar-dev/familiar/jsonrpc"
	"github.com/familiar-dev/familiar/workspace"
)

// serve runs familiar for editors. `serve --stdio` in a repository only
// forwards stdio to the background familiar of that repository (package
// daemon), starting it if none runs, so editors come and go while agents keep
// running. `serve --daemon` is that background familiar. `serve --stdio
// --no-daemon` (and --listen) serve in this process, as familiar did before
// the daemon: a second `familiar serve --stdio` for the same repository finds
// the socket and forwards its stdio to it.
func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stdio := fs.Bool("stdio", false, "serve one client on stdin/stdout")
	listen := fs.String("listen", "", "also serve clients on unix:PATH (mode 0600)")
	workspaceFlag := fs.String("workspace", "", "the git repository to serve (default: the current directory, else the client's workspaceRoot)")
	dataDir := fs.String("data-dir", "", "where familiar keeps its state (default: $XDG_STATE_HOME/familiar/<repo>-<hash>)")
	resume := fs.Bool("resume-interrupted", false, "continue the tasks a crash or shutdown interrupted")
	worktrees := fs.String("worktrees", "", "where task worktrees are made (default: $XDG_DATA_HOME/familiar/worktrees)")
	noDaemon := fs.Bool("no-daemon", false, "with --stdio: serve in this process; agents stop when the last client leaves")
	beDaemon := fs.Bool("daemon", false, "be the background familiar of --workspace (started by serve --stdio)")
	// --help serves nothing, so stdout is free for it.
	withHelp(fs, serveHelp, stdout)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if !*stdio && *listen == "" && !*beDaemon {
		fmt.Fprintln(stderr, "familiar serve: give --stdio, --listen unix:PATH, or both")
		return 2
	}
	// The workspace, when known now (the current directory or --workspace),
	// is opened at once, so the next window finds the shared socket before
	// any client initializes.
	root := *workspaceFlag
	if root == "" {
		if wd, err := os.Getwd(); err == nil {
			if _, ok := workspace.Locate(wd); ok {
				root = wd
			}
		}
	}
	dd := *dataDir
	if root != "" {
		if loc, ok := workspace.Locate(root); ok {
			root = loc.Root
			if dd == "" {
				dd = loc.DataDir
			}
		} else {
			// Not a repository: said by the workspace's opening, with the
			// path as given.
			root, _ = filepath.Abs(root)
			if dd == "" {
				dd = workspace.DefaultDataDir(root)
			}
		}
	}
	if *beDaemon {
		if root == "" {
			fmt.Fprintln(stderr, "familiar serve --daemon: give --workspace (a git repository)")
			return 2
		}
		return serveDaemon(ctx, root, dd, workspace.Options{
			DataDir: dd, WorktreesRoot: *worktrees, ClaudePath: os.Getenv("FAMILIAR_CLAUDE"),
			ToolsDir: toolsDir(), Version: version, ResumeInterrupted: *resume,
		}, stderr)
	}
	if *stdio && !*noDaemon && *listen == "" && root == "" {
		// Started outside the repository (an editor's extension host often
		// runs in /): the client's initialize names it. Its bytes are
		// replayed to whoever serves the connection.
		br := bufio.NewReader(stdin)
		frame, wsRoot, err := jsonrpc.PeekInitialize(br)
		stdin = io.MultiReader(bytes.NewReader(frame), br)
		if err == nil && wsRoot != "" && filepath.IsAbs(wsRoot) {
			if loc, ok := workspace.Locate(wsRoot); ok {
				root = loc.Root
				if dd == "" {
					dd = loc.DataDir
				}
			}
		}
	}
	if *stdio && !*noDaemon && *listen == "" && root != "" {
		var extra []string
		if *worktrees != "" {
			extra = append(extra, "--worktrees", *worktrees)
		}
		if *resume {
			extra = append(extra, "--resume-interrupted")
		}
		return forwardToDaemon(ctx, root, dd, extra, stdin, stdout, stderr, logger)
	}
	if dd != "" {
		// The log also goes to familiar.log in the data dir.
		if err := os.MkdirAll(dd, 0o700); err == nil {
			if f, err := os.OpenFile(filepath.Join(dd, "familiar.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
				defer f.Close()
				logger = slog.New(slog.NewJSONHandler(io.MultiWriter(stderr, f), &slog.HandlerOptions{Level: logLevel()}))
			}
		}
	}
	hub := jsonrpc.NewHub(logger, 0)
	opts := workspace.Options{
		DataDir: *dataDir, WorktreesRoot: *worktrees, ClaudePath: os.Getenv("FAMILIAR_CLAUDE"),
		ToolsDir: toolsDir(), Notifier: hub, Logger: logger, Version: version, ResumeInterrupted: *resume,
	}
	open := func(ctx context.Context, root string) (*workspace.Workspace, error) {
		return workspace.Open(ctx, root, opts)
	}
	var ws *workspace.Workspace
	if root != "" {
		if sock, ok := liveSocket(dd); *stdio && ok {
			logger.Info("joining the familiar already serving this repository", "socket", sock)
			if err := jsonrpc.Forward(ctx, sock, stdin, stdout); err != nil && !errors.Is(err, context.Canceled) {
				logger.Error("forward", "err", err)
				return 1
			}
			return 0
		}
		var err error
		ws, err = open(ctx, root)
		if err != nil && *stdio && *listen == "" {
			return refuse(ctx, startupRefusal(dd, err), stdin, stdout, stderr, logger)
		}
		if err != nil {
			fmt.Fprintf(stderr, "familiar serve: %v\n", err)
			return 1
		}
		opts.DataDir = ws.DataDir
	}
	svc := workspace.NewService(open, ws, version)
	svc.Clients = hub.Clients
	srv := jsonrpc.NewServer(svc, hub, logger)
	var lmu sync.Mutex // guards listeners
	closeWS := sync.OnceFunc(func() {
		if w := svc.Workspace(); w != nil {
			if err := w.Close(); err != nil {
				logger.Error("close workspace", "err", err)
			}
		}
	})
	defer closeWS()
	// Connections outlive the signal a little: the workspace closes first,
	// so requests still waiting on a task are answered (familiar is shutting
	// down) before the clients are let go.
	connCtx, closeConns := context.WithCancel(context.Background())
	defer closeConns()
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			closeWS()
			closeConns()
		case <-stopped:
		}
	}()
	var listeners []*jsonrpc.Listener
	defer func() {
		lmu.Lock()
		defer lmu.Unlock()
		for _, l := range listeners {
			l.Close()
		}
	}()
	shareSocket := func(w *workspace.Workspace) {
		l, err := srv.Listen(connCtx, "unix:"+workspace.SocketPath(w.DataDir))
		if err != nil {
			logger.Warn("no shared socket; other editor windows cannot join", "err", err)
			return
		}
		lmu.Lock()
		listeners = append(listeners, l)
		lmu.Unlock()
	}
	if ws != nil {
		shareSocket(ws)
	} else {
		// Opened by the first initialize: share it from then on.
		svc.OnOpen = shareSocket
	}
	if *listen != "" {
		l, err := srv.Listen(connCtx, *listen)
		if err != nil {
			fmt.Fprintf(stderr, "familiar serve: %v\n", err)
			return 1
		}
		listeners = append(listeners, l)
	}
	if *stdio {
		if err := srv.ServeStdio(connCtx, stdin, stdout); err != nil {
			logger.Error("stdio", "err", err)
			return 1
		}
		// Other editor windows joined through the socket: keep serving them
		// (and their agents) until the last one leaves.
		waitForClients(ctx, hub.Clients, logger)
		return 0
	}
	<-ctx.Done()
	return 0
}

// waitForClients returns once no client is connected or ctx is done. The hub
// has no change notification; a client leaving is not urgent, so polling
// twice a second is enough.
func waitForClients(ctx context.Context, clients func() int, logger *slog.Logger) {
	if clients() == 0 {
		return
	}
	logger.Info("stdio client left; serving the other windows until they leave", "clients", clients())
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for clients() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
