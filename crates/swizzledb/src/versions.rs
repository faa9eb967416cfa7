//! Snapshot reads (LOCKS.md K17–K21): the committed value a reader's snapshot sees, rebuilt from
//! the tree and the before-images of the writers it must not see.
//!
//! A transaction that changes a key for the first time records the value it replaces (its
//! **version**), under the leaf's exclusive latch and before the change: while the writer
//! runs, in its undo list, which the lock head of the key's exclusive lock names (K17); in the
//! key's **chain** (its versions, oldest first) once the writer ended, if a snapshot may still
//! need it. A reader takes a **snapshot**: a timestamp `S` of
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
use crate::version::{Key, UndoList, Version, Writer, ABORTED, ACTIVE, COMMITTING, FIRST_TS};

/// A snapshot slot that is free.
const FREE: u64 = 0;
/// A snapshot slot whose snapshot was ended for memory (K20).
const TOO_OLD: u64 = 1;

/// Snapshot slots (K19); snapshots beyond this many at once register in an overflow list.
const SLOTS: usize = 128;
const SHARDS: usize = 64;
/// Stripes of the `made` counter.
const MADE_STRIPES: usize = 16;
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
    /// The commit clock (K18): a commit takes its value, a snapshot moves it on by one and
    /// reads at the value before, an ended rollback moves it on and takes the new value.
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
    /// Bytes held by versions: not zero while any chain exists.
    bytes: Own<AtomicUsize>,
    /// The part of `bytes` the bound counts (K20): all but what versions whose before-images
    /// are still in their running writers' lists take (`Version::in_list`: their keys and
    /// bookkeeping), of which ending a snapshot frees nothing.
    counted: Own<AtomicUsize>,
    /// Chains per bucket of composite-key hashes (K18): a reader whose key's bucket counts
    /// none has no chain to look up. Raised before the chain's first change is made, lowered
    /// when the chain is removed.
    chained: Box<[AtomicU32]>,
    /// The lock heads that name running writers, whose undo lists hold their versions (K17).
    locks: Arc<LockManager>,
    pub(crate) limit: usize,
    /// Counters for [`VersionStats`]; `made` counts the undo entries of writers that ended (each
    /// adds its count once, at its end, to its thread's stripe: one counter that every writer
    /// moves would pass its cache line between the cores at every end).
    made: Box<[Own<AtomicU64>]>,
    too_old: AtomicU64,
}

/// The version store's figures (`Database::version_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct VersionStats {
    /// Bytes the versions kept for snapshots take now (keys, before-images and bookkeeping):
    /// those of writers that ended. A running writer's versions are its undo list, which its
    /// rollback needs anyway, and are not counted (LOCKS.md K20).
    pub bytes: usize,
    /// The bound on `bytes` (`Builder::version_memory`); past it the oldest snapshots end
    /// with `Error::SnapshotTooOld`.
    pub limit: usize,
    /// Before-images recorded since the database opened by transactions that have ended: one
    /// per change (its undo entry, where a snapshot that must not see the running writer reads
    /// the key's committed value, LOCKS.md K17).
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

/// The chain-count bucket of a key whose lock name hashes to `hash`.
fn bucket(hash: u64) -> usize {
    ((hash >> 24) as usize) % BUCKETS
}

impl Versions {
    pub(crate) fn new(limit: usize, locks: Arc<LockManager>) -> Versions {
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
            counted: Own(AtomicUsize::new(0)),
            chained: (0..BUCKETS).map(|_| AtomicU32::new(0)).collect(),
            locks,
            limit,
            made: (0..MADE_STRIPES).map(|_| Own(AtomicU64::new(0))).collect(),
            too_old: AtomicU64::new(0),
        }
    }

    pub(crate) fn stats(&self) -> VersionStats {
        VersionStats {
            bytes: self.counted_bytes(),
            limit: self.limit,
            made: self.made.iter().map(|m| m.load(SeqCst)).sum(),
            too_old: self.too_old.load(SeqCst),
        }
    }

    /// K20: the bytes the bound counts: those of the versions of writers that ended.
    fn counted_bytes(&self) -> usize {
        self.counted.load(SeqCst)
    }

    /// Counts `v`, a version of a key of `key_len` bytes, going into a chain.
    fn count(&self, v: &Version, key_len: usize) {
        let b = v.bytes(key_len);
        if !v.in_list {
            self.counted.fetch_add(b, SeqCst);
        }
        self.bytes.fetch_add(b, SeqCst);
    }

    /// Uncounts `v`, a version of a key of `key_len` bytes, leaving its chain.
    fn uncount(&self, v: &Version, key_len: usize) {
        let b = v.bytes(key_len);
        if !v.in_list {
            self.counted.fetch_sub(b, SeqCst);
        }
        self.bytes.fetch_sub(b, SeqCst);
    }

    /// K17, K22: `writer` is about to delete `key` of `tree`: its version goes to the key's
    /// chain now, and the key into the ordered index, since a scan cannot meet a deleted key in
    /// the tree. The version holds no copy of its before-image while the writer runs: that is
    /// the writer's first undo entry of the key, pushed before this call, where readers look it
    /// up (K18), and it counts nothing against the bound (K20); [`Versions::retire`] copies it
    /// in. Returns the composite key if this put the writer's version in the chain, for
    /// [`Versions::retire`]. Called under the leaf's exclusive latch, before the change.
    pub(crate) fn record_delete(&self, writer: &Arc<Writer>, tree: PageId, key: &[u8]) -> Option<Key> {
        with_composite(tree, key, |ck| self.record_in_chain(writer, ck))
    }

    /// Puts `version` at the end of `ck`'s chain (counting a new chain); its bytes are counted
    /// already. Returns the writer and the chain's key, for [`Versions::retire`]'s collection.
    fn append_to_chain(&self, shard: &mut Chains, ck: &[u8], version: Version) -> (Arc<Writer>, Key) {
        let writer = Arc::clone(&version.writer);
        if let Some(chain) = shard.get_mut(ck) {
            chain.versions.push(version);
            let (k, _) = shard.get_key_value(ck).expect("found just above, under the same mutex");
            return (writer, Arc::clone(k));
        }
        let k: Key = Arc::from(ck);
        self.chained[self.chain_bucket(ck)].fetch_add(1, SeqCst);
        shard.insert(Arc::clone(&k), Chain { versions: smallvec::smallvec![version], indexed: false });
        (writer, k)
    }

    /// K17, K22 in the shared chain of `ck`, for a delete: records `writer`'s version, its
    /// before-image left in the writer's list, unless the chain's newest is the writer's
    /// already, and indexes the key.
    fn record_in_chain(&self, writer: &Arc<Writer>, ck: &[u8]) -> Option<Key> {
        let in_list = || {
            let v = Version { writer: Arc::clone(writer), before: None, in_list: true };
            self.count(&v, ck.len());
            v
        };
        let mut shard = self.shards[shard_of(ck)].lock();
        let found = shard.get_mut(ck).map(|chain| {
            let index = !chain.indexed;
            chain.indexed = true;
            let made = !chain.versions.last().is_some_and(|v| Arc::ptr_eq(&v.writer, writer));
            if made {
                chain.versions.push(in_list());
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
                let k: Key = Arc::from(ck);
                let chain = Chain { versions: smallvec::smallvec![in_list()], indexed: true };
                shard.insert(Arc::clone(&k), chain);
                self.chained[self.chain_bucket(ck)].fetch_add(1, SeqCst);
                (true, k, true)
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
    /// and calls this before any of its locks is released). Its timestamp is the clock as it
    /// is, which only snapshots move: a snapshot that moved it before this read does not see
    /// the writer, one that moves it after does (and finds it *committing* or committed).
    pub(crate) fn commit(&self, writer: &Writer) -> u64 {
        writer.state.store(COMMITTING, SeqCst);
        let ts = self.clock.load(SeqCst);
        writer.state.store(ts, SeqCst);
        ts
    }

    /// K19: the writer's transaction ended, committed (`commit` was called) or rolled back
    /// (its rollback complete). Called before its locks are released, while its lock heads
    /// still name it. `chained`: the keys whose chains hold its version already (its deletes,
    /// K22). The version of each other key in its undo list goes to the key's chain if a
    /// snapshot may need it (the writer ended after the horizon) or the key has a chain (whose
    /// versions are older: dropped, this one would leave an older writer's version as the
    /// key's newest, and a reader would take its before-image for the key's value); then the
    /// list is emptied, and the chain versions go once no snapshot needs them. The emptied
    /// list keeps its buffers in the writer for the thread's next transaction
    /// ([`Writer::keep`]), unless a chain holds the writer: then they are taken out of it and
    /// returned, so that no chained writer pins them.
    pub(crate) fn retire(&self, writer: &Arc<Writer>, mut chained: Vec<Key>) -> Option<UndoList> {
        let at = match writer.state.load(SeqCst) {
            ACTIVE | COMMITTING => {
                writer.state.store(ABORTED, SeqCst);
                self.clock.fetch_add(1, SeqCst) + 1
            }
            ABORTED => self.clock.fetch_add(1, SeqCst) + 1,
            ts => ts,
        };
        let mut guard = writer.undo.lock();
        let list = &mut *guard;
        if list.is_empty() && chained.is_empty() {
            return None;
        }
        let keep = at > self.horizon();
        // Without any chain and without a snapshot that may need them, nothing is copied: the
        // common case, where no reader ever looked.
        if keep || self.bytes.load(SeqCst) != 0 {
            for i in list.firsts() {
                let u = list.get(i);
                with_composite(u.tree, u.key, |ck| {
                    if !keep && !self.counted(ck) {
                        return;
                    }
                    let mut shard = self.shards[shard_of(ck)].lock();
                    match shard.get_mut(ck).and_then(|c| c.versions.last_mut()) {
                        Some(v) if Arc::ptr_eq(&v.writer, writer) => {
                            // Its delete's version (K22): the before-image comes out of the list
                            // now, before the list is emptied, where a snapshot may need it.
                            // Else `ended` removes the version at once.
                            if v.in_list && keep {
                                self.uncount(v, ck.len());
                                *v = Version::of(writer, u.old);
                                self.count(v, ck.len());
                            }
                        }
                        _ => {
                            let version = Version::of(writer, u.old);
                            self.count(&version, ck.len());
                            chained.push(self.append_to_chain(&mut shard, ck, version).1);
                        }
                    }
                });
            }
        }
        let made = list.len() as u64;
        let taken = if chained.is_empty() && list.worth_keeping() {
            list.clear();
            None
        } else {
            Some(std::mem::take(list))
        };
        drop(guard);
        self.made[thread_slot() % MADE_STRIPES].fetch_add(made, std::sync::atomic::Ordering::Relaxed);
        if !chained.is_empty() {
            self.ended(at, Arc::clone(writer), chained);
        }
        taken
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
        if (waiting != u64::MAX && waiting <= self.horizon()) || self.counted_bytes() > self.limit {
            self.collect();
        }
    }

    /// Begins a snapshot (K18, K19): it moves the clock on by one and reads at the value
    /// before, so it sees every commit that read the clock before that move.
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
                let at = self.clock.fetch_add(1, SeqCst);
                return Snapshot { versions: self, at, own: None, slot: Some(s), registered: first };
            }
        }
        let mut overflow = self.overflow.lock();
        self.overflowed.fetch_add(1, SeqCst);
        let at = self.clock.fetch_add(1, SeqCst);
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
            if self.counted_bytes() <= self.limit || !self.end_oldest_snapshot(horizon) {
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
                for v in &chain.versions {
                    self.uncount(v, ck.len());
                }
                self.chained[self.chain_bucket(ck)].fetch_sub(1, SeqCst);
                false
            });
        }
        self.ordered[ordered_of(t)].lock().retain(|k| tree_of(k) != t);
    }

    /// K21: `key` of `tree` was just changed by an unlogged database's raw write, which records
    /// no version and which every snapshot sees at once. The versions its chain holds of
    /// writers that ended are dropped: left, the newest of them (a rolled-back writer's, or one
    /// committed after an older snapshot) would have readers take its before-image for the
    /// key's value, hiding the raw write. A running writer's version, and any after it, stay.
    pub(crate) fn forget_key(&self, tree: PageId, key: &[u8]) {
        if self.bytes.load(SeqCst) == 0 {
            return;
        }
        with_composite(tree, key, |ck| {
            if !self.counted(ck) {
                return;
            }
            let mut shard = self.shards[shard_of(ck)].lock();
            let Some(chain) = shard.get(ck) else { return };
            let ended = chain
                .versions
                .iter()
                .position(|v| settled(&v.writer) == ACTIVE)
                .unwrap_or(chain.versions.len());
            self.drop_oldest(&mut shard, ck, ended);
        });
    }

    /// Drops the `n` oldest versions of `ck`'s chain, held in `shard` (locked), and the chain
    /// with its count and index entry once it is empty.
    fn drop_oldest(&self, shard: &mut Chains, ck: &[u8], n: usize) {
        let Some(chain) = shard.get_mut(ck) else { return };
        for v in chain.versions.drain(..n) {
            self.uncount(&v, ck.len());
        }
        if chain.versions.is_empty() {
            if chain.indexed {
                self.ordered[ordered_of(tree_of(ck))].lock().remove(ck);
            }
            shard.remove(ck);
            self.chained[self.chain_bucket(ck)].fetch_sub(1, SeqCst);
        }
    }

    fn remove(&self, x: &Finished) {
        for ck in &x.keys {
            let mut shard = self.shards[shard_of(ck)].lock();
            let Some(chain) = shard.get(ck) else { continue };
            // K19: a chain loses its oldest versions first. The writers before this one in the
            // chain ended before it and are removable too; they go with it, so that a
            // concurrent collection removing them later (or not yet) can never leave an older
            // version behind a removed newer one, which a reader would take for the newest.
            let Some(pos) = chain.versions.iter().position(|v| Arc::ptr_eq(&v.writer, &x.writer)) else {
                continue;
            };
            self.drop_oldest(&mut shard, ck, pos + 1);
        }
    }

    /// K18: what `snap` sees of `key` in `tree`, given that the tree was read before this
    /// call.
    pub(crate) fn seen(&self, snap: &Snapshot<'_>, tree: PageId, key: &[u8]) -> Seen {
        let hash = self.locks.name_hash(tree_lock_id(tree), key);
        if self.may_be_versioned(hash) {
            with_composite(tree, key, |ck| self.seen_composite(snap, ck, hash))
        } else {
            Seen::Tree
        }
    }

    /// K18: whether a chain is counted in the bucket of composite key `ck` (none: `ck` has none).
    fn counted(&self, ck: &[u8]) -> bool {
        self.chained[self.chain_bucket(ck)].load(SeqCst) != 0
    }

    /// The hash of the lock name of composite key `ck`: chains are counted by it, as the lock
    /// heads naming writers are, so that a reader hashes its key once (K18).
    fn name_hash(&self, ck: &[u8]) -> u64 {
        let tree = PageId::new(tree_of(ck)).expect("a composite key names its tree");
        self.locks.name_hash(tree_lock_id(tree), &ck[8..])
    }

    /// The chain-count bucket of composite key `ck`.
    fn chain_bucket(&self, ck: &[u8]) -> usize {
        bucket(self.name_hash(ck))
    }

    /// K18: whether `key` of `tree` may have a version, in a running writer's undo list or in
    /// a chain; `false` means it has none. The lock heads naming writers are counted first: a
    /// version moves from a writer's list to its chain by raising the chain count (and the
    /// byte count) before the writer's head is uncounted, so a reader that finds the head
    /// uncounted then finds the chain counted (read the other way round, both could read
    /// zero in between). A writer's head is counted before its first change of the key, so a
    /// reader that saw the change (and asks after) finds it counted.
    pub(crate) fn may_have_chain(&self, tree: PageId, key: &[u8]) -> bool {
        self.may_be_versioned(self.locks.name_hash(tree_lock_id(tree), key))
    }

    /// [`Versions::may_have_chain`] for a key whose lock name hashes to `hash`.
    fn may_be_versioned(&self, hash: u64) -> bool {
        self.locks.writer_counted(hash)
            || (self.bytes.load(SeqCst) != 0 && self.chained[bucket(hash)].load(SeqCst) != 0)
    }

    /// K18 for one key: the newest version of `ck` may be in the undo list of the writer its
    /// lock head names (K17), the older ones are in its chain. The head is looked at first: a
    /// writer puts the versions a snapshot may need into the chains before it empties its list,
    /// and empties it before its heads let it go, so a reader finds a version in one or the
    /// other (in both, at worst, which changes nothing).
    fn seen_composite(&self, snap: &Snapshot<'_>, ck: &[u8], hash: u64) -> Seen {
        // `Some(before)`: the running writer's version, the key's newest, is one the snapshot
        // must not see.
        let mut unseen_parked = None;
        let tree = PageId::new(tree_of(ck)).expect("a composite key names its tree");
        let key = &ck[8..];
        if self.locks.writer_counted(hash) {
            if let Some(writer) = self.locks.writer_of(hash, tree_lock_id(tree), key) {
                if snap.own.as_ref().is_some_and(|o| Arc::ptr_eq(o, &writer)) {
                    // K24: the snapshot's own writer is named from the moment its write took the
                    // lock, also when that write then failed (a write conflict) and changed
                    // nothing: only its own change makes the tree's value the snapshot's. Else
                    // the tree may hold a value committed after the snapshot: the chain decides.
                    if writer.first_image(tree, key).is_some() {
                        return Seen::Tree;
                    }
                } else if sees(snap, &writer) {
                    // The newest writer is seen, and with it every older one (timestamps grow
                    // along a key's versions): the tree's value is the snapshot's.
                    return Seen::Tree;
                } else {
                    // `None`: it has not changed the key, or it ended and its version, if a
                    // snapshot may need it, is in the chain.
                    unseen_parked = writer.first_image(tree, key);
                }
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
            // The version of a delete whose writer runs (K17, K22), the key's newest (the
            // writer holds the key's lock until its version is filled or removed): its
            // before-image is the one read from the writer's list above. None there: the
            // writer deleted the key after this reader read the tree, or it ended with no
            // snapshot that may need the version (rolled back, or committed before every
            // snapshot registered), and its version goes unfilled; a writer whose version a
            // snapshot may need fills it before emptying its list. Either way the tree's value
            // read is the image.
            (Some(i), parked) if chain[i].in_list => match parked {
                Some(before) => Seen::Before(before),
                None => Seen::Tree,
            },
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
            .filter_map(|ck| match self.seen_composite(snap, &ck, self.name_hash(&ck)) {
                Seen::Before(Some(v)) => Some((ck[8..].to_vec(), v.into_vec())),
                _ => None,
            })
            .collect()
    }
}

impl Versions {
    /// The hash of `key`'s lock name in `tree` (K18: one hash serves the lock head's and the
    /// chain's buckets).
    pub(crate) fn key_hash(&self, tree: PageId, key: &[u8]) -> u64 {
        self.locks.name_hash(tree_lock_id(tree), key)
    }

    /// K18: no head naming a writer is counted in `hash`'s bucket, and none was let go since
    /// [`Versions::writer_releases`] said `releases`.
    pub(crate) fn writers_quiet_since(&self, hash: u64, releases: u64) -> bool {
        self.locks.writers_quiet_since(hash, releases)
    }

    /// K18: the writers of `hash`'s bucket that have let their heads go so far.
    pub(crate) fn writer_releases(&self, hash: u64) -> u64 {
        self.locks.writer_releases(hash)
    }

    /// K18, a read of the newest committed value that registers no snapshot (a plain point
    /// read): the tree was read after `releases` was taken, and a writer was counted in the
    /// key's bucket then. The key's writer, if its head names one, settles it: running, its
    /// first before-image of the key (none: it has not changed the key, and the tree's value
    /// is committed); no head naming one, the tree's value. `None` — retry with a snapshot —
    /// when the writer rolled back or committed, when the head names a transaction whose entry
    /// holds no writer, or when any writer of the bucket let its head go meanwhile: the value
    /// read may then be a change rolled back since, or one the writer changed again before it
    /// committed. Chains do not matter: they hold older values than the newest committed one.
    pub(crate) fn now_seen(&self, tree: PageId, key: &[u8], hash: u64, releases: u64) -> Option<Seen> {
        let seen = match self.locks.named_writer(hash, tree_lock_id(tree), key) {
            // No head names a writer: none has an uncommitted change of the key (one that had
            // let the key go meanwhile counts as a release).
            None => Seen::Tree,
            // Named, but the writer is not (or no longer) in its entry: perhaps letting its
            // locks go after a rollback.
            Some(None) => return None,
            Some(Some(writer)) => match settled(&writer) {
                ACTIVE => {
                    READ_POINT.reached(ReadAt::Asked);
                    match writer.first_image(tree, key) {
                        Some(before) => Seen::Before(before),
                        // No entry: no change of the key, unless the writer has ended and
                        // emptied its list since (its state, set before the list is emptied,
                        // says so): rolled back, or committed with the read's copy perhaps a
                        // change it made before its last one (G1b, as below).
                        None if settled(&writer) != ACTIVE => return None,
                        None => Seen::Tree,
                    }
                }
                ABORTED => return None,
                // Committed, its locks not let go yet. The tree's value the reader holds may
                // be a change the writer made before its last one of the key, which was never
                // committed (G1b): the writer's committed value is in the tree now, not
                // necessarily in the reader's copy. The reader takes a snapshot and reads again.
                _committed => return None,
            },
        };
        (self.writer_releases(hash) == releases).then_some(seen)
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
    /// the caller must fail the read. Asked after every read at a snapshot: inlined, a slot's
    /// load and a comparison.
    #[inline]
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

/// Where this thread starts looking for a free slot: its thread number, distinct among the live
/// threads and given back when a thread exits (`swizzledb_sync::thread`), so that the slots
/// every horizon reads, up to the highest ever taken (`used`), stay as few as the threads that
/// run at once however many come and go (K19). A snapshot taken while its thread is torn down
/// starts at slot 0.
fn thread_slot() -> usize {
    swizzledb_sync::thread::thread_number().unwrap_or(0) % SLOTS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::TxnId;

    /// K19: threads that come and go reuse thread numbers, so the slots a horizon reads stay
    /// as few as the threads that run at once. Numbered from a counter that only grew, 300
    /// threads in turn, each taking one snapshot, left all 128 slots to read at every writer's
    /// end. (Other tests' threads may hold numbers meanwhile: the bound allows for them.)
    #[test]
    fn k19_threads_that_come_and_go_keep_the_slots_read_few() {
        let locks = Arc::new(LockManager::new(4));
        let v = Versions::new(DEFAULT_VERSION_MEMORY, locks);
        for _ in 0..300 {
            std::thread::scope(|s| {
                s.spawn(|| drop(v.snapshot()));
            });
        }
        let used = v.used.load(SeqCst);
        assert!(used <= 64, "300 threads one after another made {used} slots to read");
    }

    /// K19: a running writer's version is never dropped while its key's chain holds an older
    /// version — here a rolled-back writer's, left as a collection that has not run yet leaves
    /// it. Dropped, the rolled-back version would be the key's newest, and a snapshot that sees
    /// the committed writer would read the rolled-back one's before-image.
    #[test]
    fn k19_a_writers_version_is_never_dropped_over_an_older_one_in_its_chain() {
        let locks = Arc::new(LockManager::new(4));
        let v = Versions::new(DEFAULT_VERSION_MEMORY, Arc::clone(&locks));
        let tree = PageId::new(7).expect("not zero");
        let key = b"k";
        let rolled_back = Writer::new();
        drop(v.retire(&rolled_back, Vec::new()));
        with_composite(tree, key, |ck| {
            let version = Version::of(&rolled_back, Some(b"old"));
            v.count(&version, ck.len());
            let mut shard = v.shards[shard_of(ck)].lock();
            v.append_to_chain(&mut shard, ck, version);
        });

        // A writer changes the key from "old" to "new" and commits; no snapshot runs.
        let txn = TxnId(2);
        let writer = Writer::new();
        locks.lock_to_write(txn, tree_lock_id(tree), key, &writer).expect("free");
        writer.undo.lock().push(tree, key, Some(b"old"), swizzledb_sync::Lsn(0));
        assert!(v.may_have_chain(tree, key));
        let snap = v.snapshot();
        match v.seen(&snap, tree, key) {
            Seen::Before(Some(b)) => assert_eq!(&b[..], b"old", "the running writer's version"),
            _ => panic!("a snapshot saw a running writer's change"),
        }
        drop(snap);
        v.commit(&writer);
        drop(v.retire(&writer, Vec::new()));
        assert!(writer.undo.lock().is_empty(), "the list is emptied at the writer's end");
        locks.release_all(txn);
        assert!(!locks.may_have_writer(tree_lock_id(tree), key), "the head is uncounted");

        // A snapshot taken now sees the writer: the tree's value is its value.
        let snap = v.snapshot();
        assert!(matches!(v.seen(&snap, tree, key), Seen::Tree), "a snapshot read a rolled-back version");
        assert_eq!(v.stats().bytes, 0, "the moved version went with the older one (K19's prefix rule)");
        assert_eq!(locks.lock_count(), 0, "the head went with its writer");
    }

    /// K18: commits read the clock and snapshots move it. A snapshot sees the commits that
    /// read the clock before it began and none after; commits with no snapshot begun between
    /// them share a timestamp, so no snapshot sees one without the other.
    #[test]
    fn k18_snapshots_move_the_clock_and_commits_read_it() {
        let v = Versions::new(DEFAULT_VERSION_MEMORY, Arc::new(LockManager::new(4)));
        let (a, b, c) = (Writer::new(), Writer::new(), Writer::new());
        let (ta, tb) = (v.commit(&a), v.commit(&b));
        assert_eq!(ta, tb, "no snapshot began between the two commits");
        let snap = v.snapshot();
        let tc = v.commit(&c);
        assert!(tc > snap.at, "a commit after a snapshot began is later than it");
        assert!(sees(&snap, &a) && sees(&snap, &b), "commits before the snapshot are seen");
        assert!(!sees(&snap, &c), "a commit after the snapshot began is not seen");
        let later = v.snapshot();
        assert!(sees(&later, &c));
        assert!(later.at > snap.at, "each snapshot moves the clock");
    }

    /// K17, K19: a snapshot older than a writer reads the key's committed value from the
    /// writer's undo list while the writer runs, and from the chain once it ended, with every
    /// later change of the key by the same writer ignored (the first change's old value is
    /// the version); a snapshot taken after the commit sees the tree.
    #[test]
    fn k17_a_running_writers_version_is_its_first_undo_entry_then_its_chain_entry() {
        let locks = Arc::new(LockManager::new(4));
        let v = Versions::new(DEFAULT_VERSION_MEMORY, Arc::clone(&locks));
        let tree = PageId::new(9).expect("not zero");
        let old = v.snapshot();
        let txn = TxnId(3);
        let writer = Writer::new();
        // Enough other keys that the list is looked up through its index.
        for i in 0..100u32 {
            let k = i.to_be_bytes();
            locks.lock_to_write(txn, tree_lock_id(tree), &k, &writer).expect("free");
            writer.undo.lock().push(tree, &k, None, swizzledb_sync::Lsn(0));
        }
        locks.lock_to_write(txn, tree_lock_id(tree), b"k", &writer).expect("free");
        writer.undo.lock().push(tree, b"k", Some(b"v0"), swizzledb_sync::Lsn(0));
        writer.undo.lock().push(tree, b"k", Some(b"v1"), swizzledb_sync::Lsn(0));
        let before = |snap: &Snapshot<'_>, key: &[u8]| match v.seen(snap, tree, key) {
            Seen::Tree => "tree".to_string(),
            Seen::Before(None) => "absent".to_string(),
            Seen::Before(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
        };
        assert_eq!(before(&old, b"k"), "v0");
        assert_eq!(before(&old, &7u32.to_be_bytes()), "absent");
        assert_eq!(before(&old, b"other"), "tree", "a key the writer holds no lock on");
        v.commit(&writer);
        drop(v.retire(&writer, Vec::new()));
        assert!(v.stats().bytes > 0, "the versions the old snapshot needs are in chains");
        locks.release_all(txn);
        assert_eq!(before(&old, b"k"), "v0", "the old snapshot reads the chain");
        assert_eq!(before(&old, &7u32.to_be_bytes()), "absent");
        let new = v.snapshot();
        assert_eq!(before(&new, b"k"), "tree");
        drop((old, new));
        v.collect();
        assert_eq!(v.stats().bytes, 0, "no snapshot needs them any more");
    }

    /// K19, where the buffers go: a writer's list is emptied in place at its end and keeps its
    /// buffers for the thread's next transaction; if a chain holds the writer (a snapshot may
    /// need its versions), `retire` takes them out and returns them, so that the chained writer
    /// pins none; and a writer let go while another holder keeps it hands its emptied buffers
    /// to the thread (`Writer::keep`), so its next transaction allocates none either way.
    #[test]
    fn k19_retire_leaves_the_buffers_with_the_thread_unless_a_chain_holds_the_writer() {
        let locks = Arc::new(LockManager::new(4));
        let v = Versions::new(DEFAULT_VERSION_MEMORY, Arc::clone(&locks));
        let tree = PageId::new(5).expect("not zero");
        let write_keys = |txn: TxnId, writer: &Arc<Writer>| {
            for i in 0..40u32 {
                let k = i.to_be_bytes();
                locks.lock_to_write(txn, tree_lock_id(tree), &k, writer).expect("free");
                writer.undo.lock().push(tree, &k, Some(b"old value"), swizzledb_sync::Lsn(0));
            }
        };

        // No snapshot: the list is emptied in place and the writer, let go, is the next one.
        let first = Writer::new();
        write_keys(TxnId(2), &first);
        let filled = first.undo.lock().capacities();
        assert!(filled.0 >= 40 && filled.1 >= 40 * 13, "the list grew: {filled:?}");
        v.commit(&first);
        assert!(v.retire(&first, Vec::new()).is_none(), "no chain holds the writer: nothing taken out");
        assert!(first.undo.lock().is_empty(), "emptied at the writer's end");
        assert_eq!(first.undo.lock().capacities(), filled, "emptied in place, buffers kept");
        locks.release_all(TxnId(2));
        let at = Arc::as_ptr(&first);
        Writer::keep(first);
        let second = Writer::new();
        assert_eq!(Arc::as_ptr(&second), at, "the unheld writer is the thread's next one");
        assert_eq!(second.undo.lock().capacities(), filled, "with its buffers");

        // A snapshot older than the writer's end: its versions go to chains, which hold the
        // writer, so the buffers are taken out of it and returned.
        write_keys(TxnId(3), &second);
        let snap = v.snapshot();
        v.commit(&second);
        let taken =
            v.retire(&second, Vec::new()).expect("a chain holds the writer: the buffers are taken out");
        assert!(v.stats().bytes > 0, "the versions the snapshot needs are in chains");
        assert_eq!(taken.capacities(), filled, "the returned list has the buffers");
        assert_eq!(second.undo.lock().capacities(), (0, 0), "the chained writer pins no buffer");
        taken.recycle();
        locks.release_all(TxnId(3));
        Writer::keep(second);
        let third = Writer::new();
        assert_eq!(third.undo.lock().capacities(), filled, "a new writer starts with the recycled buffers");

        // A writer still held elsewhere when its transaction lets it go (a reader looked it
        // up): its emptied buffers go to the thread, not with the held writer.
        drop(snap);
        v.collect();
        assert_eq!(v.stats().bytes, 0, "no snapshot needs the chained versions any more");
        write_keys(TxnId(4), &third);
        v.commit(&third);
        assert!(v.retire(&third, Vec::new()).is_none());
        locks.release_all(TxnId(4));
        let held = Arc::clone(&third);
        Writer::keep(third);
        assert_eq!(held.undo.lock().capacities(), (0, 0), "the held writer gave its buffers up");
        let fourth = Writer::new();
        assert!(!Arc::ptr_eq(&fourth, &held), "a held writer is never reused");
        assert_eq!(fourth.undo.lock().capacities(), filled, "the next writer has the held one's buffers");
        drop(held);
    }
}

/// Where a plain read is (K18), for the race tests' pause point [`READ_POINT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadAt {
    /// It has its value from the leaf and is about to decide with the writers' count whether it
    /// is committed.
    Copied,
    /// The count said a writer may have changed the key: it is about to ask that writer.
    Settling,
    /// It found the key's writer running and is about to look for the writer's first change of
    /// the key ([`Versions::now_seen`]).
    Asked,
}

/// The race tests' pause point (`crate::pause`) in a plain read.
pub(crate) static READ_POINT: crate::pause::Point<ReadAt> = crate::pause::Point::new();
