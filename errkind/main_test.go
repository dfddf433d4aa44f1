package errkind_test

import (
	"testing"

	"github.com/familiar-dev/familiar/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
