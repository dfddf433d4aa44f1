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
// from dir upwards (dir made absolute and spelled as the disk spells it,
// symbolic links resolved: OnDisk, so every way of naming a repository finds
// the same data dir), without running git (the worktree package does that
// when the repository is opened). ok is false when dir is in no repository.
func Locate(dir string) (loc Location, ok bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Location{}, false
	}
	abs = OnDisk(abs)
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

// OnDisk is the absolute path p with symbolic links resolved and each name
// spelled as it is on disk: on macOS's case-insensitive APFS, `cd
// ~/code/app` works in ~/Code/App, and the repository must not get a second
// data dir (and a second background familiar) for it. It is fcntl
// F_GETPATH on macOS and the kernel's own path of the opened directory on
// Linux, with names found under another case on a case-insensitive file
// system replaced by the directory's listing of them. A path that cannot be
// opened keeps its spelling (symbolic links resolved where they can be).
func OnDisk(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	if k, err := kernelPath(p); err == nil {
		p = k
	}
	return fixSpelling(p)
}

// DefaultDataDir is <repo-name>-<short-hash> in familiar's state directory
// (dirs.State: $XDG_STATE_HOME/familiar, else ~/.local/state/familiar on
// Linux and ~/Library/Application Support/familiar/state on macOS), named
// after root as OnDisk spells it. A data dir made before familiar spelled
// roots that way (named after root as typed) is kept while the new one
// does not exist, so no task is lost.
func DefaultDataDir(root string) string {
	canon := dataDirFor(OnDisk(root))
	if canon == dataDirFor(root) {
		return canon
	}
	if _, err := os.Stat(canon); err != nil {
		if old := dataDirFor(root); isDir(old) {
			return old
		}
	}
	return canon
}

func dataDirFor(root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dirs.State(), filepath.Base(root)+"-"+hex.EncodeToString(sum[:])[:8])
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// SocketPath is where a workspace's familiar listens for more clients:
// familiar.sock in its data dir, unless that path is too long for a Unix
// socket's address (sun_path holds 104 bytes on macOS, 108 on Linux, the
// final NUL included). Under ~/Library/Application Support/familiar/state on
// macOS, a repository name of some 25 characters is enough. Then it is
// <16 hex digits of the data dir's SHA-256>.sock in ~/.familiar/run: the
// same for every familiar and client of that data dir whatever their
// environment, and in no directory a cleaner empties (macOS deletes what
// under $TMPDIR was not touched for 3 days, live sockets included, and an
// SSH login has no $TMPDIR at all). jsonrpc's Listen makes the directory
// private to the user and refuses one that is not. Only a home too long
// for even that (or none) falls back to /tmp/familiar-<uid>.
//
// Clients dial the socket daemon.json names first (daemon.Sockets): a
// familiar started by an older version listens where that version put it.
func SocketPath(dataDir string) string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = ""
	}
	return socketPath(dataDir, runtime.GOOS, home)
}

// sunPathMax is the longest socket path the platform takes (without the NUL).
func sunPathMax(goos string) int {
	switch goos {
	case "darwin", "freebsd", "netbsd", "openbsd", "dragonfly":
		return 103
	default:
		return 107
	}
}

// RunDir is where familiar's sockets go when a data dir's path is too long
// for one: ~/.familiar/run.
func RunDir(home string) string { return filepath.Join(home, ".familiar", "run") }

func socketPath(dataDir, goos, home string) string {
	p := filepath.Join(dataDir, "familiar.sock")
	if len(p) <= sunPathMax(goos) {
		return p
	}
	sum := sha256.Sum256([]byte(dataDir))
	name := hex.EncodeToString(sum[:8]) + ".sock"
	if filepath.IsAbs(home) {
		if p := filepath.Join(RunDir(home), name); len(p) <= sunPathMax(goos) {
			return p
		}
	}
	return filepath.Join("/tmp", "familiar-"+strconv.Itoa(os.Getuid()), name)
}
