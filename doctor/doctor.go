// Package doctor checks that a machine can run familiar: git, the claude CLI
// and its version, credentials (present, never printed), the data dir, and
// claude's sandbox (bubblewrap and socat on Linux). Each
// failure comes with a hint that fixes it.
//
// It only reads and reports; it never installs or changes anything.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/dirs"
	"github.com/familiar-dev/familiar/mcp"
	"github.com/familiar-dev/familiar/repoconfig"
	"github.com/familiar-dev/familiar/sandbox"
	"github.com/familiar-dev/familiar/store"
	"github.com/familiar-dev/familiar/workspace"
	"github.com/familiar-dev/familiar/worktree"
)

// Options says where to look.
type Options struct {
	ClaudePath string // configured claude binary, "" to search
	ToolsDir   string // project-local tools dir
	DataDir    string // "" = default state dir
	Dir        string // the repository whose .familiar/config.yaml is checked ("": the working directory)
	Logger     *slog.Logger
}

// Check is the outcome of one check.
type Check struct {
	Name     string
	OK       bool
	Blocking bool   // a failure here means familiar cannot run tasks
	Detail   string // what was found
	Hint     string // how to fix a failure
}

// Checks runs every check.
func Checks(ctx context.Context, o Options) []Check {
	checks := []Check{
		checkGit(ctx),
		checkClaude(ctx, o),
		checkCredentials(),
		checkDataDir(o.DataDir),
		checkLock(),
		checkStoreRepairs(),
		checkWorktreesDir(),
		checkLoopback(),
		checkSandbox(ctx),
		CheckRepoConfig(ctx, o.Dir),
	}
	return append(checks, checkPresets(ctx)...)
}

// Run prints the checks to w and returns the exit code: 1 when a blocking
// check failed.
func Run(ctx context.Context, o Options, w io.Writer) int {
	code := 0
	for _, c := range Checks(ctx, o) {
		mark := "ok  "
		if !c.OK {
			mark = "warn"
			if c.Blocking {
				mark = "FAIL"
				code = 1
			}
		}
		fmt.Fprintf(w, "%s  %-12s %s\n", mark, c.Name, c.Detail)
		if !c.OK && c.Hint != "" {
			fmt.Fprintf(w, "      %-12s fix: %s\n", "", c.Hint)
		}
	}
	return code
}

// checkSandbox says whether agents' Bash commands can run in claude's
// sandbox (bubblewrap and socat on Linux, Seatbelt on macOS). Not blocking:
// with the sandbox setting "on" a task runs unconfined and says so; with
// "required" it does not start.
func checkSandbox(ctx context.Context) Check {
	a := sandbox.Check(ctx)
	c := Check{Name: "sandbox", OK: a.OK}
	switch {
	case a.OK && a.Weaker:
		c.Detail = "claude's sandbox, in its weaker nested mode: " + a.Why
	case a.OK:
		c.Detail = "claude's sandbox confines agents' Bash commands to their worktree"
	default:
		c.Detail = "agents' Bash commands run unconfined: " + a.Why
		c.Hint = "install bubblewrap and socat (Debian, Ubuntu: apt-get install bubblewrap socat; Fedora: dnf install bubblewrap socat), or set sandbox: off to say you accept it"
	}
	return c
}

// CheckRepoConfig reads the repository's .familiar/config.yaml as the
// orchestrator does (repoconfig.Load), so a misspelt key is found before a
// merge queue or an auditor task trips on it, in the words they would use.
// Not blocking: tasks run without it. Outside a repository there is none.
func CheckRepoConfig(ctx context.Context, dir string) Check {
	c := Check{Name: "config", OK: true}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	repo, err := worktree.Open(ctx, dir, worktree.Options{})
	if err != nil {
		c.Detail = "not in a git repository: no .familiar/config.yaml to check"
		return c
	}
	path := repoconfig.Path(repo.Root())
	if _, err := repoconfig.Load(repo.Root()); err != nil {
		c.OK = false
		c.Detail = err.Error()
		c.Hint = "fix " + path + " (its keys: " + strings.Join(repoconfig.Keys(), ", ") + "); until then the merge queue and auditor tasks refuse to start"
		return c
	}
	if _, err := os.Stat(path); err != nil {
		c.Detail = "no " + repoconfig.RelPath + " (optional)"
		return c
	}
	c.Detail = path + " is valid"
	return c
}

func checkGit(ctx context.Context) Check {
	c := Check{Name: "git", Blocking: true}
	v, err := worktree.Version(ctx)
	if err != nil {
		c.Detail = "git not found or not working: " + err.Error()
		c.Hint = "install git (e.g. apt-get install git)"
		return c
	}
	c.Detail = "git " + v
	if !worktree.VersionAtLeast(v, worktree.MinVersion) {
		c.Detail += ", older than " + worktree.MinVersion + ": tasks cannot be merged and conflicts are not forecast (git merge-tree --write-tree)"
		c.Hint = "install git " + worktree.MinVersion + " or newer"
		return c
	}
	c.OK = true
	return c
}

func checkClaude(ctx context.Context, o Options) Check {
	c := Check{Name: "claude", Blocking: true}
	cli, err := agent.FindCLI(ctx, o.ClaudePath, o.ToolsDir)
	if err != nil {
		c.Detail = err.Error()
		c.Hint = fmt.Sprintf("npm install --prefix .tools @anthropic-ai/claude-code@%s (or set FAMILIAR_CLAUDE)", agent.PinnedVersion)
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("%s at %s: %s (supported %s to %s)", cli.Version, cli.Path, cli.Support, agent.MinVersion, agent.NewestTested)
	if cli.Warning != "" {
		c.Hint = cli.Warning
	}
	return c
}

// checkCredentials says how claude will log in inside tasks (the user's own
// login: environment, claude.ai login, cloud provider), never the secret.
func checkCredentials() Check {
	c := Check{Name: "credentials"}
	a := agent.DetectAuth(os.Environ(), time.Now())
	if a.Method == agent.AuthNone {
		c.Detail = "claude is not logged in (the demo needs no login)"
		c.Hint = agent.AuthFix
		return c
	}
	c.OK = a.Problem == ""
	c.Detail = "tasks use " + a.Method
	if a.Source != "" {
		c.Detail += " from " + a.Source
	}
	if !a.ExpiresAt.IsZero() {
		c.Detail += fmt.Sprintf("; the access token expires %s (claude refreshes it)", a.ExpiresAt.Local().Format(time.RFC3339))
	}
	if a.Problem != "" {
		c.Hint = a.Problem
	}
	return c
}

func checkDataDir(dir string) Check {
	c := Check{Name: "data dir", Blocking: true}
	if dir == "" {
		dir = dirs.State()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		c.Detail = fmt.Sprintf("%s: %v", dir, err)
		c.Hint = "make it writable, or set XDG_STATE_HOME to a writable dir"
		return c
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		c.Detail = fmt.Sprintf("%s is not writable: %v", dir, err)
		c.Hint = "make it writable, or set XDG_STATE_HOME to a writable dir"
		return c
	}
	f.Close()
	os.Remove(f.Name())
	c.OK = true
	c.Detail = dir + " is writable"
	return c
}

func checkWorktreesDir() Check {
	c := Check{Name: "worktrees", Blocking: true}
	dir := dirs.Worktrees()
	if dir == "" {
		c.Detail = "no worktree root: " + dirs.ErrNoHome.Error()
		return c
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.Detail = fmt.Sprintf("%s: %v", dir, err)
		c.Hint = "make it writable, or set XDG_DATA_HOME"
		return c
	}
	return worktreesPathCheck(dir)
}

// worktreesPathCheck warns (without blocking: familiar runs, builds may
// not) when the worktree root has what build tools reject.
func worktreesPathCheck(dir string) Check {
	c := Check{Name: "worktrees", Blocking: false}
	if bad := dirs.BuildUnsafe(dir); bad != "" {
		c.Detail = fmt.Sprintf("%s is writable, but its path has %s: autoconf's configure stops there (\"unsafe absolute working directory name\"), and Makefiles and scripts that do not quote paths break", dir, bad)
		c.Hint = "set XDG_DATA_HOME to a directory whose path has none of them, or give familiar serve --worktrees one"
		return c
	}
	c.OK = true
	c.Detail = dir + " is writable"
	return c
}

// checkLoopback: hooks reach familiar over a loopback HTTP listener.
func checkLoopback() Check {
	c := Check{Name: "hooks", Blocking: true}
	h, err := agent.NewHookServer(nil)
	if err != nil {
		c.Detail = "cannot listen on 127.0.0.1: " + err.Error()
		c.Hint = "allow loopback connections (claude's hooks report to familiar over 127.0.0.1)"
		return c
	}
	c.Detail = "loopback listener for hooks works (" + h.URL() + ")"
	h.Close()
	c.OK = true
	return c
}

// checkPresets reports what each MCP preset needs; missing pieces only
// matter to tasks that use the preset, so they do not block.
func checkPresets(ctx context.Context) []Check {
	var out []Check
	for _, p := range mcp.Presets("") {
		c := Check{Name: "mcp " + p.Name}
		res := mcp.Check(ctx, map[string]mcp.Server{p.Name: p.Server})
		missing := []string{}
		for _, r := range p.Requires {
			if strings.HasPrefix(r, "$") || strings.ToUpper(r) == r {
				if os.Getenv(strings.TrimPrefix(r, "$")) == "" {
					missing = append(missing, r)
				}
			}
		}
		switch {
		case len(res) == 1 && !res[0].Available:
			c.Detail = res[0].Problem
			c.Hint = "needed only by tasks that use the " + p.Name + " preset: " + strings.Join(p.Requires, ", ")
		case len(missing) > 0:
			c.Detail = "not set: " + strings.Join(missing, ", ")
			c.Hint = "needed only by tasks that use the " + p.Name + " preset"
		default:
			c.OK = true
			c.Detail = "requirements met (" + strings.Join(p.Requires, ", ") + ")"
		}
		out = append(out, c)
	}
	return out
}

// checkLock says whether a familiar already serves the repository in the
// current directory (then editors join it; a second server would not start).
func checkLock() Check {
	c := Check{Name: "lock", OK: true}
	wd, err := os.Getwd()
	if err != nil {
		c.Detail = "no working directory"
		return c
	}
	loc, ok := workspace.Locate(wd)
	if !ok {
		c.Detail = "not in a git repository; nothing to check"
		return c
	}
	root := loc.Root
	path := filepath.Join(loc.DataDir, store.FileName)
	if _, err := os.Stat(path); err != nil {
		c.Detail = "no familiar has run in " + root + " yet"
		return c
	}
	st, err := store.Open(path, store.Options{LockTimeout: 200 * time.Millisecond, Inspect: true})
	if errors.Is(err, store.ErrDamaged) {
		c.OK = false
		c.Detail = err.Error()
		c.Hint = "the next familiar start moves the file aside and restores the newest backup (" + store.BackupPath(path, 1) + ")"
		return c
	}
	if err != nil {
		c.OK = false
		c.Detail = err.Error()
		c.Hint = "editors join the running familiar; stop it first to run `familiar run` here"
		return c
	}
	st.Close()
	c.Detail = "no familiar is running for " + root
	return c
}

// checkStoreRepairs reports the last time familiar found its store damaged
// and what it did: what was lost must stay findable after the server/message
// that said so has gone.
func checkStoreRepairs() Check {
	c := Check{Name: "store", OK: true, Detail: "never repaired"}
	wd, err := os.Getwd()
	if err != nil {
		return c
	}
	loc, ok := workspace.Locate(wd)
	if !ok {
		c.Detail = "not in a git repository; nothing to check"
		return c
	}
	recs, err := store.Recoveries(filepath.Join(loc.DataDir, store.FileName))
	switch {
	case err != nil:
		c.OK, c.Detail = false, err.Error()
	case len(recs) > 0:
		last := recs[len(recs)-1]
		c.OK = false
		c.Detail = last.At.Local().Format("2006-01-02 15:04") + ": " + last.Message()
		c.Hint = "look in the damaged file kept aside if you need what was lost; this note stays until " +
			filepath.Join(loc.DataDir, store.FileName) + ".recoveries.json is removed"
	}
	return c
}
