package store

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/familiar-dev/familiar/clock"
	"github.com/familiar-dev/familiar/errkind"
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
	ErrNotFound     error = errkind.New(errkind.NotFound, "not found")
	ErrInvalid      error = errkind.New(errkind.Invalid, "invalid argument")
	ErrClosed             = errors.New("store is closed")
	ErrLocked       error = errkind.New(errkind.Unavailable, "data dir is locked by another familiar")
	ErrSchemaTooNew       = errors.New("database schema is newer than this familiar")
)

// Options configure Open. The zero value is usable.
type Options struct {
	// LockTimeout is how long Open waits for the database's file lock; 0
	// means DefaultLockTimeout. It is never infinite: a second familiar on the
	// same data dir must fail, not hang.
	LockTimeout time.Duration
	// Logger receives the store's diagnostics; nil discards them.
	Logger *slog.Logger
	// Clock stamps events, audit entries and tasks that come without times,
	// and times backups, probes and the open-time check; nil means
	// clock.Real.
	Clock clock.Clock
	// OnHealth is told when the store stops being able to write (a full
	// disk: Health.Err matches ErrStoreFull) and when it can again, so the
	// caller can warn its clients. It runs in the store's writer goroutine,
	// in order: it must not block or call the store's write methods.
	OnHealth func(Health)
	// ProbeEvery is how often a degraded store probes whether space has
	// returned, and how long no write may have been refused before it says
	// it can write again; 0 means DefaultProbeEvery.
	ProbeEvery time.Duration
	// ProbeBytes is the free space the probe asks for; 0 means
	// DefaultProbeBytes.
	ProbeBytes int
	// BackupEvery is how often the store backs itself up while open (and
	// written to); 0 means DefaultBackupEvery, negative never (Close still
	// backs up).
	BackupEvery time.Duration
	// CheckTimeout bounds the consistency check at Open; 0 means
	// DefaultCheckTimeout.
	CheckTimeout time.Duration
	// Inspect opens the store only to look (familiar doctor): damage is
	// returned as an error matching ErrDamaged instead of repaired, and no
	// backup or marker is written.
	Inspect bool
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

	healthMu   sync.Mutex
	health     Health // guarded by healthMu
	onHealth   func(Health)
	probeEvery time.Duration
	// probeSpace checks for free space beside the database (a field so that
	// tests can fill the disk without filling it).
	probeSpace func() error

	backupMu    sync.Mutex    // one backup at a time
	backedUp    atomic.Uint64 // commits as of the last backup
	stopBackups chan struct{} // closed by Close
	backupDone  chan struct{} // closed when backupLoop returns (nil: no loop)
	checkDone   <-chan struct{}

	recovery *Recovery // what Open repaired; nil if nothing
	inspect  bool      // Options.Inspect: no backups

	// failCommit, if set (tests only, before any write), runs before each
	// transaction in the writer; an error it returns fails the commit as a
	// write error of bbolt would.
	failCommit func() error

	// beforeCommit, if set (tests only, before any write), runs in the writer
	// goroutine before each transaction; tests use it to hold the writer.
	beforeCommit func()

	// afterJournal, if set (tests only, before any write), runs in the
	// writer once a batch is answered from the journal and before bbolt
	// commits it; an error it returns fails that commit.
	afterJournal func() error

	jnl  *journal    // nil when inspecting; only the writer uses it
	owed []owedWrite // writer only; see commit

	inflightMu sync.Mutex
	inflight   chan struct{} // guarded by inflightMu; see awaitCommitted
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
	checkTimeout := opts.CheckTimeout
	if checkTimeout <= 0 {
		checkTimeout = DefaultCheckTimeout
	}
	bopts := &bolt.Options{Timeout: timeout}
	if runtime.GOOS != "windows" {
		// A read transaction holds bbolt's mmap lock, and a commit that grows
		// the file must remap under it; mapping generously up front means long
		// replays (task/events) do not stall the writer. Only Windows grows the
		// file to the mapped size, hence the exception.
		bopts.InitialMmapSize = 64 << 20
	}

	// A damaged file is moved aside and the newest good backup restored (or
	// the store starts empty), once; what was lost is in s.Recovery().
	var recovery *Recovery
	repair := func(problem string) {
		if opts.Inspect {
			return
		}
		now := clk.Now()
		log.Error("store: the database is damaged; moving it aside", "path", path, "problem", problem)
		recovery = &Recovery{At: now.UTC(), Problem: problem}
		damaged, err := moveAside(path, now)
		if err != nil {
			log.Error("store: cannot move the damaged database aside", "err", err)
		}
		recovery.DamagedPath = damaged
		recovery.RestoredFrom, recovery.BackupTime = restoreBackup(path, clk, checkTimeout, log)
	}
	if problem := emptyWhereAStoreWas(path); problem != "" {
		if opts.Inspect {
			return nil, fmt.Errorf("store: %s: %w: %s", path, ErrDamaged, problem)
		}
		repair(problem)
	}
	var (
		db        *bolt.DB
		checkDone <-chan struct{}
	)
	for attempt := 0; ; attempt++ {
		var problem string
		var err error
		db, checkDone, problem, err = openChecked(path, bopts, clk, checkTimeout, log)
		if err != nil {
			return nil, err
		}
		if problem == "" {
			break
		}
		if opts.Inspect {
			return nil, fmt.Errorf("store: %s: %w: %s", path, ErrDamaged, problem)
		}
		if attempt > 0 {
			// A restored backup or a new file that is damaged: the disk
			// itself is failing; do not loop.
			return nil, fmt.Errorf("store: %s: %w: %s, also after moving it aside", path, ErrDamaged, problem)
		}
		repair(problem)
	}
	// bolt.Open applies the mode only when it creates the file; an existing
	// one may have been made by hand or an older tool with wider permissions.
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			log.Warn("store: cannot restrict database permissions", "path", path, "err", err)
		}
	}

	probeEvery := opts.ProbeEvery
	if probeEvery <= 0 {
		probeEvery = DefaultProbeEvery
	}
	s := &Store{
		db:          db,
		path:        path,
		pidPath:     pidPath(path),
		log:         log,
		clock:       clk,
		wake:        make(chan struct{}, 1),
		writerDone:  make(chan struct{}),
		health:      Health{OK: true, Since: clk.Now()},
		onHealth:    opts.OnHealth,
		probeEvery:  probeEvery,
		probeSpace:  func() error { return probeFreeSpace(path, cmp.Or(opts.ProbeBytes, DefaultProbeBytes)) },
		stopBackups: make(chan struct{}),
		checkDone:   checkDone,
		recovery:    recovery,
	}
	// The pid file is written first so that a second familiar starting while
	// we migrate can already say who holds the lock.
	if err := writePIDFile(s.pidPath); err != nil {
		log.Warn("store: cannot record our pid; a second familiar will not be able to name us", "path", s.pidPath, "err", err)
	}
	// The journal's records were written against the schema the database
	// had then, so they go in before any migration.
	jpath := journalPath(path)
	switch {
	case opts.Inspect:
		if recs, _ := readJournal(jpath); len(recs) > 0 {
			log.Warn("store: the journal holds writes the next familiar will apply", "path", jpath, "records", len(recs))
		}
	case recovery != nil:
		discardJournal(jpath, log)
	default:
		if _, err := replayJournal(db, jpath, log); err != nil {
			removePIDFile(s.pidPath, log)
			db.Close()
			return nil, fmt.Errorf("store: %s: %w", path, err)
		}
		var err error
		if s.jnl, err = openJournal(jpath); err != nil {
			// Every write then waits for its commit, as before the journal.
			log.Warn("store: no journal; every write waits for bbolt's commit", "err", err)
			s.jnl = nil
		}
	}
	if err := guard(func() error { return migrate(db, log) }); err != nil {
		removePIDFile(s.pidPath, log)
		db.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	if err := s.initSeqs(); err != nil {
		removePIDFile(s.pidPath, log)
		db.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	if opts.Inspect {
		s.inspect = true
	} else if err := writeMarker(path, clk.Now()); err != nil {
		log.Warn("store: cannot write the marker that tells an emptied database from a new one", "err", err)
	}
	if recovery != nil {
		_ = s.view(func(tx *bolt.Tx) error {
			recovery.Tasks = tx.Bucket(bucketTasks).Stats().KeyN
			return nil
		})
		log.Error("store: "+recovery.Message(), "damaged", recovery.DamagedPath, "restoredFrom", recovery.RestoredFrom)
		if err := recordRecovery(path, *recovery); err != nil {
			log.Warn("store: cannot keep the recovery report for doctor", "err", err)
		}
	}
	s.backedUp.Store(s.commits.Load())
	if opts.BackupEvery >= 0 && !opts.Inspect {
		every := opts.BackupEvery
		if every == 0 {
			every = DefaultBackupEvery
		}
		s.backupDone = make(chan struct{})
		go s.backupLoop(clk, every)
	}
	go s.writer()
	if recovery != nil || !fileExists(BackupPath(path, 1)) {
		// The repaired store, or one never backed up, gets a backup now.
		s.backedUp.Store(^uint64(0))
	}
	return s, nil
}

// openChecked opens the database and checks it for at most checkTimeout.
// problem describes damage (the caller repairs it); err is any other failure.
func openChecked(path string, bopts *bolt.Options, clk clock.Clock, checkTimeout time.Duration, log *slog.Logger) (db *bolt.DB, checkDone <-chan struct{}, problem string, err error) {
	err = guard(func() (err error) {
		db, err = bolt.Open(path, 0o600, bopts)
		return err
	})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, nil, "", lockedError(path, pidPath(path), log)
	case err != nil && isDamage(err):
		return nil, nil, err.Error(), nil
	case err != nil:
		return nil, nil, "", fmt.Errorf("store: open %s: %w", path, err)
	}
	problems, finished, done := checkDB(db, clk, checkTimeout, log)
	if !finished {
		log.Warn("store: the consistency check did not finish in time; it goes on in the background", "timeout", checkTimeout.String())
		return db, done, "", nil
	}
	if len(problems) > 0 {
		db.Close()
		return nil, nil, strings.Join(problems, "; "), nil
	}
	return db, done, "", nil
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
		if s.jnl != nil {
			if err := s.jnl.close(len(s.owed) > 0); err != nil {
				s.log.Warn("store: closing the journal", "err", err)
			}
		}
		close(s.stopBackups)
		if s.backupDone != nil {
			<-s.backupDone
		}
		// A clean shutdown leaves a backup of the final state.
		if s.commits.Load() != s.backedUp.Load() && s.Health().OK && !s.inspect {
			if err := s.Backup(); err != nil {
				s.log.Warn("store: backup at shutdown failed; the previous backups are kept", "err", err)
			}
		}
		if s.checkDone != nil {
			<-s.checkDone
		}
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
	s.awaitCommitted()
	err := guard(func() error { return s.db.View(fn) })
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
	s.awaitCommitted()
	return s.visibleSeq(), nil
}
