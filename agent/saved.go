package agent

import (
	"os"
	"path/filepath"
)

// SessionSaved reports whether claude has saved the conversation of
// sessionID under configDir (projects/<cwd>/<id>.jsonl), so that --resume can
// continue it. A claude stopped in its first seconds has not, and --resume
// of an unsaved session exits with code 1: such a session starts again.
func SessionSaved(configDir, sessionID string) bool {
	if configDir == "" || sessionID == "" {
		return false
	}
	matches, _ := filepath.Glob(filepath.Join(configDir, "projects", "*", sessionID+".jsonl"))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.Size() > 0 {
			return true
		}
	}
	return false
}
