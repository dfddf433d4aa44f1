package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/familiar-dev/familiar/protocol"
)

// Service is the protocol.Server of the daemon: Inner (the workspace's
// service) for everything, except for the lifecycle, which belongs to the
// daemon and not to any one editor.
type Service struct {
	protocol.Server
	Version         string
	ProtocolVersion int
	Logger          *slog.Logger
	// Clients counts the connected (initialized) clients.
	Clients func() int
	// Busy says what keeps familiar busy, "" when idle (see IdleOptions).
	Busy func(context.Context) (string, error)
	// Stop asks the daemon to stop; it must not block (the daemon stops the
	// agents after this request is answered).
	Stop func()
	// Yield, if set, is called with the agentNice setting whenever a client
	// sets it: the daemon's own work on the agents' output yields to the
	// editor as the agents do (procs.SetOwnSessionNice).
	Yield func(nice int)

	idleExitSec atomic.Int64
}

// NewService wraps inner; idleExitSec is the stored setting.
func NewService(inner protocol.Server, idleExitSec int) *Service {
	s := &Service{Server: inner, ProtocolVersion: protocol.ProtocolVersion, Logger: slog.New(slog.DiscardHandler)}
	s.idleExitSec.Store(int64(idleExitSec))
	return s
}

// IdleExit is the current idleExitSec setting as a duration.
func (s *Service) IdleExit() time.Duration {
	return time.Duration(s.idleExitSec.Load()) * time.Second
}

// Initialize refuses a client that speaks another protocol version, naming
// both, then initializes as the orchestrator does.
func (s *Service) Initialize(ctx context.Context, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	if p.ProtocolVersion != 0 && p.ProtocolVersion != s.ProtocolVersion {
		return nil, VersionMismatch(p.ProtocolVersion, s.ProtocolVersion, s.Version)
	}
	res, err := s.Server.Initialize(ctx, p)
	if err != nil {
		return nil, err
	}
	if p.Settings != nil && p.Settings.IdleExitSec != nil {
		s.idleExitSec.Store(int64(*p.Settings.IdleExitSec))
	}
	if p.Settings != nil && p.Settings.AgentNice != nil && s.Yield != nil {
		s.Yield(*p.Settings.AgentNice)
	}
	res.ProtocolVersion = s.ProtocolVersion
	return res, nil
}

// VersionMismatch is the error a client speaking protocol version client
// gets from a familiar speaking server.
func VersionMismatch(client, server int, serverVersion string) *protocol.Error {
	return protocol.InvalidParams("protocolVersion", fmt.Sprintf(
		"the editor speaks familiar protocol version %d, but the familiar running for this repository (version %s) speaks version %d; "+
			"update the editor extension or familiar so they match, or stop the running familiar with `familiar stop` once its tasks are done",
		client, serverVersion, server))
}

// Shutdown ends only the caller's session: an editor leaving (reload,
// crash, shutdown/exit) never stops agents. familiar stop and server/stop
// stop them on purpose.
func (s *Service) Shutdown(ctx context.Context) error {
	s.Logger.Info("an editor shut down its session; the agents keep running")
	return nil
}

// SettingsUpdate keeps idleExitSec and the daemon's niceness current.
func (s *Service) SettingsUpdate(ctx context.Context, p *protocol.SettingsUpdateParams) (*protocol.Settings, error) {
	res, err := s.Server.SettingsUpdate(ctx, p)
	if err == nil {
		s.idleExitSec.Store(int64(res.IdleExitSec))
		if s.Yield != nil {
			s.Yield(res.AgentNice)
		}
	}
	return res, err
}

// ServerStop stops the daemon; with IfIdle only when no client is
// connected and nothing is queued, running or waiting.
func (s *Service) ServerStop(ctx context.Context, p *protocol.ServerStopParams) (*protocol.ServerStopResult, error) {
	res := &protocol.ServerStopResult{Version: s.Version, ProtocolVersion: s.ProtocolVersion}
	if p.IfIdle {
		if n := s.Clients(); n > 0 {
			res.Busy = fmt.Sprintf("%d editor(s) connected", n)
			return res, nil
		}
		busy, err := s.Busy(ctx)
		if err != nil {
			return nil, err
		}
		if busy != "" {
			res.Busy = busy
			return res, nil
		}
	}
	s.Logger.Info("stopping on request", "ifIdle", p.IfIdle)
	res.Stopping = true
	s.Stop()
	return res, nil
}

// StatsBusy is a Busy function over server/stats: queued and live (starting,
// running, waiting) tasks keep the daemon up.
func StatsBusy(stats func(context.Context) (*protocol.ServerStats, error)) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		st, err := stats(ctx)
		if err != nil {
			return "", err
		}
		if st.QueueDepth == 0 && st.Running == 0 {
			return "", nil
		}
		tasks := func(n int) string {
			if n == 1 {
				return "1 task"
			}
			return fmt.Sprintf("%d tasks", n)
		}
		return fmt.Sprintf("%s queued, %s starting, running or waiting", tasks(st.QueueDepth), tasks(st.Running)), nil
	}
}
