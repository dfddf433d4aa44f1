// Package dirs says where familiar keeps things on this machine: its
// configuration (profiles, the user's grants), its data (worktrees) and its
// state (a repository's store, logs and socket), and where task worktrees
// go by default (on macOS ~/.familiar/worktrees: see Dirs.Worktrees). The XDG variables win
// wherever they are set to an absolute path (the XDG spec says to ignore a
// relative one); otherwise each platform's own place: on Linux the XDG
// defaults under ~/.config, ~/.local/share and ~/.local/state, on macOS
// ~/Library/Application Support/familiar (os.UserConfigDir), state in its
// state/ subfolder.
package dirs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"unicode"
)

// Dirs are familiar's own directories (each already ends in familiar).
type Dirs struct {
	Config, Data, State string
	// Worktrees is the default root of task worktrees: Data/worktrees,
	// except on macOS without XDG_DATA_HOME, where it is
	// ~/.familiar/worktrees. Data's "Application Support" has a space, and
	// builds stop in a directory whose path has one (autoconf's configure:
	// "unsafe absolute working directory name"; Makefiles and scripts that
	// do not quote), though the same repository builds in the person's
	// checkout. Worktrees made under the earlier root keep working: a task
	// keeps its worktree's path.
	Worktrees string
}

// Get returns the directories for this platform and environment. It fails
// only when one of them is not set by XDG and there is no home directory.
func Get() (Dirs, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		home = ""
	}
	return resolve(runtime.GOOS, os.Getenv, home)
}

// Config is Get().Config, or "" without a home directory.
func Config() string { d, _ := Get(); return d.Config }

// Data is Get().Data, or "" without a home directory.
func Data() string { d, _ := Get(); return d.Data }

// State is Get().State, or "" without a home directory.
func State() string { d, _ := Get(); return d.State }

// Worktrees is Get().Worktrees, or "" without a home directory.
func Worktrees() string { d, _ := Get(); return d.Worktrees }

// ErrNoHome is returned when a directory depends on a home that is not set.
var ErrNoHome = errors.New("no home directory: set HOME, or the XDG_CONFIG_HOME, XDG_DATA_HOME and XDG_STATE_HOME variables")

// resolve is Get with the platform, the environment and the home passed in,
// so that each platform's answer is tested on any.
func resolve(goos string, getenv func(string) string, home string) (Dirs, error) {
	var d Dirs
	var missing bool
	pick := func(xdg string, native ...string) string {
		if v := getenv(xdg); v != "" && filepath.IsAbs(v) {
			return filepath.Join(v, "familiar")
		}
		if home == "" {
			missing = true
			return ""
		}
		return filepath.Join(append([]string{home}, native...)...)
	}
	switch goos {
	case "darwin":
		// os.UserConfigDir's answer on macOS; Apple puts an app's data and
		// state there too (Caches may be purged: no worktrees there).
		support := []string{"Library", "Application Support", "familiar"}
		d.Config = pick("XDG_CONFIG_HOME", support...)
		d.Data = pick("XDG_DATA_HOME", support...)
		d.State = pick("XDG_STATE_HOME", append(support, "state")...)
		d.Worktrees = pick("XDG_DATA_HOME", ".familiar")
	default:
		d.Config = pick("XDG_CONFIG_HOME", ".config", "familiar")
		d.Data = pick("XDG_DATA_HOME", ".local", "share", "familiar")
		d.State = pick("XDG_STATE_HOME", ".local", "state", "familiar")
		d.Worktrees = d.Data
	}
	if d.Worktrees != "" {
		d.Worktrees = filepath.Join(d.Worktrees, "worktrees")
	}
	if missing {
		return d, ErrNoHome
	}
	return d, nil
}

// BuildUnsafe describes what in path common build tools reject, "" when
// nothing: whitespace and the characters autoconf's configure refuses in
// its working directory (" # $ & ' ` \), and : and ; , which split
// PATH-like lists and Makefile rules. A worktree whose path has one fails
// to build where the person's checkout builds.
func BuildUnsafe(path string) string {
	var found []string
	for _, r := range path {
		var name string
		switch {
		case r == ' ':
			name = "a space"
		case unicode.IsSpace(r):
			name = fmt.Sprintf("whitespace %q", r)
		case strings.ContainsRune("\"#$&'`\\:;", r):
			name = fmt.Sprintf("%q", r)
		default:
			continue
		}
		if !slices.Contains(found, name) {
			found = append(found, name)
		}
	}
	return strings.Join(found, ", ")
}
