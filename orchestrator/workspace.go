package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/dirs"
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
	Orch         *Orchestrator
	Store        *store.Store
	Hooks        *agent.HookServer
	Repo         *worktree.Repo
	Skills       *profiles.Skills
}

// WorkspaceOptions configure OpenWorkspace.
type WorkspaceOptions struct {
	DataDir       string // "" = DefaultDataDir(root)
	WorktreesRoot string // "" = worktree's default
	ClaudePath    string // configured claude binary
	ToolsDir      string // project-local tools dir
	Notifier      Notifier
	Clock         clock.Clock
	Logger        *slog.Logger
	Version       string
	StartHook     func(ctx context.Context, opts *agent.Options)
	// ResumeInterrupted continues the tasks a crash or shutdown interrupted.
	ResumeInterrupted bool
	// Headless: nobody answers questions (familiar run).
	Headless bool
}

// DefaultDataDir is <repo-name>-<short-hash> in familiar's state directory
// (dirs.State: $XDG_STATE_HOME/familiar, else ~/.local/state/familiar on
// Linux and ~/Library/Application Support/familiar/state on macOS).
func DefaultDataDir(root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dirs.State(), filepath.Base(root)+"-"+hex.EncodeToString(sum[:])[:8])
}

// SocketPath is where a workspace's familiar listens for more clients:
// familiar.sock in its data dir, unless that path is too long for a Unix
// socket's address (sun_path holds 104 bytes on macOS, 108 on Linux, the
// final NUL included). Under ~/Library/Application Support/familiar/state on
// macOS, a repository name of some 25 characters is enough. Then it is
// familiar-<uid>/<16 hex digits of the data dir's SHA-256>.sock under
// os.TempDir() ($TMPDIR: per user on macOS, /tmp on Linux): the same for
// every familiar of that data dir, and jsonrpc's Listen makes the directory
// private to the user and refuses one that is not.
func SocketPath(dataDir string) string { return socketPath(dataDir, runtime.GOOS, os.TempDir()) }

// sunPathMax is the longest socket path the platform takes (without the NUL).
func sunPathMax(goos string) int {
	switch goos {
	case "darwin", "freebsd", "netbsd", "openbsd", "dragonfly":
		return 103
	default:
		return 107
	}
}

func socketPath(dataDir, goos, tmp string) string {
	p := filepath.Join(dataDir, "familiar.sock")
	if len(p) <= sunPathMax(goos) {
		return p
	}
	sum := sha256.Sum256([]byte(dataDir))
	return filepath.Join(tmp, "familiar-"+strconv.Itoa(os.Getuid()), hex.EncodeToString(sum[:8])+".sock")
}

// OpenWorkspace opens the repository containing root and everything familiar
// keeps for it. A second familiar on the same data dir fails with
// store.ErrLocked.
func OpenWorkspace(ctx context.Context, root string, o WorkspaceOptions) (*Workspace, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	repo, err := worktree.Open(ctx, root, worktree.Options{Root: o.WorktreesRoot, Logger: o.Logger})
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
		return nil, fmt.Errorf("data dir: %w", err)
	}
	ws.GitVersion, _ = repo.GitVersion(ctx)
	ws.CLI, ws.CLIErr = agent.FindCLI(ctx, o.ClaudePath, o.ToolsDir)
	// The store says when it cannot write (a full disk) and when it can
	// again; the orchestrator warns every client. orchRef is set below.
	var orchRef atomic.Pointer[Orchestrator]
	st, err := store.Open(filepath.Join(ws.DataDir, store.FileName), store.Options{Logger: o.Logger, Clock: o.Clock,
		OnHealth: func(h store.Health) {
			if o := orchRef.Load(); o != nil {
				o.onStoreHealth(h)
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
				o.onSkillsChanged(c)
			}
		},
	})
	if err != nil {
		o.Logger.Warn("skills are not watched; they load once", "err", err)
		skills = profiles.LoadSkills(profiles.DirsFor(ws.Root))
	}
	ws.Skills = skills
	orch, err := New(Config{Skills: skills,
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
