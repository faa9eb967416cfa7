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
         abort and retry the transaction, and if this happens without long transactions, look for \
         one left open that holds the key (a database waits as long as Builder::lock_wait_timeout \
         sets, {DEFAULT_WAIT_TIMEOUT:?} by default; a lock manager of your own, as long as \
         LockManager::with_wait_timeout sets)"
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
    /// Requests that failed with [`LockError::Deadlock`] (K23): waits whose transaction was
    /// a cycle's victim (a cycle through a transaction open in the waiter's own thread
    /// included), and requests refused at once, without a wait, because another holder's
    /// upgrade already waited for this transaction's hold.
    pub deadlocks: u64,
    /// Waits that ended by timeout (K9).
    pub timeouts: u64,
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
    /// The counters that only waiting and failing requests move (summed with the shards'
    /// requests into [`LockStats`]), on lines of their own.
    rare: RareCounts,
    /// K9a: set once for good by [`LockManager::end_waits`]; no request waits after it.
    waits_ended: AtomicBool,
    /// K9a: why the waits ended (the first failed rollback's error).
    waits_ended_by: Mutex<String>,
}

/// K18: how many of a shard's lock heads name a writer (K17), and how many such heads were let
/// go: a reader whose key's shard counts none has no running writer's version to look up. One
/// word on the line of the shard's mutex, which every request and release of the shard holds
/// already: counting a writer moves no other line between the cores.
#[derive(Default)]
struct WriterCount(AtomicU64);

/// The word's low half counts the heads naming a writer; its high half counts the writers that
/// let such a head go (K18: a plain read that found a writer counted checks that none did
/// meanwhile).
const RELEASED: u64 = 1 << 32;

impl WriterCount {
    fn raise(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    /// One head fewer, one release more (a raise came first, so the low half does not borrow).
    fn lower(&self) {
        self.0.fetch_add(RELEASED - 1, Ordering::SeqCst);
    }

    fn counted(&self) -> bool {
        self.0.load(Ordering::SeqCst) & (RELEASED - 1) != 0
    }

    /// How many named heads of the shard were let go so far (wrapping).
    fn released(&self) -> u64 {
        self.0.load(Ordering::SeqCst) / RELEASED
    }

    /// No head of the shard names a writer, and `releases` ([`WriterCount::released`]) are all
    /// that were let go: one load of the word.
    fn quiet_since(&self, releases: u64) -> bool {
        let word = self.0.load(Ordering::SeqCst);
        word & (RELEASED - 1) == 0 && word / RELEASED == releases
    }
}

/// [`LockStats`] but `requests`, which only waiting and failing requests move.
#[derive(Default)]
#[repr(align(128))]
struct RareCounts {
    waits: AtomicU64,
    conflicts: AtomicU64,
    deadlocks: AtomicU64,
    timeouts: AtomicU64,
}

impl RareCounts {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
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

/// One shard of the lock table: its count of writers, its mutex and table on one cache line,
/// its first head on the next two (K13).
#[repr(C, align(64))]
struct Shard {
    /// K18: read without the mutex, changed under it.
    writers: WriterCount,
    table: Mutex<Table>,
}

impl Shard {
    fn new() -> Shard {
        Shard { writers: WriterCount::default(), table: Mutex::new(Table::new()) }
    }
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
    /// [`LockStats::requests`] of this shard (the others, which only requests that wait or
    /// fail move, are the manager's: out of the line).
    requests: u64,
    /// A head in the shard itself: a new head goes here when it is free, else into `heads`. A
    /// request finds its head's name, holders and queue here or in the slot its hash leads to,
    /// with no pointer to follow for a key of up to `INLINE_KEY` bytes or up to two holders.
    first: Option<LockHead>,
}

impl Table {
    fn new() -> Table {
        Table { heads: HashTable::new(), next_id: 0, requests: 0, first: None }
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
    fn release_held(&mut self, txn: TxnId, lock: HeldLock, writers: &WriterCount) {
        self.change_then_drop_if_unused(lock.hash, lock.head, |head| {
            head.release_writer(txn, writers);
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

    /// K17: names the exclusive holder `txn` as the key's writer, counted in its shard's
    /// `writers` before the writer's first change of the key. Returns whether it was not named
    /// before.
    fn name_writer(&mut self, txn: TxnId, writers: &WriterCount) -> bool {
        debug_assert!(
            self.holders.iter().any(|x| x.txn == txn && x.mode == LockMode::Exclusive),
            "K17: a key's writer holds its lock exclusively"
        );
        if self.named {
            return false;
        }
        writers.raise();
        self.named = true;
        true
    }

    /// K17: the transaction a named head's writer is, if the head is named.
    fn named_writer(&self) -> Option<TxnId> {
        self.holders.iter().find(|x| x.mode == LockMode::Exclusive).map(|x| x.txn).filter(|_| self.named)
    }

    /// K17: `txn` lets the lock go; if it held it exclusively, the writer it named here goes
    /// too (its versions went to the chains first, K19).
    fn release_writer(&mut self, txn: TxnId, writers: &WriterCount) {
        if self.named && self.holders.iter().any(|x| x.txn == txn && x.mode == LockMode::Exclusive) {
            self.named = false;
            writers.lower();
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
        // Most heads never had a waiter: no call for them.
        if !self.queue.is_empty() {
            self.grant_waiters();
        }
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
            shards: (0..n).map(|_| Shard::new()).collect(),
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
            rare: RareCounts::default(),
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
            let shard = &self.shards[self.shard_of(group[0].hash)];
            let mut table = shard.table.lock();
            for &h in group {
                table.release_held(txn, h, &shard.writers);
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

    /// K23: whether one of `txns` (a deadlock's other transactions) waits for nothing and made
    /// its last request from the calling thread: the cycle then runs through this thread, which
    /// cannot end that transaction while it waits, and a retry meets the same cycle until the
    /// transaction goes on in another thread (Failure behaviour).
    pub(crate) fn open_in_this_thread(&self, txns: &[TxnId]) -> bool {
        let me = thread_tag();
        txns.iter().any(|&t| {
            let table = self.txns[self.txn_shard(t)].txns.lock();
            table.get(&t).is_some_and(|e| e.thread == me && e.waiting.is_none())
        })
    }

    /// K18: whether a head of `(tree, key)`'s shard may name a writer; `false` means none of
    /// them does. A head is counted before its writer's first change of the key, and uncounted
    /// when the writer lets the lock go.
    #[cfg(test)]
    pub(crate) fn may_have_writer(&self, tree: u32, key: &[u8]) -> bool {
        self.writer_counted(self.name_hash(tree, key))
    }

    /// [`LockManager::may_have_writer`] for a name whose hash the caller has.
    pub(crate) fn writer_counted(&self, hash: u64) -> bool {
        self.shards[self.shard_of(hash)].writers.counted()
    }

    /// K18: how many heads naming a writer in the shard of `hash` were let go so far; a plain
    /// read compares it before and after it looked (a change: a writer of its key may have
    /// rolled back and let the key go meanwhile).
    pub(crate) fn writer_releases(&self, hash: u64) -> u64 {
        self.shards[self.shard_of(hash)].writers.released()
    }

    /// K18: no head in the shard of `hash` names a writer now, and none was let go since
    /// [`LockManager::writer_releases`] said `releases`.
    pub(crate) fn writers_quiet_since(&self, hash: u64, releases: u64) -> bool {
        self.shards[self.shard_of(hash)].writers.quiet_since(releases)
    }

    /// The hash of the lock name `(tree, key)`, as the table and its shards' writer counts use it;
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
        let shard = &self.shards[self.shard_of(hash)];
        let mut table = shard.table.lock();
        table.head_mut(hash, id).is_some_and(|head| head.name_writer(txn, &shard.writers))
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
            let shard = &self.shards[self.shard_of(hash)];
            let mut table = shard.table.lock();
            let Some(head) = table.find_mut(hash, tree, key) else {
                return false;
            };
            let id = head.id;
            debug_assert!(
                !head.named || !head.holders.iter().any(|x| x.txn == txn && x.mode == LockMode::Exclusive),
                "K17: a key a transaction locked to write is released with all its locks"
            );
            head.release_writer(txn, &shard.writers);
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
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LockStats {
            requests: self.shards.iter().map(|s| s.table.lock().requests).sum(),
            waits: r(&self.rare.waits),
            conflicts: r(&self.rare.conflicts),
            deadlocks: r(&self.rare.deadlocks),
            timeouts: r(&self.rare.timeouts),
        }
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
        let shard = &self.shards[self.shard_of(hash)];
        let mut table = shard.table.lock();
        table.requests += 1;
        let head = table.find_or_make(self.hash, hash, tree, key);
        let id = head.id;
        let held = HeldLock { hash, head: id };
        let decision = head.request(txn, mode, wait.is_some(), self.policy);
        let named = writer.is_some()
            && matches!(decision, Decision::AlreadyHeld | Decision::Granted { .. })
            && head.name_writer(txn, &shard.writers);
        let stats = &self.rare;
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
                RareCounts::bump(&stats.conflicts);
                return Err(LockError::Conflict { txn, holder: older, tree, key: key.into(), mode });
            }
            Decision::Deadlock { other } => {
                RareCounts::bump(&stats.deadlocks);
                return Err(LockError::Deadlock { txn, others: vec![other], tree, key: key.into(), mode });
            }
            Decision::Queued { slot, upgrade } => {
                RareCounts::bump(&stats.waits);
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
                RareCounts::bump(&self.rare.timeouts);
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
            RareCounts::bump(&self.rare.deadlocks);
        } else if let (Some(_), Some(head)) = (writer, table.head_mut(hash, id)) {
            named = head.name_writer(txn, &shard.writers);
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
#[path = "lock_tests.rs"]
mod tests;
