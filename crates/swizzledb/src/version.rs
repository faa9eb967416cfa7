//! One version of a key (LOCKS.md K17): the value before a writer's first change of the key,
//! and the writer whose state decides which snapshots see it. While a writer runs, its versions
//! are the entries of its undo list, which it shares with readers (K17); the version store
//! (`versions.rs`) keeps them in chains once it ended, if a snapshot may still need them. The
//! lock head of a key the writer locked to write names the writer (`lock.rs`), which is why
//! these types sit below both.

use std::cell::Cell;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
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

impl Writer {
    /// A running writer with an empty undo list (the buffers the thread's last one left).
    #[cfg(test)]
    pub(crate) fn new() -> Arc<Writer> {
        Arc::new(Writer { state: AtomicU64::new(ACTIVE), undo: Mutex::new(UndoList::take_spare()) })
    }

    /// A running writer with `list` (empty) as its undo list.
    pub(crate) fn with_list(list: UndoList) -> Arc<Writer> {
        debug_assert!(list.is_empty());
        Arc::new(Writer { state: AtomicU64::new(ACTIVE), undo: Mutex::new(list) })
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
    /// The value before the writer's first change of the key (`None`: absent).
    pub(crate) before: Option<Box<[u8]>>,
}

impl Version {
    /// The memory the version counts against the bound (K20), with a key of `key_len` bytes.
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
    /// to date by later pushes, so that no look-up scans a long list twice. Boxed: most lists
    /// never have one, and the list moves with its transaction.
    index: Option<Box<Index>>,
}

/// [`UndoList`]'s index of first entries.
#[derive(Debug, Default)]
struct Index {
    /// Keyed by the composite key (tree, then key).
    first: FxHashMap<Box<[u8]>, usize>,
    /// A composite key being looked up, in a buffer kept for the next one.
    probe: Vec<u8>,
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
    /// dropped, so one huge transaction does not pin its memory).
    pub(crate) fn recycle(mut self) {
        if self.bytes.capacity() <= 1 << 20 && self.entries.capacity() <= 1 << 14 {
            self.entries.clear();
            self.bytes.clear();
            self.index = None;
            SPARE_UNDO.with(|s| s.set(Some(self)));
        }
    }

    pub(crate) fn push(&mut self, tree: PageId, key: &[u8], old: Option<&[u8]>, prev: Lsn) {
        let at = self.bytes.len();
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(old.unwrap_or_default());
        let old_len = old.map_or(usize::MAX, <[u8]>::len);
        let i = self.entries.len();
        self.entries.push(UndoEntry { tree, prev, at, key_len: key.len(), old_len });
        if let Some(index) = &mut self.index {
            index.first.entry(composite(tree, key)).or_insert(i);
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
        if self.index.is_none() && self.entries.len() > SCAN_UP_TO {
            let mut index = Box::<Index>::default();
            for i in 0..self.entries.len() {
                let u = self.get(i);
                index.first.entry(composite(u.tree, u.key)).or_insert(i);
            }
            self.index = Some(index);
        }
        match &mut self.index {
            Some(index) => {
                index.probe.clear();
                index.probe.extend_from_slice(&tree.get().to_be_bytes());
                index.probe.extend_from_slice(key);
                index.first.get(&index.probe[..]).copied()
            }
            None => (0..self.entries.len()).find(|&i| {
                let u = self.get(i);
                u.tree == tree && u.key == key
            }),
        }
    }

    /// The oldest entry of each key the list holds, in no particular order (K19: the versions
    /// a writer leaves when it ends).
    pub(crate) fn firsts(&self) -> Vec<usize> {
        if let Some(index) = &self.index {
            return index.first.values().copied().collect();
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

/// The composite key of `key` in `tree`: the tree's root page, big-endian, then the key.
fn composite(tree: PageId, key: &[u8]) -> Box<[u8]> {
    let mut k = Vec::with_capacity(8 + key.len());
    k.extend_from_slice(&tree.get().to_be_bytes());
    k.extend_from_slice(key);
    k.into_boxed_slice()
}
