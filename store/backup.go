package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/familiar-dev/familiar/clock"
)

// DefaultBackupEvery is how often an open store copies itself aside, when
// something was written since the last copy.
const DefaultBackupEvery = 5 * time.Minute

// keepBackups is how many backups are kept: the newest may have been taken
// just before the damage it should help recover from.
const keepBackups = 2

// BackupPath returns the path of the n-th newest backup (1 = newest) of the
// database at path: familiar.db.backup-1, familiar.db.backup-2.
func BackupPath(path string, n int) string { return path + ".backup-" + strconv.Itoa(n) }

// Backup copies the database, as of its last commit, to a new backup file
// while it stays open for reads and writes (bbolt's Tx.WriteTo in a read
// transaction), then rotates the backups, keeping the newest two. A failed
// copy (a full disk) leaves the existing backups as they were.
func (s *Store) Backup() error {
	if s.dbClosed.Load() {
		return ErrClosed
	}
	s.backupMu.Lock()
	defer s.backupMu.Unlock()
	s.awaitCommitted() // a write answered from the journal belongs in it
	commits := s.commits.Load()
	tmp := s.path + ".backup.tmp"
	err := guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			_, werr := tx.WriteTo(f)
			serr := f.Sync()
			cerr := f.Close()
			return errors.Join(werr, serr, cerr)
		})
	})
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store: back up %s: %w", s.path, classify(err))
	}
	for n := keepBackups; n > 1; n-- {
		if err := os.Rename(BackupPath(s.path, n-1), BackupPath(s.path, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("store: cannot rotate backups", "err", err)
		}
	}
	if err := os.Rename(tmp, BackupPath(s.path, 1)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store: back up %s: %w", s.path, err)
	}
	syncDir(filepath.Dir(s.path))
	s.backedUp.Store(commits)
	s.log.Debug("store: backed up", "path", BackupPath(s.path, 1))
	return nil
}

// backupLoop backs the store up every backupEvery while something changed.
func (s *Store) backupLoop(clk clock.Clock, every time.Duration) {
	defer close(s.backupDone)
	t := clk.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-s.stopBackups:
			return
		case <-t.C():
		}
		s.awaitCommitted()
		if s.commits.Load() != s.backedUp.Load() {
			if err := s.Backup(); err != nil {
				s.log.Warn("store: periodic backup failed; the previous backups are kept", "err", err)
			}
		}
		t.Reset(every)
	}
}

// syncDir makes renames in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
