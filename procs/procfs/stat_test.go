package procfs_test

import (
	"os"
	"slices"
	"testing"

	"github.com/familiar-dev/familiar/procs/procfs"
)

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses, as a process may choose.
	line := "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 123456 1000 10 18446744073709551615\n"
	s, err := procfs.ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := procfs.Stat{PID: 4242, PPID: 1, PGID: 4242, SID: 4242, State: 'S', UTime: 7, STime: 3, StartTime: 123456}
	if s != want {
		t.Fatalf("ParseStat = %+v, want %+v", s, want)
	}
	if s.Dead() || !(procfs.Stat{State: 'Z'}).Dead() || !(procfs.Stat{State: 'X'}).Dead() {
		t.Error("Dead is wrong")
	}
	for _, bad := range []string{"", "4242", "(x) S 1", "4242 (x)", "4242 (x) S 1 2", "x (y) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 0 0 1 0 5 0 0",
		"1 (x) S a 1 1 0 -1 0 0 0 0 0 0 0 0 0 0 0 1 0 5 0 0"} {
		if _, err := procfs.ParseStat([]byte(bad)); err == nil {
			t.Errorf("procfs.ParseStat(%q) accepted a malformed line", bad)
		}
	}
}

func TestReadStatOfThisProcess(t *testing.T) {
	s, err := procfs.ReadStat(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if s.PID != os.Getpid() || s.PPID != os.Getppid() || s.StartTime == 0 || s.Dead() {
		t.Fatalf("procfs.ReadStat(self) = %+v", s)
	}
	all, err := procfs.ReadAllStats()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range all {
		found = found || a.PID == s.PID && a.StartTime == s.StartTime
	}
	if !found {
		t.Error("ReadAllStats does not list this process")
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 0 0 0 0 1 2 0 0 20 0 1 0 5 0 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = procfs.ParseStat(b) })
}

func TestChildren(t *testing.T) {
	if _, ok := procfs.Children(); !ok {
		t.Skip("this kernel keeps no /proc children lists")
	}
	// The test binary's own children: none the test did not start.
	pids, _ := procfs.Children()
	self, _ := procfs.ReadStat(os.Getpid())
	for _, pid := range pids {
		if s, err := procfs.ReadStat(pid); err == nil && s.PPID != self.PID {
			t.Errorf("child %d has parent %d, not us", pid, s.PPID)
		}
	}
	if slices.Contains(pids, os.Getpid()) {
		t.Error("Children lists this process itself")
	}
}
