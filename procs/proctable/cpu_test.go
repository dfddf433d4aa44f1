package proctable

import (
	"encoding/binary"
	"testing"
)

// A rusage_info_v0 as proc_pid_rusage fills it: the UUID, then user and
// system time; their sum is the process's CPU time.
func TestParseRusageInfo(t *testing.T) {
	b := make([]byte, rusageInfoV0Size)
	copy(b, "0123456789abcdef")
	binary.LittleEndian.PutUint64(b[rusageUserTime:], 1_000_000)
	binary.LittleEndian.PutUint64(b[rusageSystemTime:], 250_000)
	binary.LittleEndian.PutUint64(b[32:], 77) // ri_pkg_idle_wkups: not time
	binary.LittleEndian.PutUint64(b[rusageResidentSize:], 42<<20)
	if got := parseRusageResident(b); got != 42<<20 {
		t.Errorf("parseRusageResident = %d", got)
	}
	if got := parseRusageInfo(b); got != 1_250_000 {
		t.Errorf("parseRusageInfo = %d", got)
	}
	if got := parseRusageInfo(b[:40]); got != 0 {
		t.Errorf("a short record: %d", got)
	}
}
