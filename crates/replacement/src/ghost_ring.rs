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
//! - The index from page to ring slot is an open-addressing table of 8-byte entries (linear
//!   probing, at most half full, deletion by backward shift, so no tombstones), eight to a cache
//!   line. An entry holds the page word's low 32 bits, a flag for a word of 2^32 or more, and the
//!   ring slot. For a word below 2^32 (every page of a database under 32 TiB of 8 KiB pages) the
//!   entry holds the whole word, so a lookup reads the table and nothing else: of an absent page,
//!   the common case, usually one line; of a present one (a ghost hit), one line, and then
//!   clearing its ring slot is a store that nothing waits for. A larger word is confirmed against
//!   the ring, and its home is read from there when a deletion shifts it. (Two earlier layouts:
//!   a 32-bit hash fingerprint with the slot, confirmed by reading the ring on every match, a
//!   second miss dependent on the first on each ghost hit, the largest single stall of 2Q's
//!   inserts in the live pool; then 16-byte entries with the whole word, twice the footprint.)
//!
//! Every operation is O(1) (packing amortized) and allocates nothing after construction. The
//! ring is not synchronized; 2Q keeps it under its mutex.

use swizzledb_sync::PageId;

/// A page id as a nonzero word: `id + 1` (ids are below 2^63).
fn word(page: PageId) -> u64 {
    page.get() + 1
}

/// Fibonacci hashing: the high bits of the product depend on every bit of the key; a key's home
/// in the index is the product's top bits.
fn hash(key: u64) -> u64 {
    key.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The flag of an index entry whose page word is 2^32 or more (only its low half is kept).
const LARGE: u64 = 1 << 31;

/// The most ring slots: slot + 1 must fit the 31 bits below [`LARGE`].
const MAX_SLOTS: usize = 1 << 30;
/// The largest limit a ring takes: twice as many slots fit [`MAX_SLOTS`].
pub(crate) const MAX_LIMIT: usize = MAX_SLOTS / 2;

/// An index entry (module doc), 0 when empty: the page word's low 32 bits in the high half,
/// [`LARGE`] if the word has more, and the ring slot + 1 below it.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct Indexed(u64);

impl Indexed {
    fn new(key: u64, slot: usize) -> Indexed {
        let large = if key > u64::from(u32::MAX) { LARGE } else { 0 };
        Indexed((key << 32) | large | (slot as u64 + 1))
    }

    fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn is_large(self) -> bool {
        self.0 & LARGE != 0
    }

    /// The ring slot of a non-empty entry.
    #[allow(clippy::cast_possible_truncation)]
    fn slot(self) -> usize {
        (self.0 & (LARGE - 1)) as usize - 1
    }

    /// The same page word at another ring slot.
    fn with_slot(self, slot: usize) -> Indexed {
        Indexed((self.0 & !(LARGE - 1)) | (slot as u64 + 1))
    }

    /// The page word of a non-empty entry: whole in the entry, or read from the ring.
    fn key(self, ring: &[u64]) -> u64 {
        if self.is_large() {
            ring[self.slot()]
        } else {
            self.0 >> 32
        }
    }

    /// Whether the entry is `key`'s: its low half and size class agree, and a large word is
    /// confirmed against the ring.
    fn holds(self, key: u64, ring: &[u64]) -> bool {
        self.0 >> 32 == key & u64::from(u32::MAX)
            && self.is_large() == (key > u64::from(u32::MAX))
            && (!self.is_large() || ring[self.slot()] == key)
    }
}

pub(crate) struct GhostRing {
    ring: Box<[u64]>,
    head: usize,
    span: usize,
    live: usize,
    limit: usize,
    /// One entry per ring slot (module doc), as the [`Indexed`] words: a slice of zeros from the
    /// allocator, which the system commits only as entries are written (README S1).
    index: Box<[u64]>,
    /// `64 - log2(index.len())`: a key's home is its hash's top bits.
    shift: u32,
    /// Home positions kept: all of them, except in tests that crowd keys onto a few homes.
    home_mask: usize,
}

impl GhostRing {
    /// A ring for at most `limit` ids.
    ///
    /// # Panics
    /// If `limit` is so large (over 2^29) that twice as many slots would not fit an index entry.
    pub(crate) fn new(limit: usize) -> GhostRing {
        let slots = limit.saturating_mul(2).next_power_of_two().max(2);
        assert!(slots <= MAX_SLOTS, "A1out limit {limit} is too large (at most 2^29 ids)");
        GhostRing {
            ring: vec![0; slots].into_boxed_slice(),
            head: 0,
            span: 0,
            live: 0,
            limit,
            index: vec![0; slots].into_boxed_slice(),
            shift: 64 - slots.trailing_zeros(),
            home_mask: usize::MAX,
        }
    }

    /// A ring whose keys all have one of the `homes` lowest home positions (a power of two),
    /// so that probe runs are long, wrap around and merge, and backward-shift deletion has to
    /// move entries past each other.
    #[cfg(test)]
    fn with_crowded_homes(limit: usize, homes: usize) -> GhostRing {
        let mut ring = GhostRing::new(limit);
        assert!(homes.is_power_of_two() && homes <= ring.index.len());
        ring.home_mask = homes - 1;
        ring
    }

    /// The home position of a page word: its hash's top bits.
    #[allow(clippy::cast_possible_truncation)]
    fn home(&self, key: u64) -> usize {
        // `shift` >= 1 and the index has 2^(64 - shift) entries, so the result is an index.
        (hash(key) >> self.shift) as usize & self.home_mask
    }

    /// Starts loading the index line where a lookup of the page word `key` begins (a hint, sync
    /// README H1).
    fn prefetch_key(&self, key: u64) {
        if let Some(entry) = self.index.get(self.home(key)) {
            swizzledb_sync::hint::prefetch(entry);
        }
    }

    /// Starts loading the index line where a lookup of `page` begins.
    pub(crate) fn prefetch(&self, page: PageId) {
        self.prefetch_key(word(page));
    }

    /// Starts loading the index lines an [`GhostRing::insert`] of `page` will touch: the page's
    /// own and, if the ring is full, its oldest entry's.
    pub(crate) fn prefetch_insert(&self, page: PageId) {
        self.prefetch_key(word(page));
        if self.live >= self.limit && self.ring[self.head] != 0 {
            self.prefetch_key(self.ring[self.head]);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Whether `page` is in the ring.
    #[cfg(test)]
    pub(crate) fn contains(&self, page: PageId) -> bool {
        self.find(word(page)).is_ok()
    }

    /// The index position of `key` (`Ok`), or the empty position ending its probe run (`Err`).
    fn find(&self, key: u64) -> Result<usize, usize> {
        let mask = self.index.len() - 1;
        let mut at = self.home(key);
        loop {
            let entry = Indexed(self.index[at]);
            if entry.is_empty() {
                return Err(at);
            }
            if entry.holds(key, &self.ring) {
                return Ok(at);
            }
            at = (at + 1) & mask;
        }
    }

    fn delete_at(&mut self, at: usize) {
        let mask = self.index.len() - 1;
        let mut hole = at;
        let mut next = at;
        loop {
            next = (next + 1) & mask;
            let entry = Indexed(self.index[next]);
            if entry.is_empty() {
                break;
            }
            // The entry may fill the hole if the hole lies on its probe path, between its home
            // and its position (cyclically).
            let from_home = next.wrapping_sub(self.home(entry.key(&self.ring))) & mask;
            if from_home >= next.wrapping_sub(hole) & mask {
                self.index[hole] = entry.0;
                hole = next;
            }
        }
        self.index[hole] = 0;
    }

    fn ring_slot(&self, offset: usize) -> usize {
        (self.head + offset) & (self.ring.len() - 1)
    }

    /// Adds `page` as the newest id, moving it there if it was already in the ring, and drops
    /// the oldest id if the ring held `limit` of them.
    #[inline]
    pub(crate) fn insert(&mut self, page: PageId) {
        if self.limit == 0 {
            return;
        }
        let key = word(page);
        let at = match self.find(key) {
            Ok(at) => {
                // Already present: its old place becomes a tombstone.
                self.ring[Indexed(self.index[at]).slot()] = 0;
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
        self.index[at] = Indexed::new(key, slot).0;
    }

    /// Takes `page` out (a ghost hit); false if it was not in the ring.
    #[inline]
    pub(crate) fn remove(&mut self, page: PageId) -> bool {
        let Ok(at) = self.find(word(page)) else { return false };
        self.ring[Indexed(self.index[at]).slot()] = 0;
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
        let key = self.ring[self.head];
        let at = self.find(key).expect("a live ring entry is indexed");
        self.ring[self.head] = 0;
        self.head = (self.head + 1) & mask;
        self.span -= 1;
        self.live -= 1;
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
                let at = self.find(key).expect("a live ring entry is indexed");
                let slot = self.ring_slot(to);
                self.ring[slot] = key;
                self.ring[self.ring_slot(from)] = 0;
                self.index[at] = Indexed(self.index[at]).with_slot(slot).0;
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
        for (at, entry) in ring.index.iter().map(|&e| Indexed(e)).enumerate().filter(|(_, e)| !e.is_empty()) {
            indexed += 1;
            let key = entry.key(&ring.ring);
            assert_ne!(key, 0, "index points at a live ring slot");
            assert_eq!(ring.ring[entry.slot()], key, "index points at its key's ring slot");
            assert_eq!(ring.find(key), Ok(at), "reachable from its home");
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

    /// Ids crowded onto four homes of a 128-entry index: probe runs are long and merge, and
    /// each id is still found, removed and told apart from absent ids, and deleting from the
    /// middle of a run leaves every other id reachable.
    #[test]
    fn crowded_homes_keep_every_id_reachable() {
        // Scrambled ids: an arithmetic progression would spread evenly over the homes.
        let mut x = 88_172_645_463_325_252u64;
        let ids: Vec<u64> = (0..64)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x >> 24
            })
            .collect();
        let mut ring = GhostRing::with_crowded_homes(64, 4);
        for &id in &ids {
            ring.insert(page(id));
        }
        check(&ring);
        let longest_run = ring.index.split(|&e| e == 0).map(<[u64]>::len).max();
        assert!(longest_run > Some(16), "64 ids on 4 homes make long runs: {longest_run:?}");
        assert!(ids.iter().all(|&id| ring.contains(page(id))));
        assert!((0..20_000)
            .chain(ids.iter().map(|id| id + 1))
            .filter(|id| !ids.contains(id))
            .all(|id| !ring.contains(page(id))));
        for &gone in &ids[5..40] {
            assert!(ring.remove(page(gone)) && !ring.contains(page(gone)));
            check(&ring);
        }
        assert!(ids[..5].iter().chain(&ids[40..]).all(|&id| ring.contains(page(id))));
    }

    /// Ids whose words share their low 32 bits, below and above 2^32 and at the boundary, are
    /// told apart: the small ones by the size flag, the large ones by the ring; each is found,
    /// removed and re-added without disturbing the others, with all of them on one home.
    #[test]
    fn words_sharing_their_low_half_are_told_apart() {
        let low = 41u64;
        let ids = [low, low + (1 << 32), low + (2 << 32), (1 << 32) - 2, (1 << 32) - 1, (5 << 32) - 1];
        let mut ring = GhostRing::with_crowded_homes(8, 1);
        for &id in &ids {
            ring.insert(page(id));
        }
        check(&ring);
        assert_eq!(ring.oldest_ids(), ids);
        assert!(!ring.contains(page(low + (3 << 32))) && !ring.contains(page(low + 1)));
        assert!(ring.remove(page(low + (1 << 32))) && !ring.contains(page(low + (1 << 32))));
        assert!(ring.contains(page(low)) && ring.contains(page(low + (2 << 32))));
        check(&ring);
        ring.insert(page(low));
        assert_eq!(ring.oldest_ids(), [low + (2 << 32), (1 << 32) - 2, (1 << 32) - 1, (5 << 32) - 1, low]);
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
        /// limit) over random additions and ghost hits, with ids that collide in the index; with
        /// `crowded`, every id has one of two homes, so that runs are long and wrap around.
        #[test]
        fn ring_matches_a_fifo_model(
            limit in 0usize..9,
            crowded in any::<bool>(),
            ops in proptest::collection::vec((any::<bool>(), 0u64..24), 0..400),
        ) {
            let mut ring = if crowded { GhostRing::with_crowded_homes(limit, 2) } else { GhostRing::new(limit) };
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

        /// Large, spread ids (B-tree pages are anywhere below 2^63) behave like small ones, even
        /// when they crowd onto four homes.
        #[test]
        fn large_ids_match_a_fifo_model(
            ids in proptest::collection::vec(0u64..(1 << 63), 1..12),
            picks in proptest::collection::vec((any::<bool>(), any::<proptest::sample::Index>()), 0..300),
        ) {
            let limit = 5;
            let mut ring = GhostRing::with_crowded_homes(limit, 4);
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
