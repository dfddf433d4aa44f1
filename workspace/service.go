package workspace

import (
	"context"
	"errors"
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
			var pe *protocol.Error
			if errors.As(err, &pe) {
				return nil, err
			}
			return nil, protocol.InvalidParams("workspaceRoot", err.Error())
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

func (s *Service) TaskCreate(ctx context.Context, p *protocol.TaskCreateParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskCreate)
}

func (s *Service) TaskGet(ctx context.Context, p *protocol.TaskGetParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskGet)
}

func (s *Service) TaskList(ctx context.Context, p *protocol.TaskListParams) (*protocol.TaskListResult, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskList)
}

func (s *Service) TaskCancel(ctx context.Context, p *protocol.TaskCancelParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskCancel)
}

func (s *Service) TaskRespond(ctx context.Context, p *protocol.TaskRespondParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskRespond)
}

func (s *Service) TaskSend(ctx context.Context, p *protocol.TaskSendParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskSend)
}

func (s *Service) TaskInput(ctx context.Context, p *protocol.TaskInputParams) error {
	return run(s, ctx, p, (*orchestrator.Orchestrator).TaskInput)
}

func (s *Service) TaskResize(ctx context.Context, p *protocol.TaskResizeParams) error {
	return run(s, ctx, p, (*orchestrator.Orchestrator).TaskResize)
}

func (s *Service) TaskScreen(ctx context.Context, p *protocol.TaskScreenParams) (*protocol.TaskScreenResult, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskScreen)
}

func (s *Service) TaskOutput(ctx context.Context, p *protocol.TaskOutputParams) (*protocol.TaskOutputResult, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskOutput)
}

func (s *Service) TaskReorder(ctx context.Context, p *protocol.TaskReorderParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskReorder)
}

func (s *Service) TaskDiff(ctx context.Context, p *protocol.TaskDiffParams) (*protocol.TaskDiffResult, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskDiff)
}

func (s *Service) TaskArchive(ctx context.Context, p *protocol.TaskArchiveParams) (*protocol.TaskArchiveResult, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskArchive)
}

func (s *Service) TaskRemove(ctx context.Context, p *protocol.TaskRemoveParams) error {
	return run(s, ctx, p, (*orchestrator.Orchestrator).TaskRemove)
}

func (s *Service) TaskEvents(ctx context.Context, p *protocol.TaskEventsParams) (*protocol.TaskEventsResult, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskEvents)
}

func (s *Service) ServerStats(ctx context.Context, p *protocol.ServerStatsParams) (*protocol.ServerStats, error) {
	o, err := s.orch()
	if err != nil {
		return nil, err
	}
	return o.ServerStats(ctx)
}

func (s *Service) TaskPause(ctx context.Context, p *protocol.TaskPauseParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskPause)
}

func (s *Service) TaskResume(ctx context.Context, p *protocol.TaskResumeParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskResume)
}

func (s *Service) TaskRetry(ctx context.Context, p *protocol.TaskRetryParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskRetry)
}

func (s *Service) TaskSetMode(ctx context.Context, p *protocol.TaskSetModeParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskSetMode)
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

func (s *Service) TaskMerge(ctx context.Context, p *protocol.TaskMergeParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskMerge)
}

func (s *Service) TaskUndo(ctx context.Context, p *protocol.TaskUndoParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskUndo)
}

func (s *Service) TaskInterrupt(ctx context.Context, p *protocol.TaskInterruptParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskInterrupt)
}

// ServerStop is the background familiar's (daemon.Service overrides it): a
// familiar serving in its editor's process (serve --no-daemon, --listen)
// stops when its last client leaves, so there is nothing to stop on purpose.
func (s *Service) ServerStop(ctx context.Context, p *protocol.ServerStopParams) (*protocol.ServerStopResult, error) {
	return nil, protocol.FailedPrecondition("This familiar serves in its editor's process (serve --no-daemon or --listen), not in the background; it stops when its last client leaves.", "")
}

func (s *Service) TaskMarkDone(ctx context.Context, p *protocol.TaskMarkDoneParams) (*protocol.Task, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskMarkDone)
}

func (s *Service) TaskText(ctx context.Context, p *protocol.TaskTextParams) (*protocol.TaskTextResult, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).TaskText)
}

func (s *Service) PolicyList(ctx context.Context, p *protocol.PolicyListParams) (*protocol.PolicyListResult, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).PolicyList)
}

func (s *Service) PolicyRevoke(ctx context.Context, p *protocol.PolicyRevokeParams) (*protocol.PolicyRevokeResult, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).PolicyRevoke)
}

func (s *Service) QueueMerge(ctx context.Context, p *protocol.QueueMergeParams) (*protocol.Queue, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).QueueMerge)
}

func (s *Service) QueueStatus(ctx context.Context, p *protocol.QueueStatusParams) (*protocol.QueueStatusResult, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).QueueStatus)
}

func (s *Service) QueueCancel(ctx context.Context, p *protocol.QueueCancelParams) (*protocol.Queue, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).QueueCancel)
}

func (s *Service) QueueUndo(ctx context.Context, p *protocol.QueueUndoParams) (*protocol.Queue, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).QueueUndo)
}

func (s *Service) AuditList(ctx context.Context, p *protocol.AuditListParams) (*protocol.AuditListResult, error) {
	return call(s, ctx, p, (*orchestrator.Orchestrator).AuditList)
}
