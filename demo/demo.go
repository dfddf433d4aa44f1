// Package demo is `familiar demo`: the main job on a built-in default, with
// no credentials. It makes a throwaway repository, starts a scripted model
// server on loopback (clearly labelled: it is not Claude), and runs two tasks
// through the real claude CLI — one asks a permission that the demo policy
// answers, one just finishes — then prints the report and the diff.
//
// It never touches the user's repositories or ~/.claude.json.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/familiar-dev/familiar/agent"
	"github.com/familiar-dev/familiar/batch"
	"github.com/familiar-dev/familiar/demomodel"
	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/runfile"
	"github.com/familiar-dev/familiar/workspace"
	"github.com/familiar-dev/familiar/worktree"
)

// Options configure the demo.
type Options struct {
	ClaudePath string
	ToolsDir   string
	Out        io.Writer
	Terminal   bool
	Force      <-chan struct{}
	Keep       bool // keep the throwaway repository (its path is printed)
}

// The demo tasks. Their prompts carry directives for the scripted model in
// promptOverride; the person sees only the titles and descriptions.
var tasks = []protocol.TaskCreateParams{
	{
		Title:       "Add a greeting file",
		Description: "Create hello.txt with a friendly greeting.",
		PromptOverride: "@@TOOL Write {\"file_path\":\"hello.txt\",\"content\":\"Hello from familiar's demo!\\n\"}\n" +
			"@@TEXT Added hello.txt with a greeting.",
	},
	{
		Title:          "Describe the project",
		Description:    "Read the README and say what the project is.",
		PromptOverride: "@@TOOL Read {\"file_path\":\"README.md\"}\n@@TEXT This is familiar's demo repository: a README and nothing else yet.",
	},
}

// Run runs the demo and returns familiar run's exit code.
func Run(ctx context.Context, o Options) int {
	out := o.Out
	cli, err := agent.FindCLI(ctx, o.ClaudePath, o.ToolsDir)
	if err != nil {
		fmt.Fprintf(out, "familiar demo needs the claude CLI: %v\n", err)
		fmt.Fprintf(out, "Install it with: bash .ci/run-tools   (or: npm install --prefix .tools @anthropic-ai/claude-code@%s)\n", agent.PinnedVersion)
		return batch.ExitFailed
	}
	root, err := os.MkdirTemp("", "familiar-demo-")
	if err != nil {
		fmt.Fprintf(out, "familiar demo: %v\n", err)
		return batch.ExitFailed
	}
	if !o.Keep {
		defer os.RemoveAll(root)
	}
	repo := filepath.Join(root, "repo")
	if err := makeRepo(ctx, repo); err != nil {
		fmt.Fprintf(out, "familiar demo: %v\n", err)
		return batch.ExitFailed
	}

	api, err := demomodel.Listen(demomodel.Demo())
	if err != nil {
		fmt.Fprintf(out, "familiar demo: %v\n", err)
		return batch.ExitFailed
	}
	defer api.Close()
	fmt.Fprintf(out, "familiar demo\n")
	fmt.Fprintf(out, "  model:     a SCRIPTED DEMO MODEL on %s — not Claude; no credentials are used\n", api.URL())
	fmt.Fprintf(out, "  claude:    %s (%s)\n", cli.Version, cli.Path)
	fmt.Fprintf(out, "  repository: %s (throwaway)\n", repo)
	fmt.Fprintf(out, "  policy:    allow Write and Read, ask for everything else\n\n")

	file := &runfile.File{
		Path: "(built-in demo)",
		Settings: runfile.Settings{
			Concurrency:      2,
			PermissionPolicy: &protocol.Policy{Default: protocol.PolicyAsk, Allow: []string{"Write", "Read"}},
		},
		Tasks: tasks,
		Lines: []int{1, 2},
	}
	_, code := batch.Run(ctx, batch.Options{
		Diffs:    true,
		Dir:      repo,
		File:     file,
		Terminal: o.Terminal,
		Out:      out,
		Force:    o.Force,
		Workspace: workspace.Options{
			DataDir:       filepath.Join(root, "state"),
			WorktreesRoot: filepath.Join(root, "worktrees"),
			ClaudePath:    cli.Path,
			StartHook:     ModelHook(api),
		},
	})
	if o.Keep {
		fmt.Fprintf(out, "\nkept: %s\n", root)
	}
	return code
}

func makeRepo(ctx context.Context, dir string) error {
	return worktree.InitRepo(ctx, dir, map[string]string{
		"README.md": "# demo\n\nA throwaway repository for familiar's demo.\n",
	}, "Initial commit")
}

// StartModel starts the scripted demo model on loopback. Close it when done.
func StartModel() (*demomodel.Server, error) { return demomodel.Listen(demomodel.Demo()) }

// ModelHook points every agent at the scripted demo model.
func ModelHook(api *demomodel.Server) func(ctx context.Context, opts *agent.Options) {
	return func(ctx context.Context, opts *agent.Options) {
		if opts.ExtraEnv == nil {
			opts.ExtraEnv = map[string]string{}
		}
		for k, v := range api.Env() {
			opts.ExtraEnv[k] = v
		}
	}
}
