package mergequeue

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/familiar-dev/familiar/procs"
	"github.com/familiar-dev/familiar/protocol"
)

// The merge queue's verify command runs as an agent does: under procs, in
// a process tree of its own that ends whole (setsid children and all) on
// success, failure, timeout, a cancelled queue and familiar's shutdown; its
// process is recorded in the data dir so a familiar started after a kill -9
// stops what the last one left running (StopLeftoverVerifies).

// verifyResult is how a verify command ended.
type verifyResult struct {
	ok         bool
	code       int
	timedOut   bool
	timeoutSec int
	output     string
}

// maxVerifyOutput bounds what familiar keeps of a verify command's output:
// its end (where test runners say what failed).
const maxVerifyOutput = 1 << 20

// verifyDir is where running verify commands are recorded.
func (m *Queue) verifyDir() string { return filepath.Join(m.dataDir, "verify") }

// verifyCandidate checks commit out in scratch worktree slot (one per
// candidate verified at once, reused by the next batch) and runs the verify
// command there.
func (m *Queue) verifyCandidate(ctx context.Context, slot int, commit, command string) verifyResult {
	dir, err := m.repo.Scratch(ctx, slot, commit)
	if err != nil {
		return verifyResult{code: -1, output: "familiar could not check the merge out to verify it: " + errorWords(err)}
	}
	return m.runVerify(ctx, dir, command)
}

// runVerify runs the verify command with sh in dir; stopped (its whole
// tree) after commandTimeoutSec, which counts as failing, or when ctx ends.
func (m *Queue) runVerify(ctx context.Context, dir, command string) verifyResult {
	s := m.host.Settings()
	timeoutSec := s.CommandTimeoutSec
	if timeoutSec <= 0 {
		timeoutSec = protocol.DefaultCommandTimeoutSec
	}
	res := verifyResult{timeoutSec: timeoutSec, code: -1}
	if err := os.MkdirAll(m.verifyDir(), 0o700); err != nil {
		res.output = "familiar could not start the verify command: " + err.Error()
		return res
	}
	run, err := os.MkdirTemp(m.verifyDir(), "run-")
	if err != nil {
		res.output = "familiar could not start the verify command: " + err.Error()
		return res
	}
	defer os.RemoveAll(run)
	logPath := filepath.Join(run, "output.log")
	p, err := procs.Start(procs.Config{
		// stderr joins stdout, in the order written, as in a terminal.
		Argv:    []string{"/bin/sh", "-c", "exec 2>&1\n" + command},
		Dir:     dir,
		Env:     append(os.Environ(), "FAMILIAR_MERGE_QUEUE=1"),
		Pipes:   true,
		LogPath: logPath,
		Grace:   time.Duration(s.TermGraceSec) * time.Second,
		Clock:   m.clk,
		Logger:  m.logger,
	})
	if err != nil {
		res.output = "familiar could not start the verify command: " + err.Error()
		return res
	}
	if err := procs.WriteRecord(run, procs.Record{Identity: p.Identity(), Started: m.clk.Now().UTC()}); err != nil {
		m.logger.Warn("cannot record the verify command's process", "err", err)
	}
	_ = p.CloseInput()
	timer := m.clk.NewTimer(time.Duration(timeoutSec) * time.Second)
	defer timer.Stop()
	select {
	case <-p.Done():
	case <-timer.C():
		res.timedOut = true
	case <-ctx.Done():
		res.timedOut = true
	}
	// Whatever it left running goes with it, finished or not.
	if err := p.Close(); err != nil {
		m.logger.Warn("verify command's tree", "err", err)
	}
	_ = procs.RemoveRecord(run)
	res.output = readEnd(logPath, maxVerifyOutput)
	if st, ok := p.ExitStatus(); ok && !res.timedOut {
		res.code = st.Code
		res.ok = st.Success()
		if st.Signaled() {
			res.output += fmt.Sprintf("\n[familiar: the verify command was killed by %s]", procs.SignalName(st.Signal))
		}
	}
	return res
}

// readEnd reads at most max bytes from the end of the file at path, saying
// how much came before.
func readEnd(path string, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	skip := fi.Size() - max
	if skip > 0 {
		if _, err := f.Seek(skip, io.SeekStart); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(io.LimitReader(f, max))
	if skip > 0 {
		return fmt.Sprintf("[familiar: the first %d bytes of output are not kept]\n", skip) + string(b)
	}
	return string(b)
}

// StopLeftoverVerifies stops the verify commands a previous familiar left
// running (it was killed while its merge queue verified).
func (m *Queue) StopLeftoverVerifies(grace time.Duration) int {
	runs, _ := os.ReadDir(m.verifyDir())
	n := 0
	for _, d := range runs {
		dir := filepath.Join(m.verifyDir(), d.Name())
		if rec, err := procs.ReadRecord(dir); err == nil {
			n++
			m.logger.Warn("stopping a verify command left by a previous familiar", "pid", rec.PID)
			ctx, cancel := context.WithTimeout(context.Background(), grace+30*time.Second)
			if err := procs.TerminateTree(ctx, rec.Identity, procs.TreeOptions{Grace: grace, Clock: m.clk, Logger: m.logger}); err != nil {
				m.logger.Error("terminate leftover verify command", "pid", rec.PID, "err", err)
			}
			cancel()
		}
		_ = os.RemoveAll(dir)
	}
	return n
}
