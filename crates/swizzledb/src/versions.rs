//! Snapshot reads (LOCKS.md K17–K21): the committed value a reader's snapshot sees, rebuilt from
//! the tree and the before-images of the writers it must not see.
//!
//! A transaction that changes a key for the first time records the value it replaces (its
//! **version**), under the leaf's exclusive latch and before the change: parked in the lock
//! head of the key's exclusive lock while the writer runs (K17), and in the key's **chain**
//! (its versions, oldest first) once the writer ended, if a snapshot may still need it. A reader takes a **snapshot**: a timestamp `S` of
//! the commit clock. It reads the tree with no gate, then the chain: the value it returns is the
//! before-image of the first version whose writer `S` does not see (running, rolled back, or
//! committed after `S`), or the tree's value when there is none (K18). Versions live only while
//! a running snapshot may need them (K19) and their memory is bounded (K20).

use std::ops::Bound;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHasher};
use smallvec::SmallVec;
use std::hash::Hasher;

use swizzledb_sync::PageId;

use crate::lock::{tree_lock_id, LockManager};
use crate::version::{Key, Parked, Version, Writer, ABORTED, ACTIVE, COMMITTING, FIRST_TS};

/// A snapshot slot that is free.
const FREE: u64 = 0;
/// A snapshot slot whose snapshot was ended for memory (K20).
const TOO_OLD: u64 = 1;

/// Snapshot slots (K19); snapshots beyond this many at once register in an overflow list.
const SLOTS: usize = 128;
const SHARDS: usize = 64;
/// Shards of the ordered key index, by tree.
const ORDERED: usize = 16;

fn ordered_of(tree: u64) -> usize {
    let mut h = FxHasher::default();
    h.write_u64(tree);
    (h.finish() as usize) % ORDERED
}

/// The tree of a composite key.
fn tree_of(composite: &[u8]) -> u64 {
    u64::from_be_bytes(composite[..8].try_into().expect("a composite key starts with its tree"))
}

/// The default bound on the versions' memory (K20).
pub const DEFAULT_VERSION_MEMORY: usize = 256 << 20;

type Chains = FxHashMap<Key, Chain>;

/// A key's versions, oldest first (most keys have one, kept inline).
#[derive(Debug, Default)]
struct Chain {
    versions: SmallVec<[Version; 1]>,
    /// The key is in the ordered index (K22): a transaction deleted it while it had this chain.
    indexed: bool,
}

/// The composite keys that a transaction deleted while they had a chain, in order (K22): the
/// keys a scan can miss in the tree that a snapshot may still see.
type OrderedKeys = std::collections::BTreeSet<Key>;

/// The writers a transaction made versions for, to be collected once no snapshot needs them.
#[derive(Debug)]
struct Finished {
    /// The writer's commit timestamp, or the clock when its rollback ended.
    at: u64,
    writer: Arc<Writer>,
    keys: Vec<Key>,
}

/// A writer's parked versions, taken from its lock heads as its locks are released (K19): each
/// is dropped if no snapshot needs it, or moved to the end of its key's chain — before the head
/// lets it go, so that a reader looking at the head and then the chain finds it in one of them
/// — and queued with the writer's end time like any chain version.
pub(crate) struct Unparking<'v> {
    versions: &'v Versions,
    /// The writer's end time, and whether a snapshot may need its versions: decided at the
    /// first version, the same for all (the writer ended before its locks were released).
    decided: Option<(u64, bool)>,
    /// The writer and the keys of the versions moved to chains.
    moved: Option<(Arc<Writer>, Vec<Key>)>,
    /// Versions taken, and bytes of those dropped: added to the shared counters once, in
    /// `done`, rather than per version by every releasing thread (an over-count meanwhile
    /// only makes the memory bound look closer, K20).
    taken: u64,
    dropped_bytes: usize,
}

impl Unparking<'_> {
    /// Takes one parked version of `key`, under its head's shard mutex.
    pub(crate) fn take(&mut self, key: &[u8], parked: Parked) {
        let v = self.versions;
        let Parked { tree, version } = parked;
        let (_, keep) = *self.decided.get_or_insert_with(|| {
            let at = v.end_time(&version.writer);
            (at, at > v.horizon())
        });
        self.taken += 1;
        with_composite(tree, key, |ck| {
            // Dropped only where the key has no chain: a chain's versions are older than this
            // one, and a reader that no longer found this one would take the chain's newest
            // for the key's newest (a rolled-back writer's, say, which no snapshot sees). Moved
            // there instead, it is removed at once with the older ones (`done`, K19's prefix
            // rule). No chain of the key can appear meanwhile: only its lock's holder makes one.
            if keep || v.counted(ck) {
                let mut shard = v.shards[shard_of(ck)].lock();
                let (writer, k) = v.append_to_chain(&mut shard, ck, version);
                drop(shard);
                v.parked[bucket_of(ck)].fetch_sub(1, SeqCst);
                self.moved.get_or_insert_with(|| (writer, Vec::new())).1.push(k);
            } else {
                v.parked[bucket_of(ck)].fetch_sub(1, SeqCst);
                self.dropped_bytes += version.bytes(ck.len());
            }
        });
    }

    /// Queues the moved versions for collection (K19), or removes them now with the older
    /// versions of their chains where no snapshot needs them; call it after the locks are
    /// released.
    pub(crate) fn done(self) {
        let v = self.versions;
        if self.taken > 0 {
            v.made.fetch_add(self.taken, std::sync::atomic::Ordering::Relaxed);
        }
        if self.dropped_bytes > 0 {
            v.bytes.fetch_sub(self.dropped_bytes, SeqCst);
        }
        if let (Some((at, _)), Some((writer, keys))) = (self.decided, self.moved) {
            self.versions.ended(at, writer, keys);
        }
    }
}

#[derive(Debug, Default)]
#[repr(align(128))]
struct Slot(AtomicU64);

/// A value on cache lines of its own, so that threads working on its neighbours do not pass
/// its line between their cores (two lines: the adjacent-line prefetcher pairs them).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Own<T>(T);

impl<T> std::ops::Deref for Own<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// The snapshots registered without a slot: timestamp → how many, running or ended for memory.
#[derive(Debug, Default)]
struct Overflow {
    live: std::collections::BTreeMap<u64, usize>,
    ended: std::collections::BTreeMap<u64, usize>,
}

fn bump(map: &mut std::collections::BTreeMap<u64, usize>, at: u64) {
    *map.entry(at).or_default() += 1;
}

/// Takes one off `at`'s count; `false` if `map` has none.
fn unbump(map: &mut std::collections::BTreeMap<u64, usize>, at: u64) -> bool {
    let Some(n) = map.get_mut(&at) else { return false };
    *n -= 1;
    if *n == 0 {
        map.remove(&at);
    }
    true
}

/// The version store of one database (K17–K21).
#[derive(Debug)]
pub(crate) struct Versions {
    /// The commit clock: its last value was given to a commit or an ended rollback.
    clock: Own<AtomicU64>,
    shards: Box<[Own<Mutex<Chains>>]>,
    /// The keys a transaction deleted while they had a chain, in key order, by tree (K22):
    /// what a range read adds from.
    ordered: Box<[Own<Mutex<OrderedKeys>>]>,
    /// Snapshots in progress: each holds a timestamp no greater than its snapshot's, or
    /// `TOO_OLD`.
    slots: Box<[Slot]>,
    /// How many slots were ever taken, from the first: a collection reads no slot beyond.
    used: AtomicUsize,
    /// Snapshots in the overflow list: a collection with none does not lock it.
    overflowed: AtomicUsize,
    /// Snapshots that found every slot taken.
    overflow: Mutex<Overflow>,
    finished: Own<Mutex<Vec<Finished>>>,
    /// The smallest end time in `finished` (`u64::MAX`: none): a snapshot registered below it
    /// may be what keeps those versions, and collects when it ends (K19).
    waiting: Own<AtomicU64>,
    /// Bytes held by versions (K20).
    bytes: Own<AtomicUsize>,
    /// Chains per bucket of composite-key hashes (K18): a reader whose key's bucket counts
    /// none has no chain to look up. Raised before the chain's first change is made, lowered
    /// when the chain is removed.
    chained: Box<[AtomicU32]>,
    /// K17: versions parked in lock heads, counted per bucket as `chained` counts chains: raised
    /// before the change is made, lowered when the version leaves the head.
    parked: Box<[AtomicU32]>,
    /// Where running writers park their versions (`None`: always in the chains).
    locks: Option<Arc<LockManager>>,
    pub(crate) limit: usize,
    /// Counters for [`VersionStats`]; `made` counts the versions of writers that ended (each
    /// adds its count once, at its end).
    made: Own<AtomicU64>,
    too_old: AtomicU64,
}

/// The version store's figures (`Database::version_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct VersionStats {
    /// Bytes the versions take now (keys, before-images and bookkeeping).
    pub bytes: usize,
    /// The bound on `bytes` (`Builder::version_memory`); past it the oldest snapshots end
    /// with `Error::SnapshotTooOld`.
    pub limit: usize,
    /// Versions made since the database opened, by transactions that have ended.
    pub made: u64,
    /// Snapshots ended because the versions they needed outgrew the bound.
    pub too_old: u64,
}

/// A snapshot in progress: the timestamp it reads at, and the registration that keeps its
/// versions (K19). Dropping it ends the snapshot.
#[derive(Debug)]
pub(crate) struct Snapshot<'v> {
    versions: &'v Versions,
    pub(crate) at: u64,
    /// K24: the writer of the snapshot-isolation transaction reading at it, whose own changes
    /// it sees.
    pub(crate) own: Option<Arc<Writer>>,
    /// The slot it holds, or `None` when it is in the overflow list under `registered`.
    slot: Option<usize>,
    registered: u64,
}

/// A reader's value of a key, rebuilt (K18).
pub(crate) enum Seen {
    /// The tree's value is the snapshot's.
    Tree,
    /// The snapshot sees this value instead (`None`: absent).
    Before(Option<Box<[u8]>>),
}

fn composite(tree: PageId, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + key.len());
    k.extend_from_slice(&tree.get().to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// Calls `f` with the composite key of `key` in `tree`, built in a buffer of the thread's.
fn with_composite<R>(tree: PageId, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    thread_local! {
        static BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut buf = BUF.take();
    buf.clear();
    buf.extend_from_slice(&tree.get().to_be_bytes());
    buf.extend_from_slice(key);
    let r = f(&buf);
    BUF.set(buf);
    r
}

fn hash_of(composite: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(composite);
    h.finish()
}

fn shard_of(composite: &[u8]) -> usize {
    (hash_of(composite) as usize) % SHARDS
}

/// Buckets of the chained-key counts (K18's fast path).
const BUCKETS: usize = 4096;

fn bucket_of(composite: &[u8]) -> usize {
    ((hash_of(composite) >> 24) as usize) % BUCKETS
}

impl Versions {
    pub(crate) fn new(limit: usize, locks: Option<Arc<LockManager>>) -> Versions {
        Versions {
            clock: Own(AtomicU64::new(FIRST_TS)),
            shards: (0..SHARDS).map(|_| Own(Mutex::new(Chains::default()))).collect(),
            ordered: (0..ORDERED).map(|_| Own(Mutex::new(OrderedKeys::new()))).collect(),
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            used: AtomicUsize::new(0),
            overflowed: AtomicUsize::new(0),
            overflow: Mutex::new(Overflow::default()),
            finished: Own(Mutex::new(Vec::new())),
            waiting: Own(AtomicU64::new(u64::MAX)),
            bytes: Own(AtomicUsize::new(0)),
            chained: (0..BUCKETS).map(|_| AtomicU32::new(0)).collect(),
            parked: (0..BUCKETS).map(|_| AtomicU32::new(0)).collect(),
            locks,
            limit,
            made: Own(AtomicU64::new(0)),
            too_old: AtomicU64::new(0),
        }
    }

    pub(crate) fn stats(&self) -> VersionStats {
        VersionStats {
            bytes: self.bytes.load(SeqCst),
            limit: self.limit,
            made: self.made.load(SeqCst),
            too_old: self.too_old.load(SeqCst),
        }
    }

    /// A running writer (K17).
    pub(crate) fn writer() -> Arc<Writer> {
        Arc::new(Writer { state: AtomicU64::new(ACTIVE) })
    }

    /// K17: `writer` is about to change `key` of `tree`, whose value is `before`; `deletes`:
    /// the change removes the key. Returns the composite key if this made a version (the
    /// writer's first change of the key), for [`Versions::finish`]. Called under the leaf's
    /// exclusive latch, before the change.
    pub(crate) fn record(
        &self,
        writer: &Arc<Writer>,
        tree: PageId,
        key: &[u8],
        before: Option<&[u8]>,
        deletes: bool,
    ) -> Option<Key> {
        with_composite(tree, key, |ck| {
            if let Some(locks) = &self.locks {
                // K17: under the key's exclusive lock its head exists; lock shard, then chain
                // shard, never the other way.
                let at_head = locks.with_head(tree_lock_id(tree), key, |slot| {
                    self.record_at_head(slot, writer, tree, ck, before, deletes)
                });
                if let Some(r) = at_head {
                    return r;
                }
            }
            self.record_in_chain(writer, ck, before, deletes)
        })
    }

    /// K17 at the key's lock head (`slot`, under its shard mutex): a first change that removes
    /// no key parks its version there; a delete moves the writer's parked version into the
    /// chain first (K22 indexes deleted keys, which a scan cannot meet), then records there.
    fn record_at_head(
        &self,
        slot: &mut Option<Parked>,
        writer: &Arc<Writer>,
        tree: PageId,
        ck: &[u8],
        before: Option<&[u8]>,
        deletes: bool,
    ) -> Option<Key> {
        let mine = slot.as_ref().is_some_and(|p| Arc::ptr_eq(&p.version.writer, writer));
        if mine && !deletes {
            return None;
        }
        if let Some(p) = slot.take() {
            // The writer's own (a delete follows its first change), or, never expected, one a
            // writer left behind: into the chain, as its newest version, before anything else.
            let mut shard = self.shards[shard_of(ck)].lock();
            let moved = self.append_to_chain(&mut shard, ck, p.version);
            self.parked[bucket_of(ck)].fetch_sub(1, SeqCst);
            drop(shard);
            if !mine {
                debug_assert!(false, "K17: a lock head held another writer's version");
                let at = self.end_time(&moved.0);
                self.ended(at, moved.0, vec![moved.1]);
            } else if deletes {
                let r = self.record_in_chain(writer, ck, before, deletes);
                debug_assert!(r.is_none(), "the moved version is the writer's newest");
                return Some(moved.1);
            }
        }
        if deletes || (self.counted(ck) && self.last_writer_is(ck, writer)) {
            return self.record_in_chain(writer, ck, before, deletes);
        }
        let version = Version { writer: Arc::clone(writer), before: before.map(Box::from) };
        self.parked[bucket_of(ck)].fetch_add(1, SeqCst);
        self.bytes.fetch_add(version.bytes(ck.len()), SeqCst);
        *slot = Some(Parked { tree, version });
        None
    }

    /// Whether the newest version in `ck`'s chain is `writer`'s.
    fn last_writer_is(&self, ck: &[u8], writer: &Arc<Writer>) -> bool {
        let shard = self.shards[shard_of(ck)].lock();
        shard.get(ck).and_then(|c| c.versions.last()).is_some_and(|v| Arc::ptr_eq(&v.writer, writer))
    }

    /// Puts `version` at the end of `ck`'s chain (counting a new chain), moved from a lock
    /// head: its bytes are counted already. Returns the writer and the chain's key, for
    /// [`Versions::finish`]'s collection.
    fn append_to_chain(&self, shard: &mut Chains, ck: &[u8], version: Version) -> (Arc<Writer>, Key) {
        let writer = Arc::clone(&version.writer);
        if let Some(chain) = shard.get_mut(ck) {
            chain.versions.push(version);
            let (k, _) = shard.get_key_value(ck).expect("found just above, under the same mutex");
            return (writer, Arc::clone(k));
        }
        let k: Key = Arc::from(ck);
        self.chained[bucket_of(ck)].fetch_add(1, SeqCst);
        shard.insert(Arc::clone(&k), Chain { versions: smallvec::smallvec![version], indexed: false });
        (writer, k)
    }

    /// K17 in the shared chain of `ck`: as [`Versions::record`] without a lock head.
    fn record_in_chain(
        &self,
        writer: &Arc<Writer>,
        ck: &[u8],
        before: Option<&[u8]>,
        deletes: bool,
    ) -> Option<Key> {
        let mut shard = self.shards[shard_of(ck)].lock();
        let found = shard.get_mut(ck).map(|chain| {
            let index = deletes && !chain.indexed;
            chain.indexed |= deletes;
            let made = !chain.versions.last().is_some_and(|v| Arc::ptr_eq(&v.writer, writer));
            if made {
                let v = Version { writer: Arc::clone(writer), before: before.map(Box::from) };
                self.bytes.fetch_add(v.bytes(ck.len()), SeqCst);
                chain.versions.push(v);
            }
            (made, index)
        });
        let (made, k, index) = match found {
            Some((false, false)) => return None,
            Some((made, index)) => {
                let (k, _) = shard.get_key_value(ck).expect("found just above, under the same mutex");
                (made, Arc::clone(k), index)
            }
            None => {
                let v = Version { writer: Arc::clone(writer), before: before.map(Box::from) };
                self.bytes.fetch_add(v.bytes(ck.len()), SeqCst);
                let k: Key = Arc::from(ck);
                let chain = Chain { versions: smallvec::smallvec![v], indexed: deletes };
                shard.insert(Arc::clone(&k), chain);
                self.chained[bucket_of(ck)].fetch_add(1, SeqCst);
                (true, k, deletes)
            }
        };
        // K22: only a deleted key can be missed by a scan that a snapshot shows it to.
        // Lock order: a chain shard, then an ordered shard.
        if index {
            self.ordered[ordered_of(tree_of(ck))].lock().insert(Arc::clone(&k));
        }
        drop(shard);
        made.then_some(k)
    }

    /// K18: the writer commits now, in the order of its commit record (the caller appends it
    /// and calls this before any of its locks is released).
    pub(crate) fn commit(&self, writer: &Writer) -> u64 {
        writer.state.store(COMMITTING, SeqCst);
        let ts = self.clock.fetch_add(1, SeqCst) + 1;
        writer.state.store(ts, SeqCst);
        ts
    }

    /// The writer's transaction ended: committed (`commit` was called) or rolled back, its
    /// rollback complete. Its versions go once no snapshot needs them (K19). Called before
    /// its locks are released.
    pub(crate) fn finish(&self, writer: Arc<Writer>, keys: Vec<Key>) {
        let at = match writer.state.load(SeqCst) {
            ACTIVE | COMMITTING => {
                writer.state.store(ABORTED, SeqCst);
                self.clock.fetch_add(1, SeqCst) + 1
            }
            ABORTED => self.clock.fetch_add(1, SeqCst) + 1,
            ts => ts,
        };
        if keys.is_empty() {
            return;
        }
        self.made.fetch_add(keys.len() as u64, std::sync::atomic::Ordering::Relaxed);
        self.ended(at, writer, keys);
    }

    /// K19: `writer`, which ended at `at`, leaves versions in the chains of `keys`: removed now
    /// if no snapshot needs them, else queued for a later collection.
    fn ended(&self, at: u64, writer: Arc<Writer>, keys: Vec<Key>) {
        let x = Finished { at, writer, keys };
        // The common case, no snapshot older than this writer's end: its versions go now, with
        // no shared list in between (the same rule as `collect`).
        if at <= self.horizon() {
            self.remove(&x);
        } else {
            let mut f = self.finished.lock();
            f.push(x);
            self.waiting.fetch_min(at, SeqCst);
        }
        // A collection only where one would remove something: a queued writer ended at or
        // before the horizon, read after the push above (a snapshot still registered then
        // reads `waiting` after it leaves, and collects itself, K19), or memory is past the
        // bound.
        let waiting = self.waiting.load(SeqCst);
        if (waiting != u64::MAX && waiting <= self.horizon()) || self.bytes.load(SeqCst) > self.limit {
            self.collect();
        }
    }

    /// K19 for the versions a writer parked in its lock heads (K17), which
    /// `LockManager::release_all_with` hands to [`Unparking::take`] one by one as it releases
    /// them, each under its head's shard mutex.
    pub(crate) fn unparking(&self) -> Unparking<'_> {
        Unparking { versions: self, decided: None, moved: None, taken: 0, dropped_bytes: 0 }
    }

    /// K19: when `writer`, whose locks are being released, ended: its commit timestamp, or for
    /// a rollback (or a commit that failed) the clock now, which is no earlier than the clock
    /// increment that ended it (`finish`).
    fn end_time(&self, writer: &Writer) -> u64 {
        match settled(writer) {
            ts if ts >= FIRST_TS => ts,
            _ => self.clock.load(SeqCst),
        }
    }

    /// Begins a snapshot at the current clock (K19).
    pub(crate) fn snapshot(&self) -> Snapshot<'_> {
        let first = self.clock.load(SeqCst);
        let start = thread_slot();
        for i in 0..SLOTS {
            let s = (start + i) % SLOTS;
            if self.slots[s].0.load(SeqCst) == FREE
                && self.slots[s].0.compare_exchange(FREE, first, SeqCst, SeqCst).is_ok()
            {
                // Written only when it grows: every snapshot reads it, few move it.
                if self.used.load(SeqCst) <= s {
                    self.used.fetch_max(s + 1, SeqCst);
                }
                // The slot holds `first`, no more than the snapshot's own timestamp: a
                // collection that did not see the slot read the clock before it was stored,
                // so it removes nothing this snapshot needs (K19).
                let at = self.clock.load(SeqCst);
                return Snapshot { versions: self, at, own: None, slot: Some(s), registered: first };
            }
        }
        let mut overflow = self.overflow.lock();
        self.overflowed.fetch_add(1, SeqCst);
        let at = self.clock.load(SeqCst);
        bump(&mut overflow.live, at);
        Snapshot { versions: self, at, own: None, slot: None, registered: at }
    }

    /// K19: the oldest timestamp a running snapshot may read at; versions of writers that
    /// ended at or before it are needed by no one.
    fn horizon(&self) -> u64 {
        // The clock first: a snapshot registering after this read reads at least this value.
        let mut h = self.clock.load(SeqCst);
        for s in &self.slots[..self.used.load(SeqCst)] {
            let v = s.0.load(SeqCst);
            if v != FREE && v != TOO_OLD {
                h = h.min(v);
            }
        }
        // Counted under the list's mutex before its clock read: a count of zero here means a
        // snapshot that joins the list later reads the clock after `h` was read.
        if self.overflowed.load(SeqCst) > 0 {
            if let Some((&oldest, _)) = self.overflow.lock().live.iter().next() {
                h = h.min(oldest);
            }
        }
        h
    }

    /// Removes the versions no snapshot needs (K19); past the memory bound, ends the oldest
    /// snapshots first (K20).
    pub(crate) fn collect(&self) {
        loop {
            let horizon = self.horizon();
            let done: Vec<Finished> = {
                let mut f = self.finished.lock();
                let done: Vec<Finished> = f.extract_if(.., |x| x.at <= horizon).collect();
                self.waiting.store(f.iter().map(|x| x.at).min().unwrap_or(u64::MAX), SeqCst);
                done
            };
            for x in &done {
                self.remove(x);
            }
            if self.bytes.load(SeqCst) <= self.limit || !self.end_oldest_snapshot(horizon) {
                return;
            }
        }
    }

    /// K20: ends every snapshot registered at or before `horizon` (the oldest); `false` if
    /// there was none.
    fn end_oldest_snapshot(&self, horizon: u64) -> bool {
        let mut ended = false;
        for s in &self.slots[..self.used.load(SeqCst)] {
            let v = s.0.load(SeqCst);
            if v != FREE
                && v != TOO_OLD
                && v <= horizon
                && s.0.compare_exchange(v, TOO_OLD, SeqCst, SeqCst).is_ok()
            {
                ended = true;
                self.too_old.fetch_add(1, SeqCst);
            }
        }
        let mut overflow = self.overflow.lock();
        while let Some((&oldest, &n)) = overflow.live.iter().next() {
            if oldest > horizon {
                break;
            }
            overflow.live.remove(&oldest);
            *overflow.ended.entry(oldest).or_default() += n;
            self.too_old.fetch_add(n as u64, SeqCst);
            ended = true;
        }
        ended
    }

    /// K19: drops every chain of `tree`, which `Database::drop_tree` just dropped: no handle
    /// reads it any more (btree T25), and a new tree that reuses its root page must not find
    /// its versions. Writers still queued with keys of it find those chains gone, as after a
    /// collection.
    pub(crate) fn forget_tree(&self, tree: PageId) {
        let t = tree.get();
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            shard.retain(|ck, chain| {
                if tree_of(ck) != t {
                    return true;
                }
                let freed: usize = chain.versions.iter().map(|v| v.bytes(ck.len())).sum();
                self.bytes.fetch_sub(freed, SeqCst);
                self.chained[bucket_of(ck)].fetch_sub(1, SeqCst);
                false
            });
        }
        self.ordered[ordered_of(t)].lock().retain(|k| tree_of(k) != t);
    }

    fn remove(&self, x: &Finished) {
        for ck in &x.keys {
            let mut shard = self.shards[shard_of(ck)].lock();
            let Some(chain) = shard.get_mut(ck) else { continue };
            // K19: a chain loses its oldest versions first. The writers before this one in the
            // chain ended before it and are removable too; they go with it, so that a
            // concurrent collection removing them later (or not yet) can never leave an older
            // version behind a removed newer one, which a reader would take for the newest.
            let Some(pos) = chain.versions.iter().position(|v| Arc::ptr_eq(&v.writer, &x.writer)) else {
                continue;
            };
            let freed: usize = chain.versions.drain(..=pos).map(|v| v.bytes(ck.len())).sum();
            if chain.versions.is_empty() {
                if chain.indexed {
                    self.ordered[ordered_of(tree_of(ck))].lock().remove(ck);
                }
                shard.remove(ck);
                self.chained[bucket_of(ck)].fetch_sub(1, SeqCst);
            }
            self.bytes.fetch_sub(freed, SeqCst);
        }
    }

    /// K18: what `snap` sees of `key` in `tree`, given that the tree was read before this
    /// call.
    pub(crate) fn seen(&self, snap: &Snapshot<'_>, tree: PageId, key: &[u8]) -> Seen {
        if self.bytes.load(SeqCst) == 0 {
            return Seen::Tree;
        }
        with_composite(tree, key, |ck| {
            if self.may_be_versioned(ck) {
                self.seen_composite(snap, ck)
            } else {
                Seen::Tree
            }
        })
    }

    /// K18: whether a chain is counted in the bucket of composite key `ck` (none: `ck` has none).
    fn counted(&self, ck: &[u8]) -> bool {
        self.chained[bucket_of(ck)].load(SeqCst) != 0
    }

    /// K18: whether a version parked in a lock head is counted in `ck`'s bucket (none: `ck`
    /// has none).
    fn is_parked(&self, ck: &[u8]) -> bool {
        self.parked[bucket_of(ck)].load(SeqCst) != 0
    }

    /// K18: whether `ck` may have a version, parked or in a chain. The parked count is read
    /// first: a version moves from a lock head to its chain by raising the chain count before
    /// it lowers the parked one, so a reader that finds the parked count lowered then finds the
    /// chain count raised (read the other way round, both could read zero in between).
    fn may_be_versioned(&self, ck: &[u8]) -> bool {
        self.is_parked(ck) || self.counted(ck)
    }

    /// K18: whether `key` of `tree` may have a chain; `false` means it has none. A writer
    /// counts a new chain before it changes the leaf, so a reader that saw the change (and
    /// asks after) finds the count raised.
    pub(crate) fn may_have_chain(&self, tree: PageId, key: &[u8]) -> bool {
        self.bytes.load(SeqCst) != 0 && with_composite(tree, key, |ck| self.may_be_versioned(ck))
    }

    /// K18 for one key: the newest version of `ck` may be parked in the key's lock head (K17),
    /// the older ones are in its chain. The head is looked at first: a writer moves its parked
    /// version into the chain before the head lets it go, so a reader finds it in one or the
    /// other (in both, at worst, which changes nothing).
    fn seen_composite(&self, snap: &Snapshot<'_>, ck: &[u8]) -> Seen {
        // `Some(before)`: the parked version, the key's newest, is one the snapshot must not see.
        let mut unseen_parked = None;
        if let (true, Some(locks)) = (self.is_parked(ck), &self.locks) {
            let tree = PageId::new(tree_of(ck)).expect("a composite key names its tree");
            let parked = locks.with_head(tree_lock_id(tree), &ck[8..], |slot| {
                slot.as_ref().map(|p| (!sees(snap, &p.version.writer)).then(|| p.version.before.clone()))
            });
            match parked.flatten() {
                // The newest writer is seen, and with it every older one (timestamps grow along
                // a key's versions): the tree's value is the snapshot's.
                Some(None) => return Seen::Tree,
                Some(Some(before)) => unseen_parked = Some(before),
                None => {}
            }
        }
        let shard = self.shards[shard_of(ck)].lock();
        let chain = shard.get(ck).map_or(&[][..], |c| &c.versions[..]);
        // The newest version whose writer the snapshot sees: the value after it is the next
        // version's before-image, or the tree's. Its own writer's (K24) it sees.
        let mut first_unseen = None;
        for (i, v) in chain.iter().enumerate().rev() {
            if sees(snap, &v.writer) {
                break;
            }
            first_unseen = Some(i);
        }
        match (first_unseen, unseen_parked) {
            (Some(i), _) => Seen::Before(chain[i].before.clone()),
            (None, Some(before)) => Seen::Before(before),
            (None, None) => Seen::Tree,
        }
    }
}

impl Versions {
    /// K22: the records snapshot `at` sees strictly inside `(lo, hi)` of `tree` that a scan,
    /// which passed that stretch before this call, did not find in the tree: keys with a chain
    /// whose visible value is a before-image.
    pub(crate) fn between(
        &self,
        snap: &Snapshot<'_>,
        tree: PageId,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        if self.bytes.load(SeqCst) == 0 {
            return Vec::new();
        }
        let t = tree.get();
        let lo = match lo {
            Bound::Unbounded => Bound::Included(composite(tree, &[])),
            Bound::Included(k) => Bound::Included(composite(tree, k)),
            Bound::Excluded(k) => Bound::Excluded(composite(tree, k)),
        };
        let hi = match hi {
            Bound::Unbounded => match t.checked_add(1) {
                Some(next) => Bound::Excluded(next.to_be_bytes().to_vec()),
                None => Bound::Unbounded,
            },
            Bound::Included(k) => Bound::Included(composite(tree, k)),
            Bound::Excluded(k) => Bound::Excluded(composite(tree, k)),
        };
        if let (Bound::Included(l) | Bound::Excluded(l), Bound::Included(h) | Bound::Excluded(h)) = (&lo, &hi)
        {
            if l > h || (l == h && !matches!((&lo, &hi), (Bound::Included(_), Bound::Included(_)))) {
                return Vec::new();
            }
        }
        let keys: Vec<Key> = {
            let set = self.ordered[ordered_of(t)].lock();
            set.range::<[u8], _>((as_slice(&lo), as_slice(&hi))).cloned().collect()
        };
        keys.into_iter()
            .filter_map(|ck| match self.seen_composite(snap, &ck) {
                Seen::Before(Some(v)) => Some((ck[8..].to_vec(), v.into_vec())),
                _ => None,
            })
            .collect()
    }
}

/// Whether `snap` sees `writer`'s changes: its own (K24), or committed at or before it.
fn sees(snap: &Snapshot<'_>, writer: &Arc<Writer>) -> bool {
    if snap.own.as_ref().is_some_and(|o| Arc::ptr_eq(o, writer)) {
        return true;
    }
    let state = settled(writer);
    state >= FIRST_TS && state <= snap.at
}

/// A writer's state once it is not committing: `ACTIVE`, `ABORTED` or its commit timestamp
/// (a committing writer takes its timestamp within a few instructions, K18).
fn settled(writer: &Writer) -> u64 {
    loop {
        let s = writer.state.load(SeqCst);
        if s != COMMITTING {
            return s;
        }
        std::hint::spin_loop();
    }
}

impl Versions {
    /// K24: whether a writer other than `snap`'s own committed a change of `key` in `tree`
    /// after `snap` began (first updater wins). Called under the key's exclusive lock, so no
    /// other writer of the key runs; the versions it looks for are kept while `snap` runs
    /// (K19) unless `snap` was ended for memory, which the caller checks after.
    pub(crate) fn changed_after(&self, snap: &Snapshot<'_>, tree: PageId, key: &[u8]) -> bool {
        if self.bytes.load(SeqCst) == 0 {
            return false;
        }
        with_composite(tree, key, |ck| {
            let shard = self.shards[shard_of(ck)].lock();
            shard.get(ck).is_some_and(|chain| {
                chain.versions.iter().any(|v| {
                    !snap.own.as_ref().is_some_and(|o| Arc::ptr_eq(o, &v.writer)) && {
                        let state = settled(&v.writer);
                        state >= FIRST_TS && state > snap.at
                    }
                })
            })
        })
    }
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Snapshot<'_> {
    /// Whether the snapshot was ended for memory (K20): what it reads since may be wrong, and
    /// the caller must fail the read.
    pub(crate) fn too_old(&self) -> bool {
        match self.slot {
            Some(s) => self.versions.slots[s].0.load(SeqCst) == TOO_OLD,
            None => self.versions.overflow.lock().ended.contains_key(&self.registered),
        }
    }
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        match self.slot {
            Some(s) => self.versions.slots[s].0.store(FREE, SeqCst),
            None => {
                let mut overflow = self.versions.overflow.lock();
                if !unbump(&mut overflow.live, self.registered) {
                    unbump(&mut overflow.ended, self.registered);
                }
                self.versions.overflowed.fetch_sub(1, SeqCst);
            }
        }
        // K19: this snapshot may have kept versions of writers that ended after it began; a
        // snapshot that began after them all (a plain read's, as a rule) kept none, and with
        // none queued there is nothing to collect.
        let waiting = self.versions.waiting.load(SeqCst);
        if waiting != u64::MAX && self.registered < waiting {
            self.versions.collect();
        }
    }
}

/// Where this thread starts looking for a free slot.
fn thread_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, SeqCst);
    }
    SLOT.with(|s| *s) % SLOTS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::{LockMode, TxnId};

    /// K19: a writer's parked version is never dropped while its key's chain holds an older
    /// version — here a rolled-back writer's, left as a collection that has not run yet leaves
    /// it. Dropped, the rolled-back version would be the key's newest, and a snapshot that sees
    /// the committed writer would read the rolled-back one's before-image.
    #[test]
    fn k19_a_parked_version_is_never_dropped_over_an_older_one_in_its_chain() {
        let locks = Arc::new(LockManager::new(4));
        let v = Versions::new(DEFAULT_VERSION_MEMORY, Some(Arc::clone(&locks)));
        let tree = PageId::new(7).expect("not zero");
        let key = b"k";
        let rolled_back = Versions::writer();
        v.finish(Arc::clone(&rolled_back), Vec::new());
        with_composite(tree, key, |ck| {
            let version = Version { writer: rolled_back, before: Some(b"old"[..].into()) };
            v.bytes.fetch_add(version.bytes(ck.len()), SeqCst);
            let mut shard = v.shards[shard_of(ck)].lock();
            v.append_to_chain(&mut shard, ck, version);
        });

        // A writer changes the key from "old" to "new" and commits; no snapshot runs.
        let txn = TxnId(2);
        locks.lock(txn, tree_lock_id(tree), key, LockMode::Exclusive).expect("free");
        let writer = Versions::writer();
        assert!(v.record(&writer, tree, key, Some(b"old"), false).is_none(), "parked, not chained");
        assert!(v.may_have_chain(tree, key));
        v.commit(&writer);
        v.finish(Arc::clone(&writer), Vec::new());
        let mut unparking = v.unparking();
        locks.release_all_with(txn, |key, parked| unparking.take(key, parked));
        unparking.done();

        // A snapshot taken now sees the writer: the tree's value is its value.
        let snap = v.snapshot();
        assert!(matches!(v.seen(&snap, tree, key), Seen::Tree), "a snapshot read a rolled-back version");
        assert_eq!(v.stats().bytes, 0, "the moved version went with the older one (K19's prefix rule)");
        assert_eq!(locks.lock_count(), 0, "the head went with its version");
    }
}
