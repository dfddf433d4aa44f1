package workspace

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/familiar-dev/familiar/orchestrator"
	"github.com/familiar-dev/familiar/protocol"
)

var _ protocol.Server = (*Service)(nil)

// Opener opens the workspace (repository) a Service serves.
type Opener func(ctx context.Context, root string) (*Workspace, error)

// Service implements protocol.Server: initialize opens the workspace once;
// every other method goes to its Orchestrator. One Service serves every
// client of one familiar (stdio and socket), so all of them see the same
// tasks.
type Service struct {
	open    Opener
	version string
	// OnOpen, when set, is called once the workspace is opened by an
	// initialize (familiar serve then listens on its socket).
	OnOpen func(*Workspace)
	// Clients, when set, counts the connected clients: a shutdown from one
	// editor window must not stop the agents another window is watching.
	Clients func() int

	mu sync.Mutex
	ws *Workspace // guarded by mu; set by the first successful initialize
}

// NewService returns a Service that opens its workspace with open. ws, when
// not nil, is already open (familiar serve was started in a repository).
func NewService(open Opener, ws *Workspace, version string) *Service {
	return &Service{open: open, ws: ws, version: version}
}

// Workspace returns the open workspace, nil before initialize.
func (s *Service) Workspace() *Workspace {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ws
}

func (s *Service) orch() (*orchestrator.Orchestrator, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ws == nil {
		return nil, protocol.ServerNotInitialized()
	}
	return s.ws.Orch, nil
}

// call and run are the methods the orchestrator answers as they are
// (m, a method expression such as (*orchestrator.Orchestrator).TaskGet):
// before initialize the client is told so, as every method but initialize
// and shutdown must.
func call[P, R any](s *Service, ctx context.Context, p P, m func(*orchestrator.Orchestrator, context.Context, P) (R, error)) (R, error) {
	o, err := s.orch()
	if err != nil {
		var none R
		return none, err
	}
	return m(o, ctx, p)
}

func run[P any](s *Service, ctx context.Context, p P, m func(*orchestrator.Orchestrator, context.Context, P) error) error {
	o, err := s.orch()
	if err != nil {
		return err
	}
	return m(o, ctx, p)
}

// Initialize opens the workspace (or checks the client names the one
// already open) and reports what this familiar can do.
func (s *Service) Initialize(ctx context.Context, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	root, err := filepath.Abs(p.WorkspaceRoot)
	if err != nil {
		return nil, protocol.InvalidParams("workspaceRoot", err.Error())
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	s.mu.Lock()
	ws := s.ws
	if ws == nil {
		ws, err = s.open(ctx, root)
		if err != nil {
			s.mu.Unlock()
			// One error boundary (issue 38): by the error's kind, and an
			// error of no kind is internal (logged whole, its text not sent).
			return nil, protocol.ErrorOf(err, protocol.ErrorContext{What: "open " + root, Field: "workspaceRoot"})
		}
		s.ws = ws
		if s.OnOpen != nil {
			s.OnOpen(ws)
		}
	}
	s.mu.Unlock()
	if !ws.Contains(root) {
		return nil, protocol.InvalidParams("workspaceRoot", fmt.Sprintf("this familiar serves %s, not %s; start another familiar for that repository", ws.Root, root))
	}
	if p.Settings != nil {
		if _, err := ws.Orch.UpdateSettings(ctx, p.Settings); err != nil {
			return nil, err
		}
	}
	res := &protocol.InitializeResult{
		ServerInfo:      protocol.ServerInfo{Name: protocol.ServerName, Version: s.version},
		ProtocolVersion: protocol.ProtocolVersion,
		Capabilities:    protocol.Capabilities{Drivers: protocol.Drivers},
		Workspace:       protocol.WorkspaceInfo{Root: ws.Root, DataDir: ws.DataDir, WorktreesDir: ws.WorktreesDir},
		Claude: protocol.ClaudeStatus{Available: ws.CLIErr == nil, Path: ws.CLI.Path, Version: ws.CLI.Version,
			Support: string(ws.CLI.Support), Warning: ws.CLI.Warning},
		Git: protocol.GitStatus{Available: true, Version: ws.GitVersion},
	}
	if ws.CLIErr != nil {
		res.Claude.Problem = ws.CLIErr.Error()
	}
	res.Claude.Auth = ws.Orch.ClientInitialized()
	return res, nil
}

// Shutdown stops every agent gracefully; state is saved. While other
// clients are connected it only ends the caller's session.
func (s *Service) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	ws := s.ws
	s.mu.Unlock()
	if ws == nil {
		return nil
	}
	if s.Clients != nil && s.Clients() > 1 {
		return nil
	}
	return ws.Orch.Close()
}

func (s *Service) SettingsUpdate(ctx context.Context, p *protocol.SettingsUpdateParams) (*protocol.Settings, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.UpdateSettings(ctx, p.Settings)
}

func (s *Service) ServerStats(ctx context.Context, p *protocol.ServerStatsParams) (*protocol.ServerStats, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.ServerStats(ctx)
}

func (s *Service) ProfilesList(ctx context.Context, p *protocol.ProfilesListParams) ([]protocol.Profile, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.ProfilesList(ctx)
}

func (s *Service) SkillsList(ctx context.Context, p *protocol.SkillsListParams) ([]protocol.Skill, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.SkillsList(ctx)
}

func (s *Service) SkillsGet(ctx context.Context, p *protocol.SkillsGetParams) (*protocol.SkillDetail, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.SkillsGet(ctx, p.Name)
}

func (s *Service) McpPresets(ctx context.Context, p *protocol.McpPresetsParams) ([]protocol.McpPreset, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.McpPresets(ctx)
}

func (s *Service) McpCheck(ctx context.Context, p *protocol.McpCheckParams) (*protocol.McpCheckResult, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.McpCheck(ctx, p.Servers)
}

// ServerStop is the background familiar's (daemon.Service overrides it): a
// familiar serving in its editor's process (serve --no-daemon, --listen)
// stops when its last client leaves, so there is nothing to stop on purpose.
func (s *Service) ServerStop(ctx context.Context, p *protocol.ServerStopParams) (*protocol.ServerStopResult, error) {
	return nil, protocol.FailedPrecondition("This familiar serves in its editor's process (serve --no-daemon or --listen), not in the background; it stops when its last client leaves.", "")
}
