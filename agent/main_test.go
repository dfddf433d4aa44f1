package agent_test

import (
	"os"
	"testing"

	"github.com/familiar-dev/familiar/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.Main()
	os.Exit(m.Run())
}
