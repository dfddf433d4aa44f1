package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/familiar-dev/familiar/dirs"
)

// Location is where familiar keeps what it serves for one repository.
type Location struct {
	// Root is the repository's top directory (its working tree's, with
	// symbolic links resolved): what familiar serves and names it by.
	Root string
	// DataDir is familiar's default data dir for Root (DefaultDataDir):
	// its store, logs, socket and daemon.json.
	DataDir string
}

// Locate finds the repository dir is in: the nearest directory holding .git
// from dir upwards (dir made absolute and its symbolic links resolved first,
// so every way of naming a repository finds the same data dir), without
// running git (the worktree package does that when the repository is
// opened). ok is false when dir is in no repository.
func Locate(dir string) (loc Location, ok bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Location{}, false
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	for d := abs; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return Location{Root: d, DataDir: DefaultDataDir(d)}, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return Location{}, false
		}
		d = parent
	}
}

// DefaultDataDir is <repo-name>-<short-hash> in familiar's state directory
// (dirs.State: $XDG_STATE_HOME/familiar, else ~/.local/state/familiar on
// Linux and ~/Library/Application Support/familiar/state on macOS).
func DefaultDataDir(root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dirs.State(), filepath.Base(root)+"-"+hex.EncodeToString(sum[:])[:8])
}

// SocketPath is where a workspace's familiar listens for more clients:
// familiar.sock in its data dir, unless that path is too long for a Unix
// socket's address (sun_path holds 104 bytes on macOS, 108 on Linux, the
// final NUL included). Under ~/Library/Application Support/familiar/state on
// macOS, a repository name of some 25 characters is enough. Then it is
// familiar-<uid>/<16 hex digits of the data dir's SHA-256>.sock under
// os.TempDir() ($TMPDIR: per user on macOS, /tmp on Linux): the same for
// every familiar of that data dir, and jsonrpc's Listen makes the directory
// private to the user and refuses one that is not.
func SocketPath(dataDir string) string { return socketPath(dataDir, runtime.GOOS, os.TempDir()) }

// sunPathMax is the longest socket path the platform takes (without the NUL).
func sunPathMax(goos string) int {
	switch goos {
	case "darwin", "freebsd", "netbsd", "openbsd", "dragonfly":
		return 103
	default:
		return 107
	}
}

func socketPath(dataDir, goos, tmp string) string {
	p := filepath.Join(dataDir, "familiar.sock")
	if len(p) <= sunPathMax(goos) {
		return p
	}
	sum := sha256.Sum256([]byte(dataDir))
	return filepath.Join(tmp, "familiar-"+strconv.Itoa(os.Getuid()), hex.EncodeToString(sum[:8])+".sock")
}
