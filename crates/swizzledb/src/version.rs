//! One version of a key (LOCKS.md K17): the value before a writer's first change of the key,
//! and the writer whose state decides which snapshots see it. While a writer runs, its versions
//! are the entries of its undo list, which it shares with readers (K17); the version store
//! (`versions.rs`) keeps them in chains once it ended, if a snapshot may still need them. The
//! lock head of a key the writer locked to write names the writer (`lock.rs`), which is why
//! these types sit below both.

use std::cell::Cell;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use hashbrown::HashTable;
use parking_lot::Mutex;
use std::hash::Hasher;
use swizzledb_sync::{Lsn, PageId};

/// A writer that is still running (K17).
pub(crate) const ACTIVE: u64 = 0;
/// A writer between taking its commit timestamp and storing it: a reader waits the few
/// instructions until it is stored (K18).
pub(crate) const COMMITTING: u64 = 1;
/// A writer that rolled back: no snapshot sees it.
pub(crate) const ABORTED: u64 = 2;
/// The clock's first value; commit timestamps are above it.
pub(crate) const FIRST_TS: u64 = 16;

/// One transaction as a writer of versions: its state, shared by every version it made, and
/// while it runs its undo list, where a reader that must not see it finds the value its first
/// change of a key replaced (K17).
#[derive(Debug)]
pub(crate) struct Writer {
    /// `ACTIVE`, `COMMITTING`, `ABORTED` or the commit timestamp.
    pub(crate) state: AtomicU64,
    /// The transaction's changes, oldest first (R5's undo information and K17's versions in
    /// one list). Only the writer's own thread pushes; readers look up under the mutex. Emptied
    /// when the writer ends, after the versions a snapshot may need went to chains (K19).
    pub(crate) undo: Mutex<UndoList>,
}

thread_local! {
    /// A writer no one holds any more, kept for the thread's next transaction ([`Writer::keep`]).
    static SPARE_WRITER: Cell<Option<Arc<Writer>>> = const { Cell::new(None) };
}

/// The `Arc` a thread kept in `slot`, taken out and made ready by `reset`, if no one else holds
/// it any more (the per-thread reuse of a transaction's writer and of its log entry): one still
/// held elsewhere is let go, never handed out.
pub(crate) fn reuse<T>(
    slot: &'static std::thread::LocalKey<Cell<Option<Arc<T>>>>,
    reset: impl FnOnce(&mut T),
) -> Option<Arc<T>> {
    let mut kept = slot.try_with(Cell::take).ok().flatten()?;
    reset(Arc::get_mut(&mut kept)?);
    Some(kept)
}

/// Whether the thread keeps an `Arc` in `slot` (tests of the reuse).
#[cfg(test)]
pub(crate) fn holds_spare<T>(slot: &'static std::thread::LocalKey<Cell<Option<Arc<T>>>>) -> bool {
    slot.with(|s| {
        let kept = s.take();
        let some = kept.is_some();
        s.set(kept);
        some
    })
}

impl Writer {
    /// A running writer with an empty undo list: the writer the thread's last transaction left
    /// ([`Writer::keep`]), with its list's buffers, if there is one; else a new one with the
    /// buffers the thread's last list left ([`UndoList::take_spare`]).
    pub(crate) fn new() -> Arc<Writer> {
        reuse(&SPARE_WRITER, |w| {
            debug_assert!(w.undo.get_mut().is_empty(), "K19: a kept writer's list was emptied");
            *w.state.get_mut() = ACTIVE;
        })
        .unwrap_or_else(|| {
            Arc::new(Writer { state: AtomicU64::new(ACTIVE), undo: Mutex::new(UndoList::take_spare()) })
        })
    }

    /// A transaction let its writer go: if nothing else holds it (no version in a chain, no
    /// reader that looked it up), it is kept, with its list's buffers, for the thread's next
    /// transaction, which then allocates none. Its undo list must be empty (K19 emptied it).
    /// A writer still held elsewhere hands its emptied list's buffers to the thread instead
    /// ([`UndoList::recycle`]).
    pub(crate) fn keep(mut w: Arc<Writer>) {
        if let Some(writer) = Arc::get_mut(&mut w) {
            if writer.undo.get_mut().is_empty() {
                let _ = SPARE_WRITER.try_with(|s| s.set(Some(w)));
            }
            return;
        }
        let mut list = w.undo.lock();
        if list.is_empty() {
            std::mem::take(&mut *list).recycle();
        }
    }

    /// K18: the value the writer's first change of `key` in `tree` replaced (`Some(None)`: the
    /// key was absent), or `None` if the writer has not changed it (or has ended: then its
    /// versions are in the chains where a snapshot needs them).
    pub(crate) fn first_image(&self, tree: PageId, key: &[u8]) -> Option<Option<Box<[u8]>>> {
        let mut list = self.undo.lock();
        let i = list.first(tree, key)?;
        Some(list.get(i).old.map(Box::from))
    }
}

/// A composite key (tree, then key), shared by its chain's map entry, the ordered index (K22)
/// and the writer's list: one allocation per chained key.
pub(crate) type Key = Arc<[u8]>;

#[derive(Debug)]
pub(crate) struct Version {
    pub(crate) writer: Arc<Writer>,
    /// The value before the writer's first change of the key (`None`: absent); meaningless
    /// while `in_list`.
    pub(crate) before: Option<Box<[u8]>>,
    /// K17, K20: the before-image is still in the writer's undo list, which the running writer
    /// keeps for its rollback anyway: the version a delete puts in the key's chain (K22) while
    /// its writer runs holds no copy of it. The writer's end (`Versions::retire`) copies it in,
    /// from the list, before it empties the list, or removes the version at once if no
    /// snapshot may need it.
    pub(crate) in_list: bool,
}

impl Version {
    /// The version of `writer` whose before-image is `before`.
    pub(crate) fn of(writer: &Arc<Writer>, before: Option<&[u8]>) -> Version {
        Version { writer: Arc::clone(writer), before: before.map(Box::from), in_list: false }
    }

    /// The memory the version takes, with a key of `key_len` bytes: while it is `in_list`, its
    /// key and bookkeeping only, which the bound does not count (K20).
    pub(crate) fn bytes(&self, key_len: usize) -> usize {
        VERSION_OVERHEAD + key_len + self.before.as_ref().map_or(0, |b| b.len())
    }
}

/// What a version costs besides its key and value (chain entry, map entry, allocations).
const VERSION_OVERHEAD: usize = 96;

/// A change a transaction made, as its rollback needs it (R5): the key, and the old value of an
/// update or delete. The new value is not kept: the inverse puts the old value back or deletes
/// the key, and the compensation record takes what it replaces from the page.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Undo<'u> {
    pub(crate) tree: PageId,
    /// `None`: the change inserted the key (undone by deleting it); else the old value.
    pub(crate) old: Option<&'u [u8]>,
    pub(crate) key: &'u [u8],
    /// The record's own previous link: where the undo chain continues after it.
    pub(crate) prev: Lsn,
}

/// A transaction's undo information, newest last: the keys and old values in one byte buffer,
/// so that a write costs no allocation of its own. Emptied buffers are kept per thread and
/// reused by the thread's next transaction.
#[derive(Debug, Default)]
pub(crate) struct UndoList {
    entries: Vec<UndoEntry>,
    bytes: Vec<u8>,
    /// K18: the first entry of each key, built by the first look-up of a long list and kept up
    /// to date by later pushes, so that no look-up scans a long list twice (valid while
    /// `indexed`). Boxed: most lists never have one, and the list moves with its transaction;
    /// kept, emptied, when the list is reused.
    index: Option<Box<Index>>,
    indexed: bool,
}

/// [`UndoList`]'s index of first entries: entry numbers, hashed by their tree and key, which
/// stay in the list's buffer (no key is copied).
#[derive(Default)]
struct Index {
    first: HashTable<usize>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("keys", &self.first.len()).finish()
    }
}

/// The hash of `key` in `tree`, as [`Index`] keeps it.
fn key_hash(tree: PageId, key: &[u8]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write_u64(tree.get());
    h.write(key);
    h.finish()
}

/// Entry `i`'s tree and key, from the list's parts (for the index's closures, which must not
/// borrow the whole list).
fn key_of<'a>(entries: &[UndoEntry], bytes: &'a [u8], i: usize) -> (PageId, &'a [u8]) {
    let e = entries[i];
    (e.tree, &bytes[e.at..e.at + e.key_len])
}

/// Adds entry `i` to `index` unless its key has an entry there already (an older one).
fn index_entry(index: &mut Index, entries: &[UndoEntry], bytes: &[u8], i: usize) {
    let (tree, key) = key_of(entries, bytes, i);
    let hash = key_hash(tree, key);
    if index.first.find(hash, |&j| key_of(entries, bytes, j) == (tree, key)).is_none() {
        index.first.insert_unique(hash, i, |&j| {
            let (t, k) = key_of(entries, bytes, j);
            key_hash(t, k)
        });
    }
}

#[derive(Clone, Copy, Debug)]
struct UndoEntry {
    tree: PageId,
    prev: Lsn,
    /// Where the key starts in `bytes`; the old value (if any) follows it.
    at: usize,
    key_len: usize,
    /// `usize::MAX`: an insert (no old value).
    old_len: usize,
}

/// Lists up to this long are scanned by a look-up; longer ones get an index.
const SCAN_UP_TO: usize = 32;

thread_local! {
    static SPARE_UNDO: Cell<Option<UndoList>> = const { Cell::new(None) };
}

impl UndoList {
    /// An empty list, reusing the buffers the thread's last transaction left.
    pub(crate) fn take_spare() -> UndoList {
        SPARE_UNDO.with(Cell::take).unwrap_or_default()
    }

    /// Empties the list and keeps its buffers for the thread's next transaction (large ones are
    /// dropped, so one huge transaction does not pin its memory). A list that owns no buffers
    /// (one whose buffers `retire` took out) leaves the thread's spare as it is, which may
    /// hold those very buffers.
    pub(crate) fn recycle(mut self) {
        if self.worth_keeping() && self.owns_buffers() {
            self.clear();
            SPARE_UNDO.with(|s| s.set(Some(self)));
        }
    }

    /// The capacities of the list's two buffers, entries and bytes (tests of their reuse).
    #[cfg(test)]
    pub(crate) fn capacities(&self) -> (usize, usize) {
        (self.entries.capacity(), self.bytes.capacity())
    }

    /// Whether the list's buffers are small enough to keep for another transaction.
    pub(crate) fn worth_keeping(&self) -> bool {
        self.bytes.capacity() <= 1 << 20 && self.entries.capacity() <= 1 << 14
    }

    /// Whether the list has allocated anything.
    fn owns_buffers(&self) -> bool {
        self.entries.capacity() != 0 || self.bytes.capacity() != 0 || self.index.is_some()
    }

    /// Empties the list, keeping its buffers.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.bytes.clear();
        self.indexed = false;
        if let Some(index) = &mut self.index {
            index.first.clear();
        }
    }

    pub(crate) fn push(&mut self, tree: PageId, key: &[u8], old: Option<&[u8]>, prev: Lsn) {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(old.unwrap_or_default());
        let old_len = old.map_or(usize::MAX, <[u8]>::len);
        let i = self.entries.len();
        self.entries.push(UndoEntry { tree, prev, at, key_len: key.len(), old_len });
        if self.indexed {
            let UndoList { entries, bytes, index, .. } = self;
            if let Some(index) = index {
                index_entry(index, entries, bytes, i);
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes the key-and-value buffer holds room for (kept across reuse).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// Entry `i` (0 is the oldest).
    pub(crate) fn get(&self, i: usize) -> Undo<'_> {
        let e = self.entries[i];
        let key = &self.bytes[e.at..e.at + e.key_len];
        let old = (e.old_len != usize::MAX).then(|| {
            let v = e.at + e.key_len;
            &self.bytes[v..v + e.old_len]
        });
        Undo { tree: e.tree, old, key, prev: e.prev }
    }

    /// The oldest entry of `key` in `tree`, if any: the one whose old value is the key's
    /// version (K17).
    pub(crate) fn first(&mut self, tree: PageId, key: &[u8]) -> Option<usize> {
        if !self.indexed && self.entries.len() > SCAN_UP_TO {
            let UndoList { entries, bytes, index, indexed } = self;
            let index = index.get_or_insert_with(Box::default);
            index.first.clear();
            // Room for four times the entries at once: a list that grew past `SCAN_UP_TO` tends
            // to go on growing (a TPC-C Delivery's reaches about 130), and grown one doubling
            // at a time the table was rehashed three or four times per such transaction.
            index.first.reserve(4 * entries.len(), |&j| {
                let (t, k) = key_of(entries, bytes, j);
                key_hash(t, k)
            });
            for i in 0..entries.len() {
                index_entry(index, entries, bytes, i);
            }
            *indexed = true;
        }
        match (&self.index, self.indexed) {
            (Some(index), true) => index
                .first
                .find(key_hash(tree, key), |&j| key_of(&self.entries, &self.bytes, j) == (tree, key))
                .copied(),
            _ => (0..self.entries.len()).find(|&i| {
                let u = self.get(i);
                u.tree == tree && u.key == key
            }),
        }
    }

    /// The oldest entry of each key the list holds, in no particular order (K19: the versions
    /// a writer leaves when it ends).
    pub(crate) fn firsts(&self) -> Vec<usize> {
        if let (Some(index), true) = (&self.index, self.indexed) {
            return index.first.iter().copied().collect();
        }
        let mut order: Vec<usize> = (0..self.entries.len()).collect();
        // By key, and among a key's entries oldest first: the first of each run is the oldest.
        order.sort_unstable_by(|&a, &b| {
            let (x, y) = (self.get(a), self.get(b));
            (x.tree, x.key, a).cmp(&(y.tree, y.key, b))
        });
        order.dedup_by(|later, first| {
            let (x, y) = (self.get(*later), self.get(*first));
            x.tree == y.tree && x.key == y.key
        });
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use std::sync::atomic::Ordering;

    /// K19: a writer is reused by the thread's next transaction only when nothing holds it; a
    /// writer a chain or a reader still holds keeps its state, and the next transaction gets
    /// another one.
    #[test]
    fn k19_a_writer_still_held_is_never_reused() {
        let w = Writer::new();
        w.state.store(FIRST_TS + 5, Ordering::SeqCst);
        let held = Arc::clone(&w);
        Writer::keep(w);
        let next = Writer::new();
        assert!(!Arc::ptr_eq(&next, &held), "a held writer went to the next transaction");
        assert_eq!(held.state.load(Ordering::SeqCst), FIRST_TS + 5, "its commit time is kept");
        assert_eq!(next.state.load(Ordering::SeqCst), ACTIVE);

        // Let go everywhere, it is reused and starts over as a running writer.
        next.state.store(FIRST_TS + 9, Ordering::SeqCst);
        let at = Arc::as_ptr(&next);
        Writer::keep(next);
        assert!(spare_writer_kept(), "an unheld writer with an empty list was not kept");
        let again = Writer::new();
        assert_eq!(Arc::as_ptr(&again), at, "an unheld writer is kept for the thread");
        assert_eq!(again.state.load(Ordering::SeqCst), ACTIVE);

        // A writer whose list was not emptied is not kept.
        again.undo.lock().push(PageId::new(3).expect("nonzero"), b"k", Some(b"v"), Lsn(8));
        Writer::keep(again);
        assert!(!spare_writer_kept(), "a writer with undo entries was kept");
    }

    fn spare_writer_kept() -> bool {
        holds_spare(&SPARE_WRITER)
    }

    /// One step of a list's life: a change of a key (tree 1–3, key 0–49, with or without an old
    /// value), a look-up of a key's first entry, or the list's reuse by the thread's next
    /// transaction.
    #[derive(Clone, Debug)]
    enum Step {
        Push(u64, u8, bool),
        First(u64, u8),
        Reuse,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            8 => (1u64..4, 0u8..50, any::<bool>()).prop_map(|(t, k, o)| Step::Push(t, k, o)),
            3 => (1u64..4, 0u8..50).prop_map(|(t, k)| Step::First(t, k)),
            1 => Just(Step::Reuse),
        ]
    }

    proptest! {
        /// K18/K19: `first` finds each key's oldest entry and `firsts` lists exactly one entry
        /// per key, its oldest — whether the list is short (scanned) or long (indexed), and
        /// after the index was kept, emptied, through a reuse; against a map of first entries.
        #[test]
        fn k19_first_entries_match_a_model(steps in proptest::collection::vec(step(), 1..400)) {
            let mut list = UndoList::default();
            let mut model: BTreeMap<(u64, Vec<u8>), usize> = BTreeMap::new();
            for s in steps {
                match s {
                    Step::Push(t, k, old) => {
                        let key = vec![b'k', k];
                        model.entry((t, key.clone())).or_insert(list.len());
                        let old_value = [k; 3];
                        list.push(PageId::new(t).unwrap(), &key, old.then_some(&old_value[..]), Lsn(1));
                    }
                    Step::First(t, k) => {
                        let key = vec![b'k', k];
                        prop_assert_eq!(list.first(PageId::new(t).unwrap(), &key), model.get(&(t, key)).copied());
                    }
                    Step::Reuse => {
                        std::mem::take(&mut list).recycle();
                        list = UndoList::take_spare();
                        model.clear();
                    }
                }
                let mut firsts = list.firsts();
                firsts.sort_unstable();
                let mut want: Vec<usize> = model.values().copied().collect();
                want.sort_unstable();
                prop_assert_eq!(firsts, want);
            }
        }
    }
}
