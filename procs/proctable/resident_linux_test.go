package proctable

import (
	"os"
	"testing"
)

// This process holds some memory resident; a pid that is no process holds
// none.
func TestResidentReadsProc(t *testing.T) {
	if got := Resident(os.Getpid()); got < 1<<20 {
		t.Errorf("Resident(self) = %d bytes, want at least 1 MiB", got)
	}
	if got := Resident(1 << 30); got != 0 {
		t.Errorf("Resident(no such pid) = %d", got)
	}
}
