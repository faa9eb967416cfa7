//! Snapshot reads through a tree (LOCKS.md K18, K21, K22): a plain point read of the newest
//! committed value, which takes a snapshot only when the key's writer cannot settle it; a
//! point read rebuilt from the tree and the version store (`versions.rs`); and a range read
//! whose overlay rebuilds each record it passes. Tree handles, transactions and read-only
//! transactions read through these.

use std::ops::Bound;
use std::sync::Arc;

use swizzledb_sync::PageId;

use crate::error::{Error, Result};
use crate::instant::PendingRedo;
use crate::logging::Wal;
use crate::versions::{ReadAt, Seen, Snapshot, Versions, READ_POINT};

/// What a tree handle or a read-only transaction needs for snapshot reads (K18).
#[derive(Clone)]
pub(crate) struct SnapshotReads {
    pub(crate) versions: Arc<Versions>,
    /// The log, on a logged database (K21 asks it whether losers are being rolled back).
    pub(crate) wal: Option<Arc<Wal>>,
}

impl SnapshotReads {
    /// K21: whether snapshot reads apply now. Not while instant restart's background undo rolls
    /// losers back: their changes were made before this process and have no versions, so
    /// reads wait for their locks as before (K14).
    pub(crate) fn ready(&self) -> bool {
        let rolling_back = |p: &Arc<PendingRedo>| p.losers.load(std::sync::atomic::Ordering::Acquire) != 0;
        !self.wal.as_ref().and_then(|w| w.pending.as_ref()).is_some_and(rolling_back)
    }

    /// K21 for a read that needs a snapshot of many keys (a range, or a read-only
    /// transaction's reads): [`SnapshotReads::ready`], after waiting for instant restart's
    /// background rollback if it runs. A read through the gate instead sees each key as
    /// committed when it reaches it, so a range could see one half of a transfer that commits
    /// meanwhile; the losers' changes are gone once the rollback ends, and the snapshot is
    /// exact then. `false` only if the rollback failed (its keys stay locked: the gate waits).
    pub(crate) fn ready_after_rollback(&self) -> bool {
        if self.ready() {
            return true;
        }
        if let Some(pending) = self.wal.as_ref().and_then(|w| w.pending.as_ref()) {
            pending.wait_for_rollback();
        }
        self.ready()
    }

    /// K18: the value of `key` in `tree` that `snap` sees, read with no gate and rebuilt from
    /// the chain. While no version is kept anywhere, the tree's value is the snapshot's and
    /// `f` gets it in place: [`Read::Done`]. Otherwise the rebuilt value is returned
    /// ([`Read::Rebuilt`]) unless the snapshot was ended for memory meanwhile (K20:
    /// [`Read::TooOld`]; with `strict` also after `f` ran, whose result is dropped then).
    pub(crate) fn read<R>(
        &self,
        snap: &Snapshot<'_>,
        tree: &swizzledb_btree::Tree,
        key: &[u8],
        strict: bool,
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<Read<R>, swizzledb_btree::TreeError> {
        // The tree first: a writer records its version before it changes the leaf (K17), so
        // a change seen here has its version in the chain read after.
        let root = tree.root_page();
        let from_tree = tree.get_gated(key, &swizzledb_btree::NoGate, |v| {
            // A writer records its version before its change, so its key's chain is counted
            // once an uncommitted change is seen. K19: a tree dropped meanwhile may have lost
            // its chains after the leaf was read (`forget_tree`): looked at after the counts.
            if self.versions.may_have_chain(root, key) || tree.is_dropped() {
                Err(v.map(<[u8]>::to_vec))
            } else {
                Ok(f(v))
            }
        })?;
        let value = match from_tree {
            // A snapshot ended for memory may have lost versions it needed, also while none is
            // kept: the tree's value is then the latest committed one, right for a read that
            // started now (a plain read), not for an older snapshot (`strict`).
            Ok(_) if strict && snap.too_old() => return Ok(Read::TooOld),
            Ok(r) => return Ok(Read::Done(r)),
            Err(value) => match self.versions.seen(snap, root, key) {
                Seen::Tree => value,
                Seen::Before(before) => before.map(Vec::from),
            },
        };
        unless_dropped(tree)?;
        Ok(if snap.too_old() { Read::TooOld } else { Read::Rebuilt(value) })
    }
}

impl SnapshotReads {
    /// K18: the newest committed value of `key` in `tree`, read without a snapshot: the tree's
    /// value, given to `f` in place, when no writer is counted in the key's bucket as the leaf
    /// is read ([`Read::Done`]); else the value the key's writer settles
    /// ([`Versions::now_seen`], [`Read::Rebuilt`]). `None` when that cannot be told (`f` did
    /// not run): the caller reads with a snapshot. A plain read so makes no writer keep its
    /// versions for it (K19).
    pub(crate) fn read_now<R>(
        &self,
        tree: &swizzledb_btree::Tree,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<Option<Read<R>>, swizzledb_btree::TreeError> {
        let root = tree.root_page();
        let hash = self.versions.key_hash(root, key);
        // Before the leaf: a writer that lets the key go after this is seen below.
        let releases = self.versions.writer_releases(hash);
        let from_tree = tree.get_gated(key, &swizzledb_btree::NoGate, |v| {
            READ_POINT.reached(ReadAt::Copied);
            // A writer whose change `v` holds was counted before it made it, and stays counted
            // until it lets the key go: after its rollback put the old value back, or after its
            // commit. So no writer counted and none let go since the leaf was read means `v` is
            // committed. The release count matters where `v` is a copy made with no latch
            // (btree T21): between the copy and this look, the writer may have made its next
            // change of the key, committed and let it go, and `v` was never committed. Under
            // the leaf's latch neither its next change nor its rollback can come between.
            if self.versions.writers_quiet_since(hash, releases) {
                Ok(f(v))
            } else {
                Err(v.map(<[u8]>::to_vec))
            }
        })?;
        Ok(match from_tree {
            Ok(r) => Some(Read::Done(r)),
            Err(value) => {
                READ_POINT.reached(ReadAt::Settling);
                self.versions.now_seen(root, key, hash, releases).map(|seen| {
                    Read::Rebuilt(match seen {
                        Seen::Tree => value,
                        Seen::Before(before) => before.map(Vec::from),
                    })
                })
            }
        })
    }

    /// `f` on the newest committed value of `key` in `tree` (K18, K25): read without a snapshot
    /// where the key's writer settles it ([`SnapshotReads::read_now`]), else at a snapshot
    /// taken now, a fresh one each time one is ended for memory (K20). Plain reads of a logged
    /// database's tree handles and the reads of a read-committed transaction.
    ///
    /// # Errors
    /// The tree's errors.
    pub(crate) fn get_committed_with<R>(
        &self,
        tree: &swizzledb_btree::Tree,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, swizzledb_btree::TreeError> {
        let mut f = Some(f);
        match self.read_now(tree, key, |v| f.take().expect("f runs once")(v))? {
            Some(Read::Done(r)) => return Ok(r),
            Some(Read::Rebuilt(v)) => return Ok(f.take().expect("f has not run")(v.as_deref())),
            Some(Read::TooOld) | None => {}
        }
        loop {
            let s = self.versions.snapshot();
            match self.read(&s, tree, key, false, |v| f.take().expect("f runs once")(v))? {
                Read::Done(r) => return Ok(r),
                Read::Rebuilt(v) => return Ok(f.take().expect("f has not run")(v.as_deref())),
                Read::TooOld => {}
            }
        }
    }

    /// `f` on the value of `key` in `tree` that `snap` sees ([`SnapshotReads::read`], strict):
    /// the reads of read-only and snapshot-isolation transactions.
    ///
    /// # Errors
    /// [`Error::SnapshotTooOld`] if `snap` was ended for memory (K20); the tree's errors.
    pub(crate) fn get_with<R>(
        &self,
        snap: &Snapshot<'_>,
        tree: &swizzledb_btree::Tree,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R> {
        let mut f = Some(f);
        match self.read(snap, tree, key, true, |v| f.take().expect("f runs once")(v))? {
            Read::Done(r) => Ok(r),
            Read::Rebuilt(v) => Ok(f.take().expect("f has not run")(v.as_deref())),
            Read::TooOld => Err(Error::SnapshotTooOld { limit: self.versions.limit }),
        }
    }
}

/// What [`SnapshotReads::read`] found.
pub(crate) enum Read<R> {
    /// `f` ran on the tree's value, which is the snapshot's.
    Done(R),
    /// The snapshot's value, rebuilt (`None`: absent); `f` did not run.
    Rebuilt(Option<Vec<u8>>),
    /// The snapshot was ended for memory (K20).
    TooOld,
}

/// The snapshot a range read reads at: its own (a plain scan's), or a read-only transaction's.
pub(crate) enum SnapshotRef<'t> {
    Owned(Snapshot<'t>),
    Borrowed(&'t Snapshot<'t>),
}

impl<'t> std::ops::Deref for SnapshotRef<'t> {
    type Target = Snapshot<'t>;
    fn deref(&self) -> &Snapshot<'t> {
        match self {
            SnapshotRef::Owned(s) => s,
            SnapshotRef::Borrowed(s) => s,
        }
    }
}

/// K19: [`swizzledb_btree::TreeError::Dropped`] if `tree` was dropped, asked after a look at
/// its versions. `drop_tree` sets the flag (btree T25) before it drops the tree's chains
/// (`Versions::forget_tree`, under the chain and index mutexes and the counts a look reads), so
/// a look that found a chain missing because the drop removed it finds the flag set here. Leaf
/// reads check the flag under the leaf's latch, but a scan's overlay and a snapshot's point
/// read look at the versions after the latch is released: without this look, a read of a tree
/// dropped meanwhile took the tree's values, committed after its snapshot, for the snapshot's,
/// and missed the keys deleted since (test
/// `concurrent_reads_snapshots_racing_drops_see_only_their_generation`).
fn unless_dropped(tree: &swizzledb_btree::Tree) -> Result<(), swizzledb_btree::TreeError> {
    if tree.is_dropped() {
        return Err(swizzledb_btree::TreeError::Dropped);
    }
    Ok(())
}

/// A range read at a snapshot (K22): the btree's overlay (T27) rebuilt from the chains.
pub(crate) struct SnapshotOverlay<'t> {
    pub(crate) versions: &'t Versions,
    pub(crate) snap: SnapshotRef<'t>,
    pub(crate) tree: PageId,
    /// The tree read, whose drop ends the read ([`unless_dropped`]).
    pub(crate) engine: &'t swizzledb_btree::Tree,
}

impl SnapshotOverlay<'_> {
    fn check(&self) -> Result<(), swizzledb_btree::TreeError> {
        unless_dropped(self.engine)?;
        if self.snap.too_old() {
            return Err(swizzledb_btree::TreeError::Transaction(Box::new(Error::SnapshotTooOld {
                limit: self.versions.limit,
            })));
        }
        Ok(())
    }
}

impl swizzledb_btree::Overlay for SnapshotOverlay<'_> {
    fn rebuild(
        &self,
        key: &[u8],
        _value: &[u8],
    ) -> Result<swizzledb_btree::Rebuilt, swizzledb_btree::TreeError> {
        let seen = match self.versions.seen(&self.snap, self.tree, key) {
            Seen::Tree => swizzledb_btree::Rebuilt::Keep,
            Seen::Before(None) => swizzledb_btree::Rebuilt::Hide,
            Seen::Before(Some(b)) => swizzledb_btree::Rebuilt::Value(b.into_vec()),
        };
        self.check()?;
        Ok(seen)
    }

    fn between(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, swizzledb_btree::TreeError> {
        let found = self.versions.between(&self.snap, self.tree, lo, hi);
        self.check()?;
        Ok(found)
    }
}

impl SnapshotReads {
    /// K22: `tree`'s range read at `snap`.
    pub(crate) fn range<'t>(
        &'t self,
        snap: SnapshotRef<'t>,
        tree: &'t swizzledb_btree::Tree,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> swizzledb_btree::RangeIter<'t> {
        tree.range_overlaid(start, end, self.overlay(snap, tree))
    }

    /// K22: `tree`'s descending range read at `snap`.
    pub(crate) fn range_rev<'t>(
        &'t self,
        snap: SnapshotRef<'t>,
        tree: &'t swizzledb_btree::Tree,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> swizzledb_btree::RevRangeIter<'t> {
        tree.range_rev_overlaid(start, end, self.overlay(snap, tree))
    }

    fn overlay<'t>(
        &'t self,
        snap: SnapshotRef<'t>,
        tree: &'t swizzledb_btree::Tree,
    ) -> Box<dyn swizzledb_btree::Overlay + 't> {
        Box::new(SnapshotOverlay { versions: &self.versions, snap, tree: tree.root_page(), engine: tree })
    }
}
