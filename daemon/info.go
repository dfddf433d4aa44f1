package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/familiar-dev/familiar/procs/proctable"
)

// Files the daemon keeps in the repository's data dir.
const (
	InfoFile = "daemon.json" // Info of the running daemon
	LockFile = "daemon.lock" // held while a client starts a daemon
	// ErrFile receives the daemon's stderr (a panic, an early failure); the
	// daemon's own log is familiar.log.
	ErrFile = "daemon.err"
)

// Info is what a running daemon publishes about itself.
type Info struct {
	PID             int       `json:"pid"`
	Version         string    `json:"version"`
	ProtocolVersion int       `json:"protocolVersion"`
	Socket          string    `json:"socket"`
	Started         time.Time `json:"started"`
}

// WriteInfo publishes info in dataDir atomically (write, then rename), so a
// reader never sees half a file.
func WriteInfo(dataDir string, info Info) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dataDir, "."+InfoFile+"."+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write daemon info: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dataDir, InfoFile)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write daemon info: %w", err)
	}
	return nil
}

// RemoveInfo removes dataDir's daemon.json if it is pid's.
func RemoveInfo(dataDir string, pid int) {
	if info, err := ReadInfo(dataDir); err == nil && info.PID == pid {
		os.Remove(filepath.Join(dataDir, InfoFile))
	}
}

// ErrNoDaemon is returned by ReadInfo when no daemon published itself.
var ErrNoDaemon = errors.New("no familiar daemon is running for this repository")

// ReadInfo reads dataDir's daemon.json; ErrNoDaemon when there is none or
// its process is gone.
func ReadInfo(dataDir string) (Info, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, InfoFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, ErrNoDaemon
	}
	if err != nil {
		return Info{}, err
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil {
		return Info{}, fmt.Errorf("read %s: %w", InfoFile, err)
	}
	if !Alive(info.PID) {
		return info, ErrNoDaemon
	}
	return info, nil
}

// Alive reports whether pid is a running process (a zombie is not).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	st, err := proctable.Stat(pid)
	if err != nil {
		// Gone, or no process table to tell: kill(0) said it exists.
		return !errors.Is(err, fs.ErrNotExist)
	}
	return !st.Dead()
}
