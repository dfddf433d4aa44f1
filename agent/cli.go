package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MinVersion is the oldest Claude Code release whose screens, hooks and
// control protocol familiar has been verified against (CLAUDE-CLI.md).
const MinVersion = "2.1.330"

// ErrCLIUnavailable is returned when claude is missing, does not run, or is
// older than MinVersion.
var ErrCLIUnavailable = errors.New("claude CLI unavailable")

// CLI is one installed claude binary.
type CLI struct {
	Path    string
	Version string // e.g. "2.1.330"
}

// toolsBin is where .ci/run and `make demo` install the pinned CLI inside a
// project-local tools dir.
const toolsBin = "node_modules/.bin/claude"

// FindCLI locates claude: the configured path, then the project-local tools
// dir, then PATH; runs `claude --version` and checks it against MinVersion.
// The error says what to do about it.
func FindCLI(ctx context.Context, configured, toolsDir string) (CLI, error) {
	path, err := lookPath(configured, toolsDir)
	if err != nil {
		return CLI{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = SessionEnv(os.Environ(), "", nil)
	out, err := cmd.Output()
	if err != nil {
		return CLI{Path: path}, fmt.Errorf("%w: %s --version failed: %v", ErrCLIUnavailable, path, err)
	}
	v := ParseVersion(string(out))
	if v == "" {
		return CLI{Path: path}, fmt.Errorf("%w: cannot read a version from %q", ErrCLIUnavailable, strings.TrimSpace(string(out)))
	}
	c := CLI{Path: path, Version: v}
	if CompareVersions(v, MinVersion) < 0 {
		return c, fmt.Errorf("%w: claude %s at %s is older than the minimum supported %s; install it with: npm install --prefix .tools @anthropic-ai/claude-code@%s",
			ErrCLIUnavailable, v, path, MinVersion, MinVersion)
	}
	return c, nil
}

func lookPath(configured, toolsDir string) (string, error) {
	if configured != "" {
		if fi, err := os.Stat(configured); err != nil || fi.IsDir() {
			return "", fmt.Errorf("%w: configured claude path %s does not exist", ErrCLIUnavailable, configured)
		}
		return configured, nil
	}
	if toolsDir != "" {
		p := filepath.Join(toolsDir, toolsBin)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: claude not found in the tools dir or on PATH; install it with: npm install --prefix .tools @anthropic-ai/claude-code@%s",
		ErrCLIUnavailable, MinVersion)
}

var versionRE = regexp.MustCompile(`\b(\d+)\.(\d+)\.(\d+)\b`)

// ParseVersion extracts "X.Y.Z" from `claude --version` output such as
// "2.1.330 (Claude Code)".
func ParseVersion(s string) string {
	return versionRE.FindString(s)
}

// CompareVersions compares dotted numeric versions: -1, 0 or +1.
func CompareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	return 0
}
