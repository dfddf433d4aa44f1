package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Result is one server's availability (mcp/check). A server can be
// available and still carry a Problem: a warning, such as an npx package
// that will be downloaded when the server starts.
type Result struct {
	Name      string
	Available bool
	Problem   string // "" when there is none; never holds a secret value
}

// Checker checks servers before a task starts. The zero value is ready:
// it looks commands up on PATH, and dials only loopback URLs.
type Checker struct {
	Env Env // expands ${NAME}; Worktree "" is fine (nothing checks it)

	LookPath    func(file string) (string, error)                                 // nil = exec.LookPath
	Dial        func(ctx context.Context, network, addr string) (net.Conn, error) // nil = a net.Dialer
	DialTimeout time.Duration                                                     // per server; 0 = 1 s
	// DialRemote also dials http/sse servers that are not on a loopback
	// address. Off by default: a check should not reach out to the network
	// unasked (and tests must not).
	DialRemote bool
	// NpmCache is npm's cache directory, where npx keeps the packages it
	// has fetched (<cache>/_npx/*/node_modules/<pkg>); "" = $npm_config_cache,
	// else ~/.npm.
	NpmCache string
}

// Check checks servers with the zero Checker.
func Check(ctx context.Context, servers map[string]Server) []Result {
	return Checker{}.Check(ctx, servers)
}

// Check reports, per server in name order, whether it can start: the config
// is well formed and its variables are set; for stdio the command is on PATH
// or an executable path (and for npx, whether the package is already
// installed); for http/sse the URL is valid and, for a loopback host (any
// host with DialRemote), a TCP connection opens. Servers are checked in
// parallel; Check returns when all are done or ctx ends.
func (c Checker) Check(ctx context.Context, servers map[string]Server) []Result {
	names := Names(servers)
	out := make([]Result, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			problem, warning := c.check(ctx, servers[name])
			out[i] = Result{Name: name, Available: problem == "", Problem: problem}
			if problem == "" {
				out[i].Problem = warning
			}
		}()
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// check returns a problem that stops the server, or a warning.
func (c Checker) check(ctx context.Context, raw Server) (problem, warning string) {
	if err := raw.Validate(); err != nil {
		return problemText(err), ""
	}
	env := c.Env
	if env.Worktree == "" {
		env.Worktree = "." // known only when the task starts
	}
	s, err := raw.expand(env)
	if err != nil {
		return problemText(err), ""
	}
	switch s.Type {
	case TypeStdio:
		return c.checkCommand(s, raw.Command, env.Worktree)
	default:
		if err := s.Validate(); err != nil {
			return problemText(err), ""
		}
		return c.checkURL(ctx, s.URL), ""
	}
}

// problemText is an error as one sentence without the package's kind prefix.
func problemText(err error) string {
	msg := err.Error()
	for _, kind := range []error{ErrInvalid, ErrUnavailable} {
		msg = strings.TrimPrefix(msg, kind.Error()+": ")
	}
	return msg
}

// checkCommand checks a stdio server's command. shown is the command as
// configured, used in messages: the expanded one could hold a secret.
func (c Checker) checkCommand(s Server, shown, worktree string) (problem, warning string) {
	lookPath := c.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	path := s.Command
	if strings.ContainsRune(s.Command, filepath.Separator) || strings.ContainsRune(s.Command, '/') {
		if !filepath.IsAbs(path) {
			path = filepath.Join(worktree, path) // claude starts servers in the worktree
		}
		fi, err := os.Stat(path)
		switch {
		case err != nil:
			return fmt.Sprintf("command %q does not exist", shown), ""
		case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
			return fmt.Sprintf("command %q is not an executable file", shown), ""
		}
	} else {
		p, err := lookPath(s.Command)
		if err != nil {
			return fmt.Sprintf("command %q is not on PATH", shown), ""
		}
		path = p
	}
	if filepath.Base(s.Command) == "npx" {
		if pkg := npxPackage(s.Args); pkg != "" && !c.npxInstalled(pkg, path, worktree) {
			return "", fmt.Sprintf("npm package %s is not installed; npx will download it when the server starts, which needs the network and takes a while", pkg)
		}
	}
	return "", ""
}

// npxPackage is the package an npx command line runs: the value of
// -p/--package, else the first argument that is not an option; without its
// version ("@scope/name@1.2" → "@scope/name").
func npxPackage(args []string) string {
	pkg := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-p" || a == "--package":
			if i+1 < len(args) {
				return stripVersion(args[i+1])
			}
		case strings.HasPrefix(a, "--package="):
			return stripVersion(strings.TrimPrefix(a, "--package="))
		case a == "--":
			if i+1 < len(args) && pkg == "" {
				pkg = args[i+1]
			}
			i = len(args)
		case strings.HasPrefix(a, "-"):
		case pkg == "":
			pkg = a
		}
	}
	return stripVersion(pkg)
}

func stripVersion(pkg string) string {
	if at := strings.LastIndex(pkg, "@"); at > 0 {
		return pkg[:at]
	}
	return pkg
}

// npxInstalled looks where npx finds packages without downloading: the
// worktree's node_modules, npm's global node_modules next to npx, and npx's
// own cache.
func (c Checker) npxInstalled(pkg, npxPath, worktree string) bool {
	if strings.Contains(pkg, "..") || filepath.IsAbs(pkg) {
		return false
	}
	var candidates []string
	if worktree != "" {
		candidates = append(candidates, filepath.Join(worktree, "node_modules", pkg))
	}
	// npm's global packages: <prefix>/bin/npx → <prefix>/lib/node_modules,
	// and the node_modules that holds npm itself behind the symlink.
	if dir := filepath.Dir(npxPath); filepath.Base(dir) == "bin" {
		candidates = append(candidates, filepath.Join(filepath.Dir(dir), "lib", "node_modules", pkg))
	}
	if real, err := filepath.EvalSymlinks(npxPath); err == nil {
		for dir := filepath.Dir(real); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
			if filepath.Base(dir) == "node_modules" {
				candidates = append(candidates, filepath.Join(dir, pkg))
				break
			}
		}
	}
	for _, p := range candidates {
		if _, err := os.Stat(filepath.Join(p, "package.json")); err == nil {
			return true
		}
	}
	cache := c.NpmCache
	if cache == "" {
		cache = os.Getenv("npm_config_cache")
	}
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".npm")
		}
	}
	if cache == "" {
		return false
	}
	matches, _ := filepath.Glob(filepath.Join(cache, "_npx", "*", "node_modules", pkg, "package.json"))
	return len(matches) > 0
}

// checkURL dials a loopback (or, with DialRemote, any) http/sse server.
// Messages name host and port only: paths and queries may carry tokens.
func (c Checker) checkURL(ctx context.Context, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "url must be an absolute http or https URL"
	}
	host := u.Hostname()
	if !c.DialRemote && !isLoopback(host) {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	addr := net.JoinHostPort(host, port)
	timeout := c.DialTimeout
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := c.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		reason := "no answer"
		var op *net.OpError
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			reason = fmt.Sprintf("no answer within %v", timeout)
		case errors.As(err, &op) && op.Err != nil:
			reason = op.Err.Error()
		}
		return fmt.Sprintf("cannot connect to %s: %s", addr, reason)
	}
	conn.Close()
	return ""
}

func isLoopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
