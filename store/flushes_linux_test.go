//go:build linux

package store

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The flushes a question's notification waits for: its commit's syncs,
// counted by strace in a child that commits one question at a time. bbolt
// syncs where Go's File.Sync is F_FULLFSYNC on macOS (boltsync_unix.go) and
// fdatasync(2) here (bolt_linux.go), at the same points: the data pages,
// then the meta page that points at them, and the file when it grows. So
// the count is macOS's number of full flushes.
func TestQuestionCommitFlushes(t *testing.T) {
	checkLeaks(t)
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("counting sync calls needs strace")
	}
	path := filepath.Join(t.TempDir(), FileName)
	out := filepath.Join(t.TempDir(), "strace")
	cmd := exec.Command(strace, "-f", "-qq", "-o", out, "-e", "trace=fsync,fdatasync,getpgid", os.Args[0], "-test.run=^$")
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
	open := -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "resumed>") {
			continue
		}
		if m := marker.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			if n -= markerPID; n%2 == 0 {
				open = n / 2
			} else {
				open = -1
			}
			continue
		}
		if open >= 0 && sync.MatchString(line) {
			syncs[open]++
		}
	}
	hist := map[int]int{}
	for _, n := range syncs {
		hist[n]++
	}
	t.Logf("full flushes per question's commit (on macOS F_FULLFSYNC each): %v (count: questions)", hist)
	for i, n := range syncs {
		if n > maxQuestionFlushes {
			t.Errorf("question %d waited for %d flushes, want at most %d", i, n, maxQuestionFlushes)
		}
		if n == 0 {
			t.Errorf("question %d was notified without a sync: not durable", i)
		}
	}
}

// maxQuestionFlushes is bbolt's floor: the data pages, then the meta page
// that points at them, each made durable before the next, so that a power
// cut never leaves the meta page pointing at pages not on disk. The third,
// when the file grows, comes once per 16 MiB (bbolt's AllocSize, as the
// store maps 64 MiB up front), not in this test.
const maxQuestionFlushes = 2
