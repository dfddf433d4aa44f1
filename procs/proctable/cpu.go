package proctable

import "encoding/binary"

// The start of macOS's struct rusage_info_v0 (sys/resource.h), what
// proc_pid_rusage(pid, RUSAGE_INFO_V0) fills: a 16-byte UUID, then the user
// and system time (in Mach absolute time units: only compared here, never
// converted).
const (
	rusageUserTime     = 16
	rusageSystemTime   = 24
	rusageResidentSize = 64 // ri_resident_size, bytes
	rusageInfoV0Size   = 96
)

// parseRusageInfo returns ri_user_time + ri_system_time of a
// rusage_info_v0, 0 when b is too short.
func parseRusageInfo(b []byte) uint64 {
	if len(b) < rusageInfoV0Size {
		return 0
	}
	return binary.LittleEndian.Uint64(b[rusageUserTime:]) + binary.LittleEndian.Uint64(b[rusageSystemTime:])
}

// parseRusageResident returns ri_resident_size of a rusage_info_v0, 0 when
// b is too short.
func parseRusageResident(b []byte) uint64 {
	if len(b) < rusageInfoV0Size {
		return 0
	}
	return binary.LittleEndian.Uint64(b[rusageResidentSize:])
}
