package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// The journal lets a write be answered after one flush instead of bbolt's
// two (issue 35). bbolt makes a commit durable with two syncs in turn: the
// data pages, then the meta page that points at them, so that a power cut
// never leaves the meta page pointing at pages not on disk. On macOS each is
// an F_FULLFSYNC (the drive's cache too), milliseconds to tens of ms on
// Apple SSDs, and every notification — a question's too — waits for its
// commit.
//
// When the writer takes a batch with nothing queued behind it (a question
// arriving while the agent waits: the case a person feels) and every write
// in it is one the journal can carry (events, audit entries, task records),
// the writer applies the batch in its bbolt transaction, appends what the
// transaction changed to familiar.db.journal as one checksummed record,
// syncs that file once, answers the writes, and then commits the
// transaction as before, with bbolt's two syncs. A busy writer (writes
// queued behind the batch) skips the journal: its callers already wait for
// a commit in front of them, and one commit for many is the better trade.
//
// Durability is unchanged: a write is answered only once it is on disk,
// in the journal or in bbolt, and bbolt's own ordering is untouched. Each
// record names the bbolt transaction id it was written for; at Open every
// record whose id is above the database's last committed one is applied
// again (in one transaction, before migrations), and older records are
// skipped, so a record is never applied twice or over a later deletion,
// even when a truncation of the journal did not reach the disk. A record
// cut short by a crash fails its checksum; it was never answered. If a
// commit fails after its writes were answered from the journal, the writer
// keeps them (owed) and applies them first in every later transaction
// until one commits. A database restored from a backup drops the journal:
// its records belong to the file that was moved aside.
//
// A record only ever puts keys and raises bucket sequences (the values the
// transaction computed, so replaying it reads nothing); a write that
// deletes (a task's deletion, settings) is not journaled and waits for its
// commit.
const journalSuffix = ".journal"

// journalTruncateAt is the size past which the journal starts again from
// empty once everything in it is committed.
const journalTruncateAt = 1 << 20

// maxJournalRecord bounds one record when reading (a damaged length).
const maxJournalRecord = 256 << 20

func journalPath(dbPath string) string { return dbPath + journalSuffix }

// jop is one change a journaled write made: a put of key=val in the bucket
// at path (nested buckets created as needed), or, when seq is set, raising
// that bucket's sequence to at least seq.
type jop struct {
	path     [][]byte
	key, val []byte
	seq      uint64
	isSeq    bool
}

// wtx is the writer's transaction as a write sees it. A journaled write
// makes every change through it, so that with log set the changes are also
// written down.
type wtx struct {
	tx  *bolt.Tx
	log *[]jop // nil: not journaling
}

func (w wtx) bucket(path [][]byte) (*bolt.Bucket, error) {
	b, err := w.tx.CreateBucketIfNotExists(path[0])
	if err != nil {
		return nil, err
	}
	for _, name := range path[1:] {
		if b, err = b.CreateBucketIfNotExists(name); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (w wtx) put(path [][]byte, key, val []byte) error {
	b, err := w.bucket(path)
	if err != nil {
		return err
	}
	if err := b.Put(key, val); err != nil {
		return err
	}
	if w.log != nil {
		*w.log = append(*w.log, jop{path: path, key: key, val: val})
	}
	return nil
}

// raiseSequence sets the sequence of the bucket at path to n unless it is
// already at least n.
func (w wtx) raiseSequence(path [][]byte, n uint64) error {
	b, err := w.bucket(path)
	if err != nil {
		return err
	}
	if b.Sequence() < n {
		if err := b.SetSequence(n); err != nil {
			return err
		}
	}
	if w.log != nil {
		*w.log = append(*w.log, jop{path: path, seq: n, isSeq: true})
	}
	return nil
}

// nextSequence is bbolt's NextSequence on the bucket at path.
func (w wtx) nextSequence(path [][]byte) (uint64, error) {
	b, err := w.bucket(path)
	if err != nil {
		return 0, err
	}
	n, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	if w.log != nil {
		*w.log = append(*w.log, jop{path: path, seq: n, isSeq: true})
	}
	return n, nil
}

func (w wtx) redo(op jop) error {
	if op.isSeq {
		return w.raiseSequence(op.path, op.seq)
	}
	return w.put(op.path, op.key, op.val)
}

// journal is the open journal file; only the writer goroutine uses it.
type journal struct {
	f    *os.File
	size int64
}

// openJournal opens the journal empty (Open has replayed what it held).
func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("empty journal: %w", err)
	}
	// The file's name must survive a power cut as well as its records.
	if err := datasync(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("sync journal: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return &journal{f: f}, nil
}

// append writes one record for transaction txid and makes it durable with
// one sync.
func (j *journal) append(txid int, ops []jop) error {
	rec := encodeJournalRecord(txid, ops)
	if _, err := j.f.WriteAt(rec, j.size); err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	if err := datasync(j.f); err != nil {
		return fmt.Errorf("sync journal: %w", err)
	}
	j.size += int64(len(rec))
	return nil
}

// committed is told that everything journaled is in bbolt: a long journal
// starts again from empty. The truncation needs no sync: a record it did
// not remove names a transaction bbolt has committed and is skipped.
func (j *journal) committed() {
	if j.size < journalTruncateAt {
		return
	}
	if err := j.f.Truncate(0); err == nil {
		j.size = 0
	}
}

// close closes the journal and removes it when nothing in it is owed.
func (j *journal) close(owed bool) error {
	err := j.f.Close()
	if !owed {
		if rerr := os.Remove(j.f.Name()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
			err = rerr
		}
	}
	return err
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// A record is: payload length (4 bytes, little-endian), CRC-32C of the
// payload (4), payload. The payload is txid, the number of changes, and
// each change: kind (0 put, 1 sequence), path (count, then each name),
// then key and value, or the sequence; integers as uvarints, byte strings
// as a uvarint length and the bytes.
func encodeJournalRecord(txid int, ops []jop) []byte {
	p := make([]byte, 8, 64)
	p = binary.AppendUvarint(p, uint64(txid))
	p = binary.AppendUvarint(p, uint64(len(ops)))
	bytesOf := func(b []byte) {
		p = binary.AppendUvarint(p, uint64(len(b)))
		p = append(p, b...)
	}
	for _, op := range ops {
		if op.isSeq {
			p = append(p, 1)
		} else {
			p = append(p, 0)
		}
		p = binary.AppendUvarint(p, uint64(len(op.path)))
		for _, name := range op.path {
			bytesOf(name)
		}
		if op.isSeq {
			p = binary.AppendUvarint(p, op.seq)
		} else {
			bytesOf(op.key)
			bytesOf(op.val)
		}
	}
	binary.LittleEndian.PutUint32(p[0:4], uint32(len(p)-8))
	binary.LittleEndian.PutUint32(p[4:8], crc32.Checksum(p[8:], castagnoli))
	return p
}

type journalRecord struct {
	txid int
	ops  []jop
}

var errJournalDecode = errors.New("malformed journal record")

func decodeJournalPayload(p []byte) (journalRecord, error) {
	var rec journalRecord
	uv := func() (uint64, error) {
		n, k := binary.Uvarint(p)
		if k <= 0 {
			return 0, errJournalDecode
		}
		p = p[k:]
		return n, nil
	}
	bs := func() ([]byte, error) {
		n, err := uv()
		if err != nil || n > uint64(len(p)) {
			return nil, errJournalDecode
		}
		b := p[:n:n]
		p = p[n:]
		return b, nil
	}
	txid, err := uv()
	if err != nil {
		return rec, err
	}
	rec.txid = int(txid)
	n, err := uv()
	if err != nil || n > uint64(len(p)) {
		return rec, errJournalDecode
	}
	for range n {
		if len(p) == 0 {
			return rec, errJournalDecode
		}
		var op jop
		kind := p[0]
		p = p[1:]
		if kind > 1 {
			return rec, errJournalDecode
		}
		op.isSeq = kind == 1
		np, err := uv()
		if err != nil || np == 0 || np > uint64(len(p)) {
			return rec, errJournalDecode
		}
		for range np {
			name, err := bs()
			if err != nil || len(name) == 0 {
				return rec, errJournalDecode
			}
			op.path = append(op.path, name)
		}
		if op.isSeq {
			if op.seq, err = uv(); err != nil {
				return rec, err
			}
		} else {
			if op.key, err = bs(); err != nil || len(op.key) == 0 {
				return rec, errJournalDecode
			}
			if op.val, err = bs(); err != nil {
				return rec, err
			}
		}
		rec.ops = append(rec.ops, op)
	}
	if len(p) != 0 {
		return rec, errJournalDecode
	}
	return rec, nil
}

// readJournal reads the records of the journal at path, stopping at the
// first that is cut short or fails its checksum (a crash while writing it:
// it was never answered). A missing journal has none.
func readJournal(path string) ([]journalRecord, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	var recs []journalRecord
	for len(data) >= 8 {
		n := binary.LittleEndian.Uint32(data[0:4])
		if n == 0 || n > maxJournalRecord || int(n) > len(data)-8 {
			break
		}
		payload := data[8 : 8+n]
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(data[4:8]) {
			break
		}
		rec, err := decodeJournalPayload(payload)
		if err != nil {
			break
		}
		recs = append(recs, rec)
		data = data[8+n:]
	}
	return recs, nil
}

// replayJournal applies, in one transaction, the journal's records that
// bbolt has not committed (their transaction id is above its last), and
// returns how many it applied. The journal itself is left for openJournal
// to empty, once this has committed.
func replayJournal(db *bolt.DB, path string, log *slog.Logger) (int, error) {
	recs, err := readJournal(path)
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	var last int
	if err := db.View(func(tx *bolt.Tx) error { last = tx.ID(); return nil }); err != nil {
		return 0, err
	}
	var todo []journalRecord
	for _, r := range recs {
		if r.txid > last {
			todo = append(todo, r)
		}
	}
	if len(todo) == 0 {
		return 0, nil
	}
	err = guard(func() error {
		return db.Update(func(tx *bolt.Tx) error {
			w := wtx{tx: tx}
			for _, r := range todo {
				for _, op := range r.ops {
					if err := w.redo(op); err != nil {
						return err
					}
				}
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("apply the journal's %d records: %w", len(todo), err)
	}
	log.Warn("store: applied writes that were answered from the journal but not committed when familiar stopped", "records", len(todo), "lastCommitted", last)
	return len(todo), nil
}

// discardJournal removes the journal of a database that was replaced by a
// backup or started empty: its records belong to the file moved aside.
func discardJournal(path string, log *slog.Logger) {
	recs, _ := readJournal(path)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("store: cannot remove the journal of the damaged database", "path", path, "err", err)
		return
	}
	if len(recs) > 0 {
		log.Warn("store: the journal of the damaged database is dropped with it", "records", len(recs))
	}
}
