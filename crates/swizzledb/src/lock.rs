//! Record locks for transactions: shared and exclusive locks on `(tree, key)` names, held until
//! the transaction ends (strict two-phase locking), with deadlock detection (or, as an option,
//! wait-die prevention).
//!
//! The contract lives in `LOCKS.md` next to this crate's manifest: vocabulary, the numbered rules
//! K1–K23 cited below, the life of a request and the latch order. In short:
//!
//! - [`LockManager::lock`] grants at once or queues and waits (K4). A wait that closes a cycle
//!   of waits is found when it begins, and the youngest transaction of the cycle fails with
//!   [`LockError::Deadlock`] (K23); nothing else fails a request but the wait timeout (K9).
//!   With [`DeadlockPolicy::WaitDie`] a request fails with [`LockError::Conflict`] instead
//!   whenever it would wait for an older transaction (K6), so no cycle can form (K7).
//! - Locks are released all at once by [`LockManager::release_all`] at the end of the
//!   transaction (K8), which hands the lock to the waiters in queue order (K4).
//! - [`LockManager::try_lock`] never waits: the engine calls it while holding frame latches and
//!   falls back to `lock` after releasing them (K11).
//!
//! ```
//! use std::time::Duration;
//! use swizzledb::lock::{LockError, LockManager, LockMode, TxnId};
//!
//! let locks = LockManager::new(16).with_wait_timeout(Duration::from_secs(5));
//! let (older, younger) = (TxnId(7), TxnId(9));
//! locks.lock(older, 1, b"alice", LockMode::Exclusive)?;
//! locks.lock(younger, 1, b"bob", LockMode::Exclusive)?;
//! std::thread::scope(|s| {
//!     // The older transaction waits for bob...
//!     let waiter = s.spawn(|| locks.lock(older, 1, b"bob", LockMode::Exclusive));
//!     while locks.stats().waits == 0 {
//!         std::thread::yield_now();
//!     }
//!     // ...so the younger one asking for alice would close a cycle: it is the victim.
//!     let err = locks.lock(younger, 1, b"alice", LockMode::Shared).unwrap_err();
//!     assert!(matches!(err, LockError::Deadlock { txn, .. } if txn == younger));
//!     locks.release_all(younger); // the engine aborts it; the client retries
//!     waiter.join().unwrap()
//! })?;
//! assert_eq!(locks.release_all(older), 2); // commit
//! # Ok::<(), LockError>(())
//! ```

use hashbrown::hash_table::HashTable;
use parking_lot::{Condvar, Mutex};
use rustc_hash::{FxHashMap, FxHasher};
use smallvec::SmallVec;
use std::collections::VecDeque;
use std::fmt;
use std::hash::Hasher;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::version::Writer;

pub use swizzledb_sync::TxnId;

/// The lock id of the tree whose root is `root`: its page number folded to 32 bits (the
/// engine's lock names, `isolation.rs`, start from it; so do the version store's look-ups).
#[inline]
pub(crate) fn tree_lock_id(root: swizzledb_sync::PageId) -> u32 {
    let root = root.get();
    (root ^ (root >> 32)) as u32
}

/// How long [`LockManager::lock`] waits before giving up with [`LockError::Timeout`], unless
/// [`LockManager::with_wait_timeout`] sets another value. Deadlocks are found (K23) or prevented
/// (K7) without it: the timeout is a backstop against a transaction that holds locks and never
/// ends.
pub const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_secs(10);

/// K10: how long a queued request watches for its grant before it parks. A lock waited for is
/// mostly held by a transaction that is running on another core and ends within tens to a few
/// hundred microseconds; parking and being woken costs two system calls and, on a virtual
/// machine, the wake-up of an idle core.
const SPIN_BEFORE_PARK: Duration = Duration::from_micros(200);

/// K23: how long a request waits before it looks for a deadlock again (doubling each time).
/// Short: some cycles are found only by this look (LOCKS.md K23), and hold every member until
/// it runs.
const DETECT_AGAIN: Duration = Duration::from_millis(2);

/// K23: the most cycles one look breaks by failing other transactions before it gives up (the
/// periodic look goes on).
const MAX_CYCLES_AT_ONCE: usize = 64;

/// K23: the most transactions one look for a deadlock visits.
const DETECT_BUDGET: usize = 10_000;

/// The most shards a [`LockManager`] uses; larger requests are capped.
pub const MAX_SHARDS: usize = 1 << 12;

/// The shards of an engine's lock manager: many more than the locks its threads hold at a
/// time, so that most shards hold at most one head, in the shard itself (K13). 192 KiB.
pub const ENGINE_SHARDS: usize = 1 << 10;

/// How the manager keeps transactions out of deadlocks (K6, K7, K23).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum DeadlockPolicy {
    /// Requests wait for any transaction; a wait that closes a cycle of waits is found when it
    /// begins, and the cycle's youngest transaction fails with [`LockError::Deadlock`] (K23).
    /// Only real deadlocks fail a request.
    #[default]
    Detect,
    /// A request that would wait for an older transaction fails at once with
    /// [`LockError::Conflict`] (K6), so waits only go from older to younger transactions and
    /// no cycle forms (K7). Cheaper per wait, but it fails many requests that would only have
    /// waited.
    WaitDie,
}

/// A lock mode (K2).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum LockMode {
    /// Read access: compatible with other shared locks.
    Shared,
    /// Write access: compatible with nothing.
    Exclusive,
}

impl LockMode {
    /// Whether two transactions may hold `self` and `other` on one lock at the same time (K2):
    /// only shared with shared.
    #[must_use]
    pub fn compatible(self, other: LockMode) -> bool {
        self == LockMode::Shared && other == LockMode::Shared
    }

    /// Whether holding `self` makes a request for `other` a no-op (K3): exclusive covers both.
    #[must_use]
    pub fn covers(self, other: LockMode) -> bool {
        self == LockMode::Exclusive || other == LockMode::Shared
    }
}

impl fmt::Display for LockMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LockMode::Shared => "shared",
            LockMode::Exclusive => "exclusive",
        })
    }
}

/// Why a lock was not granted. After any of these the transaction still holds the locks it
/// had; the engine aborts it and calls [`LockManager::release_all`] (K8).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Wait-die (K6): the request would have had to wait for an older transaction, so the
    /// requester dies instead.
    #[error(
        "{txn} would wait for the older {holder} to get a {mode} lock on a key of tree {tree}, \
         so it dies (wait-die); abort and retry the transaction"
    )]
    Conflict {
        /// The requesting (younger) transaction.
        txn: TxnId,
        /// The oldest transaction it would have waited for: a holder of the lock or a request
        /// queued ahead of it.
        holder: TxnId,
        /// The lock's tree.
        tree: u32,
        /// The lock's key.
        key: Box<[u8]>,
        /// The mode requested.
        mode: LockMode,
    },
    /// Deadlock detection (K23): the transaction's wait was part of a cycle of waits, and it is
    /// the cycle's youngest transaction (or its own thread holds what it waits for), so its
    /// request was withdrawn.
    #[error(
        "{txn} waited for a {mode} lock on a key of tree {tree} in a deadlock with {} (a \
         transaction open in the waiter's own thread counts as waiting for it), and was chosen \
         to fail: abort and retry the transaction",
        list(others)
    )]
    Deadlock {
        /// The transaction whose request failed.
        txn: TxnId,
        /// The other transactions of the cycle.
        others: Vec<TxnId>,
        /// The lock's tree.
        tree: u32,
        /// The lock's key.
        key: Box<[u8]>,
        /// The mode requested.
        mode: LockMode,
    },
    /// The request waited longer than the wait timeout (K9) and was withdrawn.
    #[error(
        "{txn} waited {waited:?} for a {mode} lock on a key of tree {tree} without getting it; \
         abort and retry the transaction (if this happens without long transactions, raise the \
         lock wait timeout)"
    )]
    Timeout {
        /// The requesting transaction.
        txn: TxnId,
        /// The lock's tree.
        tree: u32,
        /// The lock's key.
        key: Box<[u8]>,
        /// The mode requested.
        mode: LockMode,
        /// The timeout that expired.
        waited: Duration,
    },
    /// A read outside any transaction waited longer than the wait timeout for a transaction's
    /// uncommitted change to the record to commit or roll back (K14).
    #[error(
        "a read outside a transaction waited {waited:?} for an uncommitted change to a key of tree \
         {tree} to commit or roll back; retry the read, and look for a transaction that stays open"
    )]
    ReadWait {
        /// The lock's tree.
        tree: u32,
        /// The lock's key.
        key: Box<[u8]>,
        /// How long it waited.
        waited: Duration,
    },
    /// A read outside any transaction asked for a record that a transaction open in the same
    /// thread changed and has not committed: waiting would never end (K14).
    #[error(
        "a read outside a transaction asks for a key of tree {tree} that {txn}, open in this \
         thread, changed and has not committed; read it through that transaction \
         (Transaction::get) or end the transaction first"
    )]
    OwnUncommitted {
        /// The transaction holding the change.
        txn: TxnId,
        /// The lock's tree.
        tree: u32,
        /// The lock's key.
        key: Box<[u8]>,
    },
    /// `TxnId(0)` asked for a lock (K12).
    #[error(
        "transaction id 0 belongs to system transactions, which take no locks; lock with the id \
         of a user transaction"
    )]
    SystemTransaction,
    /// K9a: the request would wait, and the manager's waits were ended: a transaction that
    /// could not be rolled back (its database failed) keeps its locks until the database is
    /// reopened.
    #[error(
        "{txn} cannot wait for a {mode} lock on a key of tree {tree}: a transaction could not be \
         rolled back ({cause}) and keeps its locks; reopen the database (restart rolls that \
         transaction back)"
    )]
    WaitsEnded {
        txn: TxnId,
        tree: u32,
        key: Box<[u8]>,
        mode: LockMode,
        /// The error that stopped the rollback.
        cause: String,
    },
}

/// `a, b and c`: the transactions of a deadlock's message.
fn list(txns: &[TxnId]) -> String {
    let names: Vec<String> = txns.iter().map(ToString::to_string).collect();
    match names.split_last() {
        None => "its own thread's transaction".into(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// Lock manager counters, summed over all shards.
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[derive(Copy, Clone, PartialEq, Eq, Default, Debug)]
pub struct LockStats {
    /// Calls of `lock`, `lock_timeout` and `try_lock` by a user transaction (re-requests
    /// included).
    pub requests: u64,
    /// Requests that queued and waited (K4).
    pub waits: u64,
    /// Requests that died by wait-die (K6).
    pub conflicts: u64,
    /// Waits that failed as a deadlock's victim (K23).
    pub deadlocks: u64,
    /// Waits that ended by timeout (K9).
    pub timeouts: u64,
}

impl LockStats {
    fn add(&mut self, other: &LockStats) {
        self.requests += other.requests;
        self.waits += other.waits;
        self.conflicts += other.conflicts;
        self.deadlocks += other.deadlocks;
        self.timeouts += other.timeouts;
    }
}

/// A hash of a lock name (K1): picks the shard and the table slot. Test code swaps it to force
/// collisions.
type NameHash = fn(u32, &[u8]) -> u64;

fn fx_name_hash(tree: u32, key: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write_u32(tree);
    h.write(key);
    h.finish()
}

/// The record lock manager: a sharded table of lock heads plus, per transaction, the list of
/// locks it holds. See the module docs and `LOCKS.md`.
pub struct LockManager {
    /// Lock heads; `shard_of(hash)` picks one. A thread holds at most one shard mutex, and
    /// never together with a `txns` mutex (K11).
    shards: Box<[Shard]>,
    /// Per transaction: its held locks, the lock it waits for and its thread, sharded by
    /// transaction id.
    txns: Box<[TxnShard]>,
    /// `shards.len() - 1` (a power of two minus one).
    mask: usize,
    wait_timeout: Duration,
    policy: DeadlockPolicy,
    hash: NameHash,
    /// K15: per tree (its lock id folded into `RANGE_SLOTS` counters), how many transactions
    /// read a range of it now; an insert into a tree that no one reads a range of needs no
    /// look at its gap.
    ranges: Box<[LineCount]>,
    /// K10: requests watching for their grant now, and how many may (half the cores, at least
    /// one): the rest park at once, so that spinning never takes the cores that the holders
    /// need.
    spinners: LineCount,
    max_spinners: u32,
    /// K18: heads naming a writer, counted per bucket of name hashes.
    writers: WriterCounts,
    /// K9a: set once for good by [`LockManager::end_waits`]; no request waits after it.
    waits_ended: AtomicBool,
    /// K9a: why the waits ended (the first failed rollback's error).
    waits_ended_by: Mutex<String>,
}

/// K18: how many lock heads name a writer (K17), per bucket of their names' hashes: a reader
/// whose key's bucket counts none has no running writer's version to look up.
struct WriterCounts(Box<[AtomicU64]>);

/// Buckets of [`WriterCounts`].
const WRITER_BUCKETS: usize = 4096;

/// A bucket's low half counts the heads naming a writer; its high half counts the writers that
/// let such a head go (K18: a plain read that found a writer counted checks that none did
/// meanwhile).
const RELEASED: u64 = 1 << 32;

impl WriterCounts {
    fn new() -> WriterCounts {
        WriterCounts((0..WRITER_BUCKETS).map(|_| AtomicU64::new(0)).collect())
    }

    /// The bucket of a name's hash: bits the shard choice (the low ones) does not use.
    fn bucket(&self, hash: u64) -> &AtomicU64 {
        &self.0[((hash >> 24) as usize) % WRITER_BUCKETS]
    }

    fn raise(&self, hash: u64) {
        self.bucket(hash).fetch_add(1, Ordering::SeqCst);
    }

    /// One head fewer, one release more (a raise came first, so the low half does not borrow).
    fn lower(&self, hash: u64) {
        self.bucket(hash).fetch_add(RELEASED - 1, Ordering::SeqCst);
    }

    fn counted(&self, hash: u64) -> bool {
        self.bucket(hash).load(Ordering::SeqCst) & (RELEASED - 1) != 0
    }

    /// How many named heads of the bucket were let go so far (wrapping).
    fn released(&self, hash: u64) -> u64 {
        self.bucket(hash).load(Ordering::SeqCst) / RELEASED
    }
}

/// K15: counters of range-reading transactions, by tree lock id (two trees may share one: that
/// only makes an insert look at its gap when it need not).
const RANGE_SLOTS: usize = 64;

/// A counter on cache lines of its own ([`LockManager::ranges`], [`LockManager::spinners`]).
#[derive(Default)]
#[repr(align(128))]
struct LineCount(AtomicU32);

/// Bits of a transaction number that name its thread's lane (the engine's `Core::new_txn_id`):
/// the tables of transactions, here and in the log, shard by the lane, so that a thread's
/// transactions use one shard, whose lines stay in its core's cache.
const LANE_BITS: u32 = 6;

/// The transaction number of the `order`-th transaction to begin, begun by this thread.
pub(crate) fn txn_number(order: u64) -> TxnId {
    TxnId((order << LANE_BITS) | (thread_tag() % (1 << LANE_BITS)))
}

/// The order of beginning in a transaction number ([`txn_number`]).
pub(crate) fn txn_order(txn: u64) -> u64 {
    txn >> LANE_BITS
}

/// The shard of a table of transactions, out of `shards` (a power of two), that holds `txn`:
/// by its lane ([`txn_number`]).
pub(crate) fn txn_shard_of(txn: TxnId, shards: usize) -> usize {
    debug_assert!(shards.is_power_of_two());
    (txn.0 % (1 << LANE_BITS)) as usize & (shards - 1)
}

/// A number for the current thread, unique in the process (never 0): K23 knows a waiter's own
/// transactions by it, and the engine its writers (K14).
pub(crate) fn thread_tag() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    thread_local! {
        static TAG: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TAG.with(|t| *t)
}

/// One shard of the lock table: its mutex and table on one cache line, its first head on the next
/// two (K13).
#[repr(align(64))]
struct Shard {
    table: Mutex<Table>,
}

/// One shard of the transaction table, on its own cache line.
#[repr(align(64))]
struct TxnShard {
    txns: Mutex<TxnTable>,
}

/// The transactions of one shard. A shard serves the lanes of a few threads (one with the
/// engine's 64 transaction shards), each of which runs one transaction at a time, so the first
/// transaction to arrive is kept in `first` and found with one comparison; the others, in the
/// map.
#[derive(Default)]
struct TxnTable {
    first: Option<(TxnId, TxnLocks)>,
    more: FxHashMap<TxnId, TxnLocks>,
}

impl TxnTable {
    fn get(&self, txn: &TxnId) -> Option<&TxnLocks> {
        match &self.first {
            Some((t, e)) if t == txn => Some(e),
            _ => self.more.get(txn),
        }
    }

    fn get_mut(&mut self, txn: &TxnId) -> Option<&mut TxnLocks> {
        match &mut self.first {
            Some((t, e)) if t == txn => Some(e),
            _ => self.more.get_mut(txn),
        }
    }

    /// `txn`'s entry, made by `make` if it has none.
    fn get_or_insert_with(&mut self, txn: TxnId, make: impl FnOnce() -> TxnLocks) -> &mut TxnLocks {
        match &mut self.first {
            Some((t, _)) if *t == txn => {}
            Some(_) => return self.more.entry(txn).or_insert_with(make),
            None if self.more.contains_key(&txn) => return self.more.get_mut(&txn).expect("contained"),
            None => self.first = Some((txn, make())),
        }
        &mut self.first.as_mut().expect("set above").1
    }

    fn remove(&mut self, txn: &TxnId) -> Option<TxnLocks> {
        match &self.first {
            Some((t, _)) if t == txn => self.first.take().map(|(_, e)| e),
            _ => self.more.remove(txn),
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&TxnId, &TxnLocks)> {
        self.first.iter().map(|(t, e)| (t, e)).chain(self.more.iter())
    }
}

thread_local! {
    /// An emptied held-lock list kept for the thread's next transaction (K13): its first lock
    /// takes it instead of allocating, and giving it back takes no mutex.
    static SPARE_HELD: std::cell::Cell<Vec<HeldLock>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Held-lock lists longer than this are not kept for reuse.
const SPARE_HELD_MAX: usize = 1 << 12;

/// What the manager knows of one transaction (an entry exists while it holds or waits for a
/// lock).
#[derive(Default)]
struct TxnLocks {
    /// The locks it was granted, one entry per lock (K8).
    held: Vec<HeldLock>,
    /// The lock it waits for (K23: the waits-for graph is found from here).
    waiting: Option<HeldLock>,
    /// The thread of its last request ([`thread_tag`]).
    thread: u64,
    /// K17: the transaction as a writer, kept once for every head it names (set by its first
    /// grant of a lock taken to write); a reader finds the writer of a named head here.
    writer: Option<Arc<Writer>>,
}

/// A lock a transaction holds: enough to find its head again without the key bytes.
#[derive(Copy, Clone, Debug)]
struct HeldLock {
    hash: u64,
    head: u64,
}

/// Key bytes a lock head holds in itself (K13); longer keys live on the heap.
const INLINE_KEY: usize = 24;

/// The lock heads of one shard (all fields protected by the shard mutex). The mutex and the
/// fields before `first` fill the shard's first cache line; `first` follows on the next two
/// (K13). With the engine's shards outnumbering the locks held at a time, most shards hold at
/// most one head, so a request touches its shard's lines alone: lines that no other core
/// wrote unless it used a lock of the same shard.
#[repr(C)]
struct Table {
    /// The heads in use beyond `first`, stored in the table itself and found by name hash (K1:
    /// one per name; names whose hashes are equal are told apart by tree and key). The table
    /// rehashes its heads with the manager's name hash as it grows (a head does not keep its
    /// hash). Allocates nothing while empty.
    heads: HashTable<LockHead>,
    /// Identifier for the next head created in this shard.
    next_id: u64,
    /// [`LockStats::requests`] of this shard.
    requests: u64,
    /// The other counters, which only requests that wait or fail move: out of the line.
    rare: Box<LockStats>,
    /// A head in the shard itself: a new head goes here when it is free, else into `heads`. A
    /// request finds its head's name, holders and queue here or in the slot its hash leads to,
    /// with no pointer to follow for a key of up to `INLINE_KEY` bytes or up to two holders.
    first: Option<LockHead>,
}

impl Table {
    fn new() -> Table {
        Table { heads: HashTable::new(), next_id: 0, requests: 0, rare: Box::default(), first: None }
    }

    /// Every head in use.
    fn iter(&self) -> impl Iterator<Item = &LockHead> {
        self.first.iter().chain(self.heads.iter())
    }

    /// How many heads are in use.
    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.heads.len()
    }

    /// The head in use that `is` picks: `first`, or found by `hash` in `heads`.
    fn find_by(&self, hash: u64, is: impl Fn(&LockHead) -> bool) -> Option<&LockHead> {
        match &self.first {
            Some(h) if is(h) => Some(h),
            _ if self.heads.is_empty() => None,
            _ => self.heads.find(hash, is),
        }
    }

    /// [`Table::find_by`], for changing the head.
    fn find_by_mut(&mut self, hash: u64, is: impl Fn(&LockHead) -> bool) -> Option<&mut LockHead> {
        if self.first.as_ref().is_some_and(&is) {
            return self.first.as_mut();
        }
        if self.heads.is_empty() {
            return None;
        }
        self.heads.find_mut(hash, is)
    }

    fn head_mut(&mut self, hash: u64, id: u64) -> Option<&mut LockHead> {
        self.find_by_mut(hash, |h| h.id == id)
    }

    fn head(&self, hash: u64, id: u64) -> Option<&LockHead> {
        self.find_by(hash, |h| h.id == id)
    }

    /// The head of `(tree, key)`, if in use.
    fn find(&self, hash: u64, tree: u32, key: &[u8]) -> Option<&LockHead> {
        self.find_by(hash, |h| h.tree == tree && *h.key == *key)
    }

    /// The head of `(tree, key)`, if in use.
    fn find_mut(&mut self, hash: u64, tree: u32, key: &[u8]) -> Option<&mut LockHead> {
        self.find_by_mut(hash, |h| h.tree == tree && *h.key == *key)
    }

    /// The head of `(tree, key)`, made in `first` or in its slot if not in use; `name_hash` is
    /// the manager's (the table rehashes with it as it grows).
    fn find_or_make(&mut self, name_hash: NameHash, hash: u64, tree: u32, key: &[u8]) -> &mut LockHead {
        let named = |h: &LockHead| h.tree == tree && *h.key == *key;
        // (Found twice when in use, most locks being new: a head returned from a conditional
        // borrow would keep the table borrowed below.)
        if self.find_by(hash, named).is_some() {
            return self.find_by_mut(hash, named).expect("found above");
        }
        let head = LockHead::new(self.next_id, tree, key);
        self.next_id += 1;
        if self.first.is_none() {
            self.first.insert(head)
        } else {
            self.heads.insert_unique(hash, head, |h| name_hash(h.tree, &h.key)).into_mut()
        }
    }

    /// Applies `change` to the head `id` names, then drops the head if nobody holds or waits
    /// for it (K13); one look-up for both.
    fn change_then_drop_if_unused(&mut self, hash: u64, id: u64, change: impl FnOnce(&mut LockHead)) {
        if let Some(head) = self.first.as_mut().filter(|h| h.id == id) {
            change(head);
            if head.is_unused() {
                self.first = None;
            }
            return;
        }
        if self.heads.is_empty() {
            return;
        }
        let Ok(mut entry) = self.heads.find_entry(hash, |h| h.id == id) else { return };
        change(entry.get_mut());
        if entry.get().is_unused() {
            entry.remove();
        }
    }

    /// Drops the head if nobody holds or waits for it (K13).
    fn remove_if_unused(&mut self, hash: u64, id: u64) {
        self.change_then_drop_if_unused(hash, id, |_| {});
    }

    /// K8, K13, K17 for one lock `txn` held, found by its head's id in one probe: drops the
    /// hold, grants what that unblocks, clears the writer `txn` named there (as exclusive
    /// holder), and drops the head if that left it unused.
    fn release_held(&mut self, txn: TxnId, lock: HeldLock, writers: &WriterCounts) {
        self.change_then_drop_if_unused(lock.hash, lock.head, |head| {
            head.release_writer(txn, lock.hash, writers);
            head.release(txn);
        });
    }
}

/// What a waiting request parks on: its own condvar (used with the shard mutex) and its state,
/// which the granting thread (or a deadlock's finder, K23) sets under the shard mutex before
/// waking it (K10).
struct WaitSlot {
    state: AtomicU8,
    cv: Condvar,
    /// K23: the cycle this request was withdrawn from, set with `VICTIM`.
    cycle: Mutex<Vec<TxnId>>,
}

const WAITING: u8 = 0;
const GRANTED: u8 = 1;
const VICTIM: u8 = 2;

impl WaitSlot {
    fn new() -> Arc<WaitSlot> {
        Arc::new(WaitSlot {
            state: AtomicU8::new(WAITING),
            cv: Condvar::new(),
            cycle: Mutex::new(Vec::new()),
        })
    }

    /// Read and written only under the shard mutex, which orders the accesses.
    fn state(&self) -> u8 {
        self.state.load(Ordering::Relaxed)
    }

    fn grant(&self) {
        self.state.store(GRANTED, Ordering::Release);
        self.cv.notify_one();
    }

    /// K10: watches the state outside the shard mutex for at most `budget`, and returns it
    /// (`WAITING` if nobody decided the request meanwhile). The acquire pairs with the
    /// granter's release store, which it made under the shard mutex after moving the request
    /// into the holders.
    fn spin(&self, budget: Duration) -> u8 {
        let started = Instant::now();
        loop {
            for _ in 0..64 {
                let state = self.state.load(Ordering::Acquire);
                if state != WAITING {
                    return state;
                }
                std::hint::spin_loop();
            }
            if started.elapsed() >= budget {
                return self.state.load(Ordering::Acquire);
            }
            std::thread::yield_now();
        }
    }

    /// K23: the request is withdrawn as the victim of `cycle` (the other transactions).
    fn fail(&self, cycle: Vec<TxnId>) {
        *self.cycle.lock() = cycle;
        self.state.store(VICTIM, Ordering::Release);
        self.cv.notify_one();
    }
}

#[derive(Copy, Clone, Debug)]
struct Holder {
    txn: TxnId,
    mode: LockMode,
}

/// A waiting request. `upgrade`: the transaction holds the lock shared and wants it exclusive.
struct Request {
    txn: TxnId,
    mode: LockMode,
    upgrade: bool,
    slot: Arc<WaitSlot>,
}

/// A lock head's queue: no memory in the head until a request first waits there (most locks
/// never see one), so that a head is small to move in and out of its table.
#[derive(Default)]
// The box is the point: eight bytes in the head instead of a `VecDeque`'s 32 (K13).
#[allow(clippy::box_collection)]
struct Queue(Option<Box<VecDeque<Request>>>);

/// The queue of a head nobody ever waited at.
static NO_QUEUE: VecDeque<Request> = VecDeque::new();

impl std::ops::Deref for Queue {
    type Target = VecDeque<Request>;
    fn deref(&self) -> &VecDeque<Request> {
        self.0.as_deref().unwrap_or(&NO_QUEUE)
    }
}

impl std::ops::DerefMut for Queue {
    fn deref_mut(&mut self) -> &mut VecDeque<Request> {
        self.0.get_or_insert_default()
    }
}

/// What [`LockHead::request`] decided.
enum Decision {
    /// The transaction holds a mode that covers the request (K3).
    AlreadyHeld,
    /// Granted at once; `upgrade`: an S hold became X (no new held-lock entry).
    Granted { upgrade: bool },
    /// Wait-die: an older transaction is in the way (K6).
    Die { older: TxnId },
    /// K23: an upgrade met another transaction's waiting upgrade, and the requester is the
    /// younger: a deadlock of two, with `other`.
    Deadlock { other: TxnId },
    /// It would have to wait, and the caller does not wait (`try_lock`).
    WouldWait,
    /// Queued (K4); park on `slot`.
    Queued { slot: Arc<WaitSlot>, upgrade: bool },
}

/// One lock: its name, its holders and its queue of waiting requests. All fields are
/// protected by the shard mutex. At most two cache lines (K13): a shard's `first` head fills
/// the two lines after the shard's first.
struct LockHead {
    /// Unique within the shard; held-lock entries name the head by it.
    id: u64,
    tree: u32,
    /// In the head up to `INLINE_KEY` bytes; a longer key is allocated with the head and freed
    /// with it (K13).
    key: SmallVec<[u8; INLINE_KEY]>,
    /// Pairwise compatible, one entry per transaction (K2); the first two in the head.
    holders: SmallVec<[Holder; 2]>,
    /// Waiting requests in grant order; an upgrade only at the front (K3, K4).
    queue: Queue,
    /// K17: the exclusive holder is a writer, whose undo list holds the key's version if it
    /// changed the key (the writer itself is in the holder's transaction-table entry); set by
    /// [`LockManager::lock_to_write`], cleared when that holder releases the lock.
    named: bool,
}

impl LockHead {
    fn new(id: u64, tree: u32, key: &[u8]) -> LockHead {
        LockHead {
            id,
            tree,
            // One copy of the bytes (`into` would push them one at a time).
            key: SmallVec::from_slice(key),
            holders: SmallVec::new(),
            queue: Queue::default(),
            named: false,
        }
    }

    fn is_unused(&self) -> bool {
        self.holders.is_empty() && self.queue.is_empty() && !self.named
    }

    /// K17: names the exclusive holder `txn` as the key's writer, counted in the key's bucket
    /// before the writer's first change of the key. Returns whether it was not named before.
    fn name_writer(&mut self, txn: TxnId, hash: u64, writers: &WriterCounts) -> bool {
        debug_assert!(
            self.holders.iter().any(|x| x.txn == txn && x.mode == LockMode::Exclusive),
            "K17: a key's writer holds its lock exclusively"
        );
        if self.named {
            return false;
        }
        writers.raise(hash);
        self.named = true;
        true
    }

    /// K17: the transaction a named head's writer is, if the head is named.
    fn named_writer(&self) -> Option<TxnId> {
        self.holders.iter().find(|x| x.mode == LockMode::Exclusive).map(|x| x.txn).filter(|_| self.named)
    }

    /// K17: `txn` lets the lock go; if it held it exclusively, the writer it named here goes
    /// too (its versions went to the chains first, K19).
    fn release_writer(&mut self, txn: TxnId, hash: u64, writers: &WriterCounts) {
        if self.named && self.holders.iter().any(|x| x.txn == txn && x.mode == LockMode::Exclusive) {
            self.named = false;
            writers.lower(hash);
        }
    }

    /// Decides a request of `txn` for `mode` (K3, K4, K6, K23); queues it if it must wait and
    /// `may_wait`.
    fn request(&mut self, txn: TxnId, mode: LockMode, may_wait: bool, policy: DeadlockPolicy) -> Decision {
        let wait_die = policy == DeadlockPolicy::WaitDie;
        if let Some(i) = self.holders.iter().position(|h| h.txn == txn) {
            if self.holders[i].mode.covers(mode) {
                return Decision::AlreadyHeld;
            }
            // Upgrade S -> X: it waits only for the other (shared) holders and goes ahead of
            // every waiting request (K3).
            if self.holders.len() == 1 {
                self.holders[i].mode = LockMode::Exclusive;
                return Decision::Granted { upgrade: true };
            }
            if wait_die {
                if let Some(older) = self.holders.iter().map(|h| h.txn).filter(|&t| t < txn).min() {
                    return Decision::Die { older };
                }
            }
            if !may_wait {
                return Decision::WouldWait;
            }
            // K23: another holder's upgrade waits already, for this transaction's shared hold
            // among others, and this one would wait for its: the younger of the two fails.
            if let Some(front) = self.queue.front().filter(|r| r.upgrade) {
                if front.txn < txn {
                    return Decision::Deadlock { other: front.txn };
                }
                let Some(victim) = self.queue.pop_front() else { unreachable!("front exists") };
                victim.slot.fail(vec![txn]);
            }
            let slot = WaitSlot::new();
            self.queue.push_front(Request { txn, mode, upgrade: true, slot: Arc::clone(&slot) });
            return Decision::Queued { slot, upgrade: true };
        }
        // A fresh request waits for every holder and every queued request it conflicts with:
        // all of them are ahead of it (K4).
        let mut blocked = false;
        let mut older: Option<TxnId> = None;
        let blockers = self
            .holders
            .iter()
            .filter(|h| !h.mode.compatible(mode))
            .map(|h| h.txn)
            .chain(self.queue.iter().filter(|r| !r.mode.compatible(mode)).map(|r| r.txn));
        for t in blockers {
            blocked = true;
            if t < txn && older.is_none_or(|o| t < o) {
                older = Some(t);
            }
        }
        if !blocked {
            self.holders.push(Holder { txn, mode });
            return Decision::Granted { upgrade: false };
        }
        if let Some(older) = older.filter(|_| wait_die) {
            return Decision::Die { older };
        }
        if !may_wait {
            return Decision::WouldWait;
        }
        let slot = WaitSlot::new();
        self.queue.push_back(Request { txn, mode, upgrade: false, slot: Arc::clone(&slot) });
        Decision::Queued { slot, upgrade: false }
    }

    /// Grants waiting requests from the front while the front is compatible with the holders
    /// (K4). Grants always form a prefix of the queue: a request behind a blocked one
    /// conflicts with it or with the holders (K5).
    fn grant_waiters(&mut self) {
        while let Some(front) = self.queue.front() {
            let grantable = match front.mode {
                LockMode::Shared => self.holders.iter().all(|h| h.mode == LockMode::Shared),
                LockMode::Exclusive => self.holders.iter().all(|h| h.txn == front.txn),
            };
            if !grantable {
                break;
            }
            let Some(req) = self.queue.pop_front() else { break };
            match self.holders.iter_mut().find(|h| h.txn == req.txn) {
                Some(h) if req.upgrade => h.mode = req.mode,
                _ => self.holders.push(Holder { txn: req.txn, mode: req.mode }),
            }
            req.slot.grant();
        }
    }

    /// The transactions `txn`'s waiting request waits for: conflicting holders other than
    /// itself and conflicting requests ahead of it (`None` if it does not wait here).
    fn blockers_of(&self, txn: TxnId) -> Option<Vec<TxnId>> {
        let i = self.queue.iter().position(|r| r.txn == txn)?;
        let mode = self.queue[i].mode;
        Some(
            self.holders
                .iter()
                .filter(|h| h.txn != txn && !h.mode.compatible(mode))
                .map(|h| h.txn)
                .chain(self.queue.iter().take(i).filter(|a| !a.mode.compatible(mode)).map(|a| a.txn))
                .collect(),
        )
    }

    /// Drops `txn`'s hold and grants what that unblocks (K8). Returns whether it held the lock.
    fn release(&mut self, txn: TxnId) -> bool {
        let Some(i) = self.holders.iter().position(|h| h.txn == txn) else { return false };
        self.holders.swap_remove(i);
        self.grant_waiters();
        true
    }

    /// Withdraws `txn`'s waiting request (timeout, K9) and grants what that unblocks. An
    /// upgrader keeps its shared hold.
    fn cancel(&mut self, txn: TxnId) {
        self.queue.retain(|r| r.txn != txn);
        self.grant_waiters();
    }

    /// Checks the per-lock rules K2, K3, K5 and, under wait-die, the edge invariant of K6; says
    /// which one fails.
    fn check(&self, policy: DeadlockPolicy) -> Result<(), String> {
        let name = format!("lock (tree {}, key {:?})", self.tree, self.key);
        if self.is_unused() {
            return Err(format!("K13: {name} has no holders and no waiters but is still in the table"));
        }
        for (i, a) in self.holders.iter().enumerate() {
            for b in &self.holders[i + 1..] {
                if a.txn == b.txn {
                    return Err(format!("K2: {name}: {} holds it twice", a.txn));
                }
                if !a.mode.compatible(b.mode) {
                    return Err(format!(
                        "K2: {name}: {} ({}) and {} ({}) hold incompatible modes",
                        a.txn, a.mode, b.txn, b.mode
                    ));
                }
            }
        }
        for (i, r) in self.queue.iter().enumerate() {
            let held = self.holders.iter().find(|h| h.txn == r.txn);
            match (r.upgrade, held) {
                (true, Some(h)) if h.mode == LockMode::Shared && r.mode == LockMode::Exclusive && i == 0 => {}
                (true, _) => {
                    return Err(format!(
                        "K3: {name}: the upgrade of {} is not at the front or its holder is not shared",
                        r.txn
                    ))
                }
                (false, Some(_)) => {
                    return Err(format!("K3: {name}: holder {} also waits with a fresh request", r.txn))
                }
                (false, None) => {}
            }
            if self.queue.iter().take(i).any(|a| a.txn == r.txn) {
                return Err(format!("K4: {name}: {} waits twice", r.txn));
            }
            // Everything `r` waits for (it waits once, checked just above).
            let waits_for = self.blockers_of(r.txn).unwrap_or_default();
            if waits_for.is_empty() {
                return Err(format!(
                    "K5: {name}: {} waits for {} although it conflicts with no holder and no \
                     request ahead of it",
                    r.txn, r.mode
                ));
            }
            if let Some(older) =
                waits_for.iter().find(|&&t| t < r.txn).filter(|_| policy == DeadlockPolicy::WaitDie)
            {
                return Err(format!("K6: {name}: {} waits for the older {older}", r.txn));
            }
            if r.slot.state() != WAITING {
                return Err(format!("K10: {name}: {} is granted or failed but still queued", r.txn));
            }
        }
        Ok(())
    }
}

impl LockManager {
    /// A lock manager with `shards` lock-table shards (rounded up to a power of two, at least
    /// 1, at most [`MAX_SHARDS`]) and the [`DEFAULT_WAIT_TIMEOUT`]. Creating one allocates the
    /// shards only; an engine running without locking keeps no manager at all.
    #[must_use]
    pub fn new(shards: usize) -> LockManager {
        LockManager::with_hash(shards, fx_name_hash)
    }

    fn with_hash(shards: usize, hash: NameHash) -> LockManager {
        let n = shards.clamp(1, MAX_SHARDS).next_power_of_two();
        LockManager {
            shards: (0..n).map(|_| Shard { table: Mutex::new(Table::new()) }).collect(),
            // (Transactions shard by their lane: more shards than lanes would stay unused.)
            txns: (0..n.min(1 << LANE_BITS))
                .map(|_| TxnShard { txns: Mutex::new(TxnTable::default()) })
                .collect(),
            mask: n - 1,
            wait_timeout: DEFAULT_WAIT_TIMEOUT,
            policy: DeadlockPolicy::default(),
            hash,
            ranges: (0..RANGE_SLOTS).map(|_| LineCount::default()).collect(),
            spinners: LineCount::default(),
            max_spinners: std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1)) as u32,
            writers: WriterCounts::new(),
            waits_ended: AtomicBool::new(false),
            waits_ended_by: Mutex::new(String::new()),
        }
    }

    /// K9a: whether [`LockManager::end_waits`] was called.
    pub(crate) fn waits_ended(&self) -> bool {
        self.waits_ended.load(Ordering::SeqCst)
    }

    /// K9a: the error that ended the waits.
    pub(crate) fn waits_ended_by(&self) -> String {
        self.waits_ended_by.lock().clone()
    }

    /// K9a: ends every wait, now and later, because of `cause` (the first call's is kept): each
    /// waiting request, and each later one that would wait, fails with
    /// [`LockError::WaitsEnded`]; requests granted at once still are. For a database that
    /// failed: a transaction that could not be rolled back keeps its locks (its changes stay in
    /// the tree, and only its locks keep them from readers), and no one may wait for them.
    pub(crate) fn end_waits(&self, cause: &str) {
        {
            let mut by = self.waits_ended_by.lock();
            if by.is_empty() {
                *by = cause.to_owned();
            }
        }
        self.waits_ended.store(true, Ordering::SeqCst);
        for shard in &*self.shards {
            // Under the shard mutex: a waiter checks the flag under it before it parks, so it
            // either sees the flag or is parked when woken here.
            let table = shard.table.lock();
            for head in table.iter() {
                for request in head.queue.iter() {
                    request.slot.cv.notify_all();
                }
            }
        }
    }

    /// K10: watches `slot` for at most `budget` if fewer than `max_spinners` requests do so
    /// now; returns its state then (`WAITING` if undecided or not watched).
    fn spin_for_grant(&self, slot: &WaitSlot, budget: Duration) -> u8 {
        if budget.is_zero() {
            return WAITING;
        }
        let spinners = &self.spinners.0;
        if spinners.fetch_add(1, Ordering::Relaxed) >= self.max_spinners {
            spinners.fetch_sub(1, Ordering::Relaxed);
            return WAITING;
        }
        let state = slot.spin(budget);
        spinners.fetch_sub(1, Ordering::Relaxed);
        state
    }

    /// Sets how deadlocks are kept away: found and broken ([`DeadlockPolicy::Detect`], the
    /// default, K23) or prevented by wait-die ([`DeadlockPolicy::WaitDie`], K6).
    #[must_use]
    pub fn with_deadlock_policy(mut self, policy: DeadlockPolicy) -> LockManager {
        self.policy = policy;
        self
    }

    /// How deadlocks are kept away.
    #[must_use]
    pub fn deadlock_policy(&self) -> DeadlockPolicy {
        self.policy
    }

    /// Sets how long [`LockManager::lock`] waits before failing with [`LockError::Timeout`]
    /// (K9). `Duration::ZERO` makes every wait time out at once; `Duration::MAX` waits forever.
    #[must_use]
    pub fn with_wait_timeout(mut self, timeout: Duration) -> LockManager {
        self.wait_timeout = timeout;
        self
    }

    /// The wait timeout of [`LockManager::lock`].
    #[must_use]
    pub fn wait_timeout(&self) -> Duration {
        self.wait_timeout
    }

    /// The number of lock-table shards.
    #[must_use]
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Acquires `(tree, key)` in `mode` for `txn`, waiting up to the manager's wait timeout.
    /// Returns at once if `txn` already holds a covering mode (K3); an S holder asking for X
    /// upgrades. The lock stays held until [`LockManager::release_all`]`(txn)`.
    ///
    /// Never call it while holding a frame latch (K11): use [`LockManager::try_lock`] there.
    ///
    /// # Errors
    /// [`LockError::Deadlock`] if the wait is part of a deadlock and `txn` was chosen to fail
    /// (K23); under [`DeadlockPolicy::WaitDie`], [`LockError::Conflict`] if `txn` would wait
    /// for an older transaction (K6); [`LockError::Timeout`] if the wait timed out (K9);
    /// [`LockError::SystemTransaction`] for `TxnId(0)` (K12). In every case the transaction
    /// keeps the locks it had: abort it.
    pub fn lock(&self, txn: TxnId, tree: u32, key: &[u8], mode: LockMode) -> Result<(), LockError> {
        self.acquire(txn, tree, key, mode, Some(self.wait_timeout), None).map(|_| ())
    }

    /// As [`LockManager::lock`]; returns whether `txn` held the lock (in any mode) before:
    /// one lookup where `held_mode` and then `lock` take two (K15's closing keys).
    pub(crate) fn lock_noting(
        &self,
        txn: TxnId,
        tree: u32,
        key: &[u8],
        mode: LockMode,
    ) -> Result<bool, LockError> {
        self.acquire(txn, tree, key, mode, Some(self.wait_timeout), None).map(|had| had == Some(true))
    }

    /// As [`LockManager::try_lock`]: `Some(whether txn held the lock before)` if it is granted,
    /// `None` if it would have to wait (K15's closing keys under a leaf latch).
    pub(crate) fn try_lock_noting(
        &self,
        txn: TxnId,
        tree: u32,
        key: &[u8],
        mode: LockMode,
    ) -> Result<Option<bool>, LockError> {
        self.acquire(txn, tree, key, mode, None, None)
    }

    /// As [`LockManager::lock`], with this call's own wait timeout.
    ///
    /// # Errors
    /// As [`LockManager::lock`].
    pub fn lock_timeout(
        &self,
        txn: TxnId,
        tree: u32,
        key: &[u8],
        mode: LockMode,
        timeout: Duration,
    ) -> Result<(), LockError> {
        self.acquire(txn, tree, key, mode, Some(timeout), None).map(|_| ())
    }

    /// Acquires the lock only if that needs no wait: `Ok(true)` if granted (or already held),
    /// `Ok(false)` if `txn` would have to wait (nothing is queued; release your latches, then
    /// call [`LockManager::lock`], K11).
    ///
    /// # Errors
    /// Under [`DeadlockPolicy::WaitDie`], [`LockError::Conflict`] if `txn` would wait for an
    /// older transaction (K6); [`LockError::Deadlock`] if it asks to upgrade while another
    /// holder's upgrade waits and it is the younger (K23); [`LockError::SystemTransaction`]
    /// for `TxnId(0)`.
    pub fn try_lock(&self, txn: TxnId, tree: u32, key: &[u8], mode: LockMode) -> Result<bool, LockError> {
        self.acquire(txn, tree, key, mode, None, None).map(|had| had.is_some())
    }

    /// K15: whether `txn` could take `(tree, key)` exclusively at once and nobody else holds or
    /// waits for it — no head, or one that only `txn` holds — looked up under the shard mutex
    /// without creating a head or recording anything. An insert under its leaf's latch asks
    /// this of its gap's closing key instead of locking it for the insert's length.
    pub(crate) fn is_free_for(&self, txn: TxnId, tree: u32, key: &[u8]) -> Result<bool, LockError> {
        if txn == TxnId(0) {
            return Err(LockError::SystemTransaction);
        }
        let hash = (self.hash)(tree, key);
        let table = self.shards[self.shard_of(hash)].table.lock();
        Ok(table
            .find(hash, tree, key)
            .is_none_or(|h| h.queue.is_empty() && h.holders.iter().all(|x| x.txn == txn)))
    }

    /// K15: a transaction begins reading ranges of tree `tree` (its lock id): from now until
    /// the matching [`LockManager::leave_ranges`], inserts into the tree look at their gaps.
    /// Call it before the transaction reads any leaf of the range, and leave only after its
    /// locks are released.
    pub(crate) fn enter_ranges(&self, tree: u32) {
        self.ranges[tree as usize % RANGE_SLOTS].0.fetch_add(1, Ordering::SeqCst);
    }

    /// K15: the end of what [`LockManager::enter_ranges`] began.
    pub(crate) fn leave_ranges(&self, tree: u32) {
        self.ranges[tree as usize % RANGE_SLOTS].0.fetch_sub(1, Ordering::SeqCst);
    }

    /// K15: whether a transaction may be reading a range of `tree` now (`false`: none is, and
    /// an insert under its leaf's latch needs no look at its gap's closing key).
    pub(crate) fn ranges_read(&self, tree: u32) -> bool {
        self.ranges[tree as usize % RANGE_SLOTS].0.load(Ordering::SeqCst) != 0
    }

    /// Releases every lock `txn` holds (K8) and grants what that unblocks; returns how many it
    /// released. Costs O(locks held); O(1) for a transaction that holds none. Call it once the
    /// transaction has committed or rolled back, never while a lock call of the same
    /// transaction is in progress.
    pub fn release_all(&self, txn: TxnId) -> usize {
        let txns = &self.txns[self.txn_shard(txn)].txns;
        let entry = txns.lock().remove(&txn);
        let Some(TxnLocks { mut held, .. }) = entry else { return 0 };
        let n = held.len();
        // One mutex acquisition per run of locks in the same shard, in the order they were
        // taken: sorting them into fewer runs cost more than it saved, with a transaction's
        // locks spread over many shards.
        for group in held.chunk_by(|a, b| self.shard_of(a.hash) == self.shard_of(b.hash)) {
            let mut table = self.shards[self.shard_of(group[0].hash)].table.lock();
            for &h in group {
                table.release_held(txn, h, &self.writers);
            }
        }
        held.clear();
        if held.capacity() <= SPARE_HELD_MAX {
            SPARE_HELD.with(|s| s.set(held));
        }
        n
    }

    /// As [`LockManager::lock`] in exclusive mode, for a transaction about to change `key`:
    /// the lock's head then names `txn` as a writer, and `txn`'s entry keeps `writer` (once for
    /// all its heads, K17), whose undo list a snapshot that must not see its changes reads the
    /// key's committed value from. Every write takes its key's lock this way before its first
    /// change, also when it held the lock already (as a closing key). A transaction passes the
    /// same writer to every call.
    ///
    /// # Errors
    /// As [`LockManager::lock`].
    pub(crate) fn lock_to_write(
        &self,
        txn: TxnId,
        tree: u32,
        key: &[u8],
        writer: &Arc<Writer>,
    ) -> Result<(), LockError> {
        self.acquire(txn, tree, key, LockMode::Exclusive, Some(self.wait_timeout), Some(writer)).map(|_| ())
    }

    /// K18: whether a head of `(tree, key)`'s bucket may name a writer; `false` means none of
    /// them does. A head is counted before its writer's first change of the key, and uncounted
    /// when the writer lets the lock go.
    #[cfg(test)]
    pub(crate) fn may_have_writer(&self, tree: u32, key: &[u8]) -> bool {
        self.writer_counted(self.name_hash(tree, key))
    }

    /// [`LockManager::may_have_writer`] for a name whose hash the caller has.
    pub(crate) fn writer_counted(&self, hash: u64) -> bool {
        self.writers.counted(hash)
    }

    /// K18: how many heads naming a writer in the bucket of `hash` were let go so far; a plain
    /// read compares it before and after it looked (a change: a writer of its key may have
    /// rolled back and let the key go meanwhile).
    pub(crate) fn writer_releases(&self, hash: u64) -> u64 {
        self.writers.released(hash)
    }

    /// The hash of the lock name `(tree, key)`, as the table and the writers' buckets use it;
    /// the version store counts its chains by it too (K18: one hash per snapshot read).
    pub(crate) fn name_hash(&self, tree: u32, key: &[u8]) -> u64 {
        (self.hash)(tree, key)
    }

    /// K18: the writer the lock on `(tree, key)` names (its exclusive holder, about to change
    /// the key or having changed it), looked up under the shard mutex without creating a head;
    /// `hash` is the name's ([`LockManager::name_hash`]).
    ///
    /// The head names its writer's transaction; the writer is found in that transaction's entry
    /// of the transaction table, after the shard mutex is let go (K11). `None` there means the
    /// writer has not yet recorded its grant (it has made no change) or has ended (its
    /// versions are in the chains where a snapshot may need them, K19).
    pub(crate) fn writer_of(&self, hash: u64, tree: u32, key: &[u8]) -> Option<Arc<Writer>> {
        self.named_writer(hash, tree, key).flatten()
    }

    /// [`LockManager::writer_of`], telling apart a key whose head names no writer (`None`)
    /// from one whose head names a transaction whose writer is not in its entry (`Some(None)`):
    /// it has not recorded its grant yet, or it is letting its locks go (its entry leaves the
    /// table before its heads do, K8).
    pub(crate) fn named_writer(&self, hash: u64, tree: u32, key: &[u8]) -> Option<Option<Arc<Writer>>> {
        debug_assert_eq!(hash, self.name_hash(tree, key));
        let txn = {
            let table = self.shards[self.shard_of(hash)].table.lock();
            table.find(hash, tree, key)?.named_writer()?
        };
        Some(self.txns[self.txn_shard(txn)].txns.lock().get(&txn).and_then(|e| e.writer.clone()))
    }

    /// K17: names `txn` as the writer in the head of a lock it was granted after waiting;
    /// returns whether the head was not named before.
    fn name_writer_after_wait(&self, txn: TxnId, hash: u64, id: u64) -> bool {
        let mut table = self.shards[self.shard_of(hash)].table.lock();
        table.head_mut(hash, id).is_some_and(|head| head.name_writer(txn, hash, &self.writers))
    }

    /// After `txn` was granted `held` (with no shard mutex held, K11): a new hold goes to its
    /// list (K8), with `writer` kept in its entry if it has none yet; a grant with no new hold
    /// (an upgrade, or a lock held already) that newly `named` its head as the writer's keeps
    /// the writer there too (K17).
    fn granted(&self, txn: TxnId, held: HeldLock, new_hold: bool, named: bool, writer: Option<&Arc<Writer>>) {
        if new_hold {
            self.record(txn, held, writer);
        } else if let (true, Some(w)) = (named, writer) {
            let mut txns = self.txns[self.txn_shard(txn)].txns.lock();
            if let Some(entry) = txns.get_mut(&txn) {
                entry.writer.get_or_insert_with(|| Arc::clone(w));
            }
        }
    }

    /// The transaction holding the lock on `(tree, key)` exclusively right now, if any (K14):
    /// the question a read outside any transaction asks before it returns a record. Never waits;
    /// creates no head.
    #[must_use]
    pub fn exclusive_holder(&self, tree: u32, key: &[u8]) -> Option<TxnId> {
        self.holder(tree, key, |x| x.mode == LockMode::Exclusive).map(|x| x.txn)
    }

    /// The mode in which `txn` holds the lock on `(tree, key)`, if it does.
    #[must_use]
    pub fn held_mode(&self, txn: TxnId, tree: u32, key: &[u8]) -> Option<LockMode> {
        self.holder(tree, key, |x| x.txn == txn).map(|x| x.mode)
    }

    /// The first holder of the lock on `(tree, key)` that `which` picks, looked up under the
    /// shard mutex without creating a head.
    fn holder(&self, tree: u32, key: &[u8], which: impl Fn(&Holder) -> bool) -> Option<Holder> {
        let hash = (self.hash)(tree, key);
        let table = self.shards[self.shard_of(hash)].table.lock();
        table.find(hash, tree, key)?.holders.iter().copied().find(|x| which(x))
    }

    /// Releases one lock of `txn` before the transaction ends (K15: only a lock the engine took
    /// for the length of one operation, never one that protects what the transaction read or
    /// wrote) and grants what that unblocks. Returns whether `txn` held it.
    pub fn release(&self, txn: TxnId, tree: u32, key: &[u8]) -> bool {
        let hash = (self.hash)(tree, key);
        let id = {
            let mut table = self.shards[self.shard_of(hash)].table.lock();
            let Some(head) = table.find_mut(hash, tree, key) else {
                return false;
            };
            let id = head.id;
            debug_assert!(
                !head.named || !head.holders.iter().any(|x| x.txn == txn && x.mode == LockMode::Exclusive),
                "K17: a key a transaction locked to write is released with all its locks"
            );
            head.release_writer(txn, hash, &self.writers);
            if !head.release(txn) {
                return false;
            }
            table.remove_if_unused(hash, id);
            id
        };
        let mut txns = self.txns[self.txn_shard(txn)].txns.lock();
        if let Some(entry) = txns.get_mut(&txn) {
            if let Some(i) = entry.held.iter().position(|h| h.hash == hash && h.head == id) {
                entry.held.swap_remove(i);
            }
            if entry.held.is_empty() && entry.waiting.is_none() {
                txns.remove(&txn);
            }
        }
        true
    }

    /// How many locks `txn` holds.
    #[must_use]
    pub fn locks_held(&self, txn: TxnId) -> usize {
        self.txns[self.txn_shard(txn)].txns.lock().get(&txn).map_or(0, |e| e.held.len())
    }

    /// How many locks are in use (held or waited for) right now (K13).
    #[must_use]
    pub fn lock_count(&self) -> usize {
        self.shards.iter().map(|s| s.table.lock().len()).sum()
    }

    /// The counters, summed over the shards.
    #[must_use]
    pub fn stats(&self) -> LockStats {
        let mut sum = LockStats::default();
        for s in self.shards.iter() {
            let table = s.table.lock();
            sum.add(&LockStats { requests: table.requests, ..*table.rare });
        }
        sum
    }

    /// Checks the rules of `LOCKS.md` that can be checked on a snapshot of one shard at a
    /// time (K1, K2, K3, K5, K6, K13) and that the transaction table lists exactly the
    /// granted holds (K8). Meant for tests and debugging; takes every mutex in turn.
    ///
    /// # Errors
    /// The first rule found broken, as text naming the rule.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut holds: FxHashMap<TxnId, Vec<(u64, u64)>> = FxHashMap::default();
        for (s, shard) in self.shards.iter().enumerate() {
            let table = shard.table.lock();
            for head in table.iter() {
                let hash = (self.hash)(head.tree, &head.key);
                if self.shard_of(hash) != s {
                    return Err(format!("K1: lock (tree {}) is filed under another hash", head.tree));
                }
                let named = |o: &&LockHead| o.tree == head.tree && o.key == head.key;
                if table.iter().filter(named).count() > 1 {
                    return Err(format!("K1: lock (tree {}) has two heads", head.tree));
                }
                if table.head(hash, head.id).map(|h| h.id) != Some(head.id) {
                    return Err(format!("K1: lock (tree {}) cannot be found by its hash", head.tree));
                }
                head.check(self.policy)?;
                for h in &head.holders {
                    holds.entry(h.txn).or_default().push((hash, head.id));
                }
            }
        }
        for shard in self.txns.iter() {
            for (txn, entry) in shard.txns.lock().iter() {
                let mut listed: Vec<(u64, u64)> = entry.held.iter().map(|h| (h.hash, h.head)).collect();
                let mut granted = holds.remove(txn).unwrap_or_default();
                listed.sort_unstable();
                granted.sort_unstable();
                if listed != granted {
                    return Err(format!(
                        "K8: {txn} is listed with {} locks but holds {}",
                        listed.len(),
                        granted.len()
                    ));
                }
            }
        }
        if let Some((txn, granted)) = holds.into_iter().next() {
            return Err(format!("K8: {txn} holds {} locks that its list does not name", granted.len()));
        }
        Ok(())
    }

    fn shard_of(&self, hash: u64) -> usize {
        // The high bits: the table's own hash map uses the low ones.
        (hash >> 40) as usize & self.mask
    }

    fn txn_shard(&self, txn: TxnId) -> usize {
        txn_shard_of(txn, self.txns.len())
    }

    /// Adds a granted lock to `txn`'s list (K8); `writer`: the lock was taken to write, and
    /// `txn`'s entry keeps the writer if it does not yet (K17).
    fn record(&self, txn: TxnId, lock: HeldLock, writer: Option<&Arc<Writer>>) {
        let mut txns = self.txns[self.txn_shard(txn)].txns.lock();
        let entry = txns.get_or_insert_with(txn, || TxnLocks {
            held: SPARE_HELD.with(std::cell::Cell::take),
            waiting: None,
            thread: 0,
            writer: None,
        });
        entry.held.push(lock);
        entry.thread = thread_tag();
        if let (Some(w), None) = (writer, &entry.writer) {
            entry.writer = Some(Arc::clone(w));
        }
    }

    /// K23: `txn` is run by no thread now (a crash's loser whose locks the opening thread
    /// took for the background undo, RECOVERY.md R22): a waiter in the thread of its last
    /// request is not waiting for itself.
    pub(crate) fn disown(&self, txn: TxnId) {
        if let Some(entry) = self.txns[self.txn_shard(txn)].txns.lock().get_mut(&txn) {
            entry.thread = 0;
        }
    }

    /// K23: `txn` waits for `lock` (`Some`) or no longer waits (`None`).
    fn set_waiting(&self, txn: TxnId, lock: Option<HeldLock>) {
        let mut txns = self.txns[self.txn_shard(txn)].txns.lock();
        match lock {
            Some(lock) => {
                let entry = txns.get_or_insert_with(txn, TxnLocks::default);
                entry.waiting = Some(lock);
                entry.thread = thread_tag();
            }
            None => {
                if let Some(entry) = txns.get_mut(&txn) {
                    entry.waiting = None;
                    if entry.held.is_empty() {
                        txns.remove(&txn);
                    }
                }
            }
        }
    }

    /// K23: what `txn` waits for (`None` if it waits for nothing), and the thread of its last
    /// request.
    fn waits_of(&self, txn: TxnId) -> (Option<Vec<TxnId>>, u64) {
        let (lock, thread) = match self.txns[self.txn_shard(txn)].txns.lock().get(&txn) {
            Some(e) => (e.waiting, e.thread),
            None => return (None, 0),
        };
        let Some(lock) = lock else { return (None, thread) };
        let table = self.shards[self.shard_of(lock.hash)].table.lock();
        let blockers = table.head(lock.hash, lock.head).and_then(|head| head.blockers_of(txn));
        (blockers, thread)
    }

    /// K23: a cycle of waits through `start`, which has just queued (or waited long): the
    /// other transactions of it, in the order of the waits from `start` on, and whether it
    /// closes through a transaction that waits for nothing but was last used by `start`'s
    /// thread (that thread is busy waiting, so the transaction cannot end; nor can it be
    /// withdrawn). Found by a depth-first walk of the waits-for graph, one head (one shard
    /// mutex) at a time. Bounded: a walk that visits more than `DETECT_BUDGET` transactions
    /// gives up (the periodic check tries again).
    fn find_cycle(&self, start: TxnId) -> Option<(Vec<TxnId>, bool)> {
        let me = thread_tag();
        let (first, _) = self.waits_of(start);
        let mut stack = vec![first?.into_iter()];
        let mut path: Vec<TxnId> = Vec::new();
        let mut seen: rustc_hash::FxHashSet<TxnId> = rustc_hash::FxHashSet::default();
        seen.insert(start);
        while let Some(next) = stack.last_mut().map(Iterator::next) {
            let Some(b) = next else {
                stack.pop();
                path.pop();
                continue;
            };
            if b == start {
                return Some((path, false));
            }
            if !seen.insert(b) {
                continue;
            }
            if seen.len() > DETECT_BUDGET {
                return None;
            }
            let (waits, thread) = self.waits_of(b);
            path.push(b);
            match waits {
                Some(blockers) => stack.push(blockers.into_iter()),
                None if thread == me => return Some((path, true)),
                None => {
                    path.pop();
                }
            }
        }
        None
    }

    /// K23: after `txn`'s request queued (or waited a while), looks for the cycles through it
    /// and breaks them: returns a cycle (the other transactions) if `txn` must fail, having
    /// withdrawn nothing of that cycle; otherwise fails the youngest waiter of each cycle it
    /// finds, and looks again, since one request may close several cycles at once (one through
    /// each of several shared holders of the lock it waits for), until it finds none (at most
    /// `MAX_CYCLES_AT_ONCE` times; the periodic look finds any left).
    fn detect(&self, txn: TxnId) -> Option<Vec<TxnId>> {
        for _ in 0..MAX_CYCLES_AT_ONCE {
            let (cycle, through_own_thread) = self.find_cycle(txn)?;
            // The youngest fails; `txn` itself when the cycle closes through its own thread.
            let victim = cycle.iter().copied().max().filter(|&v| v > txn && !through_own_thread);
            let Some(victim) = victim else { return Some(cycle) };
            let mut others: Vec<TxnId> = cycle.iter().copied().filter(|&t| t != victim).collect();
            others.insert(0, txn);
            let lock = self.txns[self.txn_shard(victim)].txns.lock().get(&victim).and_then(|e| e.waiting);
            if let Some(lock) = lock {
                let mut table = self.shards[self.shard_of(lock.hash)].table.lock();
                if let Some(head) = table.head_mut(lock.hash, lock.head) {
                    if let Some(i) = head.queue.iter().position(|r| r.txn == victim) {
                        if let Some(req) = head.queue.remove(i) {
                            req.slot.fail(others);
                        }
                        head.grant_waiters();
                    }
                }
            }
        }
        None
    }

    /// The one request path: `wait` is the timeout, or `None` for `try_lock`. Returns `None`
    /// if `try_lock` would have to wait, else whether `txn` held the lock before. A queued
    /// request under [`DeadlockPolicy::Detect`] registers what it waits for, looks for a
    /// deadlock (K23), and looks again each time it has waited `DETECT_AGAIN` (doubling)
    /// without a grant. A queued request first watches for its grant for `SPIN_BEFORE_PARK`
    /// outside the shard mutex, then parks (K10).
    ///
    /// A granted exclusive lock's head names `writer`, if given (K17): under the shard mutex of
    /// the grant, or right after a wait.
    fn acquire(
        &self,
        txn: TxnId,
        tree: u32,
        key: &[u8],
        mode: LockMode,
        wait: Option<Duration>,
        writer: Option<&Arc<Writer>>,
    ) -> Result<Option<bool>, LockError> {
        debug_assert!(writer.is_none() || mode == LockMode::Exclusive, "K17: a writer locks exclusively");
        if txn == TxnId(0) {
            return Err(LockError::SystemTransaction);
        }
        let hash = (self.hash)(tree, key);
        let mut table = self.shards[self.shard_of(hash)].table.lock();
        table.requests += 1;
        let head = table.find_or_make(self.hash, hash, tree, key);
        let id = head.id;
        let held = HeldLock { hash, head: id };
        let decision = head.request(txn, mode, wait.is_some(), self.policy);
        let named = writer.is_some()
            && matches!(decision, Decision::AlreadyHeld | Decision::Granted { .. })
            && head.name_writer(txn, hash, &self.writers);
        let stats = &mut *table.rare;
        let (slot, upgrade) = match decision {
            Decision::AlreadyHeld | Decision::Granted { upgrade: true } => {
                drop(table);
                self.granted(txn, held, false, named, writer);
                return Ok(Some(true));
            }
            Decision::Granted { upgrade: false } => {
                drop(table);
                self.granted(txn, held, true, named, writer);
                return Ok(Some(false));
            }
            // A refused request has a blocker, so the head stays in use.
            Decision::WouldWait => return Ok(None),
            Decision::Die { older } => {
                stats.conflicts += 1;
                return Err(LockError::Conflict { txn, holder: older, tree, key: key.into(), mode });
            }
            Decision::Deadlock { other } => {
                stats.deadlocks += 1;
                return Err(LockError::Deadlock { txn, others: vec![other], tree, key: key.into(), mode });
            }
            Decision::Queued { slot, upgrade } => {
                stats.waits += 1;
                (slot, upgrade)
            }
        };
        let timeout = wait.unwrap_or(Duration::ZERO);
        let started = Instant::now();
        let deadline = started.checked_add(timeout);
        let detect = self.policy == DeadlockPolicy::Detect;
        let mut cycle = None;
        let mut check_at = None;
        if detect {
            drop(table);
            self.set_waiting(txn, Some(held));
            cycle = self.detect(txn);
            table = self.shards[self.shard_of(hash)].table.lock();
            check_at = started.checked_add(DETECT_AGAIN);
        }
        let mut again = DETECT_AGAIN;
        if cycle.is_none() {
            drop(table);
            if self.spin_for_grant(&slot, SPIN_BEFORE_PARK.min(timeout)) == GRANTED {
                if detect {
                    self.set_waiting(txn, None);
                }
                let named = writer.is_some() && self.name_writer_after_wait(txn, hash, id);
                self.granted(txn, held, !upgrade, named, writer);
                return Ok(Some(upgrade));
            }
            table = self.shards[self.shard_of(hash)].table.lock();
        }
        let outcome = loop {
            match slot.state() {
                GRANTED => break Ok(()),
                VICTIM => break Err(std::mem::take(&mut *slot.cycle.lock())),
                _ => {}
            }
            if self.waits_ended.load(Ordering::SeqCst) {
                // K9a: checked under the shard mutex, which `end_waits` takes to wake us.
                if let Some(head) = table.head_mut(hash, id) {
                    head.cancel(txn);
                }
                table.remove_if_unused(hash, id);
                drop(table);
                if detect {
                    self.set_waiting(txn, None);
                }
                let cause = self.waits_ended_by();
                return Err(LockError::WaitsEnded { txn, tree, key: key.into(), mode, cause });
            }
            if let Some(others) = cycle.take() {
                if let Some(head) = table.head_mut(hash, id) {
                    head.cancel(txn);
                }
                break Err(others);
            }
            let until = match (deadline, check_at) {
                (Some(d), Some(c)) => Some(d.min(c)),
                (d, c) => d.or(c),
            };
            let woke_by_time = match until {
                Some(u) => slot.cv.wait_until(&mut table, u).timed_out(),
                None => {
                    slot.cv.wait(&mut table);
                    false
                }
            };
            if !woke_by_time || slot.state() != WAITING {
                continue;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                if let Some(head) = table.head_mut(hash, id) {
                    head.cancel(txn);
                }
                table.remove_if_unused(hash, id);
                table.rare.timeouts += 1;
                drop(table);
                if detect {
                    self.set_waiting(txn, None);
                }
                return Err(LockError::Timeout { txn, tree, key: key.into(), mode, waited: timeout });
            }
            // The periodic look (K23): a backstop; the look at queueing finds every cycle.
            drop(table);
            cycle = self.detect(txn);
            table = self.shards[self.shard_of(hash)].table.lock();
            again = again.saturating_mul(2);
            check_at = Instant::now().checked_add(again);
        };
        let mut named = false;
        if outcome.is_err() {
            table.remove_if_unused(hash, id);
            table.rare.deadlocks += 1;
        } else if let (Some(_), Some(head)) = (writer, table.head_mut(hash, id)) {
            named = head.name_writer(txn, hash, &self.writers);
        }
        drop(table);
        if detect {
            self.set_waiting(txn, None);
        }
        match outcome {
            Ok(()) => {
                self.granted(txn, held, !upgrade, named, writer);
                Ok(Some(upgrade))
            }
            Err(others) => Err(LockError::Deadlock { txn, others, tree, key: key.into(), mode }),
        }
    }
}

impl fmt::Debug for LockManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockManager")
            .field("shards", &self.shards.len())
            .field("wait_timeout", &self.wait_timeout)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::rngs::SmallRng;
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};
    use std::sync::atomic::{AtomicI64, AtomicU64};
    use std::thread;

    const S: LockMode = LockMode::Shared;
    const X: LockMode = LockMode::Exclusive;
    /// Hang guard for waits that must end: generous, never asserted on.
    const HANG_GUARD: Duration = Duration::from_secs(60);

    /// K23: one request can close several cycles at once, one through each shared holder of
    /// the lock it waits for. The look at queueing breaks them all; it used to stop at the
    /// first, and the others held their members until the periodic look (at 16 threads on two
    /// cores, one cycle in six).
    #[test]
    fn k23_a_request_that_closes_two_cycles_breaks_both() {
        let m = LockManager::new(64);
        let (d, a, b) = (txn_number(1), txn_number(5), txn_number(6));
        // D holds `ma` and `mb` exclusively; A and B hold `l` shared.
        m.lock(d, 1, b"ma", X).unwrap();
        m.lock(d, 1, b"mb", X).unwrap();
        m.lock(a, 1, b"l", S).unwrap();
        m.lock(b, 1, b"l", S).unwrap();
        // Queued and registered as `acquire` does, without a thread to wait in.
        let queue = |t: TxnId, key: &[u8]| -> Arc<WaitSlot> {
            let hash = m.name_hash(1, key);
            let mut table = m.shards[m.shard_of(hash)].table.lock();
            let head = table.find_or_make(m.hash, hash, 1, key);
            let id = head.id;
            let Decision::Queued { slot, .. } = head.request(t, X, true, m.policy) else {
                panic!("{t} should wait for {key:?}")
            };
            drop(table);
            m.set_waiting(t, Some(HeldLock { hash, head: id }));
            // Each from a thread of its own (K23 reads a cycle through the walker's thread
            // otherwise).
            m.txns[m.txn_shard(t)].txns.lock().get_mut(&t).expect("registered").thread = u64::MAX - t.0;
            slot
        };
        let (wait_a, wait_b) = (queue(a, b"ma"), queue(b, b"mb"));
        // D, the oldest, asks for `l` exclusively: a cycle through A and one through B.
        let _wait_d = queue(d, b"l");
        assert!(m.detect(d).is_none(), "the oldest is no victim");
        assert_eq!(wait_a.state(), VICTIM, "the cycle through A is broken");
        assert_eq!(wait_b.state(), VICTIM, "the cycle through B is broken");
    }

    fn t(n: u64) -> TxnId {
        TxnId(n)
    }

    /// A wait-die manager: the K6 tests below are written against it; K23's build their own.
    fn manager() -> LockManager {
        LockManager::new(4).with_wait_timeout(HANG_GUARD).with_deadlock_policy(DeadlockPolicy::WaitDie)
    }

    fn check(lm: &LockManager) {
        if let Err(e) = lm.check_invariants() {
            panic!("{e}");
        }
    }

    /// Waits (yielding, not spinning hot) until `n` requests have queued in total; bounded by
    /// the hang guard.
    fn wait_for_waits(lm: &LockManager, n: u64) {
        let start = Instant::now();
        while lm.stats().waits < n {
            assert!(start.elapsed() < HANG_GUARD, "no request queued within the hang guard");
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// The holders of `(tree, key)`, sorted by transaction.
    fn holders_of(lm: &LockManager, tree: u32, key: &[u8]) -> Vec<(TxnId, LockMode)> {
        let hash = (lm.hash)(tree, key);
        let table = lm.shards[lm.shard_of(hash)].table.lock();
        let head = table.find(hash, tree, key);
        let mut v: Vec<_> = head.map_or(Vec::new(), |h| h.holders.iter().map(|h| (h.txn, h.mode)).collect());
        v.sort_unstable_by_key(|h| h.0);
        v
    }

    /// The waiting requests of `(tree, key)`, in queue order.
    fn waiters_of(lm: &LockManager, tree: u32, key: &[u8]) -> Vec<(TxnId, LockMode)> {
        let hash = (lm.hash)(tree, key);
        let table = lm.shards[lm.shard_of(hash)].table.lock();
        let head = table.find(hash, tree, key);
        head.map_or(Vec::new(), |h| h.queue.iter().map(|r| (r.txn, r.mode)).collect())
    }

    fn conflict_parties(e: &LockError) -> (TxnId, TxnId) {
        match e {
            LockError::Conflict { txn, holder, .. } => (*txn, *holder),
            other => panic!("expected a wait-die conflict, got {other:?}"),
        }
    }

    #[test]
    fn k2_compatibility_matrix() {
        // (held, requested, granted without waiting)
        for (held, req, ok) in [(S, S, true), (S, X, false), (X, S, false), (X, X, false)] {
            let lm = manager();
            lm.lock(t(2), 1, b"k", held).unwrap();
            // The older requester would wait (try_lock refuses); the younger one dies.
            assert_eq!(lm.try_lock(t(1), 1, b"k", req).unwrap(), ok, "{held} then {req}");
            if !ok {
                let e = lm.try_lock(t(3), 1, b"k", req).unwrap_err();
                assert_eq!(conflict_parties(&e), (t(3), t(2)));
            }
            check(&lm);
        }
    }

    #[test]
    fn k13_a_lock_head_is_at_most_two_cache_lines() {
        assert!(std::mem::size_of::<LockHead>() <= 128, "{}", std::mem::size_of::<LockHead>());
        assert_eq!(std::mem::size_of::<Option<LockHead>>(), std::mem::size_of::<LockHead>());
    }

    #[test]
    fn k13_a_shard_is_its_mutex_and_table_on_one_line_then_its_first_head() {
        assert_eq!(std::mem::size_of::<Shard>(), 192);
        assert_eq!(std::mem::align_of::<Shard>(), 64);
        let shard = Shard { table: Mutex::new(Table::new()) };
        let table = shard.table.lock();
        let at = |field: usize| field - std::ptr::from_ref(&shard) as usize;
        assert_eq!(
            at(std::ptr::from_ref(&table.first) as usize),
            64,
            "the first head starts the second line"
        );
        assert!(at(std::ptr::from_ref(&table.rare) as usize) < 64, "the counters are on the mutex's line");
        assert!(at(std::ptr::from_ref(&table.heads) as usize) < 64);
    }

    #[test]
    fn k13_heads_beyond_the_first_go_to_the_table_and_either_is_found_and_dropped() {
        // One shard: every lock shares it, so the first head is in `first`, the rest in `heads`.
        let lm = LockManager::new(1).with_wait_timeout(HANG_GUARD);
        for (i, k) in [b"a", b"b", b"c"].iter().enumerate() {
            lm.lock(t(i as u64 + 1), 1, *k, X).unwrap();
        }
        assert_eq!(lm.lock_count(), 3);
        {
            let table = lm.shards[0].table.lock();
            assert_eq!(table.first.as_ref().map(|h| &h.key[..]), Some(&b"a"[..]));
            assert_eq!(table.heads.len(), 2);
        }
        // A conflicting request finds each head wherever it is.
        for k in [b"a", b"b", b"c"] {
            assert!(!lm.try_lock(t(9), 1, k, S).unwrap());
        }
        check(&lm);
        // Dropping the first head frees `first`; the next new head goes there.
        lm.release_all(t(1));
        assert!(lm.shards[0].table.lock().first.is_none());
        lm.lock(t(4), 1, b"d", X).unwrap();
        assert_eq!(lm.shards[0].table.lock().first.as_ref().map(|h| &h.key[..]), Some(&b"d"[..]));
        assert!(!lm.try_lock(t(9), 1, b"d", S).unwrap());
        check(&lm);
        for n in [2, 3, 4] {
            lm.release_all(t(n));
        }
        assert_eq!(lm.lock_count(), 0);
        check(&lm);
    }

    #[test]
    fn rare_counters_add_up_with_the_requests_across_shards() {
        // Detection: a request that waits and times out.
        let lm = LockManager::new(4);
        lm.lock(t(1), 1, b"a", X).unwrap();
        lm.lock(t(1), 1, b"b", X).unwrap();
        assert!(!lm.try_lock(t(2), 1, b"a", X).unwrap());
        // (From another thread: a wait for a transaction of one's own thread is a deadlock, K23.)
        let e = std::thread::scope(|s| {
            s.spawn(|| lm.lock_timeout(t(2), 1, b"b", X, Duration::from_millis(1)).unwrap_err())
                .join()
                .unwrap()
        });
        assert!(matches!(e, LockError::Timeout { .. }), "{e:?}");
        assert_eq!(lm.stats(), LockStats { requests: 4, waits: 1, conflicts: 0, deadlocks: 0, timeouts: 1 });
        check(&lm);
        // Wait-die: a younger request dies.
        let lm = manager();
        lm.lock(t(1), 1, b"a", X).unwrap();
        assert!(matches!(lm.lock(t(2), 1, b"a", S), Err(LockError::Conflict { .. })));
        assert_eq!(lm.stats(), LockStats { requests: 2, waits: 0, conflicts: 1, deadlocks: 0, timeouts: 0 });
        check(&lm);
    }

    #[test]
    fn k1_same_tree_other_key_and_same_key_other_tree_do_not_conflict() {
        let lm = manager();
        lm.lock(t(1), 1, b"k", X).unwrap();
        assert!(lm.try_lock(t(2), 1, b"j", X).unwrap());
        assert!(lm.try_lock(t(2), 2, b"k", X).unwrap());
        assert!(lm.try_lock(t(2), 1, b"", X).unwrap());
        assert_eq!(lm.lock_count(), 4);
        check(&lm);
    }

    #[test]
    fn k1_hash_collisions_cause_no_false_conflicts() {
        let lm = LockManager::with_hash(4, |_, _| 42)
            .with_wait_timeout(HANG_GUARD)
            .with_deadlock_policy(DeadlockPolicy::WaitDie);
        lm.lock(t(1), 1, b"alice", X).unwrap();
        lm.lock(t(2), 1, b"bob", X).unwrap();
        lm.lock(t(3), 2, b"alice", X).unwrap();
        check(&lm);
        assert!(!lm.try_lock(t(1), 1, b"bob", S).unwrap(), "same name still conflicts");
        let e = lm.try_lock(t(4), 1, b"alice", S).unwrap_err();
        assert_eq!(conflict_parties(&e), (t(4), t(1)));
        assert_eq!(lm.release_all(t(2)), 1);
        assert!(lm.try_lock(t(4), 1, b"bob", S).unwrap(), "the right head was released");
        assert_eq!(holders_of(&lm, 1, b"alice"), vec![(t(1), X)]);
        assert_eq!(holders_of(&lm, 1, b"bob"), vec![(t(4), S)]);
        check(&lm);
        for n in 1..=4 {
            lm.release_all(t(n));
        }
        assert_eq!(lm.lock_count(), 0);
    }

    #[test]
    fn k3_re_requests_are_no_ops() {
        let lm = manager();
        lm.lock(t(1), 1, b"k", S).unwrap();
        lm.lock(t(1), 1, b"k", S).unwrap();
        lm.lock(t(1), 1, b"k", X).unwrap(); // upgrade, sole holder
        lm.lock(t(1), 1, b"k", S).unwrap(); // X covers S
        lm.lock(t(1), 1, b"k", X).unwrap();
        assert_eq!(lm.locks_held(t(1)), 1);
        assert_eq!(lm.stats(), LockStats { requests: 5, waits: 0, conflicts: 0, deadlocks: 0, timeouts: 0 });
        check(&lm);
        assert_eq!(lm.release_all(t(1)), 1);
        assert_eq!(lm.lock_count(), 0);
        assert_eq!(lm.release_all(t(1)), 0);
    }

    #[test]
    fn k3_upgrade_of_the_sole_holder_is_immediate_and_exclusive() {
        let lm = manager();
        lm.lock(t(2), 1, b"k", S).unwrap();
        lm.lock(t(2), 1, b"k", X).unwrap();
        // Now exclusive: even a shared request of an older transaction must wait.
        assert!(!lm.try_lock(t(1), 1, b"k", S).unwrap());
        check(&lm);
    }

    #[test]
    fn k8_release_all_wakes_the_waiter() {
        let lm = manager();
        lm.lock(t(5), 1, b"k", X).unwrap();
        lm.lock(t(5), 1, b"other", S).unwrap();
        thread::scope(|s| {
            let waiter = s.spawn(|| lm.lock(t(3), 1, b"k", X));
            wait_for_waits(&lm, 1);
            check(&lm);
            assert_eq!(lm.release_all(t(5)), 2);
            waiter.join().unwrap().unwrap();
        });
        assert_eq!(lm.locks_held(t(3)), 1);
        assert!(!lm.try_lock(t(1), 1, b"k", S).unwrap(), "t3 now holds X");
        check(&lm);
    }

    /// K10: two threads hand one exclusive lock back and forth, each holding it for a few
    /// microseconds, so that most grants reach a request while it watches (it then returns
    /// without taking the shard mutex again) and some after it parked. Every grant must leave
    /// its transaction the only holder, and nothing queued behind.
    #[test]
    fn k10_grants_reach_watching_and_parked_requests_alike() {
        let lm = LockManager::new(4).with_wait_timeout(HANG_GUARD);
        let inside = AtomicU32::new(0);
        let rounds = if cfg!(miri) { 20 } else { 3_000 };
        thread::scope(|s| {
            for th in 0..2u64 {
                let (lm, inside) = (&lm, &inside);
                s.spawn(move || {
                    for i in 0..rounds {
                        let txn = t(1 + th + 2 * i);
                        lm.lock(txn, 1, b"k", X).unwrap();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "K2: two exclusive holders");
                        // Hold it a little, longer now and then than the watch lasts.
                        let hold =
                            if i % 64 == 0 { Duration::from_micros(2_000) } else { Duration::from_micros(2) };
                        let until = Instant::now() + hold;
                        while Instant::now() < until {
                            std::hint::spin_loop();
                        }
                        inside.fetch_sub(1, Ordering::SeqCst);
                        assert_eq!(lm.release_all(txn), 1);
                    }
                });
            }
        });
        assert_eq!(lm.lock_count(), 0, "every head went with its last holder");
        assert_eq!(lm.spinners.0.load(Ordering::Relaxed), 0, "every watcher counted itself out");
        check(&lm);
    }

    #[test]
    fn k4_shared_waiters_behind_an_exclusive_holder_are_granted_together() {
        let lm = manager();
        lm.lock(t(9), 1, b"k", X).unwrap();
        thread::scope(|s| {
            let a = s.spawn(|| lm.lock(t(1), 1, b"k", S));
            wait_for_waits(&lm, 1);
            let b = s.spawn(|| lm.lock(t(2), 1, b"k", S));
            wait_for_waits(&lm, 2);
            check(&lm);
            assert_eq!(waiters_of(&lm, 1, b"k"), vec![(t(1), S), (t(2), S)]);
            lm.release_all(t(9));
            a.join().unwrap().unwrap();
            b.join().unwrap().unwrap();
        });
        assert_eq!((lm.locks_held(t(1)), lm.locks_held(t(2))), (1, 1));
        check(&lm);
    }

    #[test]
    fn k4_a_waiting_exclusive_is_not_overtaken_by_a_later_shared() {
        let lm = manager();
        lm.lock(t(9), 1, b"k", S).unwrap();
        thread::scope(|s| {
            let writer = s.spawn(|| lm.lock(t(2), 1, b"k", X));
            wait_for_waits(&lm, 1);
            // Compatible with the holder, but an X waits ahead: the older reader would queue...
            assert!(!lm.try_lock(t(1), 1, b"k", S).unwrap());
            assert_eq!(waiters_of(&lm, 1, b"k"), vec![(t(2), X)], "try_lock queues nothing");
            // ...and a reader younger than the waiting writer dies.
            let e = lm.try_lock(t(3), 1, b"k", S).unwrap_err();
            assert_eq!(conflict_parties(&e), (t(3), t(2)));
            lm.release_all(t(9));
            writer.join().unwrap().unwrap();
        });
        check(&lm);
    }

    #[test]
    fn k6_older_waits_for_younger_and_younger_dies_at_once() {
        let lm = manager();
        lm.lock(t(5), 1, b"k", X).unwrap();
        let e = lm.lock(t(6), 1, b"k", S).unwrap_err();
        assert_eq!(conflict_parties(&e), (t(6), t(5)));
        assert_eq!(lm.stats().conflicts, 1);
        assert_eq!(lm.locks_held(t(6)), 0);
        thread::scope(|s| {
            let older = s.spawn(|| lm.lock(t(4), 1, b"k", S));
            wait_for_waits(&lm, 1);
            lm.release_all(t(5));
            older.join().unwrap().unwrap();
        });
        assert_eq!(lm.stats().waits, 1);
        check(&lm);
    }

    #[test]
    fn k6_conflict_names_the_oldest_blocker() {
        let lm = manager();
        lm.lock(t(4), 1, b"k", S).unwrap();
        lm.lock(t(2), 1, b"k", S).unwrap();
        lm.lock(t(3), 1, b"k", S).unwrap();
        let e = lm.lock(t(7), 1, b"k", X).unwrap_err();
        assert_eq!(conflict_parties(&e), (t(7), t(2)));
        assert!(e.to_string().contains("abort and retry the transaction"), "{e}");
    }

    #[test]
    fn k6_two_upgraders_the_older_waits_and_the_younger_dies() {
        let lm = manager();
        lm.lock(t(1), 1, b"k", S).unwrap();
        lm.lock(t(2), 1, b"k", S).unwrap();
        thread::scope(|s| {
            let older = s.spawn(|| lm.lock(t(1), 1, b"k", X));
            wait_for_waits(&lm, 1);
            check(&lm);
            let e = lm.lock(t(2), 1, b"k", X).unwrap_err();
            assert_eq!(conflict_parties(&e), (t(2), t(1)));
            assert_eq!(lm.locks_held(t(2)), 1, "the dead upgrader keeps its S until release_all");
            lm.release_all(t(2));
            older.join().unwrap().unwrap();
        });
        assert_eq!(holders_of(&lm, 1, b"k"), vec![(t(1), X)]);
        check(&lm);
    }

    #[test]
    fn k6_two_upgraders_the_younger_first_dies_and_the_older_then_gets_x() {
        let lm = manager();
        lm.lock(t(1), 1, b"k", S).unwrap();
        lm.lock(t(2), 1, b"k", S).unwrap();
        let e = lm.lock(t(2), 1, b"k", X).unwrap_err();
        assert_eq!(conflict_parties(&e), (t(2), t(1)));
        thread::scope(|s| {
            let older = s.spawn(|| lm.lock(t(1), 1, b"k", X));
            wait_for_waits(&lm, 1);
            lm.release_all(t(2));
            older.join().unwrap().unwrap();
        });
        assert_eq!(lm.try_lock(t(3), 1, b"k", S).map_err(|e| conflict_parties(&e)), Err((t(3), t(1))));
        check(&lm);
    }

    #[test]
    fn k3_an_upgrade_goes_ahead_of_waiting_requests() {
        let lm = manager();
        lm.lock(t(5), 1, b"k", S).unwrap();
        lm.lock(t(6), 1, b"k", S).unwrap();
        thread::scope(|s| {
            let writer = s.spawn(|| lm.lock(t(2), 1, b"k", X));
            wait_for_waits(&lm, 1);
            let upgrader = s.spawn(|| lm.lock(t(5), 1, b"k", X));
            wait_for_waits(&lm, 2);
            check(&lm);
            assert_eq!(waiters_of(&lm, 1, b"k"), vec![(t(5), X), (t(2), X)]);
            // t6 leaves: the upgrade (front) is granted, the older writer still waits.
            lm.release_all(t(6));
            upgrader.join().unwrap().unwrap();
            assert_eq!(holders_of(&lm, 1, b"k"), vec![(t(5), X)]);
            assert_eq!(waiters_of(&lm, 1, b"k"), vec![(t(2), X)]);
            check(&lm);
            lm.release_all(t(5));
            writer.join().unwrap().unwrap();
        });
        assert_eq!(lm.locks_held(t(2)), 1);
        check(&lm);
    }

    #[test]
    fn k9_timeout_withdraws_the_request_and_keeps_other_locks() {
        let lm = manager();
        lm.lock(t(5), 1, b"k", S).unwrap();
        lm.lock(t(2), 1, b"mine", X).unwrap();
        lm.lock(t(2), 1, b"k", S).unwrap();
        // The upgrade waits for t5, which never ends.
        let e = lm.lock_timeout(t(2), 1, b"k", X, Duration::from_millis(5)).unwrap_err();
        assert!(matches!(e, LockError::Timeout { txn, mode: X, .. } if txn == t(2)), "{e:?}");
        assert_eq!(lm.stats().timeouts, 1);
        assert_eq!(lm.locks_held(t(2)), 2, "the S hold and the other lock stay");
        check(&lm);
        // Zero timeout: never waits.
        // (Wait-die: under detection this one thread's wait for its own t5 is a deadlock, K23.)
        let lm0 = LockManager::new(1)
            .with_wait_timeout(Duration::ZERO)
            .with_deadlock_policy(DeadlockPolicy::WaitDie);
        lm0.lock(t(5), 1, b"k", X).unwrap();
        assert!(matches!(lm0.lock(t(1), 1, b"k", X), Err(LockError::Timeout { .. })));
        check(&lm0);
        lm0.release_all(t(5));
        assert_eq!(lm0.lock_count(), 0);
    }

    /// On the head itself (no threads, so the order of timeout and queueing is fixed): the
    /// writer's withdrawal lets the reader behind it join the shared holder.
    #[test]
    fn k9_a_withdrawn_waiter_unblocks_those_behind_it() {
        let mut head = LockHead::new(0, 1, b"k");
        assert!(matches!(
            head.request(t(5), S, true, DeadlockPolicy::WaitDie),
            Decision::Granted { upgrade: false }
        ));
        let Decision::Queued { slot: writer, .. } = head.request(t(2), X, true, DeadlockPolicy::WaitDie)
        else {
            panic!("the older writer must queue behind the shared holder");
        };
        let Decision::Queued { slot: reader, .. } = head.request(t(1), S, true, DeadlockPolicy::WaitDie)
        else {
            panic!("the reader must queue behind the waiting writer (K4)");
        };
        head.check(DeadlockPolicy::WaitDie).unwrap();
        head.cancel(t(2));
        assert!(reader.state() == GRANTED && writer.state() == WAITING);
        let holders: Vec<_> = head.holders.iter().map(|h| (h.txn, h.mode)).collect();
        assert_eq!(holders, vec![(t(5), S), (t(1), S)]);
        assert!(head.queue.is_empty());
        head.check(DeadlockPolicy::WaitDie).unwrap();
    }

    #[test]
    fn k15_a_closing_key_is_free_for_an_insert_only_if_no_one_else_holds_or_waits_for_it() {
        let lm = manager();
        assert_eq!(lm.is_free_for(t(1), 1, b"k"), Ok(true), "no head");
        assert_eq!(lm.lock_count(), 0, "the look made no head");
        lm.lock(t(1), 1, b"k", LockMode::Shared).unwrap();
        assert_eq!(lm.is_free_for(t(1), 1, b"k"), Ok(true), "only its own hold");
        assert_eq!(lm.is_free_for(t(2), 1, b"k"), Ok(false), "another's shared hold");
        lm.lock(t(2), 1, b"k", LockMode::Shared).unwrap();
        assert_eq!(lm.is_free_for(t(1), 1, b"k"), Ok(false), "two holders");
        lm.release_all(t(2));
        lm.release_all(t(1));
        // A waiter behind its own hold: not free either (K4: it would queue behind it). The
        // waiter is the older, so wait-die lets it wait.
        lm.lock(t(5), 1, b"k", LockMode::Shared).unwrap();
        let lm = Arc::new(lm);
        let waiter = {
            let lm = Arc::clone(&lm);
            std::thread::spawn(move || lm.lock(t(4), 1, b"k", LockMode::Exclusive))
        };
        wait_for_waits(&lm, 1);
        assert_eq!(lm.is_free_for(t(5), 1, b"k"), Ok(false), "a waiter queued");
        assert_eq!(lm.locks_held(t(5)), 1, "the look took nothing");
        lm.release_all(t(5));
        waiter.join().unwrap().unwrap();
        lm.release_all(t(4));
        assert_eq!(lm.is_free_for(TxnId(0), 1, b"k"), Err(LockError::SystemTransaction));
        check(&lm);
    }

    #[test]
    fn k14_k15_exclusive_holders_are_visible_and_one_lock_can_be_released_early() {
        let lm = manager();
        assert_eq!(lm.exclusive_holder(1, b"a"), None);
        lm.lock(t(1), 1, b"a", S).unwrap();
        assert_eq!(lm.exclusive_holder(1, b"a"), None, "a shared hold is no uncommitted change");
        lm.lock(t(1), 1, b"next", X).unwrap();
        assert_eq!(lm.exclusive_holder(1, b"next"), Some(t(1)));
        assert_eq!(lm.held_mode(t(1), 1, b"next"), Some(X));
        assert_eq!(lm.held_mode(t(2), 1, b"next"), None);
        check(&lm);
        // An older transaction waits for a closing-key lock; releasing it alone grants it.
        let lm2 = Arc::new(manager());
        lm2.lock(t(5), 1, b"next", X).unwrap();
        lm2.lock(t(5), 1, b"key", X).unwrap();
        let w = {
            let lm2 = Arc::clone(&lm2);
            std::thread::spawn(move || lm2.lock(t(3), 1, b"next", S))
        };
        wait_for_waits(&lm2, 1);
        assert!(lm2.release(t(5), 1, b"next"));
        w.join().unwrap().unwrap();
        assert!(!lm2.release(t(5), 1, b"next"), "released once");
        assert_eq!(lm2.locks_held(t(5)), 1, "the key's own lock stays");
        check(&lm2);
        lm2.release_all(t(3));
        lm2.release_all(t(5));
        assert_eq!(lm2.lock_count(), 0);
        check(&lm2);
    }

    #[test]
    fn k12_transaction_zero_takes_no_locks() {
        let lm = manager();
        assert_eq!(lm.lock(TxnId(0), 1, b"k", S), Err(LockError::SystemTransaction));
        assert_eq!(lm.try_lock(TxnId(0), 1, b"k", X), Err(LockError::SystemTransaction));
        assert_eq!((lm.lock_count(), lm.stats().requests), (0, 0));
    }

    // ---- Randomized schedules of one lock head (the state machine, without threads) ----

    #[derive(Clone, Debug)]
    enum HeadOp {
        Request { txn: u64, mode: LockMode, wait: bool },
        Release { txn: u64 },
        Timeout { txn: u64 },
    }

    fn mode_strategy() -> impl Strategy<Value = LockMode> {
        prop_oneof![Just(S), Just(X)]
    }

    fn head_op() -> impl Strategy<Value = HeadOp> {
        prop_oneof![
            5 => (1..=6u64, mode_strategy(), prop::bool::weighted(0.8))
                .prop_map(|(txn, mode, wait)| HeadOp::Request { txn, mode, wait }),
            3 => (1..=6u64).prop_map(|txn| HeadOp::Release { txn }),
            1 => (1..=6u64).prop_map(|txn| HeadOp::Timeout { txn }),
        ]
    }

    /// Parked requests of the model: transaction -> (mode asked for, its slot).
    type Parked = FxHashMap<TxnId, (LockMode, Arc<WaitSlot>)>;

    /// Moves granted requests out of `parked` (checking the grant is real: the transaction now
    /// holds a covering mode) and checks that the rest are exactly the queue, then the head's
    /// invariants.
    fn settle(head: &LockHead, parked: &mut Parked, policy: DeadlockPolicy) -> Result<(), TestCaseError> {
        let mut granted = Vec::new();
        for (&txn, (mode, slot)) in parked.iter() {
            if slot.state() == GRANTED {
                let h = head.holders.iter().find(|h| h.txn == txn);
                prop_assert!(h.is_some_and(|h| h.mode.covers(*mode)), "K10: {txn} woken without its lock");
                granted.push(txn);
            }
            if slot.state() == VICTIM {
                // K23: only a waiting upgrade is failed by a head alone (by a younger one's).
                prop_assert!(policy == DeadlockPolicy::Detect, "a victim under wait-die");
                prop_assert!(
                    head.holders.iter().any(|h| h.txn == txn && h.mode == S),
                    "K23: victim {txn} was no upgrader"
                );
                granted.push(txn);
            }
        }
        for txn in granted {
            parked.remove(&txn);
        }
        let mut queued: Vec<TxnId> = head.queue.iter().map(|r| r.txn).collect();
        let mut expected: Vec<TxnId> = parked.keys().copied().collect();
        queued.sort_unstable();
        expected.sort_unstable();
        prop_assert_eq!(queued, expected, "queued requests != parked transactions");
        if !head.is_unused() {
            head.check(policy).map_err(TestCaseError::fail)?;
        }
        Ok(())
    }

    /// Whom a request of `txn` for `mode` would wait for, by K3/K4, computed from scratch.
    fn blockers(head: &LockHead, txn: TxnId, mode: LockMode) -> Vec<TxnId> {
        if head.holders.iter().any(|h| h.txn == txn) {
            head.holders.iter().filter(|h| h.txn != txn).map(|h| h.txn).collect()
        } else {
            head.holders
                .iter()
                .filter(|h| !h.mode.compatible(mode))
                .map(|h| h.txn)
                .chain(head.queue.iter().filter(|r| !r.mode.compatible(mode)).map(|r| r.txn))
                .collect()
        }
    }

    fn run_head_schedule(ops: &[HeadOp], policy: DeadlockPolicy) -> Result<(), TestCaseError> {
        let detect = policy == DeadlockPolicy::Detect;
        let mut head = LockHead::new(0, 1, b"k");
        let mut parked = Parked::default();
        for op in ops {
            match *op {
                HeadOp::Request { txn, mode, wait } => {
                    let txn = t(txn);
                    if parked.contains_key(&txn) {
                        continue; // its thread is parked: it cannot ask for anything
                    }
                    let own = head.holders.iter().find(|h| h.txn == txn).map(|h| h.mode);
                    let blockers = blockers(&head, txn, mode);
                    let oldest_older = blockers.iter().copied().filter(|&b| b < txn).min();
                    let (holders, queue) = (head.holders.len(), head.queue.len());
                    let waiting_upgrade = head.queue.front().filter(|r| r.upgrade).map(|r| r.txn);
                    match head.request(txn, mode, wait, policy) {
                        Decision::AlreadyHeld => prop_assert!(own.is_some_and(|m| m.covers(mode))),
                        Decision::Granted { upgrade } => {
                            prop_assert!(blockers.is_empty(), "granted over {blockers:?}");
                            prop_assert_eq!(upgrade, own.is_some());
                            let now = head.holders.iter().find(|h| h.txn == txn);
                            prop_assert!(now.is_some_and(|h| h.mode == mode));
                        }
                        Decision::Die { older } => {
                            prop_assert!(!detect, "K23: a death without a deadlock");
                            prop_assert_eq!(Some(older), oldest_older, "K6: wrong or no older blocker");
                            prop_assert_eq!((holders, queue), (head.holders.len(), head.queue.len()));
                        }
                        Decision::Deadlock { other } => {
                            prop_assert!(
                                detect && wait && own.is_some(),
                                "K23: a deadlock of no two upgrades"
                            );
                            prop_assert_eq!(Some(other), waiting_upgrade.filter(|&u| u < txn));
                            prop_assert_eq!((holders, queue), (head.holders.len(), head.queue.len()));
                        }
                        Decision::WouldWait => {
                            prop_assert!(!wait && !blockers.is_empty() && (detect || oldest_older.is_none()));
                            prop_assert_eq!((holders, queue), (head.holders.len(), head.queue.len()));
                        }
                        Decision::Queued { slot, upgrade } => {
                            prop_assert!(wait && !blockers.is_empty() && (detect || oldest_older.is_none()));
                            prop_assert_eq!(upgrade, own.is_some());
                            parked.insert(txn, (mode, slot));
                        }
                    }
                }
                HeadOp::Release { txn } => {
                    let txn = t(txn);
                    if parked.contains_key(&txn) {
                        continue;
                    }
                    let held = head.holders.iter().any(|h| h.txn == txn);
                    prop_assert_eq!(head.release(txn), held);
                }
                HeadOp::Timeout { txn } => {
                    if parked.remove(&t(txn)).is_some() {
                        let held = head.holders.iter().find(|h| h.txn == t(txn)).map(|h| h.mode);
                        head.cancel(t(txn));
                        let after = head.holders.iter().find(|h| h.txn == t(txn)).map(|h| h.mode);
                        prop_assert_eq!(held, after, "K9: a timeout changes no hold");
                    }
                }
            }
            settle(&head, &mut parked, policy)?;
        }
        // Liveness: once the transactions that are not parked end, every parked one gets its
        // lock and the head empties.
        for _ in 0..64 {
            if head.is_unused() {
                break;
            }
            let Some(next) = head.holders.iter().map(|h| h.txn).find(|txn| !parked.contains_key(txn)) else {
                return Err(TestCaseError::fail("stuck: every holder is parked"));
            };
            head.release(next);
            settle(&head, &mut parked, policy)?;
        }
        prop_assert!(head.is_unused() && parked.is_empty(), "the head did not drain");
        Ok(())
    }

    proptest! {
        /// K2 (holders compatible, an X holder alone), K3 (one upgrade, at the front), K5 (no
        /// missed grant), K6 (every waits-for edge goes from older to younger), K9, K10 (every
        /// woken request holds its lock), and liveness at the end.
        #[test]
        fn k5_k6_head_invariants_hold_over_random_schedules(ops in prop::collection::vec(head_op(), 1..120)) {
            run_head_schedule(&ops, DeadlockPolicy::WaitDie)?;
        }

        /// The same under deadlock detection: nothing dies, every conflicting request queues,
        /// and of two upgrades the younger fails (K23).
        #[test]
        fn k23_head_invariants_hold_over_random_schedules(ops in prop::collection::vec(head_op(), 1..120)) {
            run_head_schedule(&ops, DeadlockPolicy::Detect)?;
        }
    }

    // ---- The manager against a reference model (try_lock only: no waiting, one thread) ----

    #[derive(Clone, Debug)]
    enum ModelOp {
        TryLock { txn: u64, tree: u32, key: usize, mode: LockMode },
        ReleaseAll { txn: u64 },
    }

    const KEYS: [&[u8]; 4] = [b"", b"a", b"b", b"ab"];

    fn model_op() -> impl Strategy<Value = ModelOp> {
        prop_oneof![
            4 => (1..=5u64, 1..=2u32, 0..KEYS.len(), mode_strategy())
                .prop_map(|(txn, tree, key, mode)| ModelOp::TryLock { txn, tree, key, mode }),
            1 => (1..=5u64).prop_map(|txn| ModelOp::ReleaseAll { txn }),
        ]
    }

    fn run_model(lm: &LockManager, ops: &[ModelOp]) -> Result<(), TestCaseError> {
        let mut model: std::collections::BTreeMap<(u32, usize), Vec<(TxnId, LockMode)>> = Default::default();
        for op in ops {
            match *op {
                ModelOp::TryLock { txn, tree, key, mode } => {
                    let txn = t(txn);
                    let holders = model.entry((tree, key)).or_default();
                    let own = holders.iter().position(|h| h.0 == txn);
                    let blockers: Vec<TxnId> = holders
                        .iter()
                        .filter(|h| h.0 != txn && (own.is_some() || !h.1.compatible(mode)))
                        .map(|h| h.0)
                        .collect();
                    let expected = if own.is_some_and(|i| holders[i].1.covers(mode)) {
                        Ok(true)
                    } else if blockers.is_empty() {
                        match own {
                            Some(i) => holders[i].1 = mode,
                            None => holders.push((txn, mode)),
                        }
                        Ok(true)
                    } else if let Some(older) = blockers
                        .iter()
                        .copied()
                        .filter(|&b| b < txn && lm.deadlock_policy() == DeadlockPolicy::WaitDie)
                        .min()
                    {
                        Err((txn, older))
                    } else {
                        Ok(false)
                    };
                    let got = lm.try_lock(txn, tree, KEYS[key], mode).map_err(|e| conflict_parties(&e));
                    prop_assert_eq!(got, expected, "{:?}", op);
                }
                ModelOp::ReleaseAll { txn } => {
                    let mut n = 0;
                    for holders in model.values_mut() {
                        let before = holders.len();
                        holders.retain(|h| h.0 != t(txn));
                        n += before - holders.len();
                    }
                    prop_assert_eq!(lm.release_all(t(txn)), n);
                }
            }
            model.retain(|_, holders| !holders.is_empty());
            lm.check_invariants().map_err(TestCaseError::fail)?;
            prop_assert_eq!(lm.lock_count(), model.len(), "K13: unused heads must go");
            for txn in 1..=5 {
                let n = model.values().filter(|hs| hs.iter().any(|h| h.0 == t(txn))).count();
                prop_assert_eq!(lm.locks_held(t(txn)), n);
            }
        }
        Ok(())
    }

    proptest! {
        /// Grants, re-requests, upgrades, refusals, deaths (with the oldest blocker named, under
        /// wait-die) and releases match a model, with the real hash and with every name
        /// colliding (K1); under deadlock detection `try_lock` never fails (K23).
        #[test]
        fn k1_k3_k6_manager_matches_model(
            ops in prop::collection::vec(model_op(), 1..100),
            collide in any::<bool>(),
            wait_die in any::<bool>(),
        ) {
            let lm = if collide { LockManager::with_hash(2, |_, _| 7) } else { LockManager::new(2) };
            let policy = if wait_die { DeadlockPolicy::WaitDie } else { DeadlockPolicy::Detect };
            run_model(&lm.with_deadlock_policy(policy), &ops)?;
        }
    }

    // ---- Threads: bank transfers and audits (K6, K7, K8 end to end) ----

    /// K threads run transactions over M accounts: transfers lock two random accounts (X, or
    /// S then upgrade) in random order and move money in two steps; audits lock every account
    /// S in random order and check the total. A dead transaction releases its locks and
    /// retries with the same id (so it ages). Checks: no audit sees a partial transfer, no
    /// writer overlaps another holder of its account, the total is unchanged, nothing times out
    /// (no deadlock: the hang guard is the timeout), and the table ends empty.
    #[test]
    fn k7_transfers_and_audits_keep_the_total_without_deadlock() {
        transfers_and_audits(DeadlockPolicy::WaitDie);
    }

    /// The same under deadlock detection (K23): deadlocks happen (transfers lock in random
    /// order) and each fails exactly one request; nothing hangs or times out.
    #[test]
    fn k23_transfers_and_audits_keep_the_total_and_break_every_deadlock() {
        transfers_and_audits(DeadlockPolicy::Detect);
    }

    fn transfers_and_audits(policy: DeadlockPolicy) {
        const THREADS: u64 = 4;
        const ACCOUNTS: usize = 6;
        const TXNS_PER_THREAD: usize = 300;
        const INITIAL: i64 = 1_000;
        let lm = LockManager::new(4).with_wait_timeout(HANG_GUARD).with_deadlock_policy(policy);
        let balances: Vec<AtomicI64> = (0..ACCOUNTS).map(|_| AtomicI64::new(INITIAL)).collect();
        // The transaction writing an account right now (0: none).
        let writer: Vec<AtomicU64> = (0..ACCOUNTS).map(|_| AtomicU64::new(0)).collect();
        let next_txn = AtomicU64::new(1);
        let total = INITIAL * ACCOUNTS as i64;
        let key = |a: usize| (a as u32).to_be_bytes();

        let attempt = |txn: TxnId, rng: &mut SmallRng| -> Result<(), LockError> {
            if rng.gen_bool(0.25) {
                let mut order: Vec<usize> = (0..ACCOUNTS).collect();
                order.shuffle(rng);
                let mut sum = 0;
                for &a in &order {
                    lm.lock(txn, 1, &key(a), S)?;
                    assert_eq!(writer[a].load(Ordering::SeqCst), 0, "K2: a writer overlaps a reader");
                    sum += balances[a].load(Ordering::SeqCst);
                }
                assert_eq!(sum, total, "an audit saw a partial transfer");
                return Ok(());
            }
            let from = rng.gen_range(0..ACCOUNTS);
            let to = (from + rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
            if rng.gen_bool(0.5) {
                lm.lock(txn, 1, &key(from), S)?;
                lm.lock(txn, 1, &key(to), S)?;
            }
            lm.lock(txn, 1, &key(from), X)?;
            lm.lock(txn, 1, &key(to), X)?;
            let amount = rng.gen_range(1..=50);
            for (a, delta) in [(from, -amount), (to, amount)] {
                assert_eq!(writer[a].swap(txn.0, Ordering::SeqCst), 0, "K2: two writers");
                let v = balances[a].load(Ordering::SeqCst);
                thread::yield_now();
                balances[a].store(v + delta, Ordering::SeqCst);
                assert_eq!(writer[a].swap(0, Ordering::SeqCst), txn.0, "K2: two writers");
            }
            Ok(())
        };

        let deaths = AtomicU64::new(0);
        thread::scope(|s| {
            for seed in 0..THREADS {
                let (lm, attempt, deaths, next_txn) = (&lm, &attempt, &deaths, &next_txn);
                s.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(seed);
                    for _ in 0..TXNS_PER_THREAD {
                        let txn = TxnId(next_txn.fetch_add(1, Ordering::SeqCst));
                        loop {
                            match attempt(txn, &mut rng) {
                                Ok(()) => break,
                                Err(LockError::Conflict { .. } | LockError::Deadlock { .. }) => {
                                    deaths.fetch_add(1, Ordering::SeqCst);
                                    lm.release_all(txn);
                                    thread::yield_now();
                                }
                                Err(e) => panic!("{e}"),
                            }
                        }
                        lm.release_all(txn);
                    }
                });
            }
        });
        let stats = lm.stats();
        assert_eq!(balances.iter().map(|b| b.load(Ordering::SeqCst)).sum::<i64>(), total);
        assert_eq!(stats.timeouts, 0);
        assert_eq!(stats.conflicts + stats.deadlocks, deaths.load(Ordering::SeqCst));
        match policy {
            DeadlockPolicy::WaitDie => assert_eq!(stats.deadlocks, 0),
            DeadlockPolicy::Detect => assert_eq!(stats.conflicts, 0),
        }
        assert_eq!(lm.lock_count(), 0, "K13: every head is gone");
        check(&lm);
    }

    fn detector() -> LockManager {
        LockManager::new(4).with_wait_timeout(HANG_GUARD)
    }

    /// Waits until `txn` waits in `lm` (its request is queued and registered, K23).
    fn wait_until_waiting(lm: &LockManager, txn: TxnId) {
        let start = Instant::now();
        while lm.waits_of(txn).0.is_none() {
            assert!(start.elapsed() < HANG_GUARD, "{txn} never waited");
            thread::sleep(Duration::from_millis(1));
        }
    }

    fn deadlock_parties(e: &LockError) -> (TxnId, Vec<TxnId>) {
        match e {
            LockError::Deadlock { txn, others, .. } => (*txn, others.clone()),
            other => panic!("expected a deadlock, got {other:?}"),
        }
    }

    /// K23: under detection an older transaction waits for a younger one (no death), and a
    /// request that closes a cycle of two fails at once when it is the younger.
    #[test]
    fn k23_the_younger_closing_a_cycle_fails_and_the_older_gets_its_lock() {
        let lm = detector();
        lm.lock(t(1), 1, b"a", X).unwrap();
        thread::scope(|s| {
            let younger = s.spawn(|| {
                lm.lock(t(2), 1, b"b", X).unwrap();
                lm.lock(t(2), 1, b"a", S)
            });
            wait_until_waiting(&lm, t(2));
            // t1 (older) waits for t2 (younger): nothing dies; the cycle is closed here, and
            // the victim is t2, which is waiting.
            let older = s.spawn(|| lm.lock(t(1), 1, b"b", X));
            let e = younger.join().unwrap().unwrap_err();
            assert_eq!(deadlock_parties(&e), (t(2), vec![t(1)]));
            check(&lm);
            lm.release_all(t(2));
            older.join().unwrap().unwrap();
        });
        assert_eq!(lm.stats().deadlocks, 1);
        assert_eq!(lm.stats().conflicts, 0);
        assert_eq!(holders_of(&lm, 1, b"b"), vec![(t(1), X)]);
        check(&lm);
    }

    /// K23: when the younger transaction waits first and the older closes the cycle, the
    /// younger (already waiting) is the one withdrawn.
    #[test]
    fn k23_the_older_closing_a_cycle_withdraws_the_younger_waiter() {
        let lm = detector();
        lm.lock(t(1), 1, b"a", X).unwrap();
        thread::scope(|s| {
            let younger = s.spawn(|| {
                lm.lock(t(3), 1, b"b", X).unwrap();
                lm.lock(t(3), 1, b"a", X)
            });
            wait_until_waiting(&lm, t(3));
            let older = s.spawn(|| lm.lock(t(1), 1, b"b", S));
            let e = younger.join().unwrap().unwrap_err();
            assert_eq!(deadlock_parties(&e).0, t(3));
            lm.release_all(t(3));
            older.join().unwrap().unwrap();
        });
        assert_eq!(lm.stats().deadlocks, 1);
        check(&lm);
        lm.release_all(t(1));
        assert_eq!(lm.lock_count(), 0);
    }

    /// K23: a cycle of three transactions on three threads; exactly the youngest fails.
    #[test]
    fn k23_a_cycle_of_three_fails_only_its_youngest() {
        let lm = detector();
        for (n, k) in [(1, b"a"), (2, b"b"), (3, b"c")] {
            lm.lock(t(n), 1, k, X).unwrap();
        }
        thread::scope(|s| {
            let one = s.spawn(|| lm.lock(t(1), 1, b"b", X));
            wait_until_waiting(&lm, t(1));
            let three = s.spawn(|| lm.lock(t(3), 1, b"a", X));
            wait_until_waiting(&lm, t(3));
            let two = s.spawn(|| lm.lock(t(2), 1, b"c", X));
            let e = three.join().unwrap().unwrap_err();
            let (victim, mut others) = deadlock_parties(&e);
            others.sort_unstable();
            assert_eq!((victim, others), (t(3), vec![t(1), t(2)]));
            lm.release_all(t(3));
            two.join().unwrap().unwrap();
            lm.release_all(t(2));
            one.join().unwrap().unwrap();
        });
        assert_eq!(lm.stats().deadlocks, 1);
        check(&lm);
    }

    /// K23: two shared holders both upgrading wait for each other; the younger fails, whether
    /// it asks first (withdrawn from the queue) or second (refused at once).
    #[test]
    fn k23_of_two_upgraders_the_younger_fails() {
        for younger_first in [false, true] {
            let lm = detector();
            lm.lock(t(1), 1, b"k", S).unwrap();
            lm.lock(t(2), 1, b"k", S).unwrap();
            thread::scope(|s| {
                let (first, second) = if younger_first { (t(2), t(1)) } else { (t(1), t(2)) };
                let lm = &lm;
                let a = s.spawn(move || lm.lock(first, 1, b"k", X));
                wait_until_waiting(lm, first);
                let b = s.spawn(move || lm.lock(second, 1, b"k", X));
                // The younger's request fails (the waiting one is withdrawn, or the second is
                // refused); once it ends, the older's upgrade is granted.
                let (older, younger) = if younger_first { (b, a) } else { (a, b) };
                let e = younger.join().unwrap().unwrap_err();
                assert_eq!(deadlock_parties(&e), (t(2), vec![t(1)]), "younger first: {younger_first}");
                lm.release_all(t(2));
                older.join().unwrap().unwrap();
            });
            assert_eq!(holders_of(&lm, 1, b"k"), vec![(t(1), X)]);
            assert_eq!(lm.stats().deadlocks, 1);
            check(&lm);
        }
    }

    /// K23: a thread that waits for a transaction it last used itself would wait forever (the
    /// holder cannot end while its thread waits): a deadlock at once, not a timeout.
    #[test]
    fn k23_waiting_for_a_transaction_of_the_own_thread_is_a_deadlock() {
        let lm = detector();
        lm.lock(t(5), 1, b"k", X).unwrap();
        let e = lm.lock(t(1), 1, b"k", S).unwrap_err();
        assert_eq!(deadlock_parties(&e), (t(1), vec![t(5)]));
        assert!(e.to_string().contains("deadlock"), "{e}");
        // Another thread just waits, and gets the lock when t5 ends.
        thread::scope(|s| {
            let other = s.spawn(|| lm.lock(t(1), 1, b"k", S));
            wait_until_waiting(&lm, t(1));
            lm.release_all(t(5));
            other.join().unwrap().unwrap();
        });
        check(&lm);
    }

    /// K17: a head taken to write names its holder's transaction, and the writer is found in
    /// that transaction's entry, kept once however many heads name it: after a plain grant, an
    /// upgrade, a lock held already and a grant after a wait. Releasing the transaction's locks
    /// uncounts its heads and forgets the writer.
    #[test]
    fn k17_a_head_names_its_writer_through_the_holders_entry() {
        let lm = detector();
        let hash = |key: &[u8]| lm.name_hash(1, key);
        let w = crate::version::Writer::new();
        let found = |key: &[u8]| lm.writer_of(hash(key), 1, key);
        let same = |key: &[u8]| found(key).is_some_and(|x| Arc::ptr_eq(&x, &w));

        lm.lock_to_write(t(3), 1, b"a", &w).unwrap();
        assert!(same(b"a"), "a plain grant names the writer");
        assert_eq!(Arc::strong_count(&w), 2, "one reference for the transaction, none per head");
        lm.lock(t(3), 1, b"b", S).unwrap();
        assert!(found(b"b").is_none(), "a shared hold names no writer");
        lm.lock_to_write(t(3), 1, b"b", &w).unwrap();
        assert!(same(b"b"), "an upgrade names the writer");
        lm.lock(t(3), 1, b"c", X).unwrap();
        lm.lock_to_write(t(3), 1, b"c", &w).unwrap();
        assert!(same(b"c"), "a lock held already names the writer");
        lm.lock_to_write(t(3), 1, b"a", &w).unwrap();
        assert_eq!(Arc::strong_count(&w), 2, "still one reference for three heads");
        assert!(lm.may_have_writer(1, b"a") && lm.may_have_writer(1, b"c"));

        // The first lock a second writer takes, after waiting for the first's.
        let w2 = crate::version::Writer::new();
        thread::scope(|s| {
            let waiter = s.spawn(|| lm.lock_to_write(t(4), 1, b"a", &w2));
            wait_until_waiting(&lm, t(4));
            assert!(same(b"a"), "the waiter names nothing while it waits");
            lm.release_all(t(3));
            waiter.join().unwrap().unwrap();
        });
        assert!(
            found(b"a").is_some_and(|x| Arc::ptr_eq(&x, &w2)),
            "a grant after a wait names the new writer"
        );
        assert!(found(b"b").is_none() && found(b"c").is_none(), "the first writer's heads went");
        assert!(!lm.may_have_writer(1, b"b") && !lm.may_have_writer(1, b"c"), "and were uncounted");
        assert_eq!(Arc::strong_count(&w), 1, "the released transaction's entry let its writer go");
        check(&lm);
        lm.release_all(t(4));
        assert!(found(b"a").is_none() && !lm.may_have_writer(1, b"a"));
        assert_eq!(Arc::strong_count(&w2), 1);

        // A transaction whose first lock taken to write is an upgrade, and one whose first is a
        // lock it held already: neither records a new hold, and both keep their writer.
        let (w5, w6) = (crate::version::Writer::new(), crate::version::Writer::new());
        lm.lock(t(5), 1, b"d", S).unwrap();
        lm.lock_to_write(t(5), 1, b"d", &w5).unwrap();
        assert!(found(b"d").is_some_and(|x| Arc::ptr_eq(&x, &w5)), "a first write by upgrade");
        lm.lock(t(6), 1, b"e", X).unwrap();
        lm.lock_to_write(t(6), 1, b"e", &w6).unwrap();
        assert!(found(b"e").is_some_and(|x| Arc::ptr_eq(&x, &w6)), "a first write on a lock held");
        check(&lm);
        lm.release_all(t(5));
        lm.release_all(t(6));
        assert_eq!((Arc::strong_count(&w5), Arc::strong_count(&w6)), (1, 1));
        assert_eq!(lm.lock_count(), 0);
    }

    /// Transaction numbers are ordered as the transactions began, whatever thread began them,
    /// and a thread's numbers share one shard of every table of transactions.
    #[test]
    fn transaction_numbers_keep_the_order_of_beginning_and_the_threads_shard() {
        let mine: Vec<TxnId> = (10..20).map(txn_number).collect();
        let theirs: Vec<(u64, TxnId)> =
            thread::scope(|s| s.spawn(|| (20..30).map(|o| (o, txn_number(o))).collect()).join().unwrap());
        assert!(mine.windows(2).all(|w| w[0] < w[1]));
        assert!(mine.last() < theirs.first().map(|(_, t)| t), "a later order is a younger number");
        for (order, txn) in &theirs {
            assert_eq!(txn_order(txn.0), *order);
        }
        for shards in [1, 16, 64] {
            assert!(mine.iter().all(|&t| txn_shard_of(t, shards) == txn_shard_of(mine[0], shards)));
        }
        assert_eq!(txn_shard_of(mine[0], 64), thread_tag() as usize % 64, "the lane is the thread's");
        assert!(txn_number(txn_order(u64::from(u32::MAX)) + 1) > TxnId(u64::from(u32::MAX)));
    }

    #[test]
    fn shard_counts_are_rounded_and_capped() {
        assert_eq!(LockManager::new(0).shard_count(), 1);
        assert_eq!(LockManager::new(5).shard_count(), 8);
        assert_eq!(LockManager::new(usize::MAX).shard_count(), MAX_SHARDS);
    }
}
