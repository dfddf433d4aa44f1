package agent

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
)

// SessionSaved reports whether claude has saved the conversation of
// sessionID under configDir (projects/<cwd>/<id>.jsonl), so that --resume can
// continue it. A claude stopped in its first seconds has not, and --resume
// of an unsaved session exits with code 1 ("No conversation found with
// session ID"): such a session starts again. The file alone is not enough:
// claude 2.1.200 writes bookkeeping lines first, and it has no conversation
// to resume until a message of the person's is in it.
func SessionSaved(configDir, sessionID string) bool {
	if configDir == "" || sessionID == "" {
		return false
	}
	matches, _ := filepath.Glob(filepath.Join(configDir, "projects", "*", sessionID+".jsonl"))
	for _, m := range matches {
		if hasUserMessage(m) {
			return true
		}
	}
	return false
}

// hasUserMessage reports whether the session file at path has a line of
// type "user".
func hasUserMessage(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20) // a line holds whole tool results
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"type":"user"`)) {
			return true
		}
	}
	return false
}
