//go:build linux

package store

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The flushes a question's notification waits for, counted by strace in a
// child that commits one question at a time: the journal's one sync, where
// bbolt's commit had two. bbolt and the journal sync where Go's File.Sync
// is F_FULLFSYNC on macOS (boltsync_unix.go, datasync_other.go) and
// fdatasync(2) here (bolt_linux.go, datasync_linux.go), at the same points,
// so the count is macOS's number of full flushes. The commit that follows
// the answer is counted too: bbolt still syncs the data pages, then the
// meta page that points at them, so a power cut never leaves the meta page
// pointing at pages not on disk.
func TestQuestionCommitFlushes(t *testing.T) {
	checkLeaks(t)
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("counting sync calls needs strace")
	}
	path := filepath.Join(t.TempDir(), FileName)
	out := filepath.Join(t.TempDir(), "strace")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // a hung child fails the test
	defer cancel()
	cmd := exec.CommandContext(ctx, strace, "-f", "-qq", "-o", out, "-e", "trace=fsync,fdatasync,getpgid", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+helperQuestions, helperDBEnv+"="+path)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here (%v): %s", err, b)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Calls cut by another thread's are printed in two parts ("getpgid(N
	// <unfinished ...>", then "<... getpgid resumed>"): each counts once,
	// by its first part.
	marker := regexp.MustCompile(`getpgid\((\d+)`)
	sync := regexp.MustCompile(`\b(fsync|fdatasync)\(`)
	syncs := make([]int, questions)
	after := make([]int, questions) // the syncs between a question's answer and the next question
	open, closed := -1, -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "resumed>") {
			continue
		}
		if m := marker.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			if n -= markerPID; n%2 == 0 {
				open, closed = n/2, -1
			} else {
				open, closed = -1, n/2
			}
			continue
		}
		switch {
		case !sync.MatchString(line):
		case open >= 0:
			syncs[open]++
		case closed >= 0:
			after[closed]++
		}
	}
	hist, afterHist := map[int]int{}, map[int]int{}
	for i, n := range syncs {
		hist[n]++
		if i < questions-1 { // the last one's window runs into Close
			afterHist[after[i]]++
			if after[i] < 2 {
				t.Errorf("question %d's commit synced %d times after its answer; bbolt's two (data pages, then meta) are what keep the file whole", i, after[i])
			}
		}
	}
	t.Logf("full flushes a question's notification waits for (on macOS F_FULLFSYNC each): %v (count: questions); bbolt's commit after the answer: %v", hist, afterHist)
	for i, n := range syncs {
		if n > maxQuestionFlushes {
			t.Errorf("question %d waited for %d flushes, want at most %d", i, n, maxQuestionFlushes)
		}
		if n == 0 {
			t.Errorf("question %d was notified without a sync: not durable", i)
		}
	}
}

// maxQuestionFlushes is the journal's one sync (see journal.go). Without
// it, bbolt's floor was two: the data pages, then the meta page, each
// durable before the next (a third when the file grows, once per 16 MiB).
const maxQuestionFlushes = 1
