package proctable

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"
)

// The records below are built in the memory layout of macOS's struct
// kinfo_proc: kinfoMirror is x/sys/unix's darwin KinfoProc
// (ztypes_darwin_arm64.go, identical for amd64) copied field for field, with
// pointers as uintptr and darwin's Timeval (int64 seconds, int32
// microseconds, 4 bytes of padding). Go lays out a struct by the same rules
// on every 64-bit platform, so on linux/amd64 or arm64 the mirror has the
// offsets the darwin build has — the test checks them against kinfo.go's
// constants, and layout_darwin.go checks those against the real struct when
// building for darwin. The bytes of a filled mirror are therefore what
// sysctl kern.proc.all returns on a Mac.

type darwinTimeval struct {
	Sec  int64
	Usec int32
	_    [4]byte
}

type darwinItimerval struct{ Interval, Value darwinTimeval }

type darwinVmspace struct {
	Dummy  int32
	Dummy2 uintptr
	Dummy3 [5]int32
	Dummy4 [3]uintptr
}

type darwinPcred struct {
	Pc_lock                          [72]int8
	Pc_ucred                         uintptr
	P_ruid, P_svuid, P_rgid, P_svgid uint32
	P_refcnt                         int32
	_                                [4]byte
}

type darwinUcred struct {
	Ref     int32
	Uid     uint32
	Ngroups int16
	Groups  [16]uint32
}

type darwinEproc struct {
	Paddr, Sess              uintptr
	Pcred                    darwinPcred
	Ucred                    darwinUcred
	Vm                       darwinVmspace
	Ppid, Pgid               int32
	Jobc                     int16
	Tdev, Tpgid              int32
	Tsess                    uintptr
	Wmesg                    [8]byte
	Xsize                    int32
	Xrssize, Xccount, Xswrss int16
	Flag                     int32
	Login                    [12]byte
	Spare                    [4]int32
	_                        [4]byte
}

type darwinExternProc struct {
	P_starttime                        darwinTimeval
	P_vmspace, P_sigacts               uintptr
	P_flag                             int32
	P_stat                             int8
	P_pid, P_oppid, P_dupfd            int32
	User_stack, Exit_thread            uintptr
	P_debugger, Sigwait                int32
	P_estcpu                           uint32
	P_cpticks                          int32
	P_pctcpu                           uint32
	P_wchan, P_wmesg                   uintptr
	P_swtime, P_slptime                uint32
	P_realtimer                        darwinItimerval
	P_rtime                            darwinTimeval
	P_uticks, P_sticks, P_iticks       uint64
	P_traceflag                        int32
	P_tracep                           uintptr
	P_siglist                          int32
	P_textvp                           uintptr
	P_holdcnt                          int32
	P_sigmask, P_sigignore, P_sigcatch uint32
	P_priority, P_usrpri               uint8
	P_nice                             int8
	P_comm                             [17]byte
	P_pgrp, P_addr                     uintptr
	P_xstat, P_acflag                  uint16
	P_ru                               uintptr
}

type kinfoMirror struct {
	Proc  darwinExternProc
	Eproc darwinEproc
}

func TestKinfoMirrorHasDarwinLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the mirror has darwin's layout only on a 64-bit platform")
	}
	var k kinfoMirror
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof", unsafe.Sizeof(k), kinfoSize},
		{"p_starttime.tv_sec", unsafe.Offsetof(k.Proc.P_starttime), kpStartSec},
		{"p_starttime.tv_usec", unsafe.Offsetof(k.Proc.P_starttime.Usec), kpStartUsec},
		{"p_stat", unsafe.Offsetof(k.Proc.P_stat), kpStat},
		{"p_pid", unsafe.Offsetof(k.Proc.P_pid), kpPID},
		{"p_comm", unsafe.Offsetof(k.Proc.P_comm), kpComm},
		{"e_ppid", unsafe.Offsetof(k.Eproc) + unsafe.Offsetof(k.Eproc.Ppid), kpPPID},
		{"e_pgid", unsafe.Offsetof(k.Eproc) + unsafe.Offsetof(k.Eproc.Pgid), kpPGID},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, kinfo.go reads %d", c.name, c.got, c.want)
		}
	}
}

// kinfoRecord fills a mirror with what the kernel reports of one process
// and returns its bytes.
func kinfoRecord(pid, ppid, pgid int32, stat int8, sec int64, usec int32, comm string) []byte {
	var k kinfoMirror
	k.Proc.P_pid, k.Eproc.Ppid, k.Eproc.Pgid = pid, ppid, pgid
	k.Proc.P_oppid = ppid // distractors: fields near the ones read
	k.Eproc.Tpgid = pgid + 1000
	k.Proc.P_stat = stat
	k.Proc.P_flag = 0x4004 // P_LP64|P_EXEC
	k.Proc.P_starttime = darwinTimeval{Sec: sec, Usec: usec}
	k.Proc.P_nice = 10
	copy(k.Proc.P_comm[:16], comm) // MAXCOMLEN, then a NUL
	k.Eproc.Ucred.Uid = 501        // the first user on a Mac
	return slices.Clone(unsafe.Slice((*byte)(unsafe.Pointer(&k)), unsafe.Sizeof(k)))
}

var update = flag.Bool("update", false, "rewrite testdata/kinfo_proc_all.bin from the mirror")

// recordedTable is what sysctl kern.proc.all returns for launchd, a login
// shell, claude under familiar (its own session), a Bash tool command that
// called setsid and was orphaned to launchd, a stopped process and a zombie:
// testdata/kinfo_proc_all.bin, made from the mirror (go test -run
// TestParseKinfoProcs -update) and checked against it on every run.
func recordedTable(t *testing.T) []byte {
	t.Helper()
	var table []byte
	for _, r := range [][]byte{
		kinfoRecord(1, 0, 1, 2, 1764140000, 125000, "launchd"),
		kinfoRecord(812, 811, 812, 3, 1764141000, 5, "zsh"),
		kinfoRecord(4242, 4100, 4242, 3, 1764142000, 999999, "claude"),
		kinfoRecord(4300, 1, 4300, 3, 1764142100, 0, "sleep"),
		kinfoRecord(4301, 4242, 4242, 4, 1764142101, 1, "a-very-long-command-name"),
		kinfoRecord(4302, 4242, 4242, 5, 1764142102, 2, "git"),
	} {
		table = append(table, r...)
	}
	file := filepath.Join("testdata", "kinfo_proc_all.bin")
	if *update {
		if err := os.WriteFile(file, table, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recorded, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(recorded, table) {
		t.Fatalf("%s differs from the records the mirror makes (rerun with -update if the mirror changed on purpose)", file)
	}
	return recorded
}

func TestParseKinfoProcs(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the mirror has darwin's layout only on a 64-bit platform")
	}
	table := recordedTable(t)
	got, err := ParseKinfoProcs(table)
	if err != nil {
		t.Fatal(err)
	}
	want := []Proc{
		{PID: 1, PPID: 0, PGID: 1, State: 'R', Start: 1764140000_125000},
		{PID: 812, PPID: 811, PGID: 812, State: 'S', Start: 1764141000_000005},
		{PID: 4242, PPID: 4100, PGID: 4242, State: 'S', Start: 1764142000_999999},
		{PID: 4300, PPID: 1, PGID: 4300, State: 'S', Start: 1764142100_000000},
		{PID: 4301, PPID: 4242, PGID: 4242, State: 'T', Start: 1764142101_000001},
		{PID: 4302, PPID: 4242, PGID: 4242, State: 'Z', Start: 1764142102_000002},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", got, want)
	}
	if !got[4].Stopped() || got[4].Dead() || !got[5].Dead() || got[2].Dead() {
		t.Errorf("states: %+v", got)
	}
	if c := KinfoComm(table, 2); c != "claude" {
		t.Errorf("comm of record 2 = %q", c)
	}
	if c := KinfoComm(table, 4); c != "a-very-long-command-name"[:16] {
		t.Errorf("comm of record 4 = %q, want the first 16 bytes", c)
	}
}

func TestParseKinfoProcsRejectsBadInput(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the mirror has darwin's layout only on a 64-bit platform")
	}
	rec := kinfoRecord(7, 1, 7, 3, 1, 0, "x")
	if _, err := ParseKinfoProcs(rec[:len(rec)-1]); err == nil {
		t.Error("a partial record parsed")
	}
	// A state of a future kernel is a live process, and the rest of the
	// table is still read.
	rec[kpStat] = 9
	two := append(slices.Clone(rec), kinfoRecord(8, 1, 8, 3, 2, 0, "y")...)
	if got, err := ParseKinfoProcs(two); err != nil || len(got) != 2 || got[0].State != UnknownState || got[0].Dead() || got[0].Stopped() || got[1].PID != 8 {
		t.Errorf("an unknown p_stat: %+v, %v", got, err)
	}
	if got, err := ParseKinfoProcs(nil); err != nil || len(got) != 0 {
		t.Errorf("no records: %v, %v", got, err)
	}
}

// procargs2 builds what kern.procargs2 returns: argc, the executable's
// path, its alignment padding, the arguments, the environment, and the
// apple strings after an empty string (xnu's exec_copyout_strings).
func procargs2(argc int32, path string, pad int, rest ...string) []byte {
	b := []byte{byte(argc), byte(argc >> 8), byte(argc >> 16), byte(argc >> 24)}
	b = append(b, path...)
	b = append(b, make([]byte, 1+pad)...)
	for _, s := range rest {
		b = append(append(b, s...), 0)
	}
	return b
}

func TestParseProcArgs2(t *testing.T) {
	for _, c := range []struct {
		name      string
		in        []byte
		argv, env []string
		bad       bool
		truncated bool
	}{
		{
			name: "claude under familiar",
			in: procargs2(3, "/opt/homebrew/bin/node", 6, "node", "/opt/homebrew/bin/claude", "--verbose",
				"HOME=/Users/ann", "FAMILIAR_PROCS_TREE=fpt0123", "PATH=/usr/bin:/bin", "",
				"executable_path=/opt/homebrew/bin/node", "ptr_munge=", "main_stack="),
			argv: []string{"node", "/opt/homebrew/bin/claude", "--verbose"},
			env:  []string{"HOME=/Users/ann", "FAMILIAR_PROCS_TREE=fpt0123", "PATH=/usr/bin:/bin"},
		},
		{
			name: "no environment",
			in:   procargs2(1, "/bin/sleep", 0, "sleep", "", "executable_path=/bin/sleep"),
			argv: []string{"sleep"},
		},
		{
			name: "ends without the empty string",
			in:   procargs2(1, "/bin/sh", 2, "sh", "A=1"),
			argv: []string{"sh"},
			env:  []string{"A=1"},
		},
		{name: "empty", in: nil, bad: true},
		// Read while the process exec'd: sized for the old image, cut in
		// the new one's environment.
		{name: "cut inside the environment", in: procargs2(1, "/bin/sh", 0, "sh", "A=1", "FAMILIAR_PROCS_TR")[:len(procargs2(1, "/bin/sh", 0, "sh", "A=1", "FAMILIAR_PROCS_TR"))-1],
			argv: []string{"sh"}, env: []string{"A=1", "FAMILIAR_PROCS_TR"}, truncated: true},
		{name: "argc only", in: []byte{1, 0, 0, 0}, bad: true},
		{name: "fewer arguments than argc", in: procargs2(3, "/bin/sh", 0, "sh"), bad: true},
		{name: "negative argc", in: procargs2(-1, "/bin/sh", 0, "sh"), bad: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			argv, env, err := ParseProcArgs2(c.in)
			if c.bad {
				if err == nil {
					t.Fatalf("parsed %q %q", argv, env)
				}
				return
			}
			if c.truncated != errors.Is(err, ErrTruncated) || (err != nil && !c.truncated) {
				t.Fatalf("err = %v, truncated %v", err, c.truncated)
			}
			if !slices.Equal(argv, c.argv) || !slices.Equal(env, c.env) {
				t.Errorf("argv %q env %q, want %q %q", argv, env, c.argv, c.env)
			}
		})
	}
}
