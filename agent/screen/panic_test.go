package screen

import (
	"strings"
	"testing"
)

// A child can write sequences that make the pinned emulator panic; the
// screen model survives them and keeps working.
func TestEmulatorPanicDoesNotEscape(t *testing.T) {
	s := New(120, 40, nil)
	defer s.Close()
	if _, err := s.Write([]byte("\x1b[1;100r\x1b[T")); err != nil {
		t.Fatal(err)
	}
	_ = s.Snapshot()
	t.Logf("emulator panics recovered: %d", s.Panics())
	if _, err := s.Write([]byte("\x1b[2J\x1b[Hstill alive")); err != nil {
		t.Fatal(err)
	}
	if snap := s.Snapshot(); !strings.Contains(snap.String(), "still alive") {
		t.Fatalf("screen after the panic:\n%s", snap)
	}
}
