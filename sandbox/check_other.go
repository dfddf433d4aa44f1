//go:build !linux && !darwin

package sandbox

import "context"

// Check: claude has no sandbox on this platform.
func Check(context.Context) Availability {
	return Availability{Why: "claude's sandbox runs on Linux and macOS only"}
}
