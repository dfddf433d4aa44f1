package mcp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ConfigFile is the name of the per-task file passed to claude with
// --mcp-config FILE --strict-mcp-config.
const ConfigFile = "mcp.json"

// config is the document --mcp-config reads; the mcpServers wrapper is
// required (claude exits with "Invalid MCP configuration" without it).
type config struct {
	MCPServers map[string]Server `json:"mcpServers"`
}

// WriteConfig writes servers, as they are, to dir/mcp.json for claude's
// --mcp-config, and returns its path. The file may hold secrets (tokens
// expanded into env or headers), so it is written with mode 0600, through a
// temporary file renamed into place: claude never reads half a file. An
// empty set still gets a file, so that --strict-mcp-config shuts out every
// other MCP configuration.
func WriteConfig(dir string, servers map[string]Server) (string, error) {
	if err := ValidateAll(servers); err != nil {
		return "", err
	}
	if servers == nil {
		servers = map[string]Server{}
	}
	data, err := json.MarshalIndent(config{MCPServers: servers}, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode the mcp config: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("write the mcp config: %w", err)
	}
	path := filepath.Join(dir, ConfigFile)
	if err := writeFileAtomic(path, append(data, '\n')); err != nil {
		return "", fmt.Errorf("write the mcp config: %w", err)
	}
	return path, nil
}

// writeFileAtomic writes path with mode 0600 via a temporary file in the
// same directory, synced before and after the rename.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // the rename survives a crash; not all filesystems can sync a directory
		d.Close()
	}
	return nil
}

// Prepare is the call at a task's start: the session's servers with the
// task's laid over them (Merge), variables expanded for the task's worktree
// (Expand), written to dir/mcp.json (WriteConfig). It returns the file's
// path for --mcp-config.
func Prepare(dir string, session, task map[string]Server, env Env) (string, error) {
	servers, err := Expand(Merge(session, task), env)
	if err != nil {
		return "", err
	}
	return WriteConfig(dir, servers)
}
