package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/familiar-dev/familiar/clock"
)

// FileName is the database's name inside a data dir.
const FileName = "familiar.db"

// DefaultLockTimeout is how long Open waits for another process to release
// the database before it reports ErrLocked.
const DefaultLockTimeout = time.Second

// DefaultLimit is the page size of Events and Audit when the
// caller gives none.
const DefaultLimit = 100

// maxBatch bounds how many writes one transaction carries, so one commit's
// latency (and memory) stays bounded when a burst queues thousands.
const maxBatch = 1024

// Error kinds. Errors returned by the store wrap one of these (or a context
// error) with context; compare with errors.Is.
var (
	ErrNotFound     = errors.New("not found")
	ErrInvalid      = errors.New("invalid argument")
	ErrClosed       = errors.New("store is closed")
	ErrLocked       = errors.New("data dir is locked by another familiar")
	ErrSchemaTooNew = errors.New("database schema is newer than this familiar")
)

// Options configure Open. The zero value is usable.
type Options struct {
	// LockTimeout is how long Open waits for the database's file lock; 0
	// means DefaultLockTimeout. It is never infinite: a second familiar on the
	// same data dir must fail, not hang.
	LockTimeout time.Duration
	// Logger receives the store's diagnostics; nil discards them.
	Logger *slog.Logger
	// Clock stamps events, audit entries and tasks that come without times;
	// nil means clock.Real.
	Clock clock.Clock
}

// Store is familiar's embedded database. Its methods are safe for concurrent
// use. Close it when done; later calls of Close return the first one's result.
type Store struct {
	db      *bolt.DB
	path    string
	pidPath string
	log     *slog.Logger
	clock   clock.Clock

	mu      sync.Mutex
	pending []*writeOp // guarded by mu; writes queued for the writer
	closed  bool       // guarded by mu; set by Close, refuses new writes

	wake       chan struct{} // capacity 1: "pending changed or closing"
	writerDone chan struct{} // closed when the writer goroutine returns
	dbClosed   atomic.Bool   // set just before db.Close, so reads say ErrClosed
	closeOnce  sync.Once
	closeErr   error

	commits atomic.Uint64 // transactions committed by the writer; for tests and logs

	seq seqs // numbers events

	// beforeCommit, if set (tests only, before any write), runs in the writer
	// goroutine before each transaction; tests use it to hold the writer.
	beforeCommit func()
}

// Open opens (creating if needed) the database at path, normally
// filepath.Join(dataDir, FileName), migrates it to the current schema and
// starts its writer goroutine.
//
// If another process (or another Store in this process) has it open, Open
// fails after opts.LockTimeout with an error matching ErrLocked whose message
// names that process's pid when it can be known.
func Open(path string, opts Options) (*Store, error) {
	log, clk, timeout := opts.withDefaults()

	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: create data dir: %w", err)
	}
	bopts := &bolt.Options{Timeout: timeout}
	if runtime.GOOS != "windows" {
		// A read transaction holds bbolt's mmap lock, and a commit that grows
		// the file must remap under it; mapping generously up front means long
		// replays (task/events) do not stall the writer. Only Windows grows the
		// file to the mapped size, hence the exception.
		bopts.InitialMmapSize = 64 << 20
	}
	db, err := bolt.Open(path, 0o600, bopts)
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, lockedError(path, pidPath(path), log)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// bolt.Open applies the mode only when it creates the file; an existing
	// one may have been made by hand or an older tool with wider permissions.
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			log.Warn("store: cannot restrict database permissions", "path", path, "err", err)
		}
	}

	s := &Store{
		db:         db,
		path:       path,
		pidPath:    pidPath(path),
		log:        log,
		clock:      clk,
		wake:       make(chan struct{}, 1),
		writerDone: make(chan struct{}),
	}
	// The pid file is written first so that a second familiar starting while
	// we migrate can already say who holds the lock.
	if err := writePIDFile(s.pidPath); err != nil {
		log.Warn("store: cannot record our pid; a second familiar will not be able to name us", "path", s.pidPath, "err", err)
	}
	if err := migrate(db, log); err != nil {
		removePIDFile(s.pidPath, log)
		db.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	if err := s.initSeqs(); err != nil {
		removePIDFile(s.pidPath, log)
		db.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	go s.writer()
	return s, nil
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Close applies every write queued so far, stops the writer goroutine and
// waits for it, then closes the database and releases its lock. Writes
// started after Close return ErrClosed. Calling Close again returns the
// first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.signalWriter()
		<-s.writerDone
		// Remove the pid file while we still hold the lock, so it never names
		// a process that no longer holds it because of us.
		removePIDFile(s.pidPath, s.log)
		s.dbClosed.Store(true)
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("store: close %s: %w", s.path, err)
		}
	})
	return s.closeErr
}

// view runs fn in a read transaction.
func (s *Store) view(fn func(tx *bolt.Tx) error) error {
	if s.dbClosed.Load() {
		return ErrClosed
	}
	err := s.db.View(fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// LastSeq returns the last global event seq assigned (0 if none), the value a
// client that has seen everything so far would pass as sinceSeq.
func (s *Store) LastSeq() (uint64, error) {
	if s.dbClosed.Load() {
		return 0, fmt.Errorf("store: last seq: %w", ErrClosed)
	}
	return s.visibleSeq(), nil
}
