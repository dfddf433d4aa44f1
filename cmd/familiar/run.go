package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"golang.org/x/term"

	"github.com/familiar-dev/familiar/batch"
	"github.com/familiar-dev/familiar/demo"
	"github.com/familiar-dev/familiar/repoconfig"
	"github.com/familiar-dev/familiar/runfile"
	"github.com/familiar-dev/familiar/workspace"
	"github.com/familiar-dev/familiar/worktree"
)

// runBatch is `familiar run FILE`: the tasks of a YAML or JSON file, headless.
// Ctrl-C once stops the agents gracefully (worktrees kept) and prints the
// report; twice kills them.
func runBatch(args []string, stdout, stderr io.Writer, logger *slog.Logger) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print a machine-readable report on stdout")
	dataDir := fs.String("data-dir", "", "where familiar keeps its state (default: $XDG_STATE_HOME/familiar/<repo>-<hash>)")
	worktrees := fs.String("worktrees", "", "where task worktrees are made")
	check := fs.Bool("check", false, "check the tasks file and the repository's .familiar/config.yaml, as familiar doctor does, and run nothing")
	demoModel := fs.Bool("demo-model", false, "point the agents at familiar's built-in SCRIPTED demo model instead of Anthropic's API (no credentials needed; it is not Claude)")
	withHelp(fs, runHelp, stdout)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: familiar run [--json] FILE")
		return batch.ExitBadInput
	}
	file, err := runfile.Load(fs.Arg(0))
	if *check {
		return checkRunFiles(fs.Arg(0), file, err, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		var fe *runfile.Error
		if errors.As(err, &fe) || errors.Is(err, os.ErrNotExist) {
			return batch.ExitBadInput
		}
		return batch.ExitBadInput
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return batch.ExitFailed
	}

	ctx, force, stop := interrupts()
	defer stop()

	out := stdout
	wo := workspace.Options{
		DataDir: *dataDir, WorktreesRoot: *worktrees, ClaudePath: os.Getenv("FAMILIAR_CLAUDE"),
		ToolsDir: toolsDir(), Logger: logger, Version: version,
	}
	if *demoModel {
		api, err := demo.StartModel()
		if err != nil {
			fmt.Fprintf(stderr, "familiar run: %v\n", err)
			return batch.ExitFailed
		}
		defer api.Close()
		fmt.Fprintf(stderr, "familiar run: using the SCRIPTED DEMO MODEL on %s — not Claude\n", api.URL())
		wo.StartHook = demo.ModelHook(api)
	}
	_, code := batch.Run(ctx, batch.Options{
		Dir:       wd,
		File:      file,
		JSON:      *asJSON,
		Terminal:  isTerminal(stdout),
		Out:       out,
		Log:       stderr,
		Force:     force,
		Workspace: wo,
	})
	return code
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// checkRunFiles is familiar run --check: the tasks file's first error, and
// the repository's .familiar/config.yaml's in the words familiar doctor
// and the merge queue use (repoconfig.Load), or what each holds.
func checkRunFiles(path string, file *runfile.File, loadErr error, stdout, stderr io.Writer) int {
	code := 0
	if loadErr != nil {
		fmt.Fprintln(stderr, loadErr)
		code = batch.ExitBadInput
	} else {
		fmt.Fprintf(stdout, "%s: ok, %d tasks\n", path, len(file.Tasks))
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return batch.ExitFailed
	}
	repo, err := worktree.Open(context.Background(), wd, worktree.Options{})
	if err != nil {
		fmt.Fprintf(stdout, "not in a git repository: no %s to check\n", repoconfig.RelPath)
		return code
	}
	if _, err := repoconfig.Load(repo.Root()); err != nil {
		fmt.Fprintln(stderr, err)
		return batch.ExitBadInput
	}
	if _, err := os.Stat(repoconfig.Path(repo.Root())); err == nil {
		fmt.Fprintf(stdout, "%s: ok\n", repoconfig.Path(repo.Root()))
	}
	return code
}
