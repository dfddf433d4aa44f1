package demomodel

import (
	"testing"

	"github.com/familiar-dev/familiar/internal/leakcheck"
)

// TestMain fails the run if goroutines outlive the tests: every Server must
// have been closed and its handlers (and hooks) must have returned.
func TestMain(m *testing.M) { leakcheck.Main(m) }
