package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/familiar-dev/familiar/errkind"
)

// The window of Claude Code releases familiar supports (README, "CLI
// versions"). MinVersion is the oldest release for which the hooks familiar
// uses exist and screens are recorded (agent/screen/testdata/<version>/);
// NewestTested the newest with recorded screens and an end-to-end run in CI;
// PinnedVersion is the release .ci/run-tools installs and the full suite
// runs on (.ci/run). CI runs the end-to-end subset against the oldest, a
// middle and the newest (.ci/run-versions).
//
// The pin stays at 2.1.330 while 2.1.332 is the newest tested: the full
// suite, the recorded requests of the fake API and the measured facts of
// docs/CLAUDE-CLI.md are 2.1.330's, and 2.1.332 passed the end-to-end
// subset and its own new tests (PreSkillShellCommand), not the whole suite.
// Moving the pin is a release of its own (README, .ci/run-tools, .ci/run).
const (
	MinVersion    = "2.1.200"
	PinnedVersion = "2.1.330"
	NewestTested  = "2.1.332"
)

// TestedVersions are the releases with recorded screens: the oldest
// supported, one in the middle, the pinned one (the full suite) and the
// newest tested.
var TestedVersions = []string{"2.1.200", "2.1.300", PinnedVersion, NewestTested}

// Support says where a claude version stands in the window.
type Support string

const (
	// SupportSupported: within [MinVersion, NewestTested].
	SupportSupported Support = "supported"
	// SupportNewerUntested: newer than NewestTested. It runs, with a
	// warning: states come from hooks first, and a screen no pattern
	// matches is reported as unknown, never guessed.
	SupportNewerUntested Support = "newer-untested"
	// SupportTooOld: older than MinVersion; refused.
	SupportTooOld Support = "too-old"
)

// VersionSupport places version v in the window.
func VersionSupport(v string) Support {
	switch {
	case CompareVersions(v, MinVersion) < 0:
		return SupportTooOld
	case CompareVersions(v, NewestTested) > 0:
		return SupportNewerUntested
	default:
		return SupportSupported
	}
}

// SupportWarning is what to tell the person about version v: "" unless it
// is newer than NewestTested.
func SupportWarning(v string) string {
	if VersionSupport(v) != SupportNewerUntested {
		return ""
	}
	return fmt.Sprintf("claude %s is newer than the newest version familiar was tested with (%s); it runs, "+
		"with states taken from hooks first and screens familiar does not know reported as unknown", v, NewestTested)
}

// ErrCLIUnavailable is returned when claude is missing, does not run, or is
// older than MinVersion.
var ErrCLIUnavailable error = errkind.New(errkind.Unavailable, "claude CLI unavailable")

// CLI is one installed claude binary.
type CLI struct {
	Path    string
	Version string // e.g. "2.1.330"
	Support Support
	// Warning is set for a newer, untested version: say it where the
	// person sees it (doctor, initialize, the log).
	Warning string
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
	c := CLI{Path: path, Version: v, Support: VersionSupport(v)}
	switch c.Support {
	case SupportTooOld:
		return c, fmt.Errorf("%w: claude %s at %s is older than the oldest supported %s; install a supported one with: npm install --prefix .tools @anthropic-ai/claude-code@%s",
			ErrCLIUnavailable, v, path, MinVersion, PinnedVersion)
	case SupportNewerUntested:
		c.Warning = SupportWarning(v)
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
		ErrCLIUnavailable, PinnedVersion)
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
