package procs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// niceOf reads a thread's or process's niceness from its stat file.
func niceOf(t *testing.T, statPath string) int {
	t.Helper()
	b, err := os.ReadFile(statPath)
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command, which ends at the last ')': state is field
	// 3, nice field 19.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	n, err := strconv.Atoi(f[19-3])
	if err != nil {
		t.Fatalf("%s: nice %q: %v", statPath, f[19-3], err)
	}
	return n
}

func TestNiceCoversTheTreeAndTheSession(t *testing.T) {
	for _, pipes := range []bool{false, true} {
		t.Run(map[bool]string{false: "pty", true: "pipes"}[pipes], func(t *testing.T) {
			checkLeaks(t)
			p := startHelper(t, Config{Nice: 7, Pipes: pipes}, "spawn")
			pid := p.Identity().PID
			// Every thread the child's runtime had started by then.
			threads, _ := filepath.Glob("/proc/" + itoa(pid) + "/task/*/stat")
			if len(threads) == 0 {
				t.Fatal("no threads listed")
			}
			for _, th := range threads {
				if n := niceOf(t, th); n != 7 {
					t.Errorf("%s: nice %d, want 7", th, n)
				}
			}
			// A process it starts later inherits it.
			if _, err := p.Write([]byte("go\n")); err != nil {
				t.Fatal(err)
			}
			m := waitOutputMatch(t, p, regexp.MustCompile(`spawned (\d+)`))
			if n := niceOf(t, "/proc/"+m[1]+"/stat"); n != 7 {
				t.Errorf("spawned child: nice %d, want 7", n)
			}
			// Under a PTY the child leads a session: its autogroup (where the
			// kernel has them) is lowered too; with pipes it stays in
			// familiar's own, which must not change.
			ag := "/proc/" + itoa(pid) + "/autogroup"
			if _, err := os.Stat(ag); err != nil {
				t.Logf("no autogroup here (%v): only the processes' niceness is checked", err)
				return
			}
			want := "nice 7"
			if pipes {
				own, err := os.ReadFile("/proc/self/autogroup")
				if err != nil {
					t.Fatal(err)
				}
				want = strings.Fields(string(own))[1] + " " + strings.Fields(string(own))[2]
			}
			if !eventually(10*time.Second, func() bool {
				b, _ := os.ReadFile(ag)
				return strings.HasSuffix(strings.TrimSpace(string(b)), want)
			}) {
				b, _ := os.ReadFile(ag)
				t.Errorf("%s = %q, want it to end with %q", ag, strings.TrimSpace(string(b)), want)
			}
		})
	}
}

func TestNoNiceKeepsThePriority(t *testing.T) {
	checkLeaks(t)
	p := startHelper(t, Config{}, "spawn")
	if n := niceOf(t, "/proc/"+itoa(p.Identity().PID)+"/stat"); n != niceOf(t, "/proc/self/stat") {
		t.Errorf("nice %d without Config.Nice, familiar's is %d", n, niceOf(t, "/proc/self/stat"))
	}
}

// waitOutputMatch waits for re in the child's output and returns its submatches.
func waitOutputMatch(t *testing.T, p *Process, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	if !eventually(10*time.Second, func() bool {
		m = re.FindStringSubmatch(string(p.Output().Tail().Data))
		return m != nil
	}) {
		t.Fatalf("output never matched %s; tail: %q", re, p.Output().Tail().Data)
	}
	return m
}
