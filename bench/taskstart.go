package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/familiar-dev/familiar/protocol"
	"github.com/familiar-dev/familiar/worktree"
)

// TaskStartResult compares starting a task on a repository of 10,000 files
// with what git alone takes to check it out.
type TaskStartResult struct {
	Files int `json:"files"`
	// GitWorktreeAdd is plain `git worktree add -b` (the floor).
	GitWorktreeAdd Dist `json:"gitWorktreeAdd"`
	// WorktreeCreate is worktree.Repo.Create, run alternately with the
	// floor on the same repository.
	WorktreeCreate Dist `json:"worktreeCreate"`
	// CreateOverPct is the median of Create/add - 1 per round, in %.
	CreateOverPct float64 `json:"createOverheadPct"`
	// TaskCreate is the task/create call itself (validation, profile, store).
	TaskCreate Dist `json:"taskCreateCall"`
	// TaskToRunning is task/create until the task/updated that says running:
	// the agent process has been spawned in its new worktree.
	TaskToRunning Dist `json:"taskCreateToRunning"`
	// TaskOverPct is the median of running/add - 1 per round, in %.
	TaskOverPct float64 `json:"taskCreateToRunningOverheadPct"`
	// CreateOwn and TaskOwn are what worktree.Create and task/create →
	// running spend besides their own `git worktree add`, timed inside the
	// same call (from worktree's debug records): load on the machine that
	// slows git between calls does not blur them.
	CreateOwn Dist `json:"worktreeCreateBesidesGit"`
	TaskOwn   Dist `json:"taskCreateToRunningBesidesGit"`
}

func (r *runner) taskStart(ctx context.Context) error {
	const dirs, perDir = 100, 100
	repo, err := newRepo(ctx, r.tmp, dirs, perDir)
	if err != nil {
		return err
	}
	res := TaskStartResult{Files: dirs * perDir}
	wtRoot, err := os.MkdirTemp(r.tmp, "wt-")
	if err != nil {
		return err
	}
	createAdds, taskAdds := &gitAdds{}, &gitAdds{}
	wr, err := worktree.Open(ctx, repo, worktree.Options{Root: wtRoot, Logger: slog.New(createAdds)})
	if err != nil {
		return err
	}
	w, err := openWorkspace(ctx, r.tmp, repo, r.fake, fakeEnv(r.fake, map[string]string{"FAKEAGENT_MODE": "idle"}), slog.New(taskAdds))
	if err != nil {
		return err
	}
	defer w.close()
	watch, stop := newStatusWatch(w.notes)
	defer stop()

	// The three run in turn on the same repository, in an order that
	// rotates, so that all see the same load from the rest of the machine
	// and none always gets the warmest cache.
	var adds, creates, calls, toRunning, createOwn, taskOwn []time.Duration
	var ratios, taskRatios []float64
	for i := range r.opts.StartRuns {
		var add, create, call, running time.Duration
		steps := []func() error{
			func() error { // git worktree add alone
				path := filepath.Join(wtRoot, "plain-"+strconv.Itoa(i))
				branch := "plain/" + strconv.Itoa(i)
				start := time.Now()
				cmd := exec.CommandContext(ctx, "git", "worktree", "add", "-q", "-b", branch, path, "HEAD")
				cmd.Dir = repo
				cmd.Env = append(os.Environ(), gitEnv...)
				if out, err := cmd.CombinedOutput(); err != nil {
					return fmt.Errorf("git worktree add: %v\n%s", err, out)
				}
				add = time.Since(start)
				return removeWorktree(ctx, repo, path, branch)
			},
			func() error { // worktree.Create
				start := time.Now()
				wt, err := wr.Create(ctx, worktree.CreateOptions{TaskID: fmt.Sprintf("t%016d", i), Title: "bench task"})
				if err != nil {
					return err
				}
				create = time.Since(start)
				createOwn = append(createOwn, create-createAdds.last())
				return removeWorktree(ctx, repo, wt.Path, wt.Branch)
			},
			func() error { // task/create until running, with the fake agent
				start := time.Now()
				t, err := w.create(ctx, fmt.Sprintf("start %d", i))
				if err != nil {
					return err
				}
				call = time.Since(start)
				if err := watch.wait(ctx, 2*time.Minute, "the task to run", func(at map[string]map[protocol.Status]time.Time) bool {
					_, ok := at[t.ID][protocol.StatusRunning]
					return ok
				}); err != nil {
					return err
				}
				at, _ := watch.reached(t.ID, protocol.StatusRunning)
				running = at.Sub(start)
				taskOwn = append(taskOwn, running-taskAdds.last())
				// Out of the way before the next one, untimed.
				if _, err := w.ws.Orch.TaskCancel(ctx, &protocol.TaskIDParams{ID: t.ID}); err != nil {
					return err
				}
				if err := watch.wait(ctx, time.Minute, "the task to be cancelled", func(at map[string]map[protocol.Status]time.Time) bool {
					_, ok := at[t.ID][protocol.StatusCancelled]
					return ok
				}); err != nil {
					return err
				}
				// Like the other two, leave the repository as it was.
				return w.ws.Orch.TaskRemove(ctx, &protocol.TaskRemoveParams{ID: t.ID, DeleteBranch: true, Force: true})
			},
		}
		for k := range steps {
			if err := steps[(i+k)%len(steps)](); err != nil {
				return err
			}
		}
		adds, creates = append(adds, add), append(creates, create)
		calls, toRunning = append(calls, call), append(toRunning, running)
		ratios = append(ratios, float64(create)/float64(add))
		taskRatios = append(taskRatios, float64(running)/float64(add))
	}
	slices.Sort(ratios)
	slices.Sort(taskRatios)
	res.GitWorktreeAdd, res.WorktreeCreate = distOf(adds), distOf(creates)
	res.TaskCreate, res.TaskToRunning = distOf(calls), distOf(toRunning)
	res.CreateOwn, res.TaskOwn = distOf(createOwn), distOf(taskOwn)
	res.CreateOverPct = round(100 * (ratios[len(ratios)/2] - 1))
	res.TaskOverPct = round(100 * (taskRatios[len(taskRatios)/2] - 1))
	r.report.TaskStart = &res
	r.logf("task start (%d files): git worktree add p50 %.0f ms, worktree.Create p50 %.0f ms (%+.1f%%, own %.0f ms), task/create → running p50 %.0f ms (%+.1f%%, own %.0f ms)",
		res.Files, res.GitWorktreeAdd.P50, res.WorktreeCreate.P50, res.CreateOverPct, res.CreateOwn.P50, res.TaskToRunning.P50, res.TaskOverPct, res.TaskOwn.P50)
	return nil
}

func removeWorktree(ctx context.Context, repo, path, branch string) error {
	if err := git(ctx, repo, "worktree", "remove", "--force", path); err != nil {
		return err
	}
	return git(ctx, repo, "branch", "-q", "-D", branch)
}
