package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/familiar-dev/familiar/clock"
)

// ErrDamaged: the database file is damaged (bbolt found it inconsistent, or
// panicked reading it). At Open this is repaired (see Recovery); while
// serving, errors that match it also match ErrUnavailable.
var ErrDamaged = errors.New("the database is damaged")

// DefaultCheckTimeout bounds the consistency check at Open. A store too big
// to check in that time is opened unchecked (and the check goes on in the
// background, its result logged), rather than delaying every start.
const DefaultCheckTimeout = 5 * time.Second

// markerSuffix names the file that says a store was created here: an empty
// or missing database next to it is damage, not a first start.
const markerSuffix = ".created"

// Recovery is what Open did about a database it found damaged or missing: it
// moved the file aside and restored the newest good backup, or started
// empty. Show it loudly (server/message, the log, doctor): what it says was
// lost is gone from familiar's view.
type Recovery struct {
	At      time.Time `json:"at"`
	Problem string    `json:"problem"` // what was wrong with the file
	// DamagedPath is where the damaged file was moved
	// (familiar.db.damaged-<time>); "" when there was no file.
	DamagedPath string `json:"damagedPath,omitempty"`
	// RestoredFrom is the backup copied in; "" when the store starts empty.
	RestoredFrom string    `json:"restoredFrom,omitempty"`
	BackupTime   time.Time `json:"backupTime,omitzero"` // when that backup was taken
	// Tasks is how many tasks the store holds after the repair.
	Tasks int `json:"tasks"`
}

// Message says in one sentence what happened and what was lost.
func (r *Recovery) Message() string {
	var b strings.Builder
	fmt.Fprintf(&b, "familiar's store was damaged (%s)", r.Problem)
	if r.DamagedPath != "" {
		fmt.Fprintf(&b, "; the damaged file was kept as %s", r.DamagedPath)
	}
	if r.RestoredFrom != "" {
		fmt.Fprintf(&b, ". Restored the backup of %s (%d tasks): tasks, events and audit entries recorded after it are lost",
			r.BackupTime.UTC().Format(time.RFC3339), r.Tasks)
	} else {
		b.WriteString(". No backup could be restored: familiar starts with an empty store, and every task, event and audit entry it held is lost from its view")
	}
	b.WriteString(". Worktrees and output logs on disk are untouched.")
	return b.String()
}

// Recovery returns what Open repaired, or nil when the database was sound.
func (s *Store) Recovery() *Recovery { return s.recovery }

// emptyWhereAStoreWas reports a database file that is missing or empty
// although a store existed here (its marker or a backup is present).
func emptyWhereAStoreWas(path string) string {
	existed := fileExists(path + markerSuffix)
	for n := 1; n <= keepBackups && !existed; n++ {
		existed = fileExists(BackupPath(path, n))
	}
	if !existed {
		return ""
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "the database file is missing"
	case err == nil && fi.Size() == 0:
		return "the database file is empty (0 bytes)"
	}
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// checkDB runs bbolt's consistency check for at most timeout. It returns
// the problems found (at most a few), or finished false when the check ran
// out of time; it then goes on in the background (holding a read
// transaction), and done is closed once it has ended.
func checkDB(db *bolt.DB, clk clock.Clock, timeout time.Duration, log *slog.Logger) (problems []string, finished bool, done <-chan struct{}) {
	ch := make(chan struct{})
	var tx *bolt.Tx
	if err := guard(func() (err error) { tx, err = db.Begin(false); return err }); err != nil {
		close(ch)
		return []string{err.Error()}, true, ch
	}
	result := make(chan []string, 1)
	go func() {
		defer close(ch)
		var found []string
		// Check recovers bbolt's panics itself and reports them.
		for err := range tx.Check() {
			if len(found) < 5 {
				found = append(found, err.Error())
			}
		}
		_ = tx.Rollback()
		result <- found
	}()
	t := clk.NewTimer(timeout)
	defer t.Stop()
	select {
	case found := <-result:
		return found, true, ch
	case <-t.C():
		go func() {
			// Still owned: Close waits for ch.
			if found := <-result; len(found) > 0 {
				log.Error("store: the background consistency check found damage; it will be repaired at the next start",
					"problems", strings.Join(found, "; "))
			}
		}()
		return nil, false, ch
	}
}

// moveAside renames the damaged database to familiar.db.damaged-<time>.
func moveAside(path string, now time.Time) (string, error) {
	if !fileExists(path) {
		return "", nil
	}
	dst := path + ".damaged-" + now.UTC().Format("20060102T150405Z")
	for i := 2; fileExists(dst); i++ {
		dst = fmt.Sprintf("%s.damaged-%s-%d", path, now.UTC().Format("20060102T150405Z"), i)
	}
	if err := os.Rename(path, dst); err != nil {
		return "", err
	}
	syncDir(filepath.Dir(path))
	return dst, nil
}

// restoreBackup copies the newest backup that opens and checks clean over
// path, and returns it with its time; "" when none does.
func restoreBackup(path string, clk clock.Clock, timeout time.Duration, log *slog.Logger) (string, time.Time) {
	for n := 1; n <= keepBackups; n++ {
		b := BackupPath(path, n)
		fi, err := os.Stat(b)
		if err != nil {
			continue
		}
		if problem := verifyFile(b, clk, timeout, log); problem != "" {
			log.Error("store: backup is damaged too; trying an older one", "backup", b, "problem", problem)
			continue
		}
		if err := copyFile(b, path); err != nil {
			log.Error("store: cannot restore backup", "backup", b, "err", err)
			continue
		}
		return b, fi.ModTime()
	}
	return "", time.Time{}
}

// verifyFile opens a database read-only and checks it; it returns the
// problem, "" when it is sound.
func verifyFile(path string, clk clock.Clock, timeout time.Duration, log *slog.Logger) (problem string) {
	var db *bolt.DB
	if err := guard(func() (err error) {
		db, err = bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		return err
	}); err != nil {
		return err.Error()
	}
	defer db.Close()
	problems, finished, done := checkDB(db, clk, timeout, log)
	if !finished {
		<-done // db.Close would wait for it anyway
		return ""
	}
	return strings.Join(problems, "; ")
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".restore.tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, cerr := io.Copy(out, in)
	serr := out.Sync()
	if err := errors.Join(cerr, serr, out.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(filepath.Dir(dst))
	return nil
}

// isDamage tells the errors of bolt.Open and of reading that mean the file
// is damaged from those that mean something else (locked, permissions).
func isDamage(err error) bool {
	return errors.Is(err, ErrDamaged) || errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) ||
		errors.Is(err, berrors.ErrVersionMismatch) || errors.Is(err, berrors.ErrInvalidMapping) ||
		strings.Contains(err.Error(), "file size too small") || strings.Contains(err.Error(), "invalid page")
}

func writeMarker(path string, now time.Time) error {
	if fileExists(path + markerSuffix) {
		return nil
	}
	return os.WriteFile(path+markerSuffix, []byte(now.UTC().Format(time.RFC3339)+"\n"), 0o600)
}

// recoveriesSuffix names the file that keeps the last few Recovery reports
// next to the database, so `familiar doctor` and later starts can still say
// what was lost after the server/message has scrolled away.
const recoveriesSuffix = ".recoveries.json"

// maxRecoveries bounds that file.
const maxRecoveries = 5

// Recoveries returns the reports of the last repairs of the database at
// path, oldest first; none if it was never repaired.
func Recoveries(path string) ([]Recovery, error) {
	b, err := os.ReadFile(path + recoveriesSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: read recovery reports: %w", err)
	}
	var recs []Recovery
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("store: read recovery reports %s: %w", path+recoveriesSuffix, err)
	}
	return recs, nil
}

// recordRecovery appends rec to the reports file, atomically.
func recordRecovery(path string, rec Recovery) error {
	recs, _ := Recoveries(path) // an unreadable file is replaced
	recs = append(recs, rec)
	if len(recs) > maxRecoveries {
		recs = recs[len(recs)-maxRecoveries:]
	}
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + recoveriesSuffix + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path+recoveriesSuffix)
}
