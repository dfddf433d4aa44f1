package plan

import (
	"testing"

	"github.com/familiar-dev/familiar/internal/leakcheck"
)

// No goroutine or child process outlives the package's tests.
func TestMain(m *testing.M) { leakcheck.Main(m) }
