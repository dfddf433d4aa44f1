package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// UserConfig is where the user's own claude keeps its configuration: the
// config dir ($CLAUDE_CONFIG_DIR, else ~/.claude) and the state file
// ($CLAUDE_CONFIG_DIR/.claude.json, else ~/.claude.json). familiar reads it
// and never writes it.
type UserConfig struct {
	Dir       string
	StateFile string
	Custom    bool // CLAUDE_CONFIG_DIR was set
}

// UserConfigOf finds the user's claude config from familiar's environment.
func UserConfigOf(env []string) UserConfig {
	if d := LookupEnv(env, "CLAUDE_CONFIG_DIR"); d != "" {
		return UserConfig{Dir: d, StateFile: filepath.Join(d, ".claude.json"), Custom: true}
	}
	home := LookupEnv(env, "HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return UserConfig{Dir: filepath.Join(home, ".claude"), StateFile: filepath.Join(home, ".claude.json")}
}

// CredentialsPath is the user's claude.ai login file (Linux, and macOS
// without a Keychain).
func (u UserConfig) CredentialsPath() string { return filepath.Join(u.Dir, ".credentials.json") }

// secureStorageDir is the value of CLAUDE_SECURESTORAGE_CONFIG_DIR that
// points a session at the user's own credential store: "" is the default
// (~/.claude, and the plain Keychain item).
func (u UserConfig) secureStorageDir() string {
	if u.Custom {
		return u.Dir
	}
	return ""
}

// settings reads the user's settings.json; nil when there is none.
func (u UserConfig) settings() map[string]any {
	var doc map[string]any
	if b, err := os.ReadFile(filepath.Join(u.Dir, "settings.json")); err == nil {
		_ = json.Unmarshal(b, &doc)
	}
	return doc
}

// state reads the user's .claude.json; nil when there is none.
func (u UserConfig) state() map[string]any {
	var doc map[string]any
	if b, err := os.ReadFile(u.StateFile); err == nil {
		_ = json.Unmarshal(b, &doc)
	}
	return doc
}

// userEntries are what a session's config dir takes from the user's as
// links: read by the CLI, written by the person. settings.json is copied
// instead (the CLI writes "user settings" there, and that must not reach the
// user's file), skills are linked one by one (task skills sit beside them).
var userEntries = []string{"CLAUDE.md", "agents", "commands", "output-styles", "rules"}

// layerUserConfig puts the user's own configuration under a session's
// config dir, below familiar's layer: settings.json (permissions, env,
// model; familiar's hooks come on top with --settings), CLAUDE.md, agents,
// commands, output styles and skills. A task skill of the same name wins
// over a user skill. Nothing is written into the user's dir.
func layerUserConfig(configDir string, u UserConfig) error {
	if filepath.Clean(u.Dir) == filepath.Clean(configDir) {
		return nil
	}
	settings := filepath.Join(configDir, "settings.json")
	if b, err := os.ReadFile(filepath.Join(u.Dir, "settings.json")); err == nil {
		if err := writeFileAtomic(settings, b, 0o600); err != nil {
			return fmt.Errorf("copy user settings: %w", err)
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		_ = os.Remove(settings) // the user removed theirs
	} else {
		return fmt.Errorf("read user settings: %w", err)
	}
	for _, name := range userEntries {
		if err := linkEntry(filepath.Join(u.Dir, name), filepath.Join(configDir, name)); err != nil {
			return err
		}
	}
	skills, err := os.ReadDir(filepath.Join(u.Dir, "skills"))
	if err != nil {
		return nil // none
	}
	dst := filepath.Join(configDir, "skills")
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return fmt.Errorf("user skills: %w", err)
	}
	for _, sk := range skills {
		to := filepath.Join(dst, sk.Name())
		if fi, err := os.Lstat(to); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			continue // a task skill of that name
		}
		if err := linkEntry(filepath.Join(u.Dir, "skills", sk.Name()), to); err != nil {
			return err
		}
	}
	return nil
}

// linkEntry makes to a symlink to from, replacing an older link; it removes
// a link whose target is gone and leaves a real file alone.
func linkEntry(from, to string) error {
	fi, err := os.Lstat(to)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink == 0:
		return nil
	case err == nil:
		if err := os.Remove(to); err != nil {
			return fmt.Errorf("link %s: %w", to, err)
		}
	}
	if _, err := os.Stat(from); err != nil {
		return nil
	}
	if err := os.Symlink(from, to); err != nil {
		return fmt.Errorf("link %s: %w", to, err)
	}
	return nil
}

// userMCPServers returns the user's MCP servers that apply in repoRoot:
// user scope (top-level mcpServers of the state file) and local scope
// (projects[repoRoot].mcpServers), local winning.
func (u UserConfig) userMCPServers(repoRoot string) map[string]any {
	st := u.state()
	out := map[string]any{}
	if m, ok := st["mcpServers"].(map[string]any); ok {
		for k, v := range m {
			out[k] = v
		}
	}
	if projects, ok := st["projects"].(map[string]any); ok {
		if p, ok := projects[repoRoot].(map[string]any); ok {
			if m, ok := p["mcpServers"].(map[string]any); ok {
				for k, v := range m {
					out[k] = v
				}
			}
		}
	}
	return out
}

// mergeMCPConfig writes, into configDir, the task's MCP config (path) with
// the user's servers added under it (the task's win a name clash), and
// returns the new path. familiar passes --strict-mcp-config, which would
// otherwise hide the user's servers.
func mergeMCPConfig(configDir, path string, user map[string]any) (string, error) {
	if len(user) == 0 {
		return path, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read MCP config: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", fmt.Errorf("read MCP config %s: %w", path, err)
	}
	servers, _ := doc["mcpServers"].(map[string]any)
	merged := map[string]any{}
	for k, v := range user {
		merged[k] = v
	}
	for k, v := range servers {
		merged[k] = v
	}
	doc["mcpServers"] = merged
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", fmt.Errorf("merge MCP config: %w", err)
	}
	dst := filepath.Join(configDir, "familiar-mcp.json")
	if err := writeFileAtomic(dst, out, 0o600); err != nil {
		return "", err
	}
	return dst, nil
}
