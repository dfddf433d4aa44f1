//go:build darwin

package sandbox

import (
	"context"
	"os"
)

// Check looks for Seatbelt's sandbox-exec, which macOS ships.
func Check(context.Context) Availability {
	if _, err := os.Stat("/usr/bin/sandbox-exec"); err != nil {
		return Availability{Why: "/usr/bin/sandbox-exec is missing"}
	}
	return Availability{OK: true}
}
