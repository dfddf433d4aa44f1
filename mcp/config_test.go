package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readConfig(t *testing.T, path string) map[string]map[string]Server {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]Server
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
	return doc
}

func TestWriteConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "task-1") // made if missing
	servers := map[string]Server{
		"study": {Type: TypeStdio, Command: "python3", Args: []string{"mcp_server.py"}, Env: map[string]string{"FOO": "bar"}},
		"web":   {Type: TypeHTTP, URL: "http://127.0.0.1:9/mcp", Headers: map[string]string{"Authorization": "Bearer tok123"}},
	}
	path, err := WriteConfig(dir, servers)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, ConfigFile) {
		t.Errorf("path = %s", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	doc := readConfig(t, path)
	if !reflect.DeepEqual(doc, map[string]map[string]Server{"mcpServers": servers}) {
		t.Errorf("file = %+v", doc)
	}
	raw, _ := os.ReadFile(path)
	for _, absent := range []string{`"url"`, `"headers"`} {
		// The stdio entry carries no http fields (and vice versa).
		if strings.Count(string(raw), absent) != 1 {
			t.Errorf("%s appears %d times:\n%s", absent, strings.Count(string(raw), absent), raw)
		}
	}

	// Rewriting replaces the file whole and leaves no temporary files.
	if _, err := WriteConfig(dir, map[string]Server{"only": {Command: "x"}}); err != nil {
		t.Fatal(err)
	}
	if doc := readConfig(t, path); len(doc["mcpServers"]) != 1 {
		t.Errorf("after rewrite: %+v", doc)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %v", entries)
	}

	// No servers still gives a valid file, so --strict-mcp-config shuts out
	// every other configuration.
	if _, err := WriteConfig(dir, nil); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(path); strings.TrimSpace(string(raw)) != "{\n  \"mcpServers\": {}\n}" {
		t.Errorf("empty config = %s", raw)
	}
}

func TestWriteConfigRefusesInvalid(t *testing.T) {
	dir := t.TempDir()
	if _, err := WriteConfig(dir, map[string]Server{"bad": {Type: TypeStdio}}); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("wrote %v", entries)
	}
	// An unwritable directory fails without leaving anything behind.
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 { // root writes anywhere
		if _, err := WriteConfig(ro, nil); err == nil {
			t.Errorf("wrote into a read-only directory")
		}
	}
}

func TestPrepare(t *testing.T) {
	t.Setenv(GitHubTokenVar, "ghp_secret")
	dir := t.TempDir()
	gh, _ := PresetNamed("github", "")
	fs, _ := PresetNamed("filesystem", "")
	session := map[string]Server{"github": gh.Server, "fs": fs.Server, "web": {Type: TypeHTTP, URL: "http://127.0.0.1:1/a"}}
	task := map[string]Server{"web": {Type: TypeSSE, URL: "http://127.0.0.1:2/b"}}
	path, err := Prepare(dir, session, task, Env{Worktree: "/wt/7"})
	if err != nil {
		t.Fatal(err)
	}
	got := readConfig(t, path)["mcpServers"]
	if got["github"].Env[GitHubTokenVar] != "ghp_secret" || got["fs"].Args[2] != "/wt/7" || got["web"].URL != "http://127.0.0.1:2/b" || got["web"].Type != TypeSSE {
		t.Errorf("config = %+v", got)
	}
	if session["github"].Env[GitHubTokenVar] != "${GITHUB_PERSONAL_ACCESS_TOKEN}" {
		t.Errorf("Prepare changed the session's servers")
	}

	// Without the token: an error that names the variable, no file.
	t.Setenv(GitHubTokenVar, "")
	dir2 := t.TempDir()
	_, err = Prepare(dir2, session, nil, Env{Worktree: "/wt/7"})
	if err == nil || !strings.Contains(err.Error(), GitHubTokenVar+" is not set") || !strings.Contains(err.Error(), `"github"`) {
		t.Errorf("err = %v", err)
	}
	if entries, _ := os.ReadDir(dir2); len(entries) != 0 {
		t.Errorf("wrote %v", entries)
	}
}
