package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/familiar-dev/familiar/procs"
)

// procAdapter narrows a *procs.Process to what a Session uses.
type procAdapter struct{ p *procs.Process }

func (a procAdapter) Write(b []byte) (int, error) { return a.p.Write(b) }
func (a procAdapter) Resize(cols, rows int) error {
	return a.p.Resize(procs.Size{Cols: uint16(cols), Rows: uint16(rows)})
}
func (a procAdapter) Terminate(ctx context.Context) error { return a.p.Terminate(ctx) }
func (a procAdapter) Done() <-chan struct{}               { return a.p.Done() }
func (a procAdapter) PID() int                            { return a.p.Identity().PID }
func (a procAdapter) exitStatus() Exited {
	st, _ := a.p.ExitStatus()
	x := Exited{Code: st.Code}
	if st.Signaled() {
		x.Signal = procs.SignalName(st.Signal)
	}
	if x.Code != 0 {
		// What claude wrote last: its terminal, or stdout and stderr.
		out := string(a.p.Output().Tail().Data)
		if e := a.p.Stderr(); e != nil {
			out += "\n" + string(e.Tail().Data)
		}
		x.Refusal = startupRefusal(out)
	}
	return x
}

// Identity is the process identity to persist (pid reuse check on restart).
func (s *Session) Identity() procs.Identity {
	if a, ok := s.proc.(procAdapter); ok {
		return a.p.Identity()
	}
	return procs.Identity{}
}

// LowerPriority lowers claude's niceness, and its process group's, to
// nice (procs.Process.LowerPriority): a claude started at the priority of
// what a person waits for takes the agents' once its work begins.
func (s *Session) LowerPriority(nice int) error {
	if a, ok := s.proc.(procAdapter); ok && nice > 0 {
		return a.p.LowerPriority(nice)
	}
	return nil
}

// Start starts claude for one session and returns once the process runs.
// Events flow to opts.OnEvent until the Exited event, after which Done is
// closed.
func Start(ctx context.Context, opts Options) (*Session, error) {
	// A start that was called off (familiar shutting down) spawns nothing.
	if err := ctx.Err(); err != nil {
		return nil, &StartError{Err: err}
	}
	entered := time.Now()
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	s := &Session{
		opts:    opts,
		logger:  opts.Logger.With("session", opts.SessionID),
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.tr = newTranscriptFeed(s)
	d, err := drivers[opts.Driver](s)
	if err != nil {
		s.cancel()
		return nil, err
	}
	s.drv = d

	settings, extraEnv, unregister := d.prepare()
	if opts.Sandbox != nil {
		if settings == nil {
			settings = map[string]any{}
		}
		settings["sandbox"] = opts.Sandbox
	}
	if extraEnv == nil {
		extraEnv = map[string]string{}
	}
	for k, v := range opts.ExtraEnv {
		extraEnv[k] = v
	}
	s.ev = newEmitter(opts.OnEvent)
	fail := func(err error) (*Session, error) {
		s.watchdog.Stop()
		if unregister != nil {
			unregister()
		}
		s.cancel()
		s.ev.close()
		return nil, err
	}
	began := time.Now()
	settingsPath, err := opts.prepareConfig(settings)
	if err != nil {
		return fail(err)
	}
	configured := time.Now()
	cfg := procs.Config{
		Argv:      append([]string{opts.CLI.Path}, d.args(settingsPath)...),
		Dir:       opts.Dir,
		Env:       SessionEnv(opts.Env, opts.ConfigDir, extraEnv),
		Pipes:     d.pipes(),
		Size:      procs.Size{Cols: uint16(opts.Cols), Rows: uint16(opts.Rows)},
		LogPath:   opts.LogPath,
		LogFilter: d.logFilter(opts.LogFilter),
		OnLogError: func(err error) {
			s.emit(Event{Kind: EventProblem, Problem: ProblemOutputLog + ": " + err.Error()})
		},
		Grace: opts.GraceTimeout,
		Nice:  opts.Nice,
		// Under a PTY claude leads a session anyway.
		OwnSession: opts.OwnSession && d.pipes(),
		Clock:      opts.Clock,
		Logger:     s.logger,
	}
	if opts.NoProgress > 0 {
		// Progress is what the agent does, not bytes: the TUI's spinner
		// repaints while a turn hangs. Hooks, stream lines and changes of the
		// classified screen kick it; questions pause it.
		s.watchdog = procs.NewWatchdog(opts.Clock, opts.NoProgress, func() {
			s.emit(Event{Kind: EventProblem, Problem: s.noProgress()})
		})
		s.qs.onCount = s.questionsChanged
	}
	if err := ctx.Err(); err != nil {
		return fail(&StartError{Err: err})
	}
	p, err := procs.Start(cfg)
	if err != nil {
		return fail(&StartError{Transient: true, Err: err})
	}
	s.proc = procAdapter{p}
	s.spawned.mcpConfigPath, s.spawned.env = opts.MCPConfigPath, cfg.Env
	// What `familiar bench --only firstrequest` splits the spawn into.
	s.logger.Debug(SpawnRecord, slog.Duration("prepare", began.Sub(entered)), slog.Duration("config", configured.Sub(began)),
		slog.Duration("exec", time.Since(configured)))
	s.setActivity(Activity{State: ActivityThinking, Detail: "starting"})
	s.wg.Add(1)
	go s.watchStopped()

	sub := p.Output().Subscribe(procs.SubscribeOptions{MaxQueued: 64 << 20})
	var readerDone = make(chan struct{})
	d.attach()
	go func() {
		defer close(readerDone)
		s.readOutput(sub)
	}()
	d.firstPrompt()
	go s.watchExit(func() {
		s.watchdog.Stop()
		_ = p.Close() // terminates leftovers and drains output
		<-readerDone
		sub.Close()
		s.tr.close()
		if unregister != nil {
			unregister()
		}
		d.exited()
	})
	return s, nil
}

// SpawnRecord is the message of the debug record with how long a start
// took to get ready ("prepare": the driver, its hook route), to write the
// session's config dir and settings ("config") and to start the process
// ("exec"). Measured on the real clock: it is a measurement, not a timeout.
const SpawnRecord = "agent spawned"

// maxArgPrompt is the longest first prompt passed on the command line.
const maxArgPrompt = 100 << 10

// ProblemOutputLog starts the Problem text of a failed write to the raw
// output log (e.g. the disk is full): the task's record is incomplete.
const ProblemOutputLog = "writing the output log failed"

// ProblemNoProgress is the Problem text of the no-progress watchdog.
const ProblemNoProgress = "no output for the no-progress timeout"

// readOutput takes every output chunk in order to the driver.
func (s *Session) readOutput(sub *procs.Subscription) {
	for {
		c, err := sub.Next(context.Background())
		if c.Dropped > 0 {
			s.emit(Event{Kind: EventProblem, Problem: fmt.Sprintf("%d bytes of output were not seen by the driver", c.Dropped)})
		}
		if len(c.Data) > 0 {
			s.drv.output(c.Data)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, procs.ErrClosed) {
				s.logger.Debug("output reader stopped", "err", err)
			}
			return
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
