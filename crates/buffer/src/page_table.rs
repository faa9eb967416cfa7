//! The page table: page id -> frame, for every resident page (rule B3).
//!
//! Sharded by page id; each shard is a reader-writer lock over a hash map. Lookups take the shard's
//! read lock: that lock, the hash and the probe are exactly the cost that swizzling removes from
//! the hit path.

use parking_lot::RwLock;
use rustc_hash::FxHashMap;
use swizzledb_sync::{FrameId, PageId};

const SHARDS: usize = 256;

/// Frames for which a new table makes room at once (8 GiB of 8 KiB pages).
const PRESIZED_FRAMES: usize = 1 << 20;

/// Concurrent map from page id to the frame that holds the page.
pub(crate) struct PageTable {
    shards: Box<[RwLock<FxHashMap<u64, FrameId>>]>,
}

impl PageTable {
    /// A table sized for `capacity` frames, up to [`PRESIZED_FRAMES`]; beyond, the shards grow
    /// as pages are entered, so a large pool's table costs memory for the pages it holds.
    pub(crate) fn new(capacity: usize) -> PageTable {
        let per_shard = capacity.min(PRESIZED_FRAMES) / SHARDS + 1;
        PageTable {
            shards: (0..SHARDS)
                .map(|_| RwLock::new(FxHashMap::with_capacity_and_hasher(per_shard, Default::default())))
                .collect(),
        }
    }

    #[inline]
    fn shard(&self, page: PageId) -> &RwLock<FxHashMap<u64, FrameId>> {
        // Fibonacci hashing spreads sequential page ids over the shards.
        let h = page.get().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56;
        &self.shards[h as usize % SHARDS]
    }

    /// The frame holding `page`, if it is resident (or being loaded).
    #[inline]
    pub(crate) fn get(&self, page: PageId) -> Option<FrameId> {
        self.shard(page).read().get(&page.get()).copied()
    }

    /// Maps `page` to `frame` unless it is mapped already; returns the existing frame then.
    pub(crate) fn insert_if_absent(&self, page: PageId, frame: FrameId) -> Result<(), FrameId> {
        let mut shard = self.shard(page).write();
        match shard.entry(page.get()) {
            std::collections::hash_map::Entry::Occupied(e) => Err(*e.get()),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(frame);
                Ok(())
            }
        }
    }

    /// Removes the mapping of `page` if it points at `frame`.
    pub(crate) fn remove(&self, page: PageId, frame: FrameId) {
        let mut shard = self.shard(page).write();
        if shard.get(&page.get()) == Some(&frame) {
            shard.remove(&page.get());
        }
    }

    /// Number of mapped pages (for tests and checks).
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b3_insert_lookup_remove() {
        let t = PageTable::new(100);
        let p = PageId::new(5).unwrap();
        assert_eq!(t.get(p), None);
        t.insert_if_absent(p, FrameId(3)).unwrap();
        assert_eq!(t.insert_if_absent(p, FrameId(4)), Err(FrameId(3)));
        assert_eq!(t.get(p), Some(FrameId(3)));
        t.remove(p, FrameId(4));
        assert_eq!(t.get(p), Some(FrameId(3)), "remove must only drop the matching frame");
        t.remove(p, FrameId(3));
        assert_eq!(t.get(p), None);
        assert_eq!(t.len(), 0);
    }
}
