// Package store persists familiar's state in bbolt: tasks, per-task event logs
// with sequence numbers, the audit log and settings, written by one goroutine
// that commits everything pending in one transaction (group commit).
//
// It is never imported by agent or procs, and it never imports orchestrator:
// a task is an opaque JSON blob plus its status and times
// (TaskRecord), so the orchestrator owns the Task type and its evolution.
//
// # Files
//
// The database is <dataDir>/familiar.db (mode 0600). bbolt holds an exclusive
// flock on it for as long as it is open; Open waits at most
// Options.LockTimeout for it and then fails with an error that matches
// ErrLocked ("another familiar is running for this repository (pid N)").
// The holder's pid lives next to it in <dataDir>/familiar.pid, written
// atomically after the lock is taken and removed by Close, because a process
// that fails to get the lock cannot read anything inside the database. The pid
// is only reported if that process is still alive (and, on Linux, still the
// same process: its start time is recorded too).
//
// Beside it: familiar.db.created (a marker: an empty or missing database
// next to it is damage, not a first start), familiar.db.backup-1 and -2 (the
// newest two online backups, Tx.WriteTo every Options.BackupEvery while
// written to, and at Close), familiar.db.damaged-<time> (a damaged file moved
// aside), familiar.db.recoveries.json (the last repairs, for doctor) and
// familiar.db.journal (writes answered after one sync, before bbolt's
// commit; see journal.go; removed at a clean Close).
//
// # Faults
//
// Open checks the file with bbolt's Tx.Check for at most
// Options.CheckTimeout (a bigger store is checked on in the background). A
// damaged file — one Check or bbolt.Open rejects, one whose reading panics,
// or an empty or missing one where a store was — is moved aside and the
// newest backup that checks clean is restored, or the store starts empty;
// Store.Recovery says what was lost. A failed commit is never acknowledged:
// every write in it fails with an error matching ErrStoreFull (no space) or
// ErrUnavailable, Options.OnHealth hears that the store is degraded, and a
// probe every Options.ProbeEvery notices when space returns: it writes a
// scratch file of Options.ProbeBytes (1 MiB) beside the database and a small
// value into it, and the store is healthy again only when both succeed and
// no write was refused for a probe period. A small write that still fits on
// a full disk does not end the degraded spell; the recovery reports how many
// writes were refused during it. bbolt's
// panics on damaged pages (and faults reading its map) become ErrUnavailable
// errors wrapping ErrDamaged instead of crashing familiar.
//
// # Schema (version 3)
//
// All integers in keys are 8-byte big-endian so that bbolt's byte order is
// numeric order. Times inside values are RFC 3339 with nanoseconds, UTC.
//
//	meta/
//	    "version"            uint64: the schema version (see below)
//	tasks/
//	    <task id>            JSON {"status","createdAt","updatedAt","data"}
//	                         data is the orchestrator's Task, untouched
//	events/                  the global event log
//	    <seq>                JSON {"taskId","taskSeq","kind","at","data"}
//	                         the bucket's own sequence is the last global seq
//	                         ever assigned; it lives in the same transaction as
//	                         the event, survives restarts and deletions, so a
//	                         seq is never reused (there may be gaps)
//	eventsByTask/
//	    <task id>/           one nested bucket per task; its sequence is the
//	                         last per-task seq
//	        <seq>            empty (the event itself is in events/)
//	audit/                   append-only; never deleted with a task
//	    <audit seq>          JSON {"at","taskId","action","actor","data"}
//	                         the bucket's sequence is the last audit seq
//	auditByTask/
//	    <task id>/
//	        <audit seq>      empty
//	settings/
//	    <name>               JSON value
//
// Events with an empty task id (server-wide notifications such as
// skills/changed) are only in events/.
//
// # Versions and migrations
//
// The version is the number of migrations applied: migrations[i] takes a
// database from version i to i+1, in its own write transaction that also
// stores the new version, so a crash leaves a database at some whole version.
// A new file is version 0 and goes through every migration, which keeps the
// migration path exercised on every fresh start.
//
//	0 → 1  create meta, tasks, events, eventsByTask, audit, auditByTask, settings
//	1 → 2  add tasksByCreated, built from tasks/ (<createdAt><task id> → <status>)
//	2 → 3  drop tasksByCreated: the orchestrator lists tasks in memory
//	       (AllTasks at start), so nothing read the index
//
// Open refuses a database whose version is newer than len(migrations)
// (ErrSchemaTooNew) without writing to it. Migrations are append-only: never
// edit one that has shipped; add the next.
//
// # Writes
//
// Every write (PutTask, DeleteTask, AppendEvent, AppendAudit, PutSetting) is
// validated in the caller's goroutine, then queued to the writer goroutine,
// which applies everything pending in one bbolt transaction, commits (fsync)
// and answers all waiters; a write call returns only after its data is
// durable. If one queued write fails, the transaction is rolled back and the
// rest are applied again without it, so a write lands or fails on its own.
// Reads use bbolt read transactions directly and see only committed data.
//
// # Durability
//
// A commit is durable when it returns, on every platform, and a power cut
// never leaves the meta page pointing at pages not on disk: bbolt writes the
// data pages and syncs, then writes the meta page and syncs again. Those two
// syncs are what every notification waits for (a question's writes are one
// commit, AppendBatch; TestQuestionCommitFlushes counts them, 2). On Linux
// each is fdatasync(2): the drive's volatile cache is flushed as the file
// system's barriers do it (ext4 and xfs send a cache flush). On macOS Go's
// File.Sync, which bbolt calls there, is fcntl(F_FULLFSYNC): the data goes
// through the drive's cache to stable storage, milliseconds to tens of
// milliseconds on Apple SSDs, against fsync(2), which on macOS leaves it in
// the drive's cache. A third sync, when the file grows, comes once per 16
// MiB: 64 MiB are mapped up front, so bbolt grows the file in AllocSize
// steps. Fewer flushes per notification would need a write-ahead record
// synced once; not done.
//
// # Cancellation
//
// A write whose context is done before it is queued writes nothing. Once
// queued, it shares a transaction with other callers' writes and cannot be
// taken back: if the context ends while the caller waits, the call returns
// ctx.Err() at once, and the write may still be committed. A caller that
// must know (say, to avoid appending an event twice) has to look.
//
// Close commits everything queued before it, stops the writer and waits for
// it; writes after Close return ErrClosed.
package store
