// Package doctor checks that a machine can run familiar: git, the claude CLI
// and its version, credentials (present, never printed), and the data dir. Each
// failure comes with a hint that fixes it.
//
// It only reads and reports; it never installs or changes anything.
package doctor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/worktree"
)

// Options says where to look.
type Options struct {
	ClaudePath string // configured claude binary, "" to search
	ToolsDir   string // project-local tools dir
	DataDir    string // "" = default state dir
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
	return []Check{
		checkGit(ctx),
		checkClaude(ctx, o),
		checkCredentials(),
		checkDataDir(o.DataDir),
	}
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

func checkGit(ctx context.Context) Check {
	c := Check{Name: "git", Blocking: true}
	v, err := worktree.Version(ctx)
	if err != nil {
		c.Detail = "git not found or not working: " + err.Error()
		c.Hint = "install git (e.g. apt-get install git)"
		return c
	}
	c.OK = true
	c.Detail = "git " + v
	return c
}

func checkClaude(ctx context.Context, o Options) Check {
	c := Check{Name: "claude", Blocking: true}
	cli, err := agent.FindCLI(ctx, o.ClaudePath, o.ToolsDir)
	if err != nil {
		c.Detail = err.Error()
		c.Hint = fmt.Sprintf("npm install --prefix .tools @anthropic-ai/claude-code@%s (or set FAMILIAR_CLAUDE)", agent.MinVersion)
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("%s at %s (minimum %s)", cli.Version, cli.Path, agent.MinVersion)
	return c
}

// credentialVars are the ways the CLI accepts credentials from the
// environment. Their values are never printed.
var credentialVars = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"}

func checkCredentials() Check {
	c := Check{Name: "credentials"}
	for _, v := range credentialVars {
		if os.Getenv(v) != "" {
			c.OK = true
			c.Detail = v + " is set"
			return c
		}
	}
	c.Detail = "no credentials in the environment (the demo needs none)"
	c.Hint = "export ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) before running real tasks"
	return c
}

func checkDataDir(dir string) Check {
	c := Check{Name: "data dir", Blocking: true}
	if dir == "" {
		base := os.Getenv("XDG_STATE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".local", "state")
		}
		dir = filepath.Join(base, "familiar")
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
