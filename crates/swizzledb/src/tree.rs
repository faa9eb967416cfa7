//! The user's tree handle: a named, ordered map of byte keys to byte values in a [`Database`].
//!
//! It wraps the engine's Foster B-tree (`swizzledb-btree`) and shows only what a user calls.
//! On a logged database every write of a handle is a transaction of its own (auto-commit,
//! RECOVERY.md R12) and every read returns committed records only (LOCKS.md K14); there is no
//! way through a handle to change a logged database without logging the change.
//!
//! [`Database`]: crate::Database

use std::ops::Bound;
use std::sync::Arc;

use crate::instant::PendingRedo;

use crate::snapshot::{SnapshotReads, SnapshotRef};
use crate::versions::Versions;
use swizzledb_btree::{CompareAndSwapError, KeyValue, RangeIter, RevRangeIter, TreeError, TreeShape};

/// A named tree of a [`Database`](crate::Database), from [`Database::create_tree`],
/// [`Database::tree`] or [`Database::tree_or_create`]: keys and values are byte strings, kept in
/// key order (bytewise). Cheap to clone; all clones are the same tree. `Send + Sync`: use a
/// handle from any thread.
///
/// [`Database::create_tree`]: crate::Database::create_tree
/// [`Database::tree`]: crate::Database::tree
/// [`Database::tree_or_create`]: crate::Database::tree_or_create
///
/// Once the database is closed, or the tree dropped, every call refuses with
/// [`TreeError::Closed`] or [`TreeError::Dropped`].
///
/// On an unlogged database ([`Builder::logging`](crate::Builder::logging) off) a handle's
/// writes are no transactions: they take no record locks and see none (LOCKS.md K21). Each is
/// atomic on its own (`compare_and_swap` included), and every snapshot sees it once it
/// returns, but a transaction that changes the same key can overwrite it, or be overwritten
/// between its read and its write (a lost update), and a rollback restores the value the
/// transaction found. Keep a key to handle writes or to transactions there, or use
/// transactions for both.
///
/// A handle has no way to write past the log: on a logged database its writes are always
/// logged transactions. The engine tree's unlogged handle and logged-write plumbing are not
/// reachable from it:
///
/// ```compile_fail
/// # fn f(tree: &swizzledb::Tree) {
/// let unlogged = tree.clone().without_auto_commit();
/// # }
/// ```
///
/// ```compile_fail
/// # fn f(tree: &swizzledb::Tree) {
/// let root = tree.root_page(); // the lab's: swizzledb::lab::TreeExt
/// let pool = tree.pool();
/// # }
/// ```
#[derive(Clone)]
pub struct Tree {
    /// The engine's tree, with the auto-commit and the read gate of its database.
    pub(crate) inner: swizzledb_btree::Tree,
    /// Snapshot reads (LOCKS.md K18), on a database that keeps versions.
    pub(crate) snap: Option<SnapshotReads>,
    /// Instant restart's redo and background rollback (RECOVERY.md R22), after such a restart.
    pub(crate) restart: Option<Arc<PendingRedo>>,
    /// On an unlogged database that keeps versions: the versions its raw writes make stale
    /// (LOCKS.md K21, [`Versions::forget_key`]).
    raw: Option<Arc<Versions>>,
}

type Result<T> = std::result::Result<T, TreeError>;

impl Tree {
    pub(crate) fn new(
        inner: swizzledb_btree::Tree,
        snap: Option<SnapshotReads>,
        restart: Option<Arc<PendingRedo>>,
        raw: Option<Arc<Versions>>,
    ) -> Tree {
        Tree { inner, snap, restart, raw }
    }

    /// K21: a raw write (an unlogged database's) of `key` succeeded: the versions of its key
    /// that ended writers left are dropped, so that every snapshot sees the write.
    fn wrote(&self, key: &[u8]) {
        if let Some(versions) = &self.raw {
            versions.forget_key(self.inner.root_page(), key);
        }
    }

    /// The value stored under `key` (`None`: absent): the last committed one. On a logged
    /// database with record locks (the default) it never waits for a writer: a key another
    /// transaction has changed and not yet committed reads as it was before (a snapshot read,
    /// LOCKS.md K18). With locking off, or on an unlogged database, uncommitted changes show.
    ///
    /// # Errors
    /// I/O errors or corruption; [`TreeError::Closed`], [`TreeError::Dropped`].
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(key, |v| v.map(<[u8]>::to_vec))
    }

    /// Calls `f` with the value stored under `key` (or `None`), as [`Tree::get`] reads it.
    /// `f` must not call into the database.
    ///
    /// # Errors
    /// As [`Tree::get`].
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R> {
        match &self.snap {
            // K18: the newest committed value, without a snapshot where that can be told.
            Some(snap) if snap.ready() => snap.get_committed_with(&self.inner, key, f),
            _ => self.inner.get_with(key, f),
        }
    }

    /// Inserts a new record; fails with [`TreeError::DuplicateKey`] if the key exists. On a
    /// logged database it is committed (durable in [`CommitMode::Sync`], the default) when it
    /// returns.
    ///
    /// [`CommitMode::Sync`]: crate::CommitMode::Sync
    ///
    /// # Errors
    /// An oversize key or value ([`TreeError::KeyTooLarge`], [`TreeError::ValueTooLarge`]), the
    /// duplicate key, pool, I/O or log errors; nothing changes then, except when the log fails
    /// while it makes the write's commit durable (a sync commit's flush, [`TreeError::Log`]):
    /// the write is then in doubt, as after a failed
    /// [`Transaction::commit`](crate::Transaction::commit): it stays in the tree for this
    /// open's reads, the log refuses every later change (wal README W11), and the next open
    /// keeps it if its commit record reached the disk and drops it if not.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.inner.insert(key, value)?;
        self.wrote(key);
        Ok(())
    }

    /// Inserts or replaces; returns true if the key existed. Committed when it returns, as
    /// [`Tree::insert`].
    ///
    /// # Errors
    /// As [`Tree::insert`], without the duplicate key.
    pub fn upsert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        let existed = self.inner.upsert(key, value)?;
        self.wrote(key);
        Ok(existed)
    }

    /// Deletes `key`; returns true if it existed. Committed when it returns, as
    /// [`Tree::insert`].
    ///
    /// # Errors
    /// Pool, I/O or log errors; nothing changes then, except for a failed commit flush, as
    /// [`Tree::insert`] says. [`TreeError::ValueTooLarge`] when the
    /// value stored is longer than this open accepts (written by an open with a larger pool or
    /// log; [`Tree::max_value_len`]): it can still be read; open with a larger pool to change
    /// or delete it. The same holds for every write that replaces such a value.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        let existed = self.inner.delete(key)?;
        if existed {
            self.wrote(key);
        }
        Ok(existed)
    }

    /// Sets `key` to `new` if its value is `expected`, atomically: `None` as `expected` means
    /// "absent", `None` as `new` deletes the key. Returns `Ok(Err(_))` with the value found when
    /// it is not `expected` (nothing changed then); retry from that value to build a
    /// read-modify-write loop.
    ///
    /// ```
    /// # fn incr(tree: &swizzledb::Tree, key: &[u8]) -> Result<u64, swizzledb::TreeError> {
    /// let mut current = tree.get(key)?;
    /// loop {
    ///     let n = current.as_deref().map_or(0, |v| u64::from_be_bytes(v.try_into().unwrap())) + 1;
    ///     match tree.compare_and_swap(key, current.as_deref(), Some(&n.to_be_bytes()))? {
    ///         Ok(()) => return Ok(n),
    ///         Err(refused) => current = refused.current,
    ///     }
    /// }
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Tree::insert`]; nothing changes then, except for a failed commit flush, as
    /// [`Tree::insert`] says.
    pub fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), CompareAndSwapError>> {
        let swapped = self.inner.compare_and_swap(key, expected, new)?;
        if swapped.is_ok() {
            self.wrote(key);
        }
        Ok(swapped)
    }

    /// The records with keys between `start` and `end`, in key order. The iterator is
    /// double-ended: `next_back` reads from the range's end, and the two ends stop where they
    /// meet. Each item is a record or an error. On a logged database with record locks (the
    /// default) the scan reads at a snapshot taken when it is made (LOCKS.md K22): it returns
    /// the records as committed then, and never waits for a writer (right after an instant
    /// restart, it first waits for the background rollback of the crash's losers, K21).
    pub fn range<'t>(&'t self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> RangeIter<'t> {
        match &self.snap {
            Some(snap) if snap.ready_after_rollback() => {
                snap.range(SnapshotRef::Owned(snap.versions.snapshot()), &self.inner, start, end)
            }
            _ => self.inner.range(start, end),
        }
    }

    /// [`Tree::range`] in descending key order.
    pub fn range_rev<'t>(&'t self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> RevRangeIter<'t> {
        match &self.snap {
            Some(snap) if snap.ready_after_rollback() => {
                snap.range_rev(SnapshotRef::Owned(snap.versions.snapshot()), &self.inner, start, end)
            }
            _ => self.inner.range_rev(start, end),
        }
    }

    /// The records whose keys start with `prefix`, in key order (`.rev()` for descending). An
    /// empty prefix scans the whole tree. Read as [`Tree::range`] reads.
    pub fn scan_prefix(&self, prefix: &[u8]) -> RangeIter<'_> {
        let end = swizzledb_btree::prefix_end(prefix);
        self.range(Bound::Included(prefix), end.as_deref().map_or(Bound::Unbounded, Bound::Excluded))
    }

    /// [`Tree::scan_prefix`] in descending key order.
    pub fn scan_prefix_rev(&self, prefix: &[u8]) -> RevRangeIter<'_> {
        let end = swizzledb_btree::prefix_end(prefix);
        self.range_rev(Bound::Included(prefix), end.as_deref().map_or(Bound::Unbounded, Bound::Excluded))
    }

    /// The record with the smallest key (`None`: the tree is empty).
    ///
    /// # Errors
    /// As [`Tree::range`]'s items.
    pub fn first(&self) -> Result<Option<KeyValue>> {
        self.range(Bound::Unbounded, Bound::Unbounded).limit(1).next().transpose()
    }

    /// The record with the greatest key (`None`: the tree is empty).
    ///
    /// # Errors
    /// As [`Tree::range`]'s items.
    pub fn last(&self) -> Result<Option<KeyValue>> {
        self.range_rev(Bound::Unbounded, Bound::Unbounded).limit(1).next().transpose()
    }

    /// The number of records. **O(n):** it counts them with a scan (no count is kept: it would
    /// be one shared, logged counter for every writer). On a logged database with record locks
    /// it counts the records of one snapshot; otherwise it is exact only while no other thread
    /// writes.
    ///
    /// # Errors
    /// As [`Tree::range`]'s items.
    pub fn len(&self) -> Result<usize> {
        self.range(Bound::Unbounded, Bound::Unbounded).tally()
    }

    /// An estimate of the number of records, in `O(height)` page reads (btree README T30):
    /// each node's count times the mean estimate of a few sampled children, down to the leaves.
    /// Exact for a tree of one leaf; otherwise as close as the sampled leaves' fill is to the
    /// others' (within a few percent for keys spread evenly, `tests/it/approximate_len.rs`). It
    /// counts what the pages hold, uncommitted records included; use [`Tree::len`] for an
    /// exact count.
    ///
    /// # Errors
    /// The tree was dropped; I/O errors reading a node.
    pub fn approximate_len(&self) -> Result<u64> {
        self.inner.approximate_len()
    }

    /// Whether the tree holds no record (reads at most one).
    ///
    /// # Errors
    /// As [`Tree::range`]'s items.
    pub fn is_empty(&self) -> Result<bool> {
        let mut scan = self.range(Bound::Unbounded, Bound::Unbounded).limit(1);
        scan.next_with(|_, _| ()).transpose().map(|r| r.is_none())
    }

    /// The longest value this tree accepts: at most [`MAX_VALUE_LEN`](crate::MAX_VALUE_LEN), at
    /// most what an eighth of the pool's frames hold, and at most what one log record takes.
    #[must_use]
    pub fn max_value_len(&self) -> usize {
        self.inner.max_value_len()
    }

    /// Full structural check of the tree (key order, fences, levels, every page reached once).
    /// Call it while no other thread changes the tree. After an instant restart it first waits
    /// until the database's background rollback of the crash's losers has ended (its changes
    /// are the engine's own, RECOVERY.md R22), so it may wait as long as that rollback runs.
    ///
    /// # Errors
    /// A description of the first violation found (or of an I/O error reading a page); the
    /// message of [`TreeError::Closed`] or [`TreeError::Dropped`] once the database is closed
    /// or the tree dropped.
    pub fn verify(&self) -> std::result::Result<TreeShape, String> {
        if let Some(restart) = &self.restart {
            restart.wait_for_rollback();
        }
        self.inner.verify()
    }
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree").field("root", &self.inner.root_page()).finish_non_exhaustive()
    }
}
