package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/familiar-dev/familiar/agent/screen"
	"github.com/familiar-dev/familiar/agent/transcript"
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

// Start starts claude for one session and returns once the process runs.
// Events flow to opts.OnEvent until the Exited event, after which Done is
// closed.
func Start(ctx context.Context, opts Options) (*Session, error) {
	// A start that was called off (familiar shutting down) spawns nothing.
	if err := ctx.Err(); err != nil {
		return nil, &StartError{Err: err}
	}
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

	var (
		settings   map[string]any
		unregister func()
		argv       []string
		extraEnv   = map[string]string{}
	)
	if opts.Driver == DriverPTY {
		s.pty = &ptyDriver{s: s, dirty: make(chan struct{}, 1)}
		url, secret, unreg := opts.Hooks.Register(s.pty.hook)
		unregister = unreg
		settings = sessionHookSettings(DriverPTY, opts.CLI.Version, url, secret, int(opts.HookTimeout/time.Second))
		for k, v := range screen.RendererEnv() {
			extraEnv[k] = v
		}
	} else {
		s.stream = &streamDriver{s: s}
		if opts.Hooks != nil && HasSkillShellHook(opts.CLI.Version) {
			// Tool calls ask over stdio; a skill's shell commands have only
			// their hook (CLAUDE-CLI.md Part B §3.1).
			url, secret, unreg := opts.Hooks.Register(s.streamHook)
			unregister = unreg
			settings = sessionHookSettings(DriverStream, opts.CLI.Version, url, secret, int(opts.HookTimeout/time.Second))
		}
		// The raw output shows stream-json without its stream_event lines
		// (see lineDropper).
		s.stream.output = &lineDropper{w: writerFunc(func(p []byte) (int, error) {
			s.emit(Event{Kind: EventOutput, Output: append([]byte(nil), p...)})
			return len(p), nil
		})}
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
	settingsPath, err := opts.prepareConfig(settings)
	if err != nil {
		return fail(err)
	}
	if opts.Driver == DriverPTY {
		argv = append([]string{opts.CLI.Path}, opts.commonArgs(settingsPath)...)
		if opts.Prompt != "" && len(opts.Prompt) <= maxArgPrompt {
			// A positional prompt is submitted by the CLI itself at start:
			// no typing race with its first paint (CLAUDE-CLI.md §6).
			argv = append(argv, "--", opts.Prompt)
		}
	} else {
		argv = append([]string{opts.CLI.Path}, streamArgs(&opts, settingsPath)...)
	}
	cfg := procs.Config{
		Argv:      argv,
		Dir:       opts.Dir,
		Env:       SessionEnv(opts.Env, opts.ConfigDir, extraEnv),
		Pipes:     opts.Driver == DriverStream,
		Size:      procs.Size{Cols: uint16(opts.Cols), Rows: uint16(opts.Rows)},
		LogPath:   opts.LogPath,
		LogFilter: logFilter(opts),
		OnLogError: func(err error) {
			s.emit(Event{Kind: EventProblem, Problem: ProblemOutputLog + ": " + err.Error()})
		},
		Grace:  opts.GraceTimeout,
		Nice:   opts.Nice,
		Clock:  opts.Clock,
		Logger: s.logger,
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
	if s.pty != nil {
		s.tr.follow(transcript.FilePath(opts.ConfigDir, opts.Dir, opts.SessionID))
	}
	s.setActivity(Activity{State: ActivityThinking, Detail: "starting"})
	s.wg.Add(1)
	go s.watchStopped()

	sub := p.Output().Subscribe(procs.SubscribeOptions{MaxQueued: 64 << 20})
	var readerDone = make(chan struct{})
	if s.pty != nil {
		s.pty.scr = screen.New(opts.Cols, opts.Rows, writerFunc(s.proc.Write))
		s.wg.Add(1)
		go s.pty.classifyLoop()
	}
	go func() {
		defer close(readerDone)
		s.readOutput(sub)
	}()
	if s.pty != nil && len(opts.Prompt) > maxArgPrompt {
		// Too long for one argument (Linux caps one at 128 KiB): typed as a
		// bracketed paste once the prompt is ready.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.pty.sendPrompt(s.ctx, opts.Prompt); err != nil {
				s.emit(Event{Kind: EventProblem, Problem: "could not type the first prompt: " + err.Error()})
			}
		}()
	}
	if s.stream != nil {
		// The stream driver's stderr is diagnostics; it goes to the log only.
		if opts.Prompt != "" {
			if err := s.stream.sendPrompt(opts.Prompt); err != nil {
				s.emit(Event{Kind: EventProblem, Problem: err.Error()})
			}
		}
	}
	go s.watchExit(func() {
		s.watchdog.Stop()
		_ = p.Close() // terminates leftovers and drains output
		<-readerDone
		sub.Close()
		s.tr.close()
		if unregister != nil {
			unregister()
		}
		if s.pty != nil {
			_ = s.pty.scr.Close()
		}
	})
	return s, nil
}

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
			if s.pty != nil {
				s.pty.onOutput(c.Data)
			} else {
				if !s.opts.NoOutputEvents {
					_, _ = s.stream.output.Write(c.Data)
				}
				s.stream.feed(c.Data)
			}
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

// logFilter is the output log's filter: opts.LogFilter, behind which the
// stream driver drops its stream_event lines (see lineDropper).
func logFilter(opts Options) func(io.Writer) io.WriteCloser {
	if opts.Driver != DriverStream {
		return opts.LogFilter
	}
	return func(w io.Writer) io.WriteCloser {
		if opts.LogFilter != nil {
			return &lineDropper{w: opts.LogFilter(w), closeW: true}
		}
		return &lineDropper{w: w}
	}
}
