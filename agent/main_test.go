package agent_test

import (
	"testing"

	"github.com/familiar-dev/familiar/internal/leakcheck"
	"github.com/familiar-dev/familiar/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.Main()
	leakcheck.Main(m)
}
