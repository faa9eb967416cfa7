//! Transactions (RECOVERY.md R4–R6): point reads and writes on any of the database's trees,
//! committed or rolled back as a whole; and read-only transactions, whose reads all see one
//! snapshot (LOCKS.md K18).

use std::ops::Bound;
use std::sync::Arc;
use swizzledb_btree::{
    CompareAndSwapError, GapGate, Gated, NoGate, RangeIter, ReadGate, RevRangeIter, Tree as EngineTree,
    TreeError,
};
use swizzledb_sync::{Lsn, TxnId};

use crate::engine::Core;
use crate::error::{Error, Result};
use crate::isolation::{self, lock_name, TxnReads};
use crate::lock::LockMode;
use crate::logging::CommitMode;
use crate::logging::{TxnLog, TxnShared, Undo, Wal};
use crate::record::{Record, TxnState};
use crate::snapshot::{SnapshotReads, SnapshotRef};
use crate::tree::Tree;
use crate::versions::Snapshot;

/// The engine tree of `tree` if the handle is one of the database of `pool`: a handle of
/// another database (or of an earlier open of this one) is refused before anything is read,
/// locked or logged — the transaction's locks, log and versions would be applied to the other
/// database's pages. A handle whose own database was closed is [`TreeError::Closed`].
fn own_tree<'t>(pool: &Arc<swizzledb_buffer::BufferPool>, tree: &'t Tree) -> Result<&'t EngineTree> {
    if Arc::ptr_eq(tree.inner.pool(), pool) {
        Ok(&tree.inner)
    } else if tree.inner.pool().is_closed() {
        Err(TreeError::Closed.into())
    } else {
        Err(Error::ForeignTree)
    }
}

/// [`own_tree`] for a range read, which reports errors through its items: the first item of a
/// refused scan.
fn refusal(pool: &Arc<swizzledb_buffer::BufferPool>, tree: &Tree) -> Option<TreeError> {
    own_tree(pool, tree).err().map(|e| match e {
        Error::Tree(e) => e,
        e => TreeError::Transaction(Box::new(e)),
    })
}

/// A transaction: point reads, range reads and writes on the database's trees, under record
/// locks held until it ends (shared for reads, exclusive for writes, and next-key locks on the
/// gaps a range read covers; LOCKS.md K14–K16), so concurrent transactions are serializable,
/// phantoms included. [`Transaction::commit`] makes its writes durable,
/// [`Transaction::abort`] — or dropping the transaction unfinished — undoes them. A lock that
/// cannot be granted ([`crate::Error::Lock`]: a deadlock's victim) leaves the
/// transaction as it was; abort it and retry. A transaction from
/// [`Database::begin_snapshot`](crate::Database::begin_snapshot) reads at a snapshot instead,
/// without locks (snapshot isolation, LOCKS.md K24).
///
/// A transaction is `Send`: it may end on another thread than the one that began it. Deadlock
/// detection knows a transaction's thread by its last request (LOCKS.md K23): moved to another
/// thread, it counts as its old thread's until it reads or writes there, and meanwhile a
/// transaction of the old thread whose request would wait for one of its locks fails at once
/// with [`LockError::Deadlock`](crate::lock::LockError::Deadlock), as if the moved one could
/// not end while that thread waits. Make a request on the new thread first, or retry.
pub struct Transaction<'db> {
    db: &'db Core,
    log: TxnLog<'db>,
    /// The gate of its range reads: shared locks (`None` with locking off).
    reads: Option<TxnReads<'db>>,
    /// K24: the snapshot a snapshot-isolation transaction reads at (`None`: serializable).
    si: Option<SnapshotIsolation<'db>>,
    done: bool,
}

/// What a snapshot-isolation transaction reads at (LOCKS.md K24).
struct SnapshotIsolation<'db> {
    reads: &'db SnapshotReads,
    snap: Snapshot<'db>,
}

impl<'db> Transaction<'db> {
    pub(crate) fn new(db: &'db Core, wal: Option<&'db Wal>, shared: Arc<TxnShared>) -> Transaction<'db> {
        let reads = db.locks.as_deref().map(|locks| TxnReads::new(locks, shared.id));
        let log = TxnLog::new(wal, shared, db.versions.as_deref());
        Transaction { db, log, reads, si: None, done: false }
    }

    /// K24: makes this (fresh) transaction read at a snapshot taken now, seeing its own
    /// changes, and fail a write of a key another transaction committed since. Without
    /// versions (`reads` `None`), or while instant restart's losers are rolled back (K21), it
    /// stays an ordinary transaction of its database.
    pub(crate) fn read_at_snapshot(&mut self, reads: Option<&'db SnapshotReads>) {
        let Some(reads) = reads.filter(|r| r.ready()) else { return };
        let mut snap = reads.versions.snapshot();
        snap.own = self.log.writer().cloned();
        self.si = Some(SnapshotIsolation { reads, snap });
    }

    /// Whether the transaction reads at a snapshot (snapshot isolation, LOCKS.md K24) rather
    /// than under shared locks (serializable).
    #[must_use]
    pub fn is_snapshot(&self) -> bool {
        self.si.is_some()
    }

    /// The transaction's number.
    #[must_use]
    pub fn id(&self) -> TxnId {
        self.log.shared.id
    }

    /// The value stored under `key` in `tree`, read under the key's shared lock: what this
    /// transaction wrote, or what was committed. Under snapshot isolation: what this
    /// transaction wrote, or what was committed when it began, read without a lock (K24).
    ///
    /// # Errors
    /// A refused lock ([`Error::Lock`]), I/O errors or corruption; under snapshot isolation
    /// [`Error::SnapshotTooOld`] if the snapshot was ended for memory (K20);
    /// [`Error::ForeignTree`] for a tree handle of another database.
    pub fn get(&self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(tree, key, |v| v.map(<[u8]>::to_vec))
    }

    /// Calls `f` with the value stored under `key` in `tree` (or `None`), read under the key's
    /// shared lock as [`Transaction::get`] does, while the leaf is latched: no copy of a value stored in its leaf.
    /// `f` must not call into the database.
    ///
    /// # Errors
    /// As [`Transaction::get`].
    pub fn get_with<R>(&self, tree: &Tree, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R> {
        let tree = own_tree(&self.db.pool, tree)?;
        if let Some(si) = &self.si {
            // K24: at the snapshot, no lock; its own changes are in the tree and seen.
            return si.reads.get_with(&si.snap, tree, key, f);
        }
        self.db.lock(self.id(), tree, key, LockMode::Shared)?;
        Ok(tree.get_gated(key, &NoGate, f)?)
    }

    /// The records of `tree` with keys in the range, in key order. Every key returned, and the
    /// key closing the range (the first one past its end, or the end of the tree), is locked
    /// shared until the transaction ends (next-key locking, K16): reading the range again in
    /// this transaction returns the same records, whatever others insert or delete. This holds
    /// exactly on a logged database; on an unlogged one pages carry no LSNs, and a key inserted
    /// into a gap that spans two leaves at the moment its closing key is locked can be missed
    /// (LOCKS.md). With locking off nothing is locked.
    ///
    /// Each item is a record or an error; after [`Error::Lock`] (a deadlock chose this
    /// transaction) abort the transaction and retry it. A tree handle of another database
    /// reads nothing: the one item is [`Error::ForeignTree`]. The iterator is double-ended
    /// ([`TxnRange`]).
    pub fn range<'t>(&'t self, tree: &'t Tree, start: Bound<&[u8]>, end: Bound<&[u8]>) -> TxnRange<'t> {
        if let Some(e) = refusal(&self.db.pool, tree) {
            return TxnRange { inner: tree.inner.range(start, end).refused(e) };
        }
        if let Some(si) = &self.si {
            return TxnRange {
                inner: si.reads.range(SnapshotRef::Borrowed(&si.snap), &tree.inner, start, end),
            };
        }
        self.enter_range(&tree.inner);
        TxnRange { inner: tree.inner.range_gated(start, end, self.gate()) }
    }

    /// [`Transaction::range`] in descending key order.
    pub fn range_rev<'t>(
        &'t self,
        tree: &'t Tree,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> TxnRevRange<'t> {
        if let Some(e) = refusal(&self.db.pool, tree) {
            return TxnRevRange { inner: tree.inner.range_rev(start, end).refused(e) };
        }
        if let Some(si) = &self.si {
            return TxnRevRange {
                inner: si.reads.range_rev(SnapshotRef::Borrowed(&si.snap), &tree.inner, start, end),
            };
        }
        self.enter_range(&tree.inner);
        TxnRevRange { inner: tree.inner.range_rev_gated(start, end, self.gate()) }
    }

    /// K15: a range read of `tree` begins; inserts into it look at their gaps until this
    /// transaction's locks are released.
    fn enter_range(&self, tree: &EngineTree) {
        if let Some(reads) = &self.reads {
            reads.enter_range(tree);
        }
    }

    /// R2: the transaction is one tree operation, committed right after it (an auto-commit
    /// write): the operation's last leaf record commits it.
    pub(crate) fn commit_with_last_change(&self) {
        self.log.commit_with_last_change();
    }

    /// The transaction's locks are released ([`Core::finish_txn`]): so is its hold on the gaps
    /// its range reads covered.
    fn finish(&self) {
        self.db.finish_txn(self.id());
        if let Some(reads) = &self.reads {
            reads.leave_ranges();
        }
    }

    fn gate(&self) -> &(dyn ReadGate + Sync) {
        match &self.reads {
            Some(r) => r,
            None => &NoGate,
        }
    }

    /// Inserts or replaces; returns true if the key existed.
    ///
    /// # Errors
    /// A refused lock, oversize key or value, pool or I/O errors, the log failed, or a tree
    /// handle of another database ([`Error::ForeignTree`]); nothing changes then, and the
    /// transaction can still commit or abort.
    pub fn put(&mut self, tree: &Tree, key: &[u8], value: &[u8]) -> Result<bool> {
        self.write(own_tree(&self.db.pool, tree)?, key, Some(value), true)
    }

    /// Replaces the value under `key` with what `f` makes of it, under the key's exclusive lock
    /// and in one descent: `f` gets the current value and an empty buffer to write the new one
    /// into. Returns `f`'s result, or `None` if the key is absent (then nothing changes and `f`
    /// is not called). `f` must not call into the database.
    ///
    /// # Errors
    /// As [`Transaction::put`].
    pub fn update_with<R>(
        &mut self,
        tree: &Tree,
        key: &[u8],
        f: impl FnOnce(&[u8], &mut Vec<u8>) -> R,
    ) -> Result<Option<R>> {
        let tree = own_tree(&self.db.pool, tree)?;
        self.lock_to_write(tree, key)?;
        // Neither adds nor removes a key: no gap to lock (K15).
        Ok(tree.update_logged(key, &self.log, f)?)
    }

    /// Inserts a new record; fails with [`TreeError::DuplicateKey`] if the key exists.
    ///
    /// # Errors
    /// As [`Transaction::put`], and the duplicate key.
    pub fn insert(&mut self, tree: &Tree, key: &[u8], value: &[u8]) -> Result<()> {
        self.write(own_tree(&self.db.pool, tree)?, key, Some(value), false).map(|_| ())
    }

    /// Deletes `key`; returns true if it existed.
    ///
    /// # Errors
    /// As [`Transaction::put`].
    pub fn delete(&mut self, tree: &Tree, key: &[u8]) -> Result<bool> {
        self.write(own_tree(&self.db.pool, tree)?, key, None, true)
    }

    /// Records this thread as the transaction's writer and locks `key` exclusively: what every
    /// write does first.
    fn lock_to_write(&self, tree: &EngineTree, key: &[u8]) -> Result<()> {
        self.log
            .shared
            .writer_thread
            .store(crate::logging::thread_tag(), std::sync::atomic::Ordering::Relaxed);
        self.db.lock_to_write(self.id(), tree, key, self.log.writer())?;
        if let Some(si) = &self.si {
            // K24: first updater wins. Under the exclusive lock no other writer of the key
            // runs; one that committed since the snapshot began left its version in the chain.
            if si.reads.versions.changed_after(&si.snap, tree.root_page(), key) {
                return Err(Error::WriteConflict { tree: tree.root_page().get(), key: key.into() });
            }
            if si.snap.too_old() {
                return Err(Error::SnapshotTooOld { limit: si.reads.versions.limit });
            }
        }
        Ok(())
    }

    /// Sets `key` of `tree` to `new` if its value is `expected` (`None`: absent; `new` `None`
    /// deletes), as [`Tree::compare_and_swap`] does, within this transaction: under the key's
    /// exclusive lock (and, for a write that adds or removes the key, its gap's, as
    /// [`Transaction::put`] and [`Transaction::delete`] lock them), the comparison and the
    /// write made under the leaf's latch, the change undone if the transaction rolls back.
    /// `Ok(Err(_))` carries the value found; nothing changed then (the locks stay).
    ///
    /// # Errors
    /// As [`Transaction::put`].
    pub fn compare_and_swap(
        &mut self,
        tree: &Tree,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), CompareAndSwapError>> {
        self.cas_in(own_tree(&self.db.pool, tree)?, key, expected, new)
    }

    /// [`Transaction::compare_and_swap`] on the engine's tree (also the auto-commit's).
    pub(crate) fn cas_in(
        &mut self,
        tree: &EngineTree,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), CompareAndSwapError>> {
        let log = &self.log;
        self.write_gated(
            tree,
            key,
            new,
            |gate| tree.compare_and_swap_gated(key, expected, new, log, gate),
            |log| Ok(tree.compare_and_swap_logged(key, expected, new, log)?),
        )
    }

    /// A write (`value` `None`: a delete) of `key`, as [`Transaction::write_gated`] makes it.
    pub(crate) fn write(
        &mut self,
        tree: &EngineTree,
        key: &[u8],
        value: Option<&[u8]>,
        replace: bool,
    ) -> Result<bool> {
        let log = &self.log;
        self.write_gated(
            tree,
            key,
            value,
            |gate| match value {
                Some(v) => tree.put_gated(key, v, replace, log, gate),
                None => tree.delete_gated(key, log, gate),
            },
            |log| {
                Ok(match value {
                    Some(v) => tree.put_logged(key, v, replace, log)?,
                    None => tree.delete_logged(key, log)?,
                })
            },
        )
    }

    /// A write under the key's exclusive lock that may add `key` to a gap (`value` `Some`) or
    /// remove it (`None`), which then also locks the gap's closing key (K15): an insert until it
    /// is made, a delete to the end of the transaction.
    ///
    /// The closing key is locked in the same visit of the leaf that makes the change (`visit`,
    /// through btree T28's gate, [`isolation::GapLocks`]) where it lies in that leaf; an insert
    /// at the end of its leaf locks the key that begins the next one, where that is the closing
    /// key, in one more descent ([`isolation::insert_past_leaf`]); otherwise the change is made
    /// by `apply`, as [`Transaction::write_locked`] locks the gap.
    fn write_gated<R>(
        &self,
        tree: &EngineTree,
        key: &[u8],
        value: Option<&[u8]>,
        visit: impl Fn(&dyn GapGate) -> std::result::Result<Gated<R>, TreeError>,
        apply: impl FnOnce(&TxnLog<'_>) -> Result<R>,
    ) -> Result<R> {
        let Some(locks) = self.db.locks.as_deref() else { return self.write_with(tree, key, value, apply) };
        self.lock_to_write(tree, key)?;
        let gate = isolation::GapLocks::new(locks, self.id(), tree, value.is_some());
        let gated = visit(&gate);
        // K15: an insert holds the closing key for its own length, a delete to the end.
        if value.is_some() {
            gate.release_taken();
        }
        match gated.map_err(isolation::engine_error)? {
            Gated::Done(r) => Ok(r),
            Gated::Beyond => {
                if let (Some(_), Some(high)) = (value, gate.beyond_at()) {
                    if let Some(r) = isolation::insert_past_leaf(locks, self.id(), tree, &high, &visit)? {
                        return Ok(r);
                    }
                }
                self.write_locked(locks, tree, key, value, apply)
            }
        }
    }

    /// A write with the change made by `apply` (which writes `value`, or deletes if `None`, or
    /// nothing): the key locked exclusively, and the gap as [`Transaction::write_locked`] locks it.
    fn write_with<R>(
        &self,
        tree: &EngineTree,
        key: &[u8],
        value: Option<&[u8]>,
        apply: impl FnOnce(&TxnLog<'_>) -> Result<R>,
    ) -> Result<R> {
        self.lock_to_write(tree, key)?;
        let Some(locks) = self.db.locks.as_deref() else { return apply(&self.log) };
        self.write_locked(locks, tree, key, value, apply)
    }

    /// [`Transaction::write_with`] once `key` is locked exclusively.
    fn write_locked<R>(
        &self,
        locks: &crate::lock::LockManager,
        tree: &EngineTree,
        key: &[u8],
        value: Option<&[u8]>,
        apply: impl FnOnce(&TxnLog<'_>) -> Result<R>,
    ) -> Result<R> {
        let txn = self.id();
        // With the key locked exclusively, whether it exists cannot change under us. The first
        // key from `key` is `key` itself or, if absent, the closing key of its gap.
        let first = tree.first_key_from(key)?;
        let exists = first.as_deref() == Some(key);
        match (value, exists) {
            (Some(_), false) => {
                let (next, had) = isolation::lock_gap(locks, txn, tree, key, Some(first))?;
                let result = apply(&self.log);
                if !had {
                    let (t, k) = lock_name(tree, next.as_deref());
                    locks.release(txn, t, k);
                }
                result
            }
            (None, true) => {
                isolation::lock_gap(locks, txn, tree, key, None)?;
                apply(&self.log)
            }
            _ => apply(&self.log),
        }
    }

    /// Commits: logs the commit record and, in [`CommitMode::Sync`], returns once it is durable.
    /// A transaction that changed nothing logs nothing.
    ///
    /// # Errors
    /// The log failed: the commit is not acknowledged, and restart decides (a commit record that
    /// reached the disk commits; otherwise the transaction is rolled back).
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        let result = self.log_commit();
        self.log.finish_versions();
        // The transaction ends here even if its commit failed: commit fails only on a log
        // failure, which is sticky (wal README W11), so nothing can commit after reading what it
        // leaves in place, and restart decides its fate. Keeping its locks would block the
        // others forever.
        self.finish();
        result
    }

    fn log_commit(&self) -> Result<()> {
        let Some(wal) = self.log.wal else {
            // K18 without a log: the transaction commits here, before its locks are released.
            self.log.commit_versions();
            return Ok(());
        };
        let sync = wal.commit_mode == CommitMode::Sync;
        if self.log.shared.last() != Lsn(0) {
            let txn = self.id();
            let lsn = match self.log.committed_by() {
                // R2: its last leaf record committed it (an auto-commit write): no `Commit`.
                Some(lsn) => {
                    self.log.commit_versions();
                    lsn
                }
                None => self.log.append_then(
                    |prev| Record::Commit { txn, prev },
                    |_| {
                        self.log.shared.set_state(TxnState::Committed);
                        self.log.commit_versions();
                    },
                )?,
            };
            if sync {
                // R2: early lock release. The commit record is in the log, so whoever takes a
                // lock after this and commits logs its own commit after it (and its flush covers
                // this one), or commits nothing and waits in `await_released`. So the wait for
                // the flush holds no lock another transaction needs.
                wal.released_early(lsn);
                // K19: the versions a snapshot may need go to the chains while the heads still
                // name this writer.
                self.log.finish_versions();
                self.db.release_locks(txn);
                wal.log.flush(lsn)?;
            }
            // No `End` record: the commit record ends the transaction for restart (R2, R8).
        } else if sync {
            // R2: a transaction that logged nothing may have read a change whose commit released
            // its locks before it was durable: acknowledge only once that commit is.
            wal.await_released()?;
        }
        Ok(())
    }

    /// Rolls back every change, newest first, logging a compensation record for each (R5).
    ///
    /// # Errors
    /// The log or the pool failed midway; restart finishes the rollback.
    pub fn abort(mut self) -> Result<()> {
        self.done = true;
        self.rollback()
    }

    fn rollback(&mut self) -> Result<()> {
        if self.log.committed_by().is_some() {
            // R2: its leaf record committed it, and nothing can fail after that record
            // (btree T11), so no operation returns an error that leads here. Had one, the
            // transaction stays committed: it ends as a commit does.
            debug_assert!(false, "R2: a transaction its leaf record committed is not rolled back");
            self.log.commit_versions();
            self.log.finish_versions();
            self.finish();
            return Ok(());
        }
        let result = self.undo_all();
        if let Err(e) = &result {
            // R5a: the log or the pool failed midway, and the changes not undone stay in the
            // tree until restart rolls them back. The transaction keeps its locks, its writer
            // (a snapshot reads the keys' versions from its undo list, K17) and its entry in
            // the transaction table, so no reader sees those changes; and since no one may
            // wait for those locks, every lock wait of the database ends (LOCKS.md K9a).
            self.db.note_failed_rollback(e);
        } else {
            self.log.finish_versions();
            self.finish();
        }
        result
    }

    fn undo_all(&mut self) -> Result<()> {
        let txn = self.id();
        let logged = self.log.wal.is_some() && self.log.shared.last() != Lsn(0);
        if logged {
            self.log.append_then(
                |prev| Record::Abort { txn, prev },
                |_| self.log.shared.set_state(TxnState::Aborting),
            )?;
        }
        // The list stays the writer's until it ends: a snapshot that must not see it reads the
        // keys not yet undone from it (K17).
        let mut i = self.log.undo_len();
        while i > 0 {
            i -= 1;
            let entry = self.log.undo_entry(i);
            let tree = self.db.tree_by_root(entry.tree)?;
            if entry.old.is_none() && i > 0 {
                let before = self.log.undo_entry(i - 1);
                if before.old.is_some() && before.tree == entry.tree && before.key == entry.key {
                    compensate_pair(&tree, &self.log, &entry.as_undo(), &before.as_undo())?;
                    i -= 1;
                    continue;
                }
            }
            compensate(&tree, &self.log, &entry.as_undo())?;
        }
        if logged {
            self.log.append(|prev| Record::End { txn, prev })?;
        }
        Ok(())
    }
}

/// Undoes one change through the tree, logging a compensation record whose undo-next link is
/// the undone record's previous one (R5). The inverse is applied logically, by key: the record
/// may have moved to another page since (splits and merges are never undone, T13).
pub(crate) fn compensate(tree: &EngineTree, log: &TxnLog<'_>, entry: &Undo<'_>) -> Result<()> {
    log.compensating.set(Some(entry.prev));
    let result = match entry.old {
        None => tree.delete_logged(entry.key, log).map(|_| ()),
        Some(old) => tree.put_logged(entry.key, old, true, log).map(|_| ()),
    };
    log.compensating.set(None);
    match result {
        Ok(()) | Err(TreeError::DuplicateKey) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// R5 for the insert of a key (`insert`) whose delete (`delete`) is the change just before it:
/// both are undone by one replace of the inserted value with the deleted one, under one leaf
/// latch, so that the key never leaves its leaf while it is undone. (A replaced value where
/// either value is large is logged as that pair, btree T22, and so is a delete then an insert
/// of one key.) Undone one at a time, the key was absent between the two: a range read under
/// next-key locks passed its gap there without asking for the key, which the rollback then put
/// back — a record missing from a serializable scan (LOCKS.md K16). The replace's first record
/// links to the insert's previous one (the delete), its second to the delete's, so that a
/// crash between the two still undoes the delete; a replace of one record links past the
/// insert only, and restart's undo of the delete then rewrites the same value.
pub(crate) fn compensate_pair(
    tree: &EngineTree,
    log: &TxnLog<'_>,
    insert: &Undo<'_>,
    delete: &Undo<'_>,
) -> Result<()> {
    debug_assert!(
        insert.old.is_none() && insert.key == delete.key,
        "R5: a pair is an insert after a delete of its key"
    );
    let Some(old) = delete.old else { return compensate(tree, log, insert) };
    log.compensating.set(Some(insert.prev));
    log.compensating_then.set(Some(delete.prev));
    let result = tree.put_logged(delete.key, old, true, log);
    log.compensating.set(None);
    log.compensating_then.set(None);
    result.map(|_| ()).map_err(Into::into)
}

impl Drop for Transaction<'_> {
    /// An unfinished transaction is rolled back; errors are ignored (restart finishes the job).
    fn drop(&mut self) {
        if !self.done {
            self.done = true;
            let _ = self.rollback();
        }
        // Counted at `begin` (R23).
        self.db.leave_txn();
    }
}

impl std::fmt::Debug for Transaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction").field("id", &self.id()).finish_non_exhaustive()
    }
}

/// A transaction's range read; see [`Transaction::range`].
pub struct TxnRange<'t> {
    inner: RangeIter<'t>,
}

impl TxnRange<'_> {
    /// The next record given to `f` as borrowed key and value (no copies); as
    /// [`Iterator::next`] otherwise.
    pub fn next_with<R>(&mut self, f: impl FnOnce(&[u8], &[u8]) -> R) -> Option<Result<R>> {
        self.inner.next_with(f).map(|r| r.map_err(isolation::engine_error))
    }

    /// Returns at most `n` more records; with locking off, the scan then reads no more of a
    /// leaf than it returns (`take(n)` would end the scan too, but only after the leaf's other
    /// records were copied).
    #[must_use]
    pub fn limit(self, n: usize) -> Self {
        TxnRange { inner: self.inner.limit(n) }
    }
}

impl Iterator for TxnRange<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|r| r.map_err(isolation::engine_error))
    }
}

/// From the range's end; the two ends stop where they meet ([`RangeIter`]). Keys read from
/// either end are locked as a descending range read locks them.
impl DoubleEndedIterator for TxnRange<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|r| r.map_err(isolation::engine_error))
    }
}

impl std::iter::FusedIterator for TxnRange<'_> {}

/// A transaction's range read in descending order; see [`Transaction::range_rev`].
pub struct TxnRevRange<'t> {
    inner: RevRangeIter<'t>,
}

impl TxnRevRange<'_> {
    /// The next record given to `f` as borrowed key and value (no copies); as
    /// [`Iterator::next`] otherwise.
    pub fn next_with<R>(&mut self, f: impl FnOnce(&[u8], &[u8]) -> R) -> Option<Result<R>> {
        self.inner.next_with(f).map(|r| r.map_err(isolation::engine_error))
    }

    /// [`TxnRange::limit`] for the descending scan.
    #[must_use]
    pub fn limit(self, n: usize) -> Self {
        TxnRevRange { inner: self.inner.limit(n) }
    }
}

impl Iterator for TxnRevRange<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|r| r.map_err(isolation::engine_error))
    }
}

/// From the range's start (the smallest key left); the two ends stop where they meet.
impl DoubleEndedIterator for TxnRevRange<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|r| r.map_err(isolation::engine_error))
    }
}

impl std::iter::FusedIterator for TxnRevRange<'_> {}

impl std::fmt::Debug for TxnRange<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxnRange").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for TxnRevRange<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxnRevRange").finish_non_exhaustive()
    }
}

/// A read-only transaction: it never waits for a writer, nor makes a writer wait. From
/// [`Database::begin_read`](crate::Database::begin_read), every read sees the database as
/// committed when the transaction began — a snapshot (LOCKS.md K18). From
/// [`Database::begin_read_committed`](crate::Database::begin_read_committed), each read sees
/// what was committed when that read began: a point read the newest committed value, a range
/// read the database as committed when the range read began (K25).
///
/// On a database that keeps no versions (locking off) there is nothing to isolate from: its
/// reads return what the tree holds when they run, as that database's plain reads do. On an
/// unlogged database, writes outside transactions record no versions: every snapshot sees them
/// at once (LOCKS.md K21).
pub struct ReadTransaction<'db> {
    /// The database's pool: the trees it reads must be its own.
    pool: &'db Arc<swizzledb_buffer::BufferPool>,
    /// The database's snapshot reads (`None`: it keeps no versions).
    reads: Option<&'db SnapshotReads>,
    /// The snapshot every read uses; `None` at read committed, where each read takes its own
    /// only if it needs one (K25).
    snap: Option<Snapshot<'db>>,
}

impl<'db> ReadTransaction<'db> {
    /// A transaction at a snapshot taken now (`begin_read`).
    pub(crate) fn new(
        pool: &'db Arc<swizzledb_buffer::BufferPool>,
        reads: Option<&'db SnapshotReads>,
    ) -> ReadTransaction<'db> {
        ReadTransaction { pool, reads, snap: reads.map(|r| r.versions.snapshot()) }
    }

    /// A transaction at read committed (`begin_read_committed`): no snapshot of its own.
    pub(crate) fn read_committed(
        pool: &'db Arc<swizzledb_buffer::BufferPool>,
        reads: Option<&'db SnapshotReads>,
    ) -> ReadTransaction<'db> {
        ReadTransaction { pool, reads, snap: None }
    }

    /// The value of `key` in `tree`: as committed when the transaction began (`begin_read`), or
    /// the newest committed one (`begin_read_committed`).
    ///
    /// # Errors
    /// [`Error::SnapshotTooOld`](crate::Error::SnapshotTooOld) if the transaction's snapshot was
    /// ended for memory (K20; a read-committed transaction never gets it); I/O errors or
    /// corruption; a closed database or dropped tree; [`Error::ForeignTree`] for a tree handle
    /// of another database.
    pub fn get(&self, tree: &Tree, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(tree, key, |v| v.map(<[u8]>::to_vec))
    }

    /// Calls `f` with the value of `key` in `tree` that [`ReadTransaction::get`] returns. `f`
    /// must not call into the database.
    ///
    /// # Errors
    /// As [`ReadTransaction::get`].
    pub fn get_with<R>(&self, tree: &Tree, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R> {
        let tree = own_tree(self.pool, tree)?;
        match (self.reads, &self.snap) {
            // K21: the transaction's reads share a snapshot, which instant restart's rollback of
            // losers is waited for first.
            (Some(reads), Some(snap)) if reads.ready_after_rollback() => reads.get_with(snap, tree, key, f),
            // K25: the newest committed value, at a snapshot of its own only where needed.
            (Some(reads), None) if reads.ready() => Ok(reads.get_committed_with(tree, key, f)?),
            // K21: a single key while losers are rolled back (or a failed rollback's keys):
            // their keys are waited for.
            (Some(_), _) | (None, _) => Ok(tree.get_with(key, f)?),
        }
    }

    /// The snapshot a range read reads at: the transaction's, or at read committed one taken
    /// now for the range read alone (K25); `None` when the tree is read as it is.
    fn range_snapshot(&self) -> Option<(&'db SnapshotReads, SnapshotRef<'_>)> {
        let reads = self.reads.filter(|r| r.ready_after_rollback())?;
        Some(match &self.snap {
            Some(snap) => (reads, SnapshotRef::Borrowed(snap)),
            None => (reads, SnapshotRef::Owned(reads.versions.snapshot())),
        })
    }
}

impl ReadTransaction<'_> {
    /// The records of `tree` with keys between `start` and `end`, in key order, as committed
    /// when the transaction began (`begin_read`) or when this range read began
    /// (`begin_read_committed`); double-ended as [`Tree::range`](crate::Tree::range). An item
    /// is [`TreeError::Transaction`](crate::TreeError::Transaction) holding
    /// [`Error::SnapshotTooOld`](crate::Error::SnapshotTooOld) if the snapshot was ended for
    /// memory (K20), and the one item of a scan of another database's tree handle holds
    /// [`Error::ForeignTree`](crate::Error::ForeignTree).
    pub fn range<'t>(
        &'t self,
        tree: &'t Tree,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> swizzledb_btree::RangeIter<'t> {
        if let Some(e) = refusal(self.pool, tree) {
            return tree.inner.range(start, end).refused(e);
        }
        match self.range_snapshot() {
            Some((reads, snap)) => reads.range(snap, &tree.inner, start, end),
            None => tree.inner.range(start, end),
        }
    }

    /// [`ReadTransaction::range`] in descending key order.
    pub fn range_rev<'t>(
        &'t self,
        tree: &'t Tree,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> swizzledb_btree::RevRangeIter<'t> {
        if let Some(e) = refusal(self.pool, tree) {
            return tree.inner.range_rev(start, end).refused(e);
        }
        match self.range_snapshot() {
            Some((reads, snap)) => reads.range_rev(snap, &tree.inner, start, end),
            None => tree.inner.range_rev(start, end),
        }
    }

    /// The records of `tree` whose keys start with `prefix`, as [`ReadTransaction::range`]
    /// reads them.
    pub fn scan_prefix<'t>(&'t self, tree: &'t Tree, prefix: &[u8]) -> swizzledb_btree::RangeIter<'t> {
        let end = swizzledb_btree::prefix_end(prefix);
        self.range(tree, Bound::Included(prefix), end.as_deref().map_or(Bound::Unbounded, Bound::Excluded))
    }
}

impl std::fmt::Debug for ReadTransaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadTransaction").field("snapshot", &self.snap.as_ref().map(|s| s.at)).finish()
    }
}
