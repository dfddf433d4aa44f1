package procs

import "os"

// openAutogroup opens /proc/<pid>/autogroup for writing ("self" for
// familiar's own): Linux's scheduling group of a session, whose niceness
// weighs it against the other sessions. os.ErrNotExist where the kernel has
// no autogroups.
func openAutogroup(pid string) (*os.File, error) {
	return os.OpenFile("/proc/"+pid+"/autogroup", os.O_WRONLY, 0)
}
