package mcp

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		s    Server
		err  string // "" = valid
	}{
		{"stdio", Server{Type: TypeStdio, Command: "fs", Args: []string{"a"}, Env: map[string]string{"K": "v"}}, ""},
		{"type defaults to stdio", Server{Command: "fs"}, ""},
		{"http", Server{Type: TypeHTTP, URL: "http://127.0.0.1:8080/mcp", Headers: map[string]string{"Authorization": "Bearer x"}}, ""},
		{"sse https", Server{Type: TypeSSE, URL: "https://example.com/sse"}, ""},
		{"url with a variable is checked later", Server{Type: TypeHTTP, URL: "${MCP_URL}"}, ""},
		{"stdio without command", Server{Type: TypeStdio}, "needs a command"},
		{"stdio with url", Server{Command: "x", URL: "http://h"}, "no url"},
		{"http with command", Server{Type: TypeHTTP, URL: "http://h", Command: "x"}, "no command"},
		{"http without url", Server{Type: TypeHTTP}, "absolute http"},
		{"ftp url", Server{Type: TypeSSE, URL: "ftp://host/x"}, "absolute http"},
		{"relative url", Server{Type: TypeHTTP, URL: "/mcp"}, "absolute http"},
		{"unknown type", Server{Type: "websocket", URL: "ws://h"}, `unknown type "websocket"`},
		{"bad env name", Server{Command: "x", Env: map[string]string{"A=B": "v"}}, "environment variable name"},
		{"bad header name", Server{Type: TypeHTTP, URL: "http://h", Headers: map[string]string{"X Y": "v"}}, "header name"},
	}
	for _, tt := range tests {
		err := tt.s.Validate()
		if tt.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
		}
	}
}

func TestValidateAllNamesTheServer(t *testing.T) {
	err := ValidateAll(map[string]Server{"ok": {Command: "x"}, "bad": {Type: TypeHTTP, URL: "ftp://secret-host/token"}})
	if err == nil || !strings.Contains(err.Error(), `mcp server "bad"`) || strings.Contains(err.Error(), "secret") {
		t.Errorf("err = %v", err)
	}
	if err := ValidateAll(map[string]Server{"has space": {Command: "x"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad name: %v", err)
	}
	if err := ValidateAll(nil); err != nil {
		t.Errorf("nil: %v", err)
	}
}

func TestMerge(t *testing.T) {
	session := map[string]Server{
		"fs":  {Type: TypeStdio, Command: "npx", Args: []string{"fs"}},
		"web": {Type: TypeHTTP, URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"A": "1"}},
	}
	task := map[string]Server{
		"web":   {Type: TypeSSE, URL: "http://127.0.0.1:2/sse"},
		"extra": {Command: "extra"},
	}
	got := Merge(session, task)
	want := map[string]Server{
		"fs":    session["fs"],
		"web":   task["web"], // replaced as a whole: no headers left over
		"extra": task["extra"],
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Merge = %+v\nwant %+v", got, want)
	}
	got["fs"].Args[0] = "changed"
	if session["fs"].Args[0] != "fs" {
		t.Errorf("Merge shares slices with its input")
	}
	if m := Merge(nil, nil); m == nil || len(m) != 0 {
		t.Errorf("Merge(nil, nil) = %v", m)
	}
}

func TestExpand(t *testing.T) {
	env := Env{Worktree: "/wt/task-1", Lookup: func(k string) (string, bool) {
		v, ok := map[string]string{"TOKEN": "s3cret", "HOST": "127.0.0.1", "EMPTY": ""}[k]
		return v, ok
	}}
	in := map[string]Server{
		"fs":  {Command: "npx", Args: []string{"-y", "server-filesystem", "${FAMILIAR_WORKTREE}"}},
		"gh":  {Type: TypeStdio, Command: "npx", Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "${TOKEN}"}},
		"web": {Type: TypeHTTP, URL: "http://${HOST}:${PORT:-8080}/mcp", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
		"def": {Command: "${EMPTY:-fallback}", Args: []string{"$TOKEN", "${not a var}"}},
	}
	got, err := Expand(in, env)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Server{
		"fs":  {Type: TypeStdio, Command: "npx", Args: []string{"-y", "server-filesystem", "/wt/task-1"}},
		"gh":  {Type: TypeStdio, Command: "npx", Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "s3cret"}},
		"web": {Type: TypeHTTP, URL: "http://127.0.0.1:8080/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}},
		"def": {Type: TypeStdio, Command: "fallback", Args: []string{"$TOKEN", "${not a var}"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Expand =\n%+v\nwant\n%+v", got, want)
	}
	if in["gh"].Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "${TOKEN}" {
		t.Errorf("Expand changed its input")
	}

	for _, tt := range []struct {
		name string
		s    Server
		want string
	}{
		{"unset", Server{Command: "x", Env: map[string]string{"T": "${MISSING}"}}, "environment variable MISSING is not set"},
		{"empty", Server{Command: "x", Args: []string{"${EMPTY}"}}, "environment variable EMPTY is not set"},
		{"expands to a bad url", Server{Type: TypeHTTP, URL: "${TOKEN}"}, "absolute http"},
	} {
		_, err := Expand(map[string]Server{"srv": tt.s}, env)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `"srv"`) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the secret: %v", tt.name, err)
		}
	}
	if _, err := Expand(map[string]Server{"x": {Command: "${MISSING}"}}, env); !errors.Is(err, ErrUnavailable) {
		t.Errorf("missing variable is not ErrUnavailable: %v", err)
	}
}

func TestPresets(t *testing.T) {
	ps := Presets("")
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
		if err := p.Server.Validate(); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
		if len(p.Requires) == 0 || p.Requires[0] != "npx" {
			t.Errorf("%s requires %v", p.Name, p.Requires)
		}
	}
	if strings.Join(names, ",") != "filesystem,github,puppeteer" {
		t.Errorf("presets = %v", names)
	}
	fs, ok := PresetNamed("filesystem", "")
	if !ok || fs.Server.Args[len(fs.Server.Args)-1] != "${FAMILIAR_WORKTREE}" {
		t.Errorf("filesystem = %+v", fs)
	}
	fs, _ = PresetNamed("filesystem", "/wt/1")
	if fs.Server.Args[len(fs.Server.Args)-1] != "/wt/1" {
		t.Errorf("filesystem for a worktree = %+v", fs)
	}
	gh, _ := PresetNamed("github", "")
	if gh.Server.Env[GitHubTokenVar] != "${GITHUB_PERSONAL_ACCESS_TOKEN}" || gh.Requires[1] != GitHubTokenVar {
		t.Errorf("github = %+v", gh)
	}
	if _, ok := PresetNamed("nope", ""); ok {
		t.Errorf("unknown preset found")
	}
	// The placeholder expands per task.
	got, err := Expand(map[string]Server{"fs": Presets("")[0].Server}, Env{Worktree: "/wt/2"})
	if err != nil || got["fs"].Args[2] != "/wt/2" {
		t.Errorf("expanded filesystem = %+v, %v", got, err)
	}
}
