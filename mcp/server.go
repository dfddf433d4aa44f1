package mcp

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/familiar-dev/familiar/errkind"
)

// The kinds of error this package returns; test with errors.Is.
var (
	ErrInvalid     error = errkind.New(errkind.Invalid, "invalid")         // a malformed server config
	ErrUnavailable error = errkind.New(errkind.Unavailable, "unavailable") // a referenced environment variable is not set
)

// Transports of an MCP server.
const (
	TypeStdio = "stdio"
	TypeHTTP  = "http"
	TypeSSE   = "sse"
)

// Server is one MCP server as PROTOCOL.md's McpServer and claude's
// --mcp-config both spell it: {type:"stdio", command, args?, env?} or
// {type:"http"|"sse", url, headers?}.
//
// Strings may refer to environment variables as ${NAME} or ${NAME:-default}
// (claude's own .mcp.json syntax); ${FAMILIAR_WORKTREE} is the task's
// worktree. Expand resolves them, so secrets such as tokens stay out of
// settings, presets, logs and errors, and are written only to the per-task
// config file.
type Server struct {
	Type    string            `json:"type"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// WorktreeVar names the task's worktree in a server config.
const WorktreeVar = "FAMILIAR_WORKTREE"

// nameRE is what claude accepts as a server name (it becomes part of tool
// names: mcp__<server>__<tool>).
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Validate checks the shape of a server config. Its errors name fields,
// never values (a URL or header may hold a secret).
func (s Server) Validate() error {
	switch s.Type {
	case "", TypeStdio:
		if strings.TrimSpace(s.Command) == "" {
			return fmt.Errorf("%w: a stdio server needs a command", ErrInvalid)
		}
		if s.URL != "" || len(s.Headers) > 0 {
			return fmt.Errorf("%w: a stdio server takes no url or headers", ErrInvalid)
		}
	case TypeHTTP, TypeSSE:
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
			return fmt.Errorf("%w: an %s server takes no command, args or env", ErrInvalid, s.Type)
		}
		if strings.Contains(s.URL, "${") {
			break // checked once expanded
		}
		if err := checkURL(s.URL); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: unknown type %q (want stdio, http or sse)", ErrInvalid, s.Type)
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("%w: bad environment variable name %q", ErrInvalid, k)
		}
	}
	for k := range s.Headers {
		if k == "" || strings.ContainsAny(k, ":\r\n ") {
			return fmt.Errorf("%w: bad header name %q", ErrInvalid, k)
		}
	}
	return nil
}

// checkURL accepts absolute http(s) URLs. The error does not repeat the URL.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: url must be an absolute http or https URL", ErrInvalid)
	}
	return nil
}

// ValidateAll checks every server and its name, in name order; the error
// names the server.
func ValidateAll(servers map[string]Server) error {
	for _, name := range Names(servers) {
		if !nameRE.MatchString(name) {
			return fmt.Errorf("%w: server name %q may only use letters, digits, '_' and '-'", ErrInvalid, name)
		}
		if err := servers[name].Validate(); err != nil {
			return fmt.Errorf("mcp server %q: %w", name, err)
		}
	}
	return nil
}

// Names returns the server names, sorted.
func Names(servers map[string]Server) []string {
	names := slices.Collect(maps.Keys(servers))
	sort.Strings(names)
	return names
}

// Merge returns the session's servers with the task's laid over them: a
// task server replaces the session server of the same name as a whole.
// Neither input is changed.
func Merge(session, task map[string]Server) map[string]Server {
	out := make(map[string]Server, len(session)+len(task))
	for n, s := range session {
		out[n] = s.clone()
	}
	for n, s := range task {
		out[n] = s.clone()
	}
	return out
}

func (s Server) clone() Server {
	s.Args = slices.Clone(s.Args)
	s.Env = maps.Clone(s.Env)
	s.Headers = maps.Clone(s.Headers)
	return s
}

// Env is what ${NAME} references expand to.
type Env struct {
	Worktree string                      // ${FAMILIAR_WORKTREE}
	Lookup   func(string) (string, bool) // nil = os.LookupEnv
}

var varRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// Expand resolves ${NAME} and ${NAME:-default} in command, args, env, url
// and headers, and sets an empty type to stdio. A variable that is not set
// and has no default fails with ErrUnavailable naming the server and the
// variable, never a value. The result is validated.
func Expand(servers map[string]Server, env Env) (map[string]Server, error) {
	out := make(map[string]Server, len(servers))
	for _, name := range Names(servers) {
		s, err := servers[name].expand(env)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q: %w", name, err)
		}
		out[name] = s
	}
	if err := ValidateAll(out); err != nil {
		return nil, err
	}
	return out, nil
}

func (s Server) expand(env Env) (Server, error) {
	lookup := env.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var missing string
	x := func(v string) string {
		return varRE.ReplaceAllStringFunc(v, func(ref string) string {
			m := varRE.FindStringSubmatch(ref)
			if m[1] == WorktreeVar && env.Worktree != "" {
				return env.Worktree
			}
			if val, ok := lookup(m[1]); ok && val != "" {
				return val
			}
			if strings.Contains(ref, ":-") {
				return m[2]
			}
			if missing == "" {
				missing = m[1]
			}
			return ""
		})
	}
	out := s.clone()
	if out.Type == "" {
		out.Type = TypeStdio
	}
	out.Command, out.URL = x(out.Command), x(out.URL)
	for i, a := range out.Args {
		out.Args[i] = x(a)
	}
	for k, v := range out.Env {
		out.Env[k] = x(v)
	}
	for k, v := range out.Headers {
		out.Headers[k] = x(v)
	}
	if missing != "" {
		return Server{}, fmt.Errorf("%w: environment variable %s is not set", ErrUnavailable, missing)
	}
	return out, nil
}
