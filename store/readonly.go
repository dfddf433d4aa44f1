package store

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/familiar-dev/familiar/clock"
)

// withDefaults returns the options' logger, clock and lock timeout, with
// their defaults applied.
func (opts Options) withDefaults() (*slog.Logger, clock.Clock, time.Duration) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.Real
	}
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	return log, clk, timeout
}

// OpenReadOnly opens the database at path to read what a stopped familiar
// left (familiar audit export). It takes bbolt's shared lock, starts no
// writer, writes no pid file and migrates nothing: every write returns
// ErrClosed. The one write it makes is a journal a crash left: those writes
// were answered (an audit entry among them), so they are applied first, as
// the next familiar's start would apply them (applyLeftJournal). A familiar that starts meanwhile waits for the lock (its
// LockTimeout) rather than failing, as the read takes milliseconds.
//
// It fails with an error wrapping os.ErrNotExist when there is no database
// (it never creates one), ErrLocked when a running familiar holds it, and
// ErrInvalid when the schema is not the one this code reads (a familiar of
// this version migrates it when it next starts).
func OpenReadOnly(path string, opts Options) (*Store, error) {
	log, clk, timeout := opts.withDefaults()
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := applyLeftJournal(path, timeout, log); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, ReadOnly: true})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, lockedError(path, pidPath(path), log)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s read-only: %w", path, err)
	}
	var version uint64
	if err := db.View(func(tx *bolt.Tx) error {
		version, err = schemaVersion(tx)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %s: read schema version: %w", path, err)
	}
	if version != SchemaVersion() {
		db.Close()
		return nil, fmt.Errorf("store: %s: %w: schema version %d, this familiar reads %d (start familiar once to migrate it)",
			path, ErrInvalid, version, SchemaVersion())
	}
	s := &Store{
		db:          db,
		path:        path,
		log:         log,
		clock:       clk,
		closed:      true, // refuses every write
		inspect:     true, // and never backs up
		wake:        make(chan struct{}, 1),
		writerDone:  make(chan struct{}),
		stopBackups: make(chan struct{}),
	}
	close(s.writerDone) // there is no writer to wait for
	if err := s.initSeqs(); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	return s, nil
}

// applyLeftJournal applies the records of the journal at path's side that
// bbolt has not committed, when there are any: familiar was killed between
// answering writes and committing them. Read without them, an audit export
// after a crash would leave out entries a client was told were written.
// It opens the database for writing (bbolt's exclusive lock, so never under
// a running familiar: that one holds it) only when the journal has records,
// and removes the journal once they are committed.
func applyLeftJournal(path string, timeout time.Duration, log *slog.Logger) error {
	jpath := journalPath(path)
	if recs, _ := readJournal(jpath); len(recs) == 0 {
		return nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return lockedError(path, pidPath(path), log)
	}
	if err != nil {
		return fmt.Errorf("store: open %s to apply its journal: %w", path, err)
	}
	_, err = replayJournal(db, jpath, log)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store: %s: %w", path, err)
	}
	if err := os.Remove(jpath); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("store: cannot remove the applied journal; the next start skips its records", "path", jpath, "err", err)
	}
	return nil
}
