// Package workspace is familiar's composition root: it finds a repository's
// root and data dir (Locate), opens everything familiar keeps for it (the git
// repository, the store, the hook listener, the skills, the orchestrator) and
// serves the protocol over it (Service). cmd/familiar, batch, bench, demo and
// doctor build familiar through it; the engine (orchestrator) knows nothing
// of it.
package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/dirs"
	"github.com/familiar-dev/familiar/orchestrator"
	"github.com/familiar-dev/familiar/profiles"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/store"
	"github.com/familiar-dev/familiar/worktree"
)

// Workspace is one repository familiar serves, with everything opened for
// it: the git repository, the store in its data dir, the hook listener and
// the orchestrator.
type Workspace struct {
	Root         string
	DataDir      string
	WorktreesDir string
	CLI          agent.CLI
	CLIErr       error
	GitVersion   string
	Orch         *orchestrator.Orchestrator
	Store        *store.Store
	Hooks        *agent.HookServer
	Repo         *worktree.Repo
	Skills       *profiles.Skills
}

// Options configure Open.
type Options struct {
	DataDir       string // "" = DefaultDataDir(root)
	WorktreesRoot string // "" = worktree's default
	ClaudePath    string // configured claude binary
	ToolsDir      string // project-local tools dir
	Notifier      orchestrator.Notifier
	Clock         clock.Clock
	Logger        *slog.Logger
	Version       string
	StartHook     func(ctx context.Context, opts *agent.Options)
	// ResumeInterrupted continues the tasks a crash or shutdown interrupted.
	ResumeInterrupted bool
	// Headless: nobody answers questions (familiar run).
	Headless bool
}

// Open opens the repository containing root and everything familiar
// keeps for it. A second familiar on the same data dir fails with
// store.ErrLocked.
func Open(ctx context.Context, root string, o Options) (*Workspace, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	wtRoot := o.WorktreesRoot
	if wtRoot == "" {
		wtRoot = dirs.Worktrees() // on macOS without the space of Application Support
	}
	if bad := dirs.BuildUnsafe(wtRoot); bad != "" {
		o.Logger.Warn("the worktree root has characters build tools reject; tasks whose builds run configure or make may fail there", "root", wtRoot, "has", bad)
	}
	repo, err := worktree.Open(ctx, root, worktree.Options{Root: wtRoot, Logger: o.Logger})
	if err != nil {
		if errors.Is(err, worktree.ErrNotFound) || errors.Is(err, worktree.ErrInvalid) {
			return nil, protocol.InvalidParams("workspaceRoot", fmt.Sprintf("%s is not a git repository", root))
		}
		return nil, fmt.Errorf("open repository %s: %w", root, err)
	}
	ws := &Workspace{Root: repo.Root(), WorktreesDir: repo.WorktreesDir(), Repo: repo}
	ws.DataDir = o.DataDir
	if ws.DataDir == "" {
		ws.DataDir = DefaultDataDir(ws.Root)
	}
	if err := os.MkdirAll(ws.DataDir, 0o700); err != nil {
		// The path error stays whole: familiar serve says it with what to
		// do (startupRefusal).
		return nil, fmt.Errorf("data dir: %w", err)
	}
	ws.GitVersion, _ = repo.GitVersion(ctx)
	ws.CLI, ws.CLIErr = agent.FindCLI(ctx, o.ClaudePath, o.ToolsDir)
	// The store says when it cannot write (a full disk) and when it can
	// again; the orchestrator warns every client. orchRef is set below.
	var orchRef atomic.Pointer[orchestrator.Orchestrator]
	st, err := store.Open(filepath.Join(ws.DataDir, store.FileName), store.Options{Logger: o.Logger, Clock: o.Clock,
		OnHealth: func(h store.Health) {
			if o := orchRef.Load(); o != nil {
				o.OnStoreHealth(h)
			}
		}})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return nil, protocol.Unavailable(err.Error())
		}
		return nil, fmt.Errorf("open store: %w", err)
	}
	ws.Store = st
	hooks, err := agent.NewHookServer(o.Logger)
	if err != nil {
		st.Close()
		return nil, err
	}
	ws.Hooks = hooks
	settings := protocol.DefaultSettings()
	if b, err := st.GetSetting("settings"); err == nil {
		if err := json.Unmarshal(b, &settings); err != nil {
			o.Logger.Warn("stored settings unreadable; using defaults", "err", err)
			settings = protocol.DefaultSettings()
		}
	}
	// Skills reload when their files change; the orchestrator announces it.
	skills, err := profiles.WatchSkills(profiles.SkillsOptions{
		Dirs: profiles.DirsFor(ws.Root), Clock: o.Clock, Logger: o.Logger,
		OnChange: func(c profiles.SkillsChange) {
			if o := orchRef.Load(); o != nil {
				o.OnSkillsChanged(c)
			}
		},
	})
	if err != nil {
		o.Logger.Warn("skills are not watched; they load once", "err", err)
		skills = profiles.LoadSkills(profiles.DirsFor(ws.Root))
	}
	ws.Skills = skills
	orch, err := orchestrator.New(orchestrator.Config{Skills: skills,
		Repo: repo, Store: st, DataDir: ws.DataDir, Hooks: hooks, CLI: ws.CLI, CLIErr: ws.CLIErr,
		Notifier: o.Notifier, Settings: settings, Clock: o.Clock, Logger: o.Logger,
		Version: o.Version, GitVer: ws.GitVersion, StartHook: o.StartHook, ResumeInterrupted: o.ResumeInterrupted, Headless: o.Headless,
	})
	if err != nil {
		skills.Close()
		hooks.Close()
		st.Close()
		return nil, err
	}
	ws.Orch = orch
	orchRef.Store(orch)
	return ws, nil
}

// Contains reports whether dir is the workspace root or inside it.
func (ws *Workspace) Contains(dir string) bool {
	return dir == ws.Root || strings.HasPrefix(dir, ws.Root+string(filepath.Separator))
}

// Close stops the agents and closes everything the workspace opened.
func (ws *Workspace) Close() error {
	err := ws.Orch.Close()
	err = errors.Join(err, ws.Skills.Close())
	err = errors.Join(err, ws.Hooks.Close())
	return errors.Join(err, ws.Store.Close())
}
