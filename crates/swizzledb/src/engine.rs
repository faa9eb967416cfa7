//! The engine core: what a database's transactions and tree handles share (`Core`), and the
//! auto-commit of its tree handles.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use swizzledb_btree::{AutoCommit, CompareAndSwapError, Tree, TreeError};
use swizzledb_sync::{Lsn, PageId, TxnId};

use crate::cleaner::{self, Cleaner};
use crate::error::{Error, Result};
use crate::isolation;
use crate::lock;
use crate::logging::{self, SystemLog, TxnLog, Undo, Wal};
use crate::record::{self, Record, TxnState};
use crate::restart::RestartStats;
use crate::txn::{self, Transaction};

/// What a database's transactions and tree handles share; tree handles reach it through a weak
/// reference (their auto-commit), so a dropped `Database` leaves them nothing to write to.
pub(crate) struct Core {
    /// This core, for the auto-commit of its tree handles; emptied at close, so that the pool
    /// can be had exclusively when no handle outlives the database.
    pub(crate) me: Mutex<Weak<Core>>,
    pub(crate) pool: Arc<swizzledb_buffer::BufferPool>,
    /// The file system the database lives on (the double-write area is removed through it at
    /// a clean close, R25; a backup's copy is written on it, R26). A read-only open's pool
    /// reads it through a view that cannot change it (R27), and nothing of that open writes
    /// through this.
    pub(crate) vfs: Arc<dyn swizzledb_io::Vfs>,
    /// Made by [`crate::Builder::create_in_memory`]: `vfs` is the database's own memory.
    pub(crate) in_memory: bool,
    pub(crate) trees: Mutex<HashMap<String, Tree>>,
    pub(crate) wal: Option<Arc<Wal>>,
    pub(crate) locks: Option<Arc<lock::LockManager>>,
    /// The before-images snapshot reads need (LOCKS.md K17): on a logged database with locks.
    pub(crate) versions: Option<Arc<crate::versions::Versions>>,
    pub(crate) cleaner: Option<Arc<cleaner::Shared>>,
    /// The order of the next transaction to begin ([`Core::new_txn_id`]).
    pub(crate) next_txn: AtomicU64,
    pub(crate) restart_stats: Mutex<RestartStats>,
    /// Transactions begun and not yet dropped (R23: a tree is dropped only when none runs),
    /// counted per thread in stripes on lines of their own, whose wrapping sum is the count (a
    /// transaction dropped by another thread than the one that began it lowers another stripe).
    pub(crate) running: Box<[RunningStripe]>,
    /// Set while `drop_tree` waits for the running transactions to end or drops a tree: new
    /// transactions wait at `begin` meanwhile (R23).
    pub(crate) quiesce: std::sync::atomic::AtomicBool,
    /// Serializes `drop_tree` calls, and `create_tree` with them: a tree made while a drop
    /// runs could take the dropped tree's root page before the drop has dropped the versions
    /// kept under it (LOCKS.md K19).
    pub(crate) dropping: Mutex<()>,
    /// R5a: a rollback failed, and its changes stay in the tree; an unlogged database's close
    /// then leaves its file unclean instead of writing them as if committed.
    pub(crate) rollback_failed: std::sync::atomic::AtomicBool,
}

/// The longest value whose leaf change fits one log record of at most `max_body` bytes
/// (btree README T22): besides the value, a record holds the key, the leaf's base image, the
/// chain's page ids (at most 10 bytes per page of at least 4 KiB) and a few varints.
pub(crate) fn loggable_value_len(max_body: usize, page_size: usize) -> usize {
    let room = max_body.saturating_sub(swizzledb_btree::max_key_len(page_size) + page_size + 256);
    room - room / 256
}

/// The log buffer of every database: large enough that a record holding a value of
/// [`swizzledb_btree::MAX_VALUE_LEN`] bytes fits (a log record is at most a quarter of the
/// buffer, wal README W2).
pub(crate) const LOG_BUFFER_BYTES: usize = 17 << 20;

/// How long an auto-commit write retries a refused record lock before it gives up (T14).
pub(crate) const AUTO_COMMIT_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// The auto-commit of a logged database's tree handles (btree T14, R12).
struct AutoCommitter(Weak<Core>);

impl AutoCommit for AutoCommitter {
    fn put(&self, tree: &Tree, key: &[u8], value: &[u8], replace: bool) -> Result<bool, TreeError> {
        let core = self.0.upgrade().ok_or(TreeError::Closed)?;
        core.auto_commit(|tx| tx.write(tree, key, Some(value), replace))
    }

    fn delete(&self, tree: &Tree, key: &[u8]) -> Result<bool, TreeError> {
        let core = self.0.upgrade().ok_or(TreeError::Closed)?;
        core.auto_commit(|tx| tx.write(tree, key, None, true))
    }

    fn compare_and_swap(
        &self,
        tree: &Tree,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<Result<(), CompareAndSwapError>, TreeError> {
        let core = self.0.upgrade().ok_or(TreeError::Closed)?;
        core.auto_commit(|tx| tx.cas_in(tree, key, expected, new))
    }
}

/// An engine error as the tree's error type, for the tree's own writes (T14).
pub(crate) fn into_tree_error(e: Error) -> TreeError {
    match e {
        Error::Tree(t) => t,
        Error::Buffer(b) => TreeError::Buffer(b),
        Error::Log(l) => TreeError::Log(Box::new(l)),
        other => TreeError::Transaction(Box::new(other)),
    }
}

/// One stripe of [`Core::running`], on cache lines of its own.
#[derive(Default)]
#[repr(align(128))]
pub(crate) struct RunningStripe(std::sync::atomic::AtomicUsize);

/// Stripes of [`Core::running`].
pub(crate) const RUNNING_STRIPES: usize = 16;

/// The running-count stripe of this thread.
fn running_stripe() -> usize {
    lock::thread_tag() as usize % RUNNING_STRIPES
}

impl Core {
    /// Begins a transaction; first waits while the log is over its bound (R15).
    pub(crate) fn begin(&self) -> Transaction<'_> {
        self.begin_as(self.new_txn_id())
    }

    /// A fresh transaction number: its order of beginning (`next_txn`) in the high bits, and
    /// the beginning thread's lane (`lock::txn_number`) in the low ones. Numbers are unique and
    /// ordered as the transactions began (LOCKS.md K6, K23: age), and the tables of
    /// transactions shard by the lane, so that a thread's transactions use one shard, whose
    /// lines stay in its core's cache.
    pub(crate) fn new_txn_id(&self) -> TxnId {
        lock::txn_number(self.next_txn.fetch_add(1, Ordering::Relaxed))
    }

    /// Sets the next transaction number to at least `next` (restart: above every number in
    /// the log).
    pub(crate) fn set_next_txn(&self, next: u64) {
        self.next_txn.store(lock::txn_order(next) + 1, Ordering::Relaxed);
    }

    /// Begins a transaction under a given number: a retry keeps its first attempt's, and with
    /// it its age: the victim of a deadlock (K23) or of wait-die (K6) is the younger, so it
    /// cannot starve.
    pub(crate) fn begin_as(&self, id: TxnId) -> Transaction<'_> {
        if let (Some(wal), Some(cleaner)) = (&self.wal, &self.cleaner) {
            cleaner.throttle(wal);
        }
        self.enter_txn();
        let shared = match &self.wal {
            Some(wal) => wal.register(id),
            None => logging::TxnShared::arc(id),
        };
        Transaction::new(self, self.wal.as_deref(), shared)
    }

    /// Runs `op` in a transaction and commits it. A refused record lock ([`Error::Lock`]) rolls
    /// the attempt back and runs `op` again under the same transaction number (so the retry
    /// only gets older, K6), backing off, until `give_up` says so for the time spent since the
    /// first refusal — or, for a deadlock through a transaction open in the calling thread
    /// (which it cannot end while it retries), once `AUTO_COMMIT_RETRY` passed.
    pub(crate) fn run_retrying<R>(
        &self,
        op: impl FnMut(&mut Transaction<'_>) -> Result<R>,
        give_up: impl Fn(std::time::Duration) -> bool,
    ) -> Result<R> {
        self.run_retrying_at(op, give_up, None)
    }

    /// [`Core::run_retrying`]; with `snapshot`, each attempt is a snapshot-isolation
    /// transaction at a fresh snapshot (K24), retried also after a write conflict and, up to
    /// [`SNAPSHOT_TOO_OLD_RETRIES`] times, after its snapshot was ended for memory (K20: the
    /// next attempt's snapshot is a new one).
    pub(crate) fn run_retrying_at<'a, R>(
        &'a self,
        mut op: impl FnMut(&mut Transaction<'_>) -> Result<R>,
        give_up: impl Fn(std::time::Duration) -> bool,
        snapshot: Option<&'a crate::snapshot::SnapshotReads>,
    ) -> Result<R> {
        // Read at the first refusal, not before the first attempt: most transactions never
        // retry, and a read of the clock costs tens of nanoseconds (about 90 in a virtual
        // machine), a tenth of a one-insert auto-commit write's own cost there.
        let mut refused_at: Option<std::time::Instant> = None;
        let mut pause = std::time::Duration::from_micros(20);
        let id = self.new_txn_id();
        let mut too_old = 0;
        loop {
            let mut tx = self.begin_as(id);
            tx.read_at_snapshot(snapshot);
            match op(&mut tx) {
                Ok(r) => return tx.commit().map(|()| r),
                Err(e)
                    if retried(&e, snapshot.is_some(), too_old < SNAPSHOT_TOO_OLD_RETRIES) && {
                        let spent = refused_at.get_or_insert_with(std::time::Instant::now).elapsed();
                        // A deadlock through this thread's own open transaction recurs until
                        // that transaction ends, which this thread cannot do meanwhile.
                        let hopeless = spent >= AUTO_COMMIT_RETRY && self.waits_for_own_thread(&e);
                        !(give_up(spent) || hopeless)
                    } =>
                {
                    too_old += u32::from(matches!(e, Error::SnapshotTooOld { .. }));
                    // A rollback that failed keeps the attempt's locks and its entry in the
                    // transaction table: no retry under its number then.
                    tx.abort()?;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(10));
                }
                Err(e) => {
                    drop(tx);
                    return Err(e);
                }
            }
        }
    }

    /// K23: `e` is a deadlock whose cycle runs through a transaction open in the calling thread
    /// (LOCKS.md, Failure behaviour): retried, it meets the same cycle until that transaction
    /// ends, which this thread cannot do while it retries.
    fn waits_for_own_thread(&self, e: &Error) -> bool {
        match (e, &self.locks) {
            (Error::Lock(lock::LockError::Deadlock { others, .. }), Some(locks)) => {
                locks.open_in_this_thread(others)
            }
            _ => false,
        }
    }

    /// Runs `op` — one tree operation — as a transaction of its own and commits it (R12),
    /// retrying a refused record lock for up to `AUTO_COMMIT_RETRY` after the first refusal.
    /// The operation's last leaf record commits the transaction (R2), so a write that changed
    /// something logs no `Commit`.
    pub(crate) fn auto_commit<R>(
        &self,
        mut op: impl FnMut(&mut Transaction<'_>) -> Result<R>,
    ) -> Result<R, TreeError> {
        let one_operation = |tx: &mut Transaction<'_>| {
            tx.commit_with_last_change();
            op(tx)
        };
        self.run_retrying(one_operation, |spent| spent >= AUTO_COMMIT_RETRY).map_err(into_tree_error)
    }

    /// A tree handle for this database: on a logged one, its own writes auto-commit (T14) and
    /// its reads return only committed records (K14).
    pub(crate) fn handle(&self, tree: Tree) -> Tree {
        let Some(wal) = &self.wal else { return tree };
        let tree = tree
            .with_auto_commit(Arc::new(AutoCommitter(self.me.lock().clone())))
            .with_value_limit(loggable_value_len(wal.log.max_body(), self.pool.page_size()));
        match &self.locks {
            Some(locks) => tree.with_read_gate(Arc::new(isolation::CommittedReads {
                locks: Arc::clone(locks),
                wal: Arc::clone(wal),
            })),
            None => tree,
        }
    }

    /// Instant restart's redo and background rollback (R22), if this database opened so.
    pub(crate) fn restart_redo(&self) -> Option<Arc<crate::instant::PendingRedo>> {
        self.wal.as_ref().and_then(|w| w.pending.clone())
    }

    /// What a tree handle's plain reads need to read at snapshots (K18, K21): on a logged
    /// database that keeps versions. An unlogged database's handles read the tree as it is,
    /// as its handles' writes are no transactions (they record no versions).
    pub(crate) fn plain_snapshot_reads(&self) -> Option<crate::snapshot::SnapshotReads> {
        self.wal.as_ref().and(self.snapshot_reads())
    }

    /// The versions an unlogged database's raw writes make stale (K21): its tree handles'
    /// writes are no transactions, and drop the chains of the keys they change.
    pub(crate) fn raw_write_versions(&self) -> Option<Arc<crate::versions::Versions>> {
        self.wal.is_none().then(|| self.versions.clone()).flatten()
    }

    /// What read-only and snapshot-isolation transactions need for snapshot reads (K17), if
    /// this database keeps versions.
    pub(crate) fn snapshot_reads(&self) -> Option<crate::snapshot::SnapshotReads> {
        self.versions.as_ref().map(|versions| crate::snapshot::SnapshotReads {
            versions: Arc::clone(versions),
            wal: self.wal.clone(),
        })
    }

    /// A transaction no longer runs (its `Drop`, R23).
    pub(crate) fn leave_txn(&self) {
        self.running[running_stripe()].0.fetch_sub(1, Ordering::SeqCst);
    }

    /// How many transactions run: the stripes' wrapping sum, read after the quiesce flag was
    /// set. Each stripe's increment is sequentially consistent with the flag, so a stripe read
    /// after the flag holds every transaction counted there that did not see the flag; ones
    /// that saw it take their count back, so a sum read high is read again, never low.
    fn running_count(&self) -> usize {
        self.running.iter().fold(0_usize, |sum, s| sum.wrapping_add(s.0.load(Ordering::SeqCst)))
    }

    /// Counts a transaction as running; waits first while a tree is being dropped (R23). The
    /// count and the flag are both sequentially consistent: either `drop_tree` sees this
    /// transaction running, or this transaction sees the drop and waits for it.
    pub(crate) fn enter_txn(&self) {
        let stripe = &self.running[running_stripe()].0;
        loop {
            stripe.fetch_add(1, Ordering::SeqCst);
            if !self.quiesce.load(Ordering::SeqCst) {
                return;
            }
            stripe.fetch_sub(1, Ordering::SeqCst);
            while self.quiesce.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        }
    }

    /// Drops the tree `name` (R23); `Ok(false)` if there is none.
    pub(crate) fn drop_tree(&self, name: &str) -> Result<bool> {
        // One drop at a time: each owns the quiesce flag while it runs.
        let _one = self.dropping.lock();
        if self.pool.is_closed() {
            return Err(TreeError::Closed.into());
        }
        if self.pool.catalog_get(name).is_none() {
            return Ok(false);
        }
        // R22: losers instant restart rolls back in the background may have changes in it.
        if let Some(p) = self.wal.as_ref().and_then(|w| w.pending.as_ref()).map(|p| p.progress()) {
            if p.losers > 0 {
                return Err(Error::TreeBusy(name.to_owned()));
            }
        }
        // No transaction may hold uncommitted changes of the tree: wait until none runs, new
        // ones waiting at `begin` meanwhile. No other lock is held while waiting (a rollback
        // running now may need the tree cache).
        self.quiesce.store(true, Ordering::SeqCst);
        let started = std::time::Instant::now();
        while self.running_count() > 0 {
            if started.elapsed() >= AUTO_COMMIT_RETRY {
                self.quiesce.store(false, Ordering::SeqCst);
                return Err(Error::TreeBusy(name.to_owned()));
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        let result = self.drop_quiesced(name);
        self.quiesce.store(false, Ordering::SeqCst);
        result
    }

    /// `drop_tree` once no transaction runs: the catalog entry goes first, logged, so that a
    /// crash from here on finds the tree gone (R23); then the pages are freed, each group
    /// logged before it is freed. A failure after the first record leaves the pages not yet
    /// freed allocated and unreachable, never a catalog entry naming freed pages.
    pub(crate) fn drop_quiesced(&self, name: &str) -> Result<bool> {
        let mut trees = self.trees.lock();
        let Some(root) = self.pool.catalog_get(name) else { return Ok(false) };
        let tree = match trees.get(name) {
            Some(t) => t.clone(),
            None => Tree::open(&self.pool, root)?,
        };
        let log = self.wal.as_deref().map(SystemLog);
        // Buffer B37: a checkpoint begun after the record reads the catalog and the free pages
        // only once the drop has made its changes (R7).
        let announced = self.pool.announce_change();
        if let Some(wal) = &self.wal {
            wal.append(&Record::DropTree { name: name.to_owned(), root })?;
        }
        // From here on the tree is gone, whatever fails below.
        self.pool.catalog_remove(name);
        trees.remove(name);
        drop(trees);
        tree.destroy(log.as_ref().map(|l| l as &dyn swizzledb_btree::ChangeLog))?;
        drop(announced);
        // K19: a tree that reuses the root page starts without the old one's versions.
        if let Some(versions) = &self.versions {
            versions.forget_tree(root);
        }
        // Durable when it returns, like a commit in either commit mode.
        if let Some(wal) = &self.wal {
            wal.log.flush_all()?;
        }
        Ok(true)
    }

    /// Locks `key` of `tree` for `txn` (no-op with locking off).
    pub(crate) fn lock(&self, txn: TxnId, tree: &Tree, key: &[u8], mode: lock::LockMode) -> Result<()> {
        if let Some(locks) = &self.locks {
            let (t, k) = isolation::lock_name(tree, Some(key));
            locks.lock(txn, t, k, mode)?;
        }
        Ok(())
    }

    /// Locks `key` exclusively for a change by transaction `txn`: on a database that keeps
    /// versions the lock's head names the transaction's `writer`, whose undo list holds the
    /// key's version (LOCKS.md K17).
    pub(crate) fn lock_to_write(
        &self,
        txn: TxnId,
        tree: &Tree,
        key: &[u8],
        writer: Option<&Arc<crate::version::Writer>>,
    ) -> Result<()> {
        if let Some(locks) = &self.locks {
            let (t, k) = isolation::lock_name(tree, Some(key));
            match writer {
                Some(w) => locks.lock_to_write(txn, t, k, w)?,
                None => locks.lock(txn, t, k, lock::LockMode::Exclusive)?,
            }
        }
        Ok(())
    }

    /// Releases a transaction's record locks (K8): at its end, or at its commit record in sync
    /// mode (R2's early lock release). Its versions went to the chains before, where a
    /// snapshot may need them (LOCKS.md K19).
    pub(crate) fn release_locks(&self, txn: TxnId) {
        if let Some(locks) = &self.locks {
            locks.release_all(txn);
        }
    }

    /// A rollback failed (RECOVERY.md R5a): its changes stay in the tree, which `close` of an
    /// unlogged database must not write as committed; its transaction keeps its locks until
    /// the database is reopened, so no lock wait may go on (LOCKS.md K9a).
    pub(crate) fn note_failed_rollback(&self, cause: &Error) {
        self.rollback_failed.store(true, Ordering::Release);
        if let Some(locks) = &self.locks {
            locks.end_waits(&cause.to_string());
        }
    }

    /// A transaction ended: it releases its locks and leaves the transaction table.
    pub(crate) fn finish_txn(&self, txn: TxnId) {
        self.release_locks(txn);
        if let Some(wal) = &self.wal {
            wal.forget(txn);
        }
    }

    /// The tree whose root is `root` (undo names trees by root page).
    pub(crate) fn tree_by_root(&self, root: PageId) -> Result<Tree> {
        let name = self
            .pool
            .allocation()
            .trees
            .into_iter()
            .find(|(_, r)| *r == root)
            .map(|(name, _)| name)
            .ok_or_else(|| Error::TreeNotFound(format!("<root page {root}>")))?;
        self.tree(&name)
    }

    /// Finishes a transaction restart found unfinished (R10): a committed one gets its end
    /// record; any other is rolled back along its undo chain from `undo_next`, with a
    /// compensation record per undone change. Returns the number of compensations. A rollback
    /// that fails keeps the loser's locks (instant restart's, R22), so it ends every lock wait
    /// (R5a, LOCKS.md K9a), as a transaction's failed rollback does.
    pub(crate) fn finish_loser(&self, entry: &record::TxnEntry) -> Result<u64> {
        self.finish_loser_once(entry).inspect_err(|e| self.note_failed_rollback(e))
    }

    fn finish_loser_once(&self, entry: &record::TxnEntry) -> Result<u64> {
        let wal = self.wal.as_deref().expect("restart runs only with logging");
        let shared = wal.register(entry.txn);
        shared.last_lsn.store(entry.last_lsn.0, Ordering::Release);
        // The rest of its undo chain must stay in the log while it is rolled back, also when
        // checkpoints run meanwhile (R22's background undo).
        shared.first_lsn.store(wal.log.oldest().0, Ordering::Release);
        // And a checkpoint before its first compensation must list where the chain goes on, as
        // `hold_loser` registered it: the fresh entry said 0, "nothing left to undo", and a
        // restart from that checkpoint after a crash left every change of the loser in place.
        shared.undo_next.store(entry.undo_next.0, Ordering::Release);
        shared.set_state(entry.state);
        let log = TxnLog::new(Some(wal), shared, None);
        let txn = entry.txn;
        let mut compensations = 0;
        if entry.state != TxnState::Committed {
            if entry.state == TxnState::Active {
                log.append(|prev| Record::Abort { txn, prev })?;
            }
            self.walk_undo_chain(entry, |tree, change, prev| {
                let t = self.tree_by_root(tree)?;
                if let record::Change::Patch { key, edits } = change {
                    // A patch (R3) is undone on the value the loser left: redo brought it back.
                    // Read past the record locks: instant restart's loser holds this key's
                    // (R22), and the handle's own gate would wait for it.
                    let restored = t.get_gated(key, &swizzledb_btree::NoGate, |v| {
                        v.and_then(|now| record::splice(now, edits, record::Direction::Backward))
                    })?;
                    match restored {
                        Some(value) => {
                            txn::compensate(&t, &log, &Undo { tree, old: Some(&value), key, prev })?;
                            compensations += 1;
                        }
                        // Only a change made over the loser's own without record locks (R4)
                        // leaves another value there: that one stays.
                        None => log::warn!(
                            "restart: transaction {} changed a value of tree {tree} that was changed again \
                             without record locks; the newer value stays",
                            txn.0
                        ),
                    }
                } else if let Some(undo) = Undo::of(tree, change, prev) {
                    txn::compensate(&t, &log, &undo)?;
                    compensations += 1;
                }
                Ok(())
            })?;
        }
        log.append(|prev| Record::End { txn, prev })?;
        wal.forget(txn);
        Ok(compensations)
    }

    /// Visits the changes a loser's rollback has left to undo, newest first (R6, R10): its undo
    /// chain from `undo_next`, compensation records skipped by their undo-next links.
    pub(crate) fn walk_undo_chain(
        &self,
        entry: &record::TxnEntry,
        mut each: impl FnMut(PageId, &record::Change, Lsn) -> Result<()>,
    ) -> Result<()> {
        let wal = self.wal.as_deref().expect("restart runs only with logging");
        let txn = entry.txn;
        let mut cursor = entry.undo_next;
        while cursor != Lsn(0) {
            let body = wal
                .log
                .read(cursor)
                .map_err(|e| Error::LogCorrupted { lsn: cursor, reason: e.to_string() })?;
            let rec = Record::decode(&body)
                .map_err(|e| Error::LogCorrupted { lsn: cursor, reason: e.to_string() })?;
            let owner = match &rec {
                Record::Leaf { txn, .. }
                | Record::Begin { txn }
                | Record::Abort { txn, .. }
                | Record::Commit { txn, .. } => Some(*txn),
                _ => None,
            };
            if let Some(owner) = owner.filter(|&owner| owner != txn) {
                return Err(Error::LogCorrupted {
                    lsn: cursor,
                    reason: format!("the undo chain of {txn} reaches a record of {owner}"),
                });
            }
            // The next record to read, and the change this one asks to undo.
            let (next, undo) = match rec {
                Record::Leaf { undo_next: Some(next), .. } => (next, None),
                Record::Leaf { undo_next: None, tree, change, prev, .. } => (prev, Some((tree, change))),
                Record::Begin { .. } => (Lsn(0), None),
                Record::Abort { prev, .. } | Record::Commit { prev, .. } => (prev, None),
                // An unfinished transaction's undo chain reaches none of these (R6): the log
                // is damaged.
                other @ (Record::End { .. }
                | Record::Structure { .. }
                | Record::CreateTree { .. }
                | Record::DropTree { .. }
                | Record::CheckpointBegin
                | Record::CheckpointEnd(_)
                | Record::CheckpointPart(_)
                | Record::PageWrite { .. }) => {
                    return Err(Error::LogCorrupted {
                        lsn: cursor,
                        reason: format!("the undo chain of {txn} reaches a {other:?}"),
                    })
                }
            };
            // R6: a transaction's records link to earlier ones only. A link that does not go
            // back (a record that checks out but was never written so) would be followed
            // forever, undoing its change again and again: checked before the change is undone.
            if next >= cursor {
                return Err(Error::LogCorrupted {
                    lsn: cursor,
                    reason: format!(
                        "the undo chain of {txn} does not go back: the record links to LSN {}, not to an earlier one",
                        next.0
                    ),
                });
            }
            if let Some((tree, change)) = undo {
                each(tree, &change, next).map_err(|e| match e {
                    // The record names a tree the catalog never had: the log is damaged.
                    Error::TreeNotFound(name) => Error::LogCorrupted {
                        lsn: cursor,
                        reason: format!("the change to undo is of a tree that does not exist ({name})"),
                    },
                    other => other,
                })?;
            }
            cursor = next;
        }
        Ok(())
    }

    /// R22: a loser instant restart rolls back in the background: registered as running (so
    /// checkpoints list it and keep its log), and holding an exclusive record lock on every key
    /// its rollback will change, so that no transaction reads or writes those keys before the
    /// rollback restores them. Two losers never changed the same key (each held it
    /// exclusively), so these locks never wait. Returns the keys it deleted, whose gaps
    /// [`Core::hold_loser_gaps`] locks once every loser holds its keys.
    ///
    /// A change whose undo must write or free a value longer than the tree takes now
    /// (`Tree::max_value_len`: a larger pool crashed, btree T22) is refused with
    /// [`TreeError::ValueTooLarge`] before its key is locked, so the open fails as classical
    /// restart's undo fails then, with nothing lost (RECOVERY.md, "Failure behaviour"): the
    /// background rollback would fail on it for sure, and leave the loser's keys unreadable
    /// until the next open.
    pub(crate) fn hold_loser(&self, entry: &record::TxnEntry) -> Result<Vec<(PageId, Vec<u8>)>> {
        let wal = self.wal.as_deref().expect("restart runs only with logging");
        let locks = self.locks.as_ref().expect("background undo needs record locks");
        let shared = wal.register(entry.txn);
        shared.last_lsn.store(entry.last_lsn.0, Ordering::Release);
        shared.first_lsn.store(wal.log.oldest().0, Ordering::Release);
        shared.undo_next.store(entry.undo_next.0, Ordering::Release);
        shared.set_state(entry.state);
        let mut deleted = Vec::new();
        self.walk_undo_chain(entry, |tree, change, _| {
            let t = self.tree_by_root(tree)?;
            // The undo of an insert frees the loser's value, of a delete writes the old one
            // back, of an update both; a patch's values are in the leaf (R3).
            let longest = match change {
                record::Change::Insert { value, .. } => value.len(),
                record::Change::Update { old, new, .. } => old.len().max(new.len()),
                record::Change::Delete { old, .. } => old.len(),
                record::Change::Patch { .. } => 0,
            };
            let max = t.max_value_len();
            if longest > max {
                return Err(TreeError::ValueTooLarge { len: longest, max }.into());
            }
            let (id, key) = isolation::lock_name(&t, Some(change.key()));
            locks.lock(entry.txn, id, key, lock::LockMode::Exclusive)?;
            if matches!(change, record::Change::Delete { .. }) {
                deleted.push((tree, change.key().to_vec()));
            }
            Ok(())
        })?;
        Ok(deleted)
    }

    /// R22, after [`Core::hold_loser`] of every loser: for each key `txn` deleted, the key
    /// closing that gap (K15) is locked too, as the delete itself did: the key is absent until
    /// the rollback puts it back, and a scan over the gap must wait for that instead of passing
    /// over it. The closing key is looked up in the tree as restart finds it, which may name a
    /// key another loser holds — the key after a large value's replace (logged as a delete and
    /// an insert, btree T22, which locked only its key), or a key another loser inserted into
    /// the gap without a gap lock (K15). That one is not waited for: it stays locked by its
    /// holder until every loser is rolled back (the background undo lets all go at its end).
    pub(crate) fn hold_loser_gaps(&self, txn: TxnId, deleted: &[(PageId, Vec<u8>)]) -> Result<()> {
        let locks = self.locks.as_ref().expect("background undo needs record locks");
        for (tree, key) in deleted {
            isolation::try_lock_gap_of_loser(locks, txn, &self.tree_by_root(*tree)?, key)?;
        }
        // K23: the opening thread took these locks for a transaction it does not run; its own
        // transactions waiting for them wait for the background undo, not for themselves.
        locks.disown(txn);
        Ok(())
    }

    pub(crate) fn create_tree(&self, name: &str) -> Result<Tree> {
        swizzledb_buffer::validate_tree_name(name)
            .map_err(|reason| Error::InvalidTreeName { name: crate::error::shown_name(name), reason })?;
        // K19: not while a drop runs, whose versions are dropped by root page after its pages
        // are freed.
        let _no_drop = self.dropping.lock();
        if self.pool.is_closed() {
            return Err(TreeError::Closed.into());
        }
        let mut trees = self.trees.lock();
        if trees.contains_key(name) || self.pool.catalog_get(name).is_some() {
            return Err(Error::TreeExists(name.to_owned()));
        }
        // Checked before anything is logged: a refused tree must leave no record behind.
        self.pool.catalog_fits(name)?;
        // Buffer B37: a checkpoint begun after the record reads the catalog only once it names
        // the tree (R7).
        let announced = self.pool.announce_change();
        let tree = match &self.wal {
            None => Tree::create(&self.pool)?,
            Some(wal) => {
                let tree = Tree::create_logged(&self.pool, Some(&SystemLog(wal)))?;
                wal.append(&Record::CreateTree { name: name.to_owned(), root: tree.root_page() })?;
                tree
            }
        };
        self.pool.catalog_insert(name, tree.root_page())?;
        drop(announced);
        let tree = self.handle(tree);
        trees.insert(name.to_owned(), tree.clone());
        drop(trees);
        // Durable when it returns, like `drop_tree` and a commit in either commit mode: a
        // crash right after must not lose a tree its creator was told exists (R23).
        if let Some(wal) = &self.wal {
            wal.log.flush_all()?;
        }
        Ok(tree)
    }

    pub(crate) fn tree(&self, name: &str) -> Result<Tree> {
        let mut trees = self.trees.lock();
        if let Some(t) = trees.get(name) {
            return Ok(t.clone());
        }
        if self.pool.is_closed() {
            return Err(TreeError::Closed.into());
        }
        let root =
            self.pool.catalog_get(name).ok_or_else(|| Error::TreeNotFound(crate::error::shown_name(name)))?;
        let tree = self.handle(Tree::open(&self.pool, root)?);
        trees.insert(name.to_owned(), tree.clone());
        Ok(tree)
    }

    /// A database opened read-only ([`crate::Builder::read_only`]) refuses every change.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.pool.is_read_only() {
            return Err(Error::Tree(swizzledb_btree::TreeError::ReadOnly));
        }
        Ok(())
    }

    pub(crate) fn checkpoint(&self) -> Result<()> {
        match &self.wal {
            Some(wal) => wal.checkpoint(&self.pool).map(|_| ()),
            None => self.flush(),
        }
    }

    /// Writes every dirty page and syncs: unlogged, with page 0 and the free-page chain (no
    /// consistent point while writers run); logged, the pages only, after the whole log is
    /// durable — page 0 and the free chain of a logged database are written only at close
    /// (R13), since the records that freed a page may not be durable yet.
    pub(crate) fn flush(&self) -> Result<()> {
        match &self.wal {
            None => Ok(self.pool.flush()?),
            Some(wal) => {
                wal.log.flush_all()?;
                wal.finish_restart(&self.pool)?;
                self.replay_archive(wal)?;
                self.pool.write_back_older(Lsn(u64::MAX), usize::MAX)?;
                Ok(self.pool.sync_file()?)
            }
        }
    }

    /// With the decoupled cleaner, brings every page's copy in the file up to the durable log
    /// (R20): pages evicted without a write (R21) are in no frame for `flush` or `close` to
    /// write.
    pub(crate) fn replay_archive(&self, wal: &Wal) -> Result<()> {
        if self.cleaner.as_ref().is_some_and(|c| c.kind == Cleaner::Decoupled) {
            crate::decoupled::replay(wal, &self.pool, crate::decoupled::progress(wal)?)?;
        }
        Ok(())
    }

    /// The close sequence (R13): the log made durable (so no page, free-page chain or page 0
    /// reaches the file ahead of the records that explain it), every page and page 0 written,
    /// page 0 marked clean, and with a log a last checkpoint (which finds no dirty page and
    /// truncates the log to it).
    pub(crate) fn close(&self) -> Result<()> {
        if let Some(wal) = &self.wal {
            // wal README W16: tree handles share the log and may outlive the database; no
            // thread of a closed database writes its files, whether this close succeeds or not.
            wal.log.stop_background();
            wal.log.flush_all()?;
            // R22: no page may be left stale in the file of a cleanly closed database.
            wal.finish_restart(&self.pool)?;
            self.replay_archive(wal)?;
        } else if self.rollback_failed.load(Ordering::Acquire) {
            // R5a: without a log nothing can finish the rollback; written and marked clean,
            // the file would hold the rolled-back changes as if committed. It stays unclean.
            return Err(Error::Unclean(self.pool.path().to_path_buf()));
        }
        self.pool.close()?;
        if let Some(wal) = &self.wal {
            wal.checkpoint_classical(&self.pool)?;
            // wal README W14: the newest segment padded to its end, then a checkpoint that
            // starts the next one, so the one before it (all of it older than the checkpoint)
            // goes: a cleanly closed database keeps one small segment (RECOVERY.md R25).
            if wal.seal_on_close && wal.log.seal_segment()? {
                wal.checkpoint_classical(&self.pool)?;
            }
            // wal README W13: the space allocated beyond the log's end goes back.
            wal.log.trim()?;
            // R25: every page write is done and synced, so the double-write area holds nothing
            // a restart needs; the next open makes a new one.
            if wal.seal_on_close {
                let area = crate::files::double_write_path(self.pool.path());
                if self.vfs.exists(&area) {
                    self.vfs.remove(&area).map_err(|e| crate::files::io(&area, e))?;
                    if let Some(dir) = area.parent() {
                        self.vfs.sync_dir(dir).map_err(|e| crate::files::io(dir, e))?;
                    }
                }
                // The one segment holds the last checkpoint, which open finds by scanning it
                // (restart::last_checkpoint_end).
                wal.log.remove_master()?;
            }
        }
        Ok(())
    }
}

/// How many attempts of a snapshot-isolation transaction [`Core::run_retrying_at`] runs again
/// after their snapshot was ended for memory (K20) before it returns the error: one that outlives
/// the version memory time after time needs a larger `Builder::version_memory` or a shorter
/// transaction, not more attempts.
pub(crate) const SNAPSHOT_TOO_OLD_RETRIES: u32 = 8;

/// Whether [`Core::run_retrying_at`] rolls back an attempt that failed with `e` and runs it
/// again: a refused lock (a deadlock's victim, K23, or a death under wait-die, K6); with
/// `snapshot` (`transact_snapshot`), also a write conflict (K24) and, while `too_old_left`, a
/// snapshot ended for memory (K20), since the next attempt reads at a new snapshot. A
/// serializable attempt meets neither: such an error came from elsewhere in the closure (a
/// snapshot transaction it ran) and is returned, as `Database::transact` promises.
fn retried(e: &Error, snapshot: bool, too_old_left: bool) -> bool {
    match e {
        Error::Lock(lock::LockError::Conflict { .. } | lock::LockError::Deadlock { .. }) => true,
        Error::WriteConflict { .. } => snapshot,
        Error::SnapshotTooOld { .. } => snapshot && too_old_left,
        _ => false,
    }
}
