package proctable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// The layout of macOS's struct kinfo_proc (sys/sysctl.h), the record that
// sysctl kern.proc.* returns per process, on both amd64 and arm64 (64-bit,
// little-endian; x/sys/unix's KinfoProc is the same struct for both). Only
// the fields familiar reads are named. layout_darwin.go checks each offset
// against unix.KinfoProc at compile time, so a build for darwin fails if
// they ever disagree; kinfo_test.go builds its records from a mirror of that
// struct and checks the same offsets on Linux.
const (
	kinfoSize = 648 // unix.SizeofKinfoProc

	kpStartSec  = 0   // kp_proc.p_starttime.tv_sec, int64
	kpStartUsec = 8   // kp_proc.p_starttime.tv_usec, int32
	kpStat      = 36  // kp_proc.p_stat, int8: SIDL 1, SRUN 2, SSLEEP 3, SSTOP 4, SZOMB 5
	kpPID       = 40  // kp_proc.p_pid, int32
	kpComm      = 243 // kp_proc.p_comm, [17]byte, NUL-terminated
	kpPPID      = 560 // kp_eproc.e_ppid, int32
	kpPGID      = 564 // kp_eproc.e_pgid, int32

	commLen = 17 // MAXCOMLEN + 1
)

// darwinState maps p_stat to the letters of Linux's /proc/PID/stat.
var darwinState = map[int8]byte{
	1: 'R', // SIDL: being created by fork; it will run
	2: 'R', // SRUN
	3: 'S', // SSLEEP
	4: 'T', // SSTOP
	5: 'Z', // SZOMB
}

// UnknownState is the State of a process whose macOS p_stat has no Linux
// letter: neither dead nor stopped.
const UnknownState = '?'

// ParseKinfoProcs parses what sysctl kern.proc.all (or kern.proc.pid.N)
// returns: an array of struct kinfo_proc.
func ParseKinfoProcs(b []byte) ([]Proc, error) {
	if len(b)%kinfoSize != 0 {
		return nil, fmt.Errorf("proctable: %d bytes of kinfo_proc is not a whole number of %d-byte records", len(b), kinfoSize)
	}
	le := binary.LittleEndian
	out := make([]Proc, 0, len(b)/kinfoSize)
	for rec := b; len(rec) > 0; rec = rec[kinfoSize:] {
		state, ok := darwinState[int8(rec[kpStat])]
		if !ok {
			// A state this table does not know (a future kernel's) is a
			// live process: one record must not hide the whole table.
			state = UnknownState
		}
		sec, usec := int64(le.Uint64(rec[kpStartSec:])), int32(le.Uint32(rec[kpStartUsec:]))
		out = append(out, Proc{
			PID:   int(int32(le.Uint32(rec[kpPID:]))),
			PPID:  int(int32(le.Uint32(rec[kpPPID:]))),
			PGID:  int(int32(le.Uint32(rec[kpPGID:]))),
			State: state,
			Start: uint64(sec)*1_000_000 + uint64(usec),
		})
	}
	return out, nil
}

// KinfoComm returns the command name (p_comm) of the i-th record in b: the
// first 16 bytes of the executable's name. Tests and diagnostics only.
func KinfoComm(b []byte, i int) string {
	c := b[i*kinfoSize+kpComm:][:commLen]
	if n := bytes.IndexByte(c, 0); n >= 0 {
		c = c[:n]
	}
	return string(c)
}

// ParseProcArgs2 parses what sysctl kern.procargs2.PID returns: the argument
// count as a 32-bit int, then the strings the process was exec'd with as they
// lie at the top of its stack — the executable's path, NUL padding, argc
// arguments, the environment, an empty string, and the "apple" strings the
// kernel passes to dyld (executable_path=…, ptr_munge=…), each NUL-terminated.
// The environment is the one the process started with, like Linux's
// /proc/PID/environ.
//
// A record that ends inside a string, as one read while the process exec'd
// (kern.procargs2 is sized, then read), is parsed as far as it goes and
// ErrTruncated is returned with it: read it again.
func ParseProcArgs2(b []byte) (argv, env []string, err error) {
	truncated := false
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("proctable: procargs2 of %d bytes has no argument count", len(b))
	}
	argc := int(int32(binary.LittleEndian.Uint32(b)))
	rest := b[4:]
	next := func() (string, bool) {
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			if len(rest) == 0 {
				return "", false
			}
			s := string(rest) // truncated last string: take what there is
			rest = nil
			truncated = true
			return s, true
		}
		s := string(rest[:i])
		rest = rest[i+1:]
		return s, true
	}
	if _, ok := next(); !ok { // the executable's path
		return nil, nil, fmt.Errorf("proctable: procargs2 ends before the executable's path")
	}
	for len(rest) > 0 && rest[0] == 0 {
		rest = rest[1:]
	}
	if argc < 0 || argc > len(rest) {
		return nil, nil, fmt.Errorf("proctable: procargs2 says %d arguments in %d bytes", argc, len(rest))
	}
	for range argc {
		s, ok := next()
		if !ok {
			return nil, nil, fmt.Errorf("proctable: procargs2 ends after %d of %d arguments", len(argv), argc)
		}
		argv = append(argv, s)
	}
	for {
		s, ok := next()
		if !ok || s == "" {
			if truncated {
				return argv, env, ErrTruncated
			}
			return argv, env, nil
		}
		env = append(env, s)
	}
}

// ErrTruncated says a kern.procargs2 record ends before its environment's
// end.
var ErrTruncated = errors.New("proctable: procargs2 ends inside its strings")
