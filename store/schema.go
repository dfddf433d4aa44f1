package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Bucket and key names; the layout is described in the package doc.
var (
	bucketMeta           = []byte("meta")
	bucketTasks          = []byte("tasks")
	bucketTasksByCreated = []byte("tasksByCreated")
	bucketEvents         = []byte("events")
	bucketEventsByTask   = []byte("eventsByTask")
	bucketAudit          = []byte("audit")
	bucketAuditByTask    = []byte("auditByTask")
	bucketSettings       = []byte("settings")

	keyVersion = []byte("version")
)

// migration takes the database from one version to the next.
type migration struct {
	name  string
	apply func(tx *bolt.Tx) error
}

// migrations[i] takes a database from version i to version i+1. Append only:
// a shipped migration is never edited, since databases in the field have
// already run it.
var migrations = []migration{
	{"create base buckets", migrateCreateBuckets},
	{"index tasks by creation time", migrateIndexTasksByCreated},
	{"drop the tasks-by-creation index", migrateDropTasksByCreated},
}

// SchemaVersion returns the schema version this code writes and understands.
func SchemaVersion() uint64 { return uint64(len(migrations)) }

func migrateCreateBuckets(tx *bolt.Tx) error {
	for _, name := range [][]byte{
		bucketMeta, bucketTasks, bucketEvents, bucketEventsByTask,
		bucketAudit, bucketAuditByTask, bucketSettings,
	} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// migrateDropTasksByCreated removes the index version 2 added: task/list is
// computed from the tasks in memory, and keeping the index cost a write per
// task save.
func migrateDropTasksByCreated(tx *bolt.Tx) error {
	if tx.Bucket(bucketTasksByCreated) == nil {
		return nil
	}
	return tx.DeleteBucket(bucketTasksByCreated)
}

func migrateIndexTasksByCreated(tx *bolt.Tx) error {
	idx, err := tx.CreateBucketIfNotExists(bucketTasksByCreated)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketTasksByCreated, err)
	}
	return tx.Bucket(bucketTasks).ForEach(func(id, v []byte) error {
		var tv taskValue
		if err := json.Unmarshal(v, &tv); err != nil {
			return fmt.Errorf("task %q: %w", id, err)
		}
		return idx.Put(createdKey(tv.CreatedAt, string(id)), []byte(tv.Status))
	})
}

// schemaVersion reads the stored version; a database without a meta bucket
// (a new file) is version 0.
func schemaVersion(tx *bolt.Tx) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return 0, nil
	}
	v := meta.Get(keyVersion)
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("schema version is %d bytes, want 8", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// migrate brings db to SchemaVersion, one transaction per step.
func migrate(db *bolt.DB, log *slog.Logger) error {
	return migrateTo(db, migrations, log)
}

func migrateTo(db *bolt.DB, steps []migration, log *slog.Logger) error {
	var version uint64
	if err := db.View(func(tx *bolt.Tx) error {
		var err error
		version, err = schemaVersion(tx)
		return err
	}); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	known := uint64(len(steps))
	if version > known {
		return fmt.Errorf("%w: the database has schema version %d and this familiar knows up to %d; upgrade familiar or use another data dir",
			ErrSchemaTooNew, version, known)
	}
	for ; version < known; version++ {
		step := steps[version]
		err := db.Update(func(tx *bolt.Tx) error {
			if err := step.apply(tx); err != nil {
				return err
			}
			meta, err := tx.CreateBucketIfNotExists(bucketMeta)
			if err != nil {
				return err
			}
			return meta.Put(keyVersion, u64(version+1))
		})
		if err != nil {
			return fmt.Errorf("migrate schema %d → %d (%s): %w", version, version+1, step.name, err)
		}
		log.Info("store: migrated schema", "from", version, "to", version+1, "step", step.name)
	}
	return nil
}

// u64 encodes n so that byte order is numeric order.
func u64(n uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), n)
}

// createdKey is a tasksByCreated key (schema version 2 only): the creation
// time, then the id. The sign bit of UnixNano is flipped so that times
// before 1970 sort first.
func createdKey(t time.Time, id string) []byte {
	k := make([]byte, 8, 8+len(id))
	binary.BigEndian.PutUint64(k, uint64(t.UnixNano())^(1<<63))
	return append(k, id...)
}

// storableTime reports whether t survives createdKey (UnixNano is only
// defined for years 1678 to 2262).
func storableTime(t time.Time) bool {
	return time.Unix(0, t.UnixNano()).Equal(t)
}

// decodeU64 reads a key written by u64.
func decodeU64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
