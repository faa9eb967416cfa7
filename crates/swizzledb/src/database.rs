//! The open database, its statistics and its background threads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use swizzledb_buffer::Stats;
use swizzledb_wal::{LogStats, RunSummary};

use crate::cleaner::{self, CleanerStats};
use crate::engine::Core;
use crate::error::{Error, Result};
use crate::files;
use crate::instant::{self, RedoProgress};
use crate::lock;
use crate::logging::{self, CheckpointStats};
use crate::restart::RestartStats;
use crate::snapshot::SnapshotReads;
use crate::tree::Tree;
use crate::txn::{ReadTransaction, Transaction};
use crate::versions::VersionStats;

/// How many checkpoints a database took since it opened ([`Database::checkpoint_counts`]); the
/// fields are named as in [`CheckpointStats`], which has more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct CheckpointCounts {
    /// Every checkpoint that completed: at open, at close, by the background thread, by the page
    /// cleaner, and by [`Database::checkpoint`].
    pub checkpoints: u64,
    /// Those of `checkpoints` the background checkpointer took ([`Builder::checkpoint_interval`](crate::Builder::checkpoint_interval)).
    pub background: u64,
    /// Checkpoints that failed (not counted in `checkpoints`), whoever took them: the
    /// background thread, the page cleaner, [`Database::checkpoint`] or close.
    pub failed: u64,
}

/// An open database: a file, its buffer pool, and its named trees.
pub struct Database {
    pub(crate) core: Arc<Core>,
    /// What read-only transactions read through (K18), on a database that keeps versions.
    pub(crate) snapshot_reads: Option<SnapshotReads>,
    pub(crate) background: Box<Mutex<Background>>,
    /// The advisory locks on the file and the log directory (R13), released at close.
    pub(crate) files: Mutex<Vec<files::FileLock>>,
    pub(crate) closed: bool,
}

/// The background threads of a database (all but the evictor only with a log).
#[derive(Default)]
pub(crate) struct Background {
    /// Keeps free frames ready (buffer README B31).
    pub(crate) evictor: Option<swizzledb_buffer::EvictorHandle>,
    pub(crate) undo: Option<instant::UndoThread>,
    pub(crate) redo: Option<instant::RedoThread>,
    pub(crate) checkpointer: Option<logging::Periodic>,
    pub(crate) archiver: Option<logging::Periodic>,
    pub(crate) merger: Option<logging::Periodic>,
    pub(crate) cleaner: Option<cleaner::Thread>,
}

impl Database {
    /// Begins a read-only transaction: its reads see the database as committed at this moment
    /// and never wait for writers, nor make them wait (LOCKS.md K18). Keep it short: the
    /// versions it needs are kept until it ends, up to [`Builder::version_memory`](crate::Builder::version_memory).
    ///
    /// It isolates from transactions on every database with record locks (the default),
    /// logged or not. On an unlogged database the trees' own writes (`insert`, `upsert`,
    /// `delete` outside a transaction) are no transactions: they record no version, so every
    /// snapshot sees them at once (K21). With locking off its reads return what the tree holds.
    /// Right after an instant restart ([`crate::RestartMode::Instant`]) its first read waits
    /// until the background rollback of the crash's unfinished transactions has ended (K21).
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = swizzledb::Database::builder().create(dir.path().join("db.swz"))?;
    /// let tree = db.create_tree("accounts")?;
    /// tree.upsert(b"alice", b"10")?;
    /// let snapshot = db.begin_read();
    /// tree.upsert(b"alice", b"20")?;
    /// assert_eq!(snapshot.get(&tree, b"alice")?.as_deref(), Some(&b"10"[..]));
    /// assert_eq!(tree.get(b"alice")?.as_deref(), Some(&b"20"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn begin_read(&self) -> ReadTransaction<'_> {
        ReadTransaction::new(&self.core.pool, self.snapshot_reads.as_ref())
    }

    /// Begins a read-only transaction at **read committed** (LOCKS.md K25): each point read
    /// sees the newest committed value when it runs, each range read the database as
    /// committed when that range read began; none sees an uncommitted change, waits for a
    /// writer or makes one wait. Unlike [`Database::begin_read`] it holds no snapshot between
    /// its reads, so writers keep no versions for it (a range read keeps its own snapshot
    /// while it runs). Its point reads never fail with [`Error::SnapshotTooOld`]; a range read
    /// can, as a plain range read can, if the versions its own snapshot keeps outgrow
    /// [`Builder::version_memory`](crate::Builder::version_memory) while it runs. **The anomaly it
    /// allows:** two reads may see different committed states — a transfer committed between
    /// them shows in the second read and not in the first, so a sum over several reads may be
    /// off. Use it where each read stands alone (TPC-C's Stock-Level asks no more).
    ///
    /// On an unlogged database the trees' own writes record no versions and are seen at once,
    /// as by `begin_read` (K21); with locking off its reads return what the tree holds.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = swizzledb::Database::builder().create(dir.path().join("db.swz"))?;
    /// let tree = db.create_tree("accounts")?;
    /// tree.upsert(b"alice", b"10")?;
    /// let reads = db.begin_read_committed();
    /// let mut tx = db.begin();
    /// tx.put(&tree, b"alice", b"20")?;
    /// // Uncommitted: not seen, and not waited for.
    /// assert_eq!(reads.get(&tree, b"alice")?.as_deref(), Some(&b"10"[..]));
    /// tx.commit()?;
    /// // Committed before this read began: seen.
    /// assert_eq!(reads.get(&tree, b"alice")?.as_deref(), Some(&b"20"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn begin_read_committed(&self) -> ReadTransaction<'_> {
        ReadTransaction::read_committed(&self.core.pool, self.snapshot_reads.as_ref())
    }

    /// The figures of the versions snapshot reads keep (LOCKS.md K20); `None` on a database
    /// that keeps none (locking off).
    #[must_use]
    pub fn version_stats(&self) -> Option<VersionStats> {
        self.core.versions.as_ref().map(|v| v.stats())
    }

    /// Begins a transaction. While the log is over [`Builder::max_log_bytes`](crate::Builder::max_log_bytes), first waits
    /// (up to about two seconds) for the page cleaner to shrink it.
    #[must_use]
    pub fn begin(&self) -> Transaction<'_> {
        self.core.begin()
    }

    /// Runs `op` in a transaction and commits it, retrying when a record lock is refused.
    ///
    /// If `op` fails with [`Error::Lock`] (a deadlock's victim, LOCKS.md K23, or wait-die's, K6), its
    /// changes are rolled back and `op` runs again from the start, backing off, under the same
    /// transaction number: every retry is as old as the first attempt, so it wins against the
    /// transactions that started after it and cannot be starved. Any other error of `op` rolls
    /// the transaction back and is returned; so is a failed commit. To roll back on purpose,
    /// return `Err(Error::Aborted(reason))`. `op` may run more than once:
    /// keep side effects out of it, or make them idempotent.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let db = swizzledb::Database::builder().create(&dir.path().join("bank.swz"))?;
    /// let accounts = db.create_tree("accounts")?;
    /// accounts.insert(b"alice", &100u64.to_be_bytes())?;
    /// accounts.insert(b"bob", &0u64.to_be_bytes())?;
    /// db.transact(|tx| {
    ///     let read = |v: Option<Vec<u8>>| u64::from_be_bytes(v.unwrap().try_into().unwrap());
    ///     let alice = read(tx.get(&accounts, b"alice")?);
    ///     let bob = read(tx.get(&accounts, b"bob")?);
    ///     tx.put(&accounts, b"alice", &(alice - 30).to_be_bytes())?;
    ///     tx.put(&accounts, b"bob", &(bob + 30).to_be_bytes())?;
    ///     Ok(())
    /// })?;
    /// assert_eq!(accounts.get(b"bob")?, Some(30u64.to_be_bytes().to_vec()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// The first error of `op` other than a refused lock, a lock wait that timed out
    /// ([`crate::lock::LockError::Timeout`]), a rollback that failed (the pool or the log; no
    /// retry then), or the commit's error. A lock refused because the calling thread has
    /// another transaction open that holds it ([`crate::lock::LockError::Deadlock`]: that
    /// transaction cannot end while this call retries, LOCKS.md K23) is retried for 2 s, then
    /// returned.
    pub fn transact<R>(&self, op: impl FnMut(&mut Transaction<'_>) -> Result<R>) -> Result<R> {
        self.core.run_retrying(op, |_| false)
    }

    /// Begins a transaction under **snapshot isolation** (LOCKS.md K24) instead of the
    /// default serializable isolation: its reads (`get`, `range`, …) see the database as
    /// committed when it began, plus its own changes, and take no lock, so they never wait for
    /// a writer; its writes lock as [`Database::begin`]'s do, and a write of a key that another
    /// transaction changed and committed after the snapshot began fails with
    /// [`Error::WriteConflict`] (first updater wins: no lost updates).
    ///
    /// **The anomaly it allows: write skew.** Two such transactions may each read what the
    /// other writes and both commit: with the rule "x + y ≥ 0" and x = y = 50, each reads both,
    /// withdraws 100 from a different one, and both commit, leaving −100. Serializable
    /// transactions ([`Database::begin`]) would have one of them wait and, in a deadlock, fail.
    /// Use snapshot isolation where no such rule spans keys that different transactions write
    /// (or write the keys the rule reads, which turns the skew into a write conflict).
    ///
    /// On a database that keeps no versions (locking off), and while instant restart still
    /// rolls back a crash's losers (K21), it is an ordinary transaction, as
    /// [`Database::begin`] gives (serializable where the database locks records). On an
    /// unlogged database a write outside any transaction records no version, so it is no
    /// write conflict for a snapshot that began before it.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let db = swizzledb::Database::builder().create(dir.path().join("db.swz"))?;
    /// let tree = db.create_tree("counters")?;
    /// tree.upsert(b"hits", b"1")?;
    /// let mut tx = db.begin_snapshot();
    /// tree.upsert(b"hits", b"2")?; // committed after the snapshot began
    /// assert_eq!(tx.get(&tree, b"hits")?.as_deref(), Some(&b"1"[..]));
    /// // First updater wins: this write would lose the other's update.
    /// assert!(matches!(tx.put(&tree, b"hits", b"9"), Err(swizzledb::Error::WriteConflict { .. })));
    /// tx.abort()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn begin_snapshot(&self) -> Transaction<'_> {
        let mut tx = self.core.begin();
        tx.read_at_snapshot(self.snapshot_reads.as_ref());
        tx
    }

    /// [`Database::transact`] under snapshot isolation ([`Database::begin_snapshot`]): each
    /// attempt reads at a fresh snapshot, and one that fails with a refused lock, a
    /// [`Error::WriteConflict`] or an [`Error::SnapshotTooOld`] (its snapshot was ended because
    /// the versions it kept outgrew [`Builder::version_memory`](crate::Builder::version_memory),
    /// LOCKS.md K20) is rolled back and run again.
    ///
    /// # Errors
    /// As [`Database::transact`]; [`Error::SnapshotTooOld`] once eight attempts were run again
    /// after their snapshot was ended for memory (the transaction outlives the version memory:
    /// raise it, or shorten the transaction).
    pub fn transact_snapshot<R>(&self, op: impl FnMut(&mut Transaction<'_>) -> Result<R>) -> Result<R> {
        self.core.run_retrying_at(op, |_| false, self.snapshot_reads.as_ref())
    }

    pub(crate) fn stop_background(&self) {
        let mut threads = self.background.lock();
        // The losers' rollback finishes first: it may need the other threads' work.
        if let Some(mut u) = threads.undo.take() {
            u.finish();
        }
        if let Some(mut e) = threads.evictor.take() {
            e.stop();
        }
        if let Some(mut c) = threads.cleaner.take() {
            c.stop();
        }
        if let Some(mut c) = threads.checkpointer.take() {
            c.stop();
        }
        if let Some(mut a) = threads.archiver.take() {
            a.stop();
        }
        if let Some(mut m) = threads.merger.take() {
            m.stop();
            if let Some(wal) = &self.core.wal {
                wal.background_merges.store(false, std::sync::atomic::Ordering::Release);
            }
        }
        if let Some(mut r) = threads.redo.take() {
            r.stop();
        }
    }

    /// Checkpoints taken since the database opened, by kind and outcome (`None` without
    /// logging, and on a read-only open, which reads no log even where
    /// [`Database::is_logged`] is true).
    #[must_use]
    pub fn checkpoint_stats(&self) -> Option<CheckpointStats> {
        self.core.wal.as_ref().map(|w| w.stats.snapshot())
    }

    /// Checkpoints taken since the database opened (all zero without logging or read-only);
    /// [`Database::checkpoint_stats`] has more.
    #[must_use]
    pub fn checkpoint_counts(&self) -> CheckpointCounts {
        self.core.wal.as_ref().map_or(CheckpointCounts::default(), |w| {
            let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
            CheckpointCounts {
                checkpoints: l(&w.stats.checkpoints),
                background: l(&w.stats.background_checkpoints),
                failed: l(&w.stats.failed_checkpoints),
            }
        })
    }

    /// What the page cleaner did since the database opened (`None` without logging or
    /// read-only).
    #[must_use]
    pub fn cleaner_stats(&self) -> Option<CleanerStats> {
        self.core.cleaner.as_ref().map(|c| c.counters.snapshot())
    }

    /// Bytes of log kept now, from the oldest record restart could need (or not yet
    /// truncated) to the end (`None` without logging). The end's records may still be in the
    /// log's memory buffer, not yet written (asynchronous commits write them later), so this
    /// can exceed what the segment files hold. The page cleaner keeps it below
    /// [`Builder::max_log_bytes`](crate::Builder::max_log_bytes) (R15). `None` on a read-only
    /// open too, which reads no log.
    #[must_use]
    pub fn log_bytes(&self) -> Option<u64> {
        self.core.wal.as_deref().map(cleaner::log_bytes)
    }

    /// The record lock manager's counters (`None` with locking off).
    #[must_use]
    pub fn lock_stats(&self) -> Option<lock::LockStats> {
        self.core.locks.as_deref().map(lock::LockManager::stats)
    }

    /// Whether this is a logged database: it logs its changes, or, opened read-only
    /// ([`Builder::read_only`](crate::Builder::read_only), which reads no log and changes
    /// nothing), its file has a log (RECOVERY.md R27). As an open follows the file, so does
    /// this.
    #[must_use]
    pub fn is_logged(&self) -> bool {
        self.core.wal.is_some() || (self.core.pool.is_read_only() && self.core.pool.file_is_logged())
    }

    /// Archives the durable log now (R17): its page changes not archived yet become one new
    /// run. `None` without an archive ([`Builder::log_archive`](crate::Builder::log_archive)) or with nothing new to archive.
    /// Checkpoints do this too.
    ///
    /// # Errors
    /// Reading the log or writing the run failed; the archive is as before (wal README A4).
    pub fn archive_log(&self) -> Result<Option<RunSummary>> {
        match &self.core.wal {
            Some(wal) => wal.archive_durable(),
            None => Ok(None),
        }
    }

    /// The log archive's runs, oldest first (`None` without an archive).
    #[must_use]
    pub fn archive_runs(&self) -> Option<Vec<RunSummary>> {
        self.core.wal.as_ref().and_then(|w| w.archive.as_deref()).map(swizzledb_wal::Archive::runs)
    }

    /// The log's counters (`None` without logging, and on a read-only open, which reads no
    /// log even where [`Database::is_logged`] is true).
    #[must_use]
    pub fn log_stats(&self) -> Option<LogStats> {
        self.core.wal.as_ref().map(|w| w.log.stats())
    }

    /// What instant restart's redo has done so far (RECOVERY.md R22): `None` unless this
    /// database opened by [`RestartMode::Instant`](crate::RestartMode::Instant).
    #[must_use]
    pub fn redo_progress(&self) -> Option<RedoProgress> {
        self.core.wal.as_ref().and_then(|w| w.pending.as_ref()).map(|p| p.progress())
    }

    /// What the restart that opened this database did (all zero for a created database or one
    /// without logging).
    #[must_use]
    pub fn restart_stats(&self) -> RestartStats {
        *self.core.restart_stats.lock()
    }

    /// Takes a checkpoint (RECOVERY.md R7); without logging, flushes. After an instant restart
    /// whose redo is still pending, the first one (like `flush` and `close`) first redoes the
    /// pending pages in the file, then takes the checkpoint that ends restart (R22).
    ///
    /// # Errors
    /// Log or I/O errors.
    pub fn checkpoint(&self) -> Result<()> {
        self.core.check_writable()?;
        self.core.checkpoint()
    }

    /// Creates a new, empty tree. On a logged database the creation is durable when it returns,
    /// in either commit mode (RECOVERY.md R23): a crash right after keeps the tree. It waits
    /// for a [`Database::drop_tree`] that runs (which may itself wait up to about two seconds
    /// for running transactions; LOCKS.md K19).
    ///
    /// # Errors
    /// The name is invalid or taken, the catalog is full, or no frame is free; the log failed
    /// (wal README W11). A creation whose record was appended but could not be made durable
    /// returns the log's error with the tree made in memory, as a commit whose sync fails does:
    /// it survives a crash or not, and this database refuses every later write, so reopen it
    /// and look for the tree there.
    pub fn create_tree(&self, name: &str) -> Result<Tree> {
        self.core.check_writable()?;
        self.core.create_tree(name).map(|t| self.user_handle(t))
    }

    /// Opens an existing tree.
    ///
    /// # Errors
    /// No such tree, or I/O errors loading its root.
    pub fn tree(&self, name: &str) -> Result<Tree> {
        self.core.tree(name).map(|t| self.user_handle(t))
    }

    /// The user's handle of the engine's tree `t`, with what its reads and writes need from this
    /// database.
    fn user_handle(&self, t: swizzledb_btree::Tree) -> Tree {
        let core = &self.core;
        Tree::new(t, core.plain_snapshot_reads(), core.restart_redo(), core.raw_write_versions())
    }

    /// Opens the tree, creating it if it does not exist. Threads that call it for the same
    /// name at once all get the one tree: none fails because another created it first.
    ///
    /// # Errors
    /// As [`Database::tree`] and [`Database::create_tree`], never [`Error::TreeExists`].
    pub fn tree_or_create(&self, name: &str) -> Result<Tree> {
        loop {
            match self.tree(name) {
                Err(Error::TreeNotFound(_)) => match self.create_tree(name) {
                    // Another thread created it between the look-up and the creation: open it.
                    Err(Error::TreeExists(_)) => continue,
                    other => return other,
                },
                other => return other,
            }
        }
    }

    /// Drops the tree `name`: removes it from the catalog and frees all its pages for reuse.
    /// Returns `false` if there is no such tree. On a logged database the drop is logged and
    /// survives a crash once `drop_tree` returns (RECOVERY.md R23): a restart finds the tree
    /// gone, or — if the crash came while the pages were being freed — gone with some of its
    /// pages still allocated (unreachable; not damage).
    ///
    /// Every [`Tree`] handle of the dropped tree refuses from then on
    /// ([`TreeError::Dropped`](crate::TreeError::Dropped)); a new tree of the same name is a new, empty tree. The drop
    /// waits (up to about two seconds) until no [`Transaction`] runs — auto-commit writes of
    /// the trees' handles included — so that no transaction holds uncommitted changes of the
    /// tree, and new transactions wait for it at `begin`. Reads through handles of the tree
    /// are not waited for, nor (on an unlogged database) writes through them: one that runs
    /// meanwhile acts on the tree as it was before the drop, or fails with `Dropped`; none
    /// reads or changes a tree created later on the freed pages (btree README T25).
    ///
    /// # Errors
    /// [`Error::TreeBusy`] if a transaction kept running (one this thread holds, too) or
    /// instant restart is still rolling losers back; I/O errors reading the tree's pages, or
    /// the log failed.
    pub fn drop_tree(&self, name: &str) -> Result<bool> {
        self.core.check_writable()?;
        self.core.drop_tree(name)
    }

    /// Names of all trees, in byte order of their UTF-8 (`str`'s order).
    #[must_use]
    pub fn tree_names(&self) -> Vec<String> {
        self.core.pool.catalog_names()
    }

    /// Writes every dirty page and fsyncs (a logged database's commits are durable without it;
    /// it shortens the next restart's redo). On an unlogged database it also writes the
    /// metadata, but it is no consistent point: writes running meanwhile may be half in the
    /// file, and only [`Database::close`] marks the file clean (R13).
    ///
    /// # Errors
    /// Log or I/O errors (sticky: reopen the database afterwards).
    pub fn flush(&self) -> Result<()> {
        self.core.check_writable()?;
        self.core.flush()
    }

    /// Flushes and closes the database: every page written, page 0 marked clean, a last
    /// checkpoint with a log, the file locks released. Every [`Tree`] handle that outlives it
    /// refuses from then on ([`TreeError::Closed`](crate::TreeError::Closed)). If it records a trace and no [`Tree`]
    /// handle outlives the database, the trace is finished here and its errors reported;
    /// otherwise it is finished when the last handle is dropped.
    ///
    /// # Errors
    /// As [`Database::flush`]; I/O errors finishing the trace. The database is closed even
    /// then (its handles refuse); a logged one restarts from its log at the next open.
    pub fn close(mut self) -> Result<()> {
        self.closed = true;
        self.stop_background();
        let result = self.core.close();
        self.core.pool.mark_closed();
        *self.core.me.lock() = Weak::new();
        self.core.trees.lock().clear();
        self.files.lock().clear();
        result?;
        if let Some(core) = Arc::get_mut(&mut self.core) {
            if let Some(pool) = Arc::get_mut(&mut core.pool) {
                pool.finish_trace()?;
            }
        }
        Ok(())
    }

    /// The buffer pool's counters, summed over all threads.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.core.pool.stats()
    }
}

impl Drop for Database {
    /// Dropping without [`Database::close`] closes the same way; a failure is reported as a
    /// `log` error record (call `close` to get the error).
    fn drop(&mut self) {
        self.stop_background();
        if !self.closed {
            match self.core.close() {
                Ok(()) => log::debug!("swizzledb: {} closed by drop", self.core.pool.path().display()),
                Err(e) => log::error!(
                    "swizzledb: dropping the database {} could not close it cleanly: {e}; call \
                     Database::close to handle the error (a logged database restarts from its log \
                     at the next open)",
                    self.core.pool.path().display()
                ),
            }
            self.core.pool.mark_closed();
            self.core.trees.lock().clear();
        }
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("pool", &self.core.pool).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// wal README W16: tree handles share the log and outlive the database; its close stops
    /// the log's flusher all the same, so no thread of a closed database writes its files —
    /// also when the database is dropped without `close`.
    #[test]
    fn w16_a_closed_database_runs_no_flusher_while_its_tree_handles_live() {
        let dir = tempfile::tempdir().unwrap();
        for close in [true, false] {
            let db = Database::builder().create(dir.path().join(format!("db-{close}.swz"))).unwrap();
            let tree = db.create_tree("t").unwrap();
            tree.upsert(b"k", b"v").unwrap();
            let log = Arc::clone(&db.core.wal.as_ref().expect("a logged database").log);
            assert!(log.background_running());
            if close {
                db.close().unwrap();
            } else {
                drop(db);
            }
            assert!(!log.background_running(), "close {close}: the flusher outlived the database");
            assert!(tree.get(b"k").is_err(), "a closed database's tree handle reads nothing");
        }
    }
}
