package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// LockedError is what Open returns when another process holds the database.
// It matches ErrLocked with errors.Is.
type LockedError struct {
	Path string // the database file
	PID  int    // the holder's pid; 0 when it cannot be known
}

func (e *LockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("another familiar is running for this repository (pid %d)", e.PID)
	}
	return "another familiar is running for this repository (its pid could not be determined)"
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// pidRecord is the content of the pid file.
type pidRecord struct {
	PID int `json:"pid"`
	// Start is the process's start time as the process table gives it
	// (proctable.Proc.Start: clock ticks since boot on Linux, microseconds
	// since the epoch on macOS), 0 where unknown. With it a reader can tell
	// the holder from an unrelated process that reused its pid.
	Start uint64 `json:"start,omitempty"`
}

// pidPath is <dataDir>/familiar.pid for <dataDir>/familiar.db.
func pidPath(dbPath string) string {
	return strings.TrimSuffix(dbPath, filepath.Ext(dbPath)) + ".pid"
}

// writePIDFile records this process as the lock holder. It writes a temporary
// file and renames it, so a reader never sees half a record.
func writePIDFile(path string) error {
	rec := pidRecord{PID: os.Getpid()}
	rec.Start, _ = procStartTime(rec.PID)
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(append(b, '\n'))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// removePIDFile removes the pid file if it still names this process. Only
// the lock holder calls it, so nobody else should have replaced it; the
// check keeps a misbehaving sibling's record intact rather than guessing.
func removePIDFile(path string, log *slog.Logger) {
	rec, err := readPIDFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil || rec.PID != os.Getpid() {
		log.Warn("store: pid file does not name us; leaving it", "path", path, "err", err, "pid", rec.PID)
		return
	}
	if err := os.Remove(path); err != nil {
		log.Warn("store: cannot remove pid file", "path", path, "err", err)
	}
}

func readPIDFile(path string) (pidRecord, error) {
	var rec pidRecord
	b, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("parse %s: %w", path, err)
	}
	return rec, nil
}

// lockedError builds the error for a database whose lock we could not get,
// naming the holder when the pid file points at a live process. It never
// trusts a pid whose process is gone or whose start time differs: that pid
// may belong to someone else by now.
func lockedError(dbPath, pidFile string, log *slog.Logger) error {
	e := &LockedError{Path: dbPath}
	rec, err := readPIDFile(pidFile)
	switch {
	case err != nil:
		log.Debug("store: database is locked and the holder's pid is unreadable", "path", pidFile, "err", err)
	case !processMatches(rec):
		log.Debug("store: database is locked but the pid file names a process that is gone", "path", pidFile, "pid", rec.PID)
	default:
		e.PID = rec.PID
	}
	return e
}

// processMatches reports whether rec names a live process that is the one
// that wrote it, as far as this platform lets us tell.
func processMatches(rec pidRecord) bool {
	if rec.PID <= 0 || !processAlive(rec.PID) {
		return false
	}
	if rec.Start == 0 {
		return true
	}
	start, ok := procStartTime(rec.PID)
	return !ok || start == rec.Start
}
