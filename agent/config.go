package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SeedConfigDir prepares an isolated CLAUDE_CONFIG_DIR for one session so the
// CLI starts straight at its prompt: onboarding marked done (without it the
// CLI exits offline, CLAUDE-CLI.md §1.1), the API key approved by its last 20
// characters, and trust recorded for the main repository root (one record
// covers all its worktrees, §1.4). The user's own ~/.claude.json is never
// written (layerUserConfig reads the MCP servers from it).
//
// An existing file (a resumed session) keeps its other fields: the CLI writes
// state there itself. The file is replaced atomically.
func SeedConfigDir(dir, repoRoot, apiKey string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("seed claude config: %w", err)
	}
	path := filepath.Join(dir, ".claude.json")
	doc := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &doc); err != nil {
			// A corrupt file is the CLI's own state; starting from a fresh seed
			// loses nothing of the user's (this dir is familiar's).
			doc = map[string]any{}
		}
	} else if !os.IsNotExist(err) {
		return fmt.Errorf("seed claude config: %w", err)
	}
	doc["hasCompletedOnboarding"] = true
	if apiKey != "" {
		responses, _ := doc["customApiKeyResponses"].(map[string]any)
		if responses == nil {
			responses = map[string]any{"approved": []any{}, "rejected": []any{}}
		}
		approved, _ := responses["approved"].([]any)
		tail := apiKeyTail(apiKey)
		found := false
		for _, a := range approved {
			if a == tail {
				found = true
			}
		}
		if !found {
			approved = append(approved, tail)
		}
		responses["approved"] = approved
		if _, ok := responses["rejected"]; !ok {
			responses["rejected"] = []any{}
		}
		doc["customApiKeyResponses"] = responses
	}
	if repoRoot != "" {
		projects, _ := doc["projects"].(map[string]any)
		if projects == nil {
			projects = map[string]any{}
		}
		p, _ := projects[repoRoot].(map[string]any)
		if p == nil {
			p = map[string]any{}
		}
		p["hasTrustDialogAccepted"] = true
		projects[repoRoot] = p
		doc["projects"] = projects
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("seed claude config: %w", err)
	}
	return writeFileAtomic(path, b, 0o600)
}

// apiKeyTail is what the CLI stores to remember an approved key:
// key.trim().slice(-20) (CLAUDE-CLI.md §1).
func apiKeyTail(key string) string {
	key = strings.TrimSpace(key)
	if len(key) > 20 {
		return key[len(key)-20:]
	}
	return key
}

// writeFileAtomic writes to a temporary file in the same dir and renames it,
// so a crash never leaves half a file. It does not fsync: every file it
// writes is in a session's config dir and made again at each start from
// familiar's state (a seed a power loss left empty reads as corrupt and is
// seeded afresh), and claude reads it from the page cache at once. Synced,
// the two or three files of a start cost it 5–75 ms before claude could
// be spawned on a loaded machine (`familiar bench --only firstrequest`,
// "spawn: config").
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, mode)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

// sessionVars are set by a running Claude Code for its own children. If
// familiar itself runs under Claude Code they must not leak into the agents it
// starts: the CLI behaves differently in a child session (CLAUDE-CLI.md §8).
var sessionVars = map[string]bool{
	"CLAUDECODE":                   true,
	"CLAUDE_PID":                   true,
	"CLAUDE_PROJECT_DIR":           true,
	"CLAUDE_ENV_FILE":              true,
	"CLAUDE_EFFORT":                true,
	"CLAUDE_CONFIG_DIR":            true, // replaced by the per-session dir
	"CLAUDE_CODE_ENTRYPOINT":       true,
	"CLAUDE_CODE_SESSION_ID":       true,
	"CLAUDE_CODE_CHILD_SESSION":    true,
	"CLAUDE_CODE_EXECPATH":         true,
	"CLAUDE_CODE_MESSAGING_SOCKET": true,
	"CLAUDE_CODE_MESSAGING_TOKEN":  true,
	"CLAUDE_CODE_SESSION_ATTENDED": true,
	"CLAUDE_CODE_CHILD_NOTES_DIR":  true,
	"AI_AGENT":                     true,
}

// jobVars are the variables of Claude Code's own background jobs (`claude
// --bg`, its daemon; since 2.1.139). A session that inherits CLAUDE_JOB_DIR or
// CLAUDE_CODE_SESSION_KIND=bg is a background job to the CLI, whose isolation
// guard then refuses edits outside .claude/worktrees/ ("This background
// session hasn't isolated its changes yet"): familiar's worktrees are not
// those. The list is what 2.1.332 itself removes from its children's
// environment (CLAUDE-CLI.md §8), plus CLAUDE_JOB_DIR and every CLAUDE_BG_*
// (jobVar).
var jobVars = map[string]bool{
	"CLAUDE_JOB_DIR":                                 true,
	"CLAUDE_CODE_SESSION_KIND":                       true,
	"CLAUDE_CODE_SESSION_NAME":                       true,
	"CLAUDE_CODE_RESUME_INTERRUPTED_TURN":            true,
	"CLAUDE_CODE_RESUME_INTERRUPTED_TURN_MAX_AGE_MS": true,
	"CLAUDE_CODE_RESUME_PROMPT":                      true,
	"CLAUDE_CODE_RESUME_SHOWS_CUT_OFF_CALLS":         true,
	"CLAUDE_CODE_RESUME_REASON":                      true,
	"CLAUDE_CODE_RESUME_SOURCE_ALIVE":                true,
	"CLAUDE_CODE_SESSION_BEGAN_AS_COPY":              true,
	"CLAUDE_CODE_DISABLE_DEFERRED_TOOL_RESUME":       true,
	"CLAUDE_CODE_RELAUNCH_HOME_TRUST":                true,
	"CLAUDE_CODE_RELAUNCH_SANDBOX_HOLD":              true,
	"CLAUDE_CODE_RELAUNCH_BYPASS_SWITCH":             true,
	"CLAUDE_CODE_RELAUNCH_RESUME_HINT_FLAGS":         true,
	"CLAUDE_CODE_RESUME_HINT_COMMAND":                true,
	"CLAUDE_CODE_RELAUNCH_SEAT_LAUNCH":               true,
	"CLAUDE_CODE_LAUNCHED_BY_SESSION_IDS":            true,
	"CLAUDE_PTY_HOST_EXEC":                           true,
}

// jobVar says whether k belongs to a background job of Claude Code: the
// CLI's own CLAUDE_BG_* (isolation mode, backend, credentials, permission
// rules of the job, ...) are many and grow with each release.
func jobVar(k string) bool {
	return jobVars[k] || strings.HasPrefix(k, "CLAUDE_BG_")
}

// SessionEnv returns the environment for one claude session: the caller's
// environment (credentials, proxy settings, CLAUDE_CODE_* knobs the user set)
// without the variables of a parent Claude session or background job, plus CLAUDE_CONFIG_DIR when
// configDir is set, plus extra (which wins).
func SessionEnv(base []string, configDir string, extra map[string]string) []string {
	out := make([]string, 0, len(base)+len(extra)+1)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if sessionVars[k] || jobVar(k) {
			continue
		}
		if _, overridden := extra[k]; overridden {
			continue
		}
		out = append(out, kv)
	}
	if configDir != "" {
		out = append(out, "CLAUDE_CONFIG_DIR="+configDir)
		// The session's state is familiar's, its login the user's own
		// (auth.go): the credential store stays where the user's claude
		// keeps it. A value the user set explicitly is kept.
		if _, ok := extra["CLAUDE_SECURESTORAGE_CONFIG_DIR"]; !ok && !hasEnv(base, "CLAUDE_SECURESTORAGE_CONFIG_DIR") {
			out = append(out, "CLAUDE_SECURESTORAGE_CONFIG_DIR="+UserConfigOf(withExtra(base, extra)).secureStorageDir())
		}
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

func hasEnv(env []string, key string) bool {
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && k == key {
			return true
		}
	}
	return false
}

func withExtra(base []string, extra map[string]string) []string {
	out := append([]string(nil), base...)
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

// LookupEnv returns the value of key in env (last one wins, as in exec).
func LookupEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
