//! Isolation (LOCKS.md K14–K16): which records a read may return, and the next-key locks that
//! keep a transaction's range reads free of phantoms.
//!
//! - Reads outside a transaction, on a logged database, read a snapshot (`versions.rs`, K18,
//!   K22). Only while instant restart rolls losers back (K21) do they pass [`CommittedReads`]:
//!   a record whose lock a transaction holds exclusively has an uncommitted change, so the read
//!   waits until the lock is released and reads again (K14).
//! - A transaction's reads pass [`TxnReads`]: every key a scan meets, and the key closing each
//!   gap it covers, is locked shared until the transaction ends (K16).
//! - Writers lock the gap's closing key exclusively: an insert for the length of the insert, a
//!   delete to the end of the transaction (K15), under the leaf's latch through [`GapLocks`]
//!   where the closing key is in the leaf, else with [`lock_gap`]. An insert into a tree that
//!   no transaction reads a range of skips its gap: only range reads' locks protect gaps from
//!   inserts ([`TxnReads::enter_range`]).

use parking_lot::Mutex;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use swizzledb_btree::{key_after, GapGate, Gated, ReadGate, Tree, TreeError};
use swizzledb_sync::TxnId;

use crate::error::Error;
use crate::lock::{tree_lock_id, LockError, LockManager, LockMode};
use crate::logging::{thread_tag, Wal};

/// Mixed into a tree's lock id for the name of its end-of-tree lock, the closing key of the gap
/// after its last key (K15). Any value serves: a name that happens to equal another tree's only
/// adds a conflict, never removes one.
const END_OF_TREE: u32 = 0x9E37_79B9;

/// The lock name of `key` in `tree` (`None`: the end of the tree). Trees are told apart by root
/// page; folding it to 32 bits can only merge two trees' names (a false conflict), never split
/// one's.
pub(crate) fn lock_name<'k>(tree: &Tree, key: Option<&'k [u8]>) -> (u32, &'k [u8]) {
    let id = tree_lock_id(tree.root_page());
    match key {
        Some(k) => (id, k),
        None => (id.rotate_left(16) ^ END_OF_TREE, &[]),
    }
}

/// A lock refusal as the tree's error, to cross the read gate; [`engine_error`] takes it back.
fn lock_failure(e: LockError) -> TreeError {
    TreeError::Transaction(Box::new(Error::from(e)))
}

/// A tree error as the engine's, unwrapping what a gate or an auto-commit wrapped.
pub(crate) fn engine_error(e: TreeError) -> Error {
    match e {
        TreeError::Transaction(inner) => match inner.downcast::<Error>() {
            Ok(e) => *e,
            Err(other) => Error::Tree(TreeError::Transaction(other)),
        },
        e => Error::Tree(e),
    }
}

/// The gate of a logged database's tree handles (K14): a record passes unless a transaction
/// holds its lock exclusively, i.e. it has an uncommitted change. Writers change a record only
/// while holding its lock and the leaf's exclusive latch, and the check runs under the leaf's
/// shared latch, so what the reader then copies is committed.
pub(crate) struct CommittedReads {
    pub(crate) locks: Arc<LockManager>,
    pub(crate) wal: Arc<Wal>,
}

impl ReadGate for CommittedReads {
    fn try_pass(&self, tree: &Tree, key: Option<&[u8]>) -> Result<bool, TreeError> {
        let (t, k) = lock_name(tree, key);
        Ok(self.locks.exclusive_holder(t, k).is_none())
    }

    /// Polls, backing off, until no transaction holds the lock exclusively. The reader holds no
    /// lock, so it cannot be part of a deadlock and never needs to die; it gives up after the
    /// lock manager's wait timeout (a transaction that stays open), and at once if the holder
    /// last wrote from this thread: it would be waiting for itself.
    fn wait(&self, tree: &Tree, key: Option<&[u8]>) -> Result<(), TreeError> {
        let (t, k) = lock_name(tree, key);
        let started = Instant::now();
        let mut pause = Duration::from_micros(5);
        while let Some(holder) = self.locks.exclusive_holder(t, k) {
            let mine = self
                .wal
                .running(holder)
                .is_some_and(|h| h.writer_thread.load(Ordering::Relaxed) == thread_tag());
            if mine {
                return Err(lock_failure(LockError::OwnUncommitted { txn: holder, tree: t, key: k.into() }));
            }
            if self.locks.waits_ended() {
                // K9a: the holder could not be rolled back; it keeps the lock for good.
                return Err(lock_failure(LockError::WaitsEnded {
                    txn: holder,
                    tree: t,
                    key: k.into(),
                    mode: LockMode::Shared,
                    cause: self.locks.waits_ended_by(),
                }));
            }
            let waited = started.elapsed();
            if waited >= self.locks.wait_timeout() {
                return Err(lock_failure(LockError::ReadWait { tree: t, key: k.into(), waited }));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(1));
        }
        Ok(())
    }
}

/// The gate of a transaction's reads (K16): each key passes once the transaction holds its
/// shared lock, kept to the end. Under a latch only `try_lock` (K11); the wait takes the lock
/// with deadlock detection (or wait-die), so a refusal ends the read with [`crate::Error::Lock`].
pub(crate) struct TxnReads<'a> {
    pub(crate) locks: &'a LockManager,
    pub(crate) txn: TxnId,
    /// K15: the trees (lock ids) the transaction reads ranges of, each entered once
    /// ([`LockManager::enter_ranges`]) and left when its locks are released.
    ranged: Mutex<SmallVec<[u32; 4]>>,
    /// Whether `ranged` may hold a tree: a transaction that read no range leaves none without
    /// taking the mutex.
    any_ranged: std::sync::atomic::AtomicBool,
}

impl<'a> TxnReads<'a> {
    pub(crate) fn new(locks: &'a LockManager, txn: TxnId) -> TxnReads<'a> {
        TxnReads {
            locks,
            txn,
            ranged: Mutex::new(SmallVec::new()),
            any_ranged: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// K15: the transaction is about to read a range of `tree`; inserts into it look at their
    /// gaps from now until [`TxnReads::leave_ranges`].
    pub(crate) fn enter_range(&self, tree: &Tree) {
        let t = tree_lock_id(tree.root_page());
        let mut ranged = self.ranged.lock();
        if !ranged.contains(&t) {
            self.any_ranged.store(true, std::sync::atomic::Ordering::Relaxed);
            self.locks.enter_ranges(t);
            ranged.push(t);
        }
    }

    /// K15: the transaction's locks are released; its range reads no longer protect any gap.
    pub(crate) fn leave_ranges(&self) {
        // Set under the mutex by the thread that entered; this is that transaction's thread,
        // or one it ended on after handing the transaction over (a move, which orders it).
        if !self.any_ranged.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        self.any_ranged.store(false, std::sync::atomic::Ordering::Relaxed);
        for t in self.ranged.lock().drain(..) {
            self.locks.leave_ranges(t);
        }
    }
}

impl ReadGate for TxnReads<'_> {
    fn try_pass(&self, tree: &Tree, key: Option<&[u8]>) -> Result<bool, TreeError> {
        let (t, k) = lock_name(tree, key);
        self.locks.try_lock(self.txn, t, k, LockMode::Shared).map_err(lock_failure)
    }

    fn wait(&self, tree: &Tree, key: Option<&[u8]>) -> Result<(), TreeError> {
        let (t, k) = lock_name(tree, key);
        self.locks.lock(self.txn, t, k, LockMode::Shared).map_err(lock_failure)
    }

    fn holds(&self) -> bool {
        true
    }
}

/// K15 under the leaf's latch (btree T28): the closing key of the gap a write adds a key to or
/// widens, locked exclusively with `try_lock` while the leaf is latched, or with `lock` after the
/// writer unlatched. Keeps each lock it took and whether the transaction held it before, so an
/// insert can release what it took for its own length ([`GapLocks::release_taken`]).
pub(crate) struct GapLocks<'a> {
    locks: &'a LockManager,
    txn: TxnId,
    /// The written tree's lock id.
    tree: u32,
    /// For an insert: a closing key nobody else holds or waits for passes without a lock
    /// (K15: the insert is made under the same latch, so no reader or writer of the gap comes
    /// between the look and the insert).
    insert: bool,
    /// (tree's lock id, key, held before).
    taken: RefCell<Vec<(u32, Vec<u8>, bool)>>,
    /// Where the leaf ended when the closing key lay in a later leaf (btree T28's `beyond`).
    beyond: RefCell<Option<Vec<u8>>>,
}

impl<'a> GapLocks<'a> {
    /// The gate of a write by `txn`; `insert`: a put, which holds a closing key only for its
    /// own length (a delete holds it to the end).
    pub(crate) fn new(locks: &'a LockManager, txn: TxnId, tree: &Tree, insert: bool) -> GapLocks<'a> {
        let tree = tree_lock_id(tree.root_page());
        GapLocks { locks, txn, tree, insert, taken: RefCell::new(Vec::new()), beyond: RefCell::new(None) }
    }

    /// K15: an insert into a tree that no transaction reads a range of passes its gap without
    /// a look: only a range read's locks protect a gap from an insert. Asked under the leaf's
    /// exclusive latch, which a range read of this leaf takes after it entered.
    fn unguarded(&self) -> bool {
        self.insert && !self.locks.ranges_read(self.tree)
    }

    /// The upper bound of the leaf the write met last, when its gap's closing key lay in a
    /// later leaf (`Gated::Beyond`): that key is the first at or after it.
    pub(crate) fn beyond_at(&self) -> Option<Vec<u8>> {
        self.beyond.borrow_mut().take()
    }

    fn took(&self, t: u32, k: &[u8]) -> bool {
        self.taken.borrow().iter().any(|(tt, kk, _)| *tt == t && kk.as_slice() == k)
    }

    /// Releases every lock taken here that the transaction did not hold before (an insert's
    /// closing keys, once the insert is made or failed).
    pub(crate) fn release_taken(&self) {
        let mut taken = self.taken.borrow_mut();
        if taken.is_empty() {
            // The common case: the gap was free, or no range reader made it worth a look.
            return;
        }
        for (t, k, had) in taken.drain(..) {
            if !had {
                self.locks.release(self.txn, t, &k);
            }
        }
    }
}

impl GapGate for GapLocks<'_> {
    fn try_pass(&self, tree: &Tree, next: Option<&[u8]>) -> Result<bool, TreeError> {
        if self.unguarded() {
            return Ok(true);
        }
        let (t, k) = lock_name(tree, next);
        if self.took(t, k) {
            return Ok(true);
        }
        if self.insert && self.locks.is_free_for(self.txn, t, k).map_err(lock_failure)? {
            // Nothing taken, so nothing to note or release.
            return Ok(true);
        }
        match self.locks.try_lock_noting(self.txn, t, k, LockMode::Exclusive).map_err(lock_failure)? {
            Some(had) => {
                self.taken.borrow_mut().push((t, k.to_vec(), had));
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn wait(&self, tree: &Tree, next: Option<&[u8]>) -> Result<(), TreeError> {
        let (t, k) = lock_name(tree, next);
        if !self.took(t, k) {
            let had = self.locks.lock_noting(self.txn, t, k, LockMode::Exclusive).map_err(lock_failure)?;
            self.taken.borrow_mut().push((t, k.to_vec(), had));
        }
        Ok(())
    }

    fn passes_every_gap(&self) -> bool {
        self.unguarded()
    }

    fn beyond(&self, own_high: &[u8]) -> bool {
        if self.unguarded() {
            return true;
        }
        *self.beyond.borrow_mut() = Some(own_high.to_vec());
        false
    }
}

/// K15 for an insert whose gap closes in a later leaf, where that leaf's range also holds the
/// key's leaf's upper bound `high` (as for each insert of an ascending run, whose leaf ends
/// where the next run begins): the closing key, the first key at or after `high`, is locked
/// while that leaf is latched, so no key is in `[high, closing key)` then, nor can enter it
/// later (an insert there closes its gap with the same key, and waits for the lock). The put
/// then passes this gate: a closing key that appeared in the key's own leaf is locked as
/// [`GapLocks`] does, and a leaf that still ends at `high` goes on with the lock held here.
/// Returns the put's result, or `None` (nothing changed, no lock kept) when the closing key
/// lies further on, is held by another transaction, or the key's leaf no longer ends at
/// `high`: the caller then locks the gap with [`lock_gap`].
pub(crate) fn insert_past_leaf<T>(
    locks: &LockManager,
    txn: TxnId,
    tree: &Tree,
    high: &[u8],
    put: impl FnOnce(&dyn GapGate) -> Result<Gated<T>, TreeError>,
) -> Result<Option<T>, Error> {
    let found = tree
        .at_first_key_in_leaf(high, |k| {
            let (t, name) = lock_name(tree, k);
            locks
                .try_lock_noting(txn, t, name, LockMode::Exclusive)
                .map(|had| had.map(|h| (t, name.to_vec(), h)))
        })
        .map_err(engine_error)?;
    let Some((t, name, had)) = found.transpose().map_err(Error::Lock)?.flatten() else { return Ok(None) };
    let gate = FenceGate { gap: GapLocks::new(locks, txn, tree, true), high };
    let put = put(&gate);
    gate.gap.release_taken();
    if !had {
        locks.release(txn, t, &name);
    }
    match put.map_err(engine_error)? {
        Gated::Done(existed) => Ok(Some(existed)),
        Gated::Beyond => Ok(None),
    }
}

/// The gate of [`insert_past_leaf`]'s put.
struct FenceGate<'a> {
    gap: GapLocks<'a>,
    high: &'a [u8],
}

impl GapGate for FenceGate<'_> {
    fn try_pass(&self, tree: &Tree, next: Option<&[u8]>) -> Result<bool, TreeError> {
        self.gap.try_pass(tree, next)
    }

    fn wait(&self, tree: &Tree, next: Option<&[u8]>) -> Result<(), TreeError> {
        self.gap.wait(tree, next)
    }

    fn beyond(&self, own_high: &[u8]) -> bool {
        own_high == self.high
    }
}

/// R22: the closing key of the gap `key` falls into, for a loser instant restart holds: locked
/// exclusively by `txn` if no other transaction holds it, without waiting. While `open` takes
/// the losers' locks nothing else runs and the tree does not change, so one look-up suffices,
/// and a holder is another loser, which keeps the key locked until the whole background
/// rollback has ended.
pub(crate) fn try_lock_gap_of_loser(
    locks: &LockManager,
    txn: TxnId,
    tree: &Tree,
    key: &[u8],
) -> Result<(), Error> {
    let next = tree.first_key_from(&key_after(key))?;
    let (t, k) = lock_name(tree, next.as_deref());
    locks.try_lock(txn, t, k, LockMode::Exclusive)?;
    Ok(())
}

/// The closing key of the gap `key` falls into, locked exclusively by `txn` (K15): the first
/// key after `key` (`None`: the end of the tree). `first` is the caller's look-up of it, if it
/// made one. Returns it and whether `txn` held its lock before (then the caller must not release
/// it early). The gap is checked again once the lock is held: a key inserted meanwhile becomes
/// the closing key. The caller holds `key`'s exclusive lock, so `key` itself cannot appear.
pub(crate) fn lock_gap(
    locks: &LockManager,
    txn: TxnId,
    tree: &Tree,
    key: &[u8],
    first: Option<Option<Vec<u8>>>,
) -> Result<(Option<Vec<u8>>, bool), Error> {
    let after = key_after(key);
    let mut next = match first {
        Some(f) => f,
        None => tree.first_key_from(&after)?,
    };
    loop {
        let (t, k) = lock_name(tree, next.as_deref());
        let had = locks.lock_noting(txn, t, k, LockMode::Exclusive)?;
        let now = tree.first_key_from(&after)?;
        if now == next {
            return Ok((next, had));
        }
        if !had {
            locks.release(txn, t, k);
        }
        next = now;
    }
}
