//! A bounded FIFO set of non-resident page ids without values or handles: 2Q's `A1out` (README
//! "Shared building blocks").
//!
//! It keeps the same order and bound as [`crate::ghost::Ghosts`] (add as the newest, dropping
//! the oldest beyond the limit; remove anywhere on a ghost hit), with fewer cache misses per
//! operation, since it needs no value, no stable handle and no walk in the middle of the order:
//!
//! - The order is a ring of page words (`id + 1`; 0 marks a removed entry) between `head` (the
//!   oldest slot) and `head + span`. An addition writes the next slot; a ghost hit clears its
//!   slot in place (a tombstone); dropping the oldest skips the tombstones at the head. The ring
//!   has at least twice as many slots as the limit. When the slots between head and tail fill
//!   up with live entries and tombstones, the live entries are packed to the front in their
//!   order: at most `limit` of them move, and at least `limit` additions separate two packings.
//! - The index from page to ring slot is an open-addressing table (linear probing, keys stored
//!   inline, at most a quarter full, deletion by backward shift, so no tombstones). A lookup reads
//!   one or two neighbouring entries, usually in one cache line, where a hash map plus a linked
//!   slab of entries touched three or four lines per addition or removal.
//!
//! Every operation is O(1) (packing amortized) and allocates nothing after construction. The
//! ring is not synchronized; 2Q keeps it under its mutex.

use crate::PageId;

/// A page id as a nonzero word: `id + 1` (ids are below 2^63).
fn word(page: PageId) -> u64 {
    page.get() + 1
}

/// Fibonacci hashing: the top `bits` bits of the word times 2^64 / φ.
fn home(key: u64, shift: u32) -> usize {
    // Truncation is the point: the shift leaves at most `bits` < usize::BITS bits.
    #[allow(clippy::cast_possible_truncation)]
    let slot = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
    slot
}

/// An index entry: a page word (0: empty) and its ring slot.
#[derive(Copy, Clone, Default)]
struct Entry {
    key: u64,
    slot: usize,
}

/// A bounded FIFO set of page ids (see the module documentation). Adding to a full ring drops
/// the oldest id.
pub(crate) struct GhostRing {
    /// Page words in order from `head`, `span` slots long, wrapping; 0 is a removed entry.
    ring: Box<[u64]>,
    head: usize,
    span: usize,
    /// Live entries: nonzero words among the `span` slots.
    live: usize,
    limit: usize,
    /// Page word to ring slot; a power of two, at least four times `limit`, so at most a quarter
    /// full: a probe for an absent page reads 1.4 entries on average (2.5 at half full).
    index: Box<[Entry]>,
    /// `64 - log2(index.len())`.
    shift: u32,
}

impl GhostRing {
    /// An empty ring of at most `limit` ids (0 keeps nothing), allocated now: 2 to 4 ring slots
    /// of 8 bytes and twice as many index entries of 16 bytes per id of the limit.
    pub(crate) fn new(limit: usize) -> GhostRing {
        let slots = (2 * limit).next_power_of_two().max(2);
        let entries = 2 * slots;
        GhostRing {
            ring: vec![0; slots].into_boxed_slice(),
            head: 0,
            span: 0,
            live: 0,
            limit,
            index: vec![Entry::default(); entries].into_boxed_slice(),
            shift: 64 - entries.trailing_zeros(),
        }
    }

    /// Number of ids.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Whether `page` is in the ring.
    #[cfg(test)]
    pub(crate) fn contains(&self, page: PageId) -> bool {
        self.find(word(page)).is_ok()
    }

    /// The index position of `key` (`Ok`), or the empty position where it would go (`Err`).
    fn find(&self, key: u64) -> Result<usize, usize> {
        let mask = self.index.len() - 1;
        let mut at = home(key, self.shift);
        loop {
            match self.index[at].key {
                k if k == key => return Ok(at),
                0 => return Err(at),
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// Empties index position `at` and shifts back the entries of its probe run that may move,
    /// so that every entry stays reachable from its home without tombstones.
    fn delete_at(&mut self, at: usize) {
        let mask = self.index.len() - 1;
        let mut hole = at;
        let mut next = at;
        loop {
            next = (next + 1) & mask;
            let entry = self.index[next];
            if entry.key == 0 {
                break;
            }
            // The entry may fill the hole if the hole lies on its probe path, between its home
            // and its position (cyclically).
            let from_home = next.wrapping_sub(home(entry.key, self.shift)) & mask;
            if from_home >= next.wrapping_sub(hole) & mask {
                self.index[hole] = entry;
                hole = next;
            }
        }
        self.index[hole] = Entry::default();
    }

    fn ring_slot(&self, offset: usize) -> usize {
        (self.head + offset) & (self.ring.len() - 1)
    }

    /// Adds `page` as the newest id, moving it there if it was already in the ring, and drops
    /// the oldest id if the ring held `limit` of them.
    pub(crate) fn insert(&mut self, page: PageId) {
        if self.limit == 0 {
            return;
        }
        let key = word(page);
        let at = match self.find(key) {
            Ok(at) => {
                // Already present: its old place becomes a tombstone.
                self.ring[self.index[at].slot] = 0;
                self.live -= 1;
                at
            }
            Err(empty) => {
                if self.live < self.limit {
                    empty
                } else {
                    self.pop_oldest();
                    // The deletion may have shifted entries into the empty position's run.
                    self.find(key).expect_err("the key is absent")
                }
            }
        };
        if self.span == self.ring.len() {
            self.pack();
        }
        let slot = self.ring_slot(self.span);
        self.ring[slot] = key;
        self.span += 1;
        self.live += 1;
        self.index[at] = Entry { key, slot };
    }

    /// Takes `page` out (a ghost hit); false if it was not in the ring.
    pub(crate) fn remove(&mut self, page: PageId) -> bool {
        let Ok(at) = self.find(word(page)) else { return false };
        self.ring[self.index[at].slot] = 0;
        self.delete_at(at);
        self.live -= 1;
        if self.live == 0 {
            self.head = 0;
            self.span = 0;
        }
        true
    }

    /// Drops the oldest id (the ring is not empty).
    fn pop_oldest(&mut self) {
        debug_assert!(self.live > 0, "popping an empty ring");
        let mask = self.ring.len() - 1;
        while self.ring[self.head] == 0 {
            self.head = (self.head + 1) & mask;
            self.span -= 1;
        }
        let key = std::mem::take(&mut self.ring[self.head]);
        self.head = (self.head + 1) & mask;
        self.span -= 1;
        self.live -= 1;
        let at = self.find(key).expect("a live ring entry is indexed");
        self.delete_at(at);
    }

    /// Moves the live entries to the first `live` slots from the head, keeping their order, and
    /// points their index entries at their new slots.
    fn pack(&mut self) {
        let mut to = 0;
        for from in 0..self.span {
            let key = self.ring[self.ring_slot(from)];
            if key == 0 {
                continue;
            }
            if to != from {
                let slot = self.ring_slot(to);
                self.ring[slot] = key;
                self.ring[self.ring_slot(from)] = 0;
                let at = self.find(key).expect("a live ring entry is indexed");
                self.index[at].slot = slot;
            }
            to += 1;
        }
        debug_assert_eq!(to, self.live);
        self.span = to;
    }

    /// The page ids from oldest to newest (for tests).
    #[cfg(test)]
    pub(crate) fn oldest_ids(&self) -> Vec<u64> {
        (0..self.span).map(|i| self.ring[self.ring_slot(i)]).filter(|&k| k != 0).map(|k| k - 1).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;

    use super::*;

    fn page(id: u64) -> PageId {
        PageId::new(id).unwrap()
    }

    /// Checks the index against the ring: every live slot is indexed at its slot, reachable
    /// from its home by an unbroken run, and nothing else is indexed.
    fn check(ring: &GhostRing) {
        let mut indexed = 0;
        for entry in ring.index.iter().filter(|e| e.key != 0) {
            indexed += 1;
            assert_eq!(ring.ring[entry.slot], entry.key, "index points at its ring slot");
            assert!(ring.find(entry.key).is_ok(), "reachable from its home");
        }
        assert_eq!(indexed, ring.live);
        assert_eq!(ring.oldest_ids().len(), ring.live);
        assert!(ring.span <= ring.ring.len() && ring.live <= ring.limit);
    }

    /// Hand-worked, limit 2 (4 ring slots): a ghost hit leaves a tombstone that the next drop
    /// skips; re-adding moves an id to the newest end; an addition that finds every slot used
    /// packs the live ids to the front first.
    #[test]
    fn hand_worked_order_tombstones_and_packing() {
        let mut ring = GhostRing::new(2);
        ring.insert(page(1));
        ring.insert(page(2));
        assert_eq!(ring.oldest_ids(), [1, 2]);
        ring.insert(page(3));
        assert_eq!(ring.oldest_ids(), [2, 3], "full: 1 dropped");
        assert!(ring.remove(page(2)) && !ring.remove(page(2)) && !ring.remove(page(1)));
        assert_eq!((ring.oldest_ids(), ring.len()), (vec![3], 1));
        ring.insert(page(4));
        ring.insert(page(3));
        // Slots from the head: [2 removed, 3 moved away, 4, 3]; the drop skips two tombstones.
        assert_eq!((ring.oldest_ids(), ring.span), (vec![4, 3], 4));
        ring.insert(page(5));
        assert_eq!((ring.oldest_ids(), ring.span), (vec![3, 5], 2), "4 dropped");
        check(&ring);
        // Ghost hits on 3, 6 and 7 leave slots [removed 3, 5, removed 6, removed 7]: every slot
        // is used, one live id short of the limit, so adding 8 first packs 5 to the head slot.
        ring.remove(page(3));
        ring.insert(page(6));
        ring.remove(page(6));
        ring.insert(page(7));
        ring.remove(page(7));
        assert_eq!((ring.oldest_ids(), ring.span, ring.head), (vec![5], 4, 0));
        ring.insert(page(8));
        assert_eq!((ring.oldest_ids(), ring.span, ring.ring[0]), (vec![5, 8], 2, 6), "5 (word 6) moved");
        check(&ring);
        ring.insert(page(9));
        assert_eq!(ring.oldest_ids(), [8, 9]);
        check(&ring);
    }

    /// A limit of 0 keeps nothing.
    #[test]
    fn limit_zero_keeps_nothing() {
        let mut ring = GhostRing::new(0);
        ring.insert(page(1));
        assert!(!ring.contains(page(1)) && !ring.remove(page(1)) && ring.len() == 0);
    }

    proptest! {
        /// A FIFO reference model (a `VecDeque` of distinct ids, oldest first, truncated at the
        /// limit) over random additions and ghost hits, with ids that collide in the index.
        #[test]
        fn ring_matches_a_fifo_model(
            limit in 0usize..9,
            ops in proptest::collection::vec((any::<bool>(), 0u64..24), 0..400),
        ) {
            let mut ring = GhostRing::new(limit);
            let mut model: VecDeque<u64> = VecDeque::new();
            for (insert, p) in ops {
                let in_model = model.iter().position(|&q| q == p);
                if insert {
                    if let Some(at) = in_model {
                        model.remove(at);
                    }
                    if limit > 0 {
                        model.push_back(p);
                        if model.len() > limit {
                            model.pop_front();
                        }
                    }
                    ring.insert(page(p));
                } else {
                    prop_assert_eq!(ring.remove(page(p)), in_model.is_some());
                    if let Some(at) = in_model {
                        model.remove(at);
                    }
                }
                prop_assert_eq!(ring.oldest_ids(), Vec::from(model.clone()));
                prop_assert_eq!(ring.len(), model.len());
                check(&ring);
            }
        }

        /// Large, spread ids (B-tree pages are anywhere below 2^63) behave like small ones.
        #[test]
        fn large_ids_match_a_fifo_model(
            ids in proptest::collection::vec(0u64..(1 << 63), 1..12),
            picks in proptest::collection::vec((any::<bool>(), any::<proptest::sample::Index>()), 0..300),
        ) {
            let limit = 5;
            let mut ring = GhostRing::new(limit);
            let mut model: VecDeque<u64> = VecDeque::new();
            for (insert, pick) in picks {
                let p = ids[pick.index(ids.len())];
                let in_model = model.iter().position(|&q| q == p);
                if let Some(at) = in_model {
                    model.remove(at);
                }
                if insert {
                    model.push_back(p);
                    if model.len() > limit {
                        model.pop_front();
                    }
                    ring.insert(page(p));
                } else {
                    prop_assert_eq!(ring.remove(page(p)), in_model.is_some());
                }
                prop_assert_eq!(ring.oldest_ids(), Vec::from(model.clone()));
                check(&ring);
            }
        }
    }
}
