package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/internal/testenv"
)

// putTasks stores n tasks named prefix-0… with a payload big enough to fill
// several pages.
func putTasks(t *testing.T, s *Store, prefix string, n int) {
	t.Helper()
	for i := range n {
		data := fmt.Sprintf(`{"title":%q,"pad":%q}`, prefix+strconv.Itoa(i), strings.Repeat("x", 300))
		if err := s.PutTask(context.Background(), TaskRecord{ID: prefix + "-" + strconv.Itoa(i), Status: "queued", Data: raw(data)}); err != nil {
			t.Fatal(err)
		}
	}
}

func countTasks(t *testing.T, s *Store) int {
	t.Helper()
	recs, _, err := s.AllTasks()
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// openAt opens path without registering a cleanup.
func openAt(t *testing.T, path string, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// damagePages overwrites pages from..to-1 of the file with garbage, as a
// failing disk or a stray write would.
func damagePages(t *testing.T, path string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ps := os.Getpagesize()
	junk := []byte(strings.Repeat("\xa5\x17\xff\x03", ps/4))
	for p := from; p < to; p++ {
		if _, err := f.WriteAt(junk, int64(p*ps)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestDamagedStoreIsMovedAsideAndRestored(t *testing.T) {
	checkLeaks(t)
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, path string)
		problem string
	}{
		{"truncated to 0 bytes", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}, "empty"},
		{"file removed", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, "missing"},
		{"data pages overwritten", func(t *testing.T, path string) { damagePages(t, path, 3, 6) }, "page"},
		{"meta pages overwritten", func(t *testing.T, path string) { damagePages(t, path, 0, 2) }, "invalid"},
	} {
		for _, withBackup := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/backup=%v", tc.name, withBackup), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), FileName)
				s := openAt(t, path, Options{})
				putTasks(t, s, "kept", 40)        // several pages of tasks
				if err := s.Close(); err != nil { // backs up
					t.Fatal(err)
				}
				if !withBackup {
					os.Remove(BackupPath(path, 1))
				}
				tc.damage(t, path)

				s = openStore(t, filepath.Dir(path), nil)
				rec := s.Recovery()
				if rec == nil {
					t.Fatal("no recovery reported for a damaged store")
				}
				if !strings.Contains(strings.ToLower(rec.Problem), tc.problem) {
					t.Errorf("problem %q does not say %q", rec.Problem, tc.problem)
				}
				if tc.name != "file removed" {
					if !strings.Contains(rec.DamagedPath, ".damaged-") || !fileExists(rec.DamagedPath) {
						t.Errorf("damaged file not kept aside: %q", rec.DamagedPath)
					}
				}
				msg := rec.Message()
				if withBackup {
					if rec.RestoredFrom != BackupPath(path, 1) || rec.Tasks != 40 || countTasks(t, s) != 40 {
						t.Errorf("not restored from the backup: %+v, %d tasks", rec, countTasks(t, s))
					}
					if !strings.Contains(msg, "Restored the backup of") {
						t.Errorf("message: %s", msg)
					}
				} else {
					if rec.RestoredFrom != "" || countTasks(t, s) != 0 || !strings.Contains(msg, "starts with an empty store") {
						t.Errorf("without a backup: %+v; %s", rec, msg)
					}
				}
				// The repaired store works.
				putTasks(t, s, "new", 2)
				// doctor can still say what happened.
				if recs, err := Recoveries(path); err != nil || len(recs) != 1 || recs[0].Problem != rec.Problem || recs[0].Tasks != rec.Tasks {
					t.Errorf("Recoveries = %+v, %v", recs, err)
				}
			})
		}
	}
}

// A new data dir is a first start, not damage; an empty file without a
// marker or backup (a crash while creating it) is too.
func TestFirstStartIsNotDamage(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, nil)
	if s.Recovery() != nil {
		t.Errorf("recovery on a first start: %+v", s.Recovery())
	}
}

// A page damaged while familiar serves: reads that reach it fail with
// ErrUnavailable instead of crashing the process, and the next start
// repairs the file.
func TestDamageWhileServingIsAnErrorNotACrash(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := openAt(t, path, Options{BackupEvery: -1})
	putTasks(t, s, "t", 60)
	if err := s.Backup(); err != nil {
		t.Fatal(err)
	}
	damagePages(t, path, 3, 40) // under the open database's feet
	var failed error
	for i := range 60 {
		if _, err := s.GetTask("t-" + strconv.Itoa(i)); err != nil {
			failed = err
			break
		}
	}
	if _, _, err := s.AllTasks(); err != nil && failed == nil {
		failed = err
	}
	if failed == nil || !errors.Is(failed, ErrUnavailable) {
		t.Fatalf("reading damaged pages: err = %v, want ErrUnavailable", failed)
	}
	s.Close() // may report an error; it must not panic

	s = openStore(t, dir, nil)
	if s.Recovery() == nil || countTasks(t, s) != 60 {
		t.Fatalf("next start: recovery %+v, %d tasks", s.Recovery(), countTasks(t, s))
	}
}

func TestBackupsEveryFewMinutesKeepTwo(t *testing.T) {
	checkLeaks(t)
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	s := openAt(t, path, Options{Clock: clk, BackupEvery: time.Minute})
	defer s.Close()
	for round := 1; round <= 3; round++ {
		putTasks(t, s, "r"+strconv.Itoa(round), 1)
		before := s.backedUp.Load()
		// The loop re-arms its timer after a backup is recorded: advancing
		// before that would move the clock past a timer not yet set.
		armed(t, clk)
		clk.Advance(time.Minute)
		testenv.Await(t, 10*time.Second, "a backup", func() bool { return s.backedUp.Load() != before })
	}
	for n, want := range map[int]int{1: 3, 2: 2} {
		b, err := Open(BackupPath(path, n), Options{BackupEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		if got := countTasks(t, b); got != want {
			t.Errorf("backup %d has %d tasks, want %d", n, got, want)
		}
		b.Close()
	}
	if fileExists(BackupPath(path, 3)) {
		t.Error("a third backup was kept")
	}
	// Nothing written: no new backup.
	before := s.backedUp.Load()
	fi1, _ := os.Stat(BackupPath(path, 1))
	for range 2 {
		armed(t, clk)
		clk.Advance(time.Minute)
	}
	armed(t, clk) // the loop has looked and set its timer again
	if fi2, _ := os.Stat(BackupPath(path, 1)); !fi2.ModTime().Equal(fi1.ModTime()) || s.backedUp.Load() != before {
		t.Error("backed up although nothing changed")
	}
}

// armed waits until the backup loop's timer is set.
func armed(t *testing.T, clk *clock.Fake) {
	t.Helper()
	if !clk.WaitForTimers(1, 10*time.Second) {
		t.Fatal("the backup loop never set its timer")
	}
}

// healthLog records OnHealth calls.
type healthLog struct {
	mu sync.Mutex
	hs []Health
}

func (l *healthLog) add(h Health) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hs = append(l.hs, h)
}

func (l *healthLog) last() (Health, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.hs) == 0 {
		return Health{OK: true}, 0
	}
	return l.hs[len(l.hs)-1], len(l.hs)
}

// A commit that fails is reported to every caller in it with a kind, the
// store says it is degraded once, and it says so again when writes work,
// with the number refused meanwhile. Small writes that still fit on the full
// disk do not end the degraded spell (they made the warnings flap and end in
// a false all-clear).
func TestFailedCommitsAreRefusedAndHealthReported(t *testing.T) {
	checkLeaks(t)
	clk := clock.NewFake(time.Unix(1e9, 0))
	var hl healthLog
	path := filepath.Join(t.TempDir(), FileName)
	s := openAt(t, path, Options{Clock: clk, OnHealth: hl.add, ProbeEvery: time.Second, BackupEvery: -1})
	defer s.Close()
	var mu sync.Mutex // guards full and smallFits
	full, smallFits := false, false
	diskFull := func() error { return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC} }
	s.failCommit = func() error {
		mu.Lock()
		defer mu.Unlock()
		if full && !smallFits {
			return diskFull()
		}
		return nil
	}
	var probes atomic.Int32
	s.probeSpace = func() error {
		probes.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if full {
			return diskFull()
		}
		return nil
	}
	set := func(f, small bool) { mu.Lock(); full, smallFits = f, small; mu.Unlock() }

	putTasks(t, s, "before", 3)
	set(true, false)
	for i := range 5 {
		err := s.PutTask(context.Background(), TaskRecord{ID: "lost-" + strconv.Itoa(i), Status: "queued"})
		if !errors.Is(err, ErrStoreFull) {
			t.Fatalf("put on a full disk: %v", err)
		}
	}
	if _, err := s.AppendEvent(context.Background(), "x", "k", nil); !errors.Is(err, ErrStoreFull) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if h, n := hl.last(); h.OK || n != 1 || !errors.Is(h.Err, ErrStoreFull) {
		t.Fatalf("health after failures: %+v (%d calls)", h, n)
	}
	if s.Health().OK || s.Health().Failed != 6 {
		t.Fatalf("Health() = %+v", s.Health())
	}

	// Small writes fit again, large ones would not (the probe finds no
	// room): the writes are kept, but the store stays degraded, through
	// several probe periods.
	set(true, true)
	putTasks(t, s, "small", 2)
	before := probes.Load()
	testenv.Await(t, 10*time.Second, "three probes", func() bool { clk.Advance(time.Second); return probes.Load() >= before+3 })
	set(true, false)
	if err := s.PutTask(context.Background(), TaskRecord{ID: "lost-large", Status: "queued"}); !errors.Is(err, ErrStoreFull) {
		t.Fatalf("put on a full disk: %v", err)
	}
	if _, n := hl.last(); n != 1 {
		t.Fatalf("health changed %d times while the disk stayed full: %+v", n, hl.hs)
	}

	// Space returns; nobody writes; the probe notices, and says how many
	// writes were refused.
	set(false, false)
	testenv.Await(t, 10*time.Second, "the probe timer", func() bool { clk.Advance(time.Second); h, _ := hl.last(); return h.OK })
	h, n := hl.last()
	if n != 2 || h.Failed != 7 {
		t.Errorf("recovery reported as %+v after %d changes, want the 2nd change with 7 refused", h, n)
	}
	if !s.Health().OK {
		t.Fatal("Health() still degraded")
	}
	putTasks(t, s, "after", 1)
	if n := countTasks(t, s); n != 6 {
		t.Errorf("%d tasks stored, want 6 (none of the refused)", n)
	}
}

// The real thing: a database on a small tmpfs that fills up. Every write
// acknowledged before is there after a restart, none acknowledged after,
// and writes resume by themselves when space returns.
func TestFullDiskRealTmpfs(t *testing.T) {
	checkLeaks(t)
	dir := t.TempDir()
	mountTmpfs(t, dir, 512<<10)
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 256<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Unix(1e9, 0))
	var hl healthLog
	path := filepath.Join(dir, FileName)
	// The probe asks for 64 KiB: the whole disk is 512 KiB.
	s := openAt(t, path, Options{Clock: clk, OnHealth: hl.add, ProbeEvery: time.Second, ProbeBytes: 64 << 10, BackupEvery: -1})
	acked := map[string]bool{}
	var fullErr error
	for i := 0; i < 10000 && fullErr == nil; i++ {
		id := "t-" + strconv.Itoa(i)
		err := s.PutTask(context.Background(), TaskRecord{ID: id, Status: "queued", Data: raw(fmt.Sprintf(`{"pad":%q}`, strings.Repeat("y", 2000)))})
		switch {
		case err == nil:
			acked[id] = true
		case errors.Is(err, ErrStoreFull):
			fullErr = err
		default:
			t.Fatalf("put %s: %v, want nil or ErrStoreFull", id, err)
		}
	}
	if fullErr == nil {
		t.Fatal("the disk never filled")
	}
	t.Logf("%d tasks acknowledged before: %v", len(acked), fullErr)
	if h, _ := hl.last(); h.OK {
		t.Fatal("no degraded health reported")
	}
	refused := 1
	// Small writes may still find room on the full disk, large ones not;
	// and the probe runs meanwhile. Neither is an all-clear.
	for i := range 20 {
		id, pad := "small-"+strconv.Itoa(i), 10
		if i%2 == 1 {
			id, pad = "large-"+strconv.Itoa(i), 20000
		}
		err := s.PutTask(context.Background(), TaskRecord{ID: id, Status: "queued", Data: raw(fmt.Sprintf(`{"pad":%q}`, strings.Repeat("z", pad)))})
		switch {
		case err == nil:
			acked[id] = true
		case errors.Is(err, ErrStoreFull):
			refused++
		default:
			t.Fatalf("put %s: %v", id, err)
		}
		clk.Advance(time.Second)
	}
	if h, n := hl.last(); h.OK || n != 1 {
		t.Fatalf("health changed %d times while the disk stayed full (last %+v)", n, h)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testenv.Await(t, 10*time.Second, "recovery", func() bool { clk.Advance(time.Second); h, _ := hl.last(); return h.OK })
	if h, n := hl.last(); n != 2 || h.Failed != refused {
		t.Errorf("recovery reported as %+v after %d changes, want the 2nd change with %d refused", h, n, refused)
	}
	t.Logf("%d writes refused while full; %d acknowledged in all", refused, len(acked))
	if err := s.PutTask(context.Background(), TaskRecord{ID: "after", Status: "queued"}); err != nil {
		t.Fatalf("put after space returned: %v", err)
	}
	acked["after"] = true
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, Options{BackupEvery: -1})
	defer s.Close()
	if s.Recovery() != nil {
		t.Errorf("a full disk damaged the store: %+v", s.Recovery())
	}
	recs, _, err := s.AllTasks()
	if err != nil {
		t.Fatal(err)
	}
	total := len(recs)
	for _, r := range recs {
		if !acked[r.ID] {
			t.Errorf("task %s is stored but was refused", r.ID)
		}
		delete(acked, r.ID)
	}
	if len(acked) > 0 || total != len(recs) {
		t.Errorf("%d acknowledged tasks lost after restart", len(acked))
	}
}

// familiar doctor looks without repairing.
func TestInspectReportsDamageWithoutRepairing(t *testing.T) {
	checkLeaks(t)
	path := filepath.Join(t.TempDir(), FileName)
	s := openAt(t, path, Options{})
	putTasks(t, s, "x", 20)
	s.Close()
	damagePages(t, path, 3, 6)
	if _, err := Open(path, Options{Inspect: true}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Inspect on a damaged store: %v", err)
	}
	if matches, _ := filepath.Glob(path + ".damaged-*"); len(matches) > 0 || !fileExists(path) {
		t.Fatalf("Inspect moved the file: %v", matches)
	}
	os.Truncate(path, 0)
	if _, err := Open(path, Options{Inspect: true}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("Inspect on an emptied store: %v", err)
	}
}
