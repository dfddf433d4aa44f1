package sandbox

import (
	"testing"

	"github.com/familiar-dev/familiar/internal/leakcheck"
)

// TestMain fails the run if the tests leave goroutines or child processes
// behind.
func TestMain(m *testing.M) { leakcheck.Main(m) }
