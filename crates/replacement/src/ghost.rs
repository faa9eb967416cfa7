//! The ghost directory: a bounded, ordered set of non-resident page ids, each with a value, used
//! by every policy that remembers evicted pages (README "Shared building blocks").
//!
//! A directory is ordered from the oldest entry to the newest. All operations are O(1): add a
//! page as the newest (dropping the oldest when the directory is full), look a page up, remove
//! it (a ghost hit), and drop the oldest. Entries live in a slab of slots linked by index and
//! are found through an `FxHashMap` from page id to slot; a removed entry's slot is reused, so
//! the slots never outnumber the limit.
//!
//! Each entry has a stable *handle*, its slot number plus a base the directory is built with.
//! LIRS and CLOCK-Pro keep ghosts in place in their own lists (the stack S, the clock), beside
//! the resident frames: nodes `0..capacity` are frames and nodes `capacity..` are ghost handles,
//! so an evicted page's frame node is replaced by its ghost's handle and keeps its position.
//! The directory only names those nodes; where they sit is the policy's business.
//!
//! The directory is not synchronized; the policies keep it under their mutex.

use rustc_hash::FxHashMap;

use swizzledb_sync::PageId;

/// No slot: the end of the order.
const NIL: u32 = u32::MAX;

struct Slot<V> {
    /// The page and its value; `None` for a free slot.
    entry: Option<(PageId, V)>,
    /// Toward the newest end.
    newer: u32,
    /// Toward the oldest end.
    older: u32,
}

/// The most entries [`Ghosts::preallocated`] makes room for at once.
const PREALLOCATED: usize = 1 << 16;

fn link(slot: u32) -> Option<usize> {
    (slot != NIL).then_some(slot as usize)
}

/// A bounded FIFO directory of non-resident pages with a value each (see the module
/// documentation). Inserting into a full directory drops the oldest entry.
pub(crate) struct Ghosts<V = ()> {
    slot_of: FxHashMap<PageId, u32>,
    slots: Vec<Slot<V>>,
    /// Free slots, reused last freed first.
    free: Vec<u32>,
    newest: u32,
    oldest: u32,
    limit: usize,
    /// The handle of slot 0.
    base: usize,
}

impl<V> Ghosts<V> {
    /// An empty directory of at most `limit` entries (0 keeps nothing), with handles from 0. It
    /// allocates as it grows, so a large limit costs nothing until it is used.
    pub(crate) fn new(limit: usize) -> Ghosts<V> {
        Ghosts {
            slot_of: FxHashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            newest: NIL,
            oldest: NIL,
            limit,
            base: 0,
        }
    }

    /// Like [`Ghosts::new`], with room for `limit` entries allocated now (for limits that are
    /// O(capacity)), so that no operation allocates afterwards — up to [`PREALLOCATED`] entries:
    /// a directory for a larger pool grows as it is used (README S1).
    pub(crate) fn preallocated(limit: usize) -> Ghosts<V> {
        Ghosts::with_base(0, limit)
    }

    /// Like [`Ghosts::preallocated`], with handles from `base`.
    pub(crate) fn with_base(base: usize, limit: usize) -> Ghosts<V> {
        let mut ghosts = Ghosts::new(limit);
        ghosts.base = base;
        ghosts.slot_of.reserve(limit.min(PREALLOCATED));
        ghosts.slots.reserve_exact(limit.min(PREALLOCATED));
        ghosts
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.slot_of.len()
    }

    /// Whether the directory holds `limit` entries, so that an insertion drops the oldest.
    pub(crate) fn is_full(&self) -> bool {
        self.len() >= self.limit
    }

    pub(crate) fn contains(&self, page: PageId) -> bool {
        self.slot_of.contains_key(&page)
    }

    /// The handle of `page`'s entry.
    pub(crate) fn find(&self, page: PageId) -> Option<usize> {
        self.slot_of.get(&page).map(|&slot| self.base + slot as usize)
    }

    /// The handle of the oldest entry.
    pub(crate) fn oldest(&self) -> Option<usize> {
        link(self.oldest).map(|slot| self.base + slot)
    }

    /// The page of the entry with handle `handle`, if it is in use.
    pub(crate) fn page(&self, handle: usize) -> Option<PageId> {
        let (page, _) = self.slots.get(handle.checked_sub(self.base)?)?.entry.as_ref()?;
        Some(*page)
    }

    /// Adds `page` as the newest entry, replacing any older entry for it, and drops the oldest
    /// entry if the directory was full. Returns the new entry's handle; `None` if the limit is 0.
    pub(crate) fn insert(&mut self, page: PageId, value: V) -> Option<usize> {
        self.remove(page);
        if self.limit == 0 {
            return None;
        }
        if self.is_full() {
            self.pop_oldest();
        }
        let slot = Slot { entry: Some((page, value)), newer: NIL, older: self.newest };
        let index = match self.free.pop() {
            Some(index) => {
                self.slots[index as usize] = slot;
                index
            }
            None => {
                let index = u32::try_from(self.slots.len()).expect("a ghost directory fits u32 slots");
                self.slots.push(slot);
                index
            }
        };
        match link(self.newest) {
            Some(newest) => self.slots[newest].newer = index,
            None => self.oldest = index,
        }
        self.newest = index;
        self.slot_of.insert(page, index);
        Some(self.base + index as usize)
    }

    /// Takes `page`'s entry out, if present, and returns its value.
    pub(crate) fn remove(&mut self, page: PageId) -> Option<V> {
        let slot = *self.slot_of.get(&page)?;
        Some(self.free_slot(slot).1)
    }

    /// Takes the entry with handle `handle` out, if it is in use.
    pub(crate) fn remove_handle(&mut self, handle: usize) -> Option<(PageId, V)> {
        let page = self.page(handle)?;
        let slot = self.slot_of[&page];
        Some(self.free_slot(slot))
    }

    /// Takes the oldest entry out.
    pub(crate) fn pop_oldest(&mut self) -> Option<(PageId, V)> {
        let oldest = u32::try_from(link(self.oldest)?).expect("slots fit u32");
        Some(self.free_slot(oldest))
    }

    /// Unlinks the slot `index` (in use) and returns its entry.
    fn free_slot(&mut self, index: u32) -> (PageId, V) {
        let slot = &mut self.slots[index as usize];
        let (page, value) = slot.entry.take().expect("a linked slot holds an entry");
        let (newer, older) = (slot.newer, slot.older);
        match link(newer) {
            Some(n) => self.slots[n].older = older,
            None => self.newest = older,
        }
        match link(older) {
            Some(o) => self.slots[o].newer = newer,
            None => self.oldest = newer,
        }
        self.slot_of.remove(&page);
        self.free.push(index);
        (page, value)
    }

    /// The pages from oldest to newest (tests and debugging).
    #[cfg(test)]
    pub(crate) fn oldest_first(&self) -> Vec<PageId> {
        let mut out = Vec::with_capacity(self.len());
        let mut at = self.oldest;
        while let Some(index) = link(at) {
            out.push(self.slots[index].entry.as_ref().expect("linked").0);
            at = self.slots[index].newer;
        }
        out
    }

    /// The page numbers from oldest to newest (for tests).
    #[cfg(test)]
    pub(crate) fn oldest_ids(&self) -> Vec<u64> {
        self.oldest_first().iter().map(|page| page.get()).collect()
    }

    /// Number of slots ever allocated: the memory bound the tests check.
    #[cfg(test)]
    pub(crate) fn allocated(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use proptest::prelude::*;

    use super::*;

    fn pages(ids: &[u64]) -> Vec<PageId> {
        ids.iter().map(|&id| PageId::new(id).unwrap()).collect()
    }

    fn page(id: u64) -> PageId {
        PageId::new(id).unwrap()
    }

    /// Adds, ghost hits in the middle and at both ends, pops and re-adds keep the order, and freed
    /// slots are reused: the directory never allocates more slots than its largest length.
    #[test]
    fn order_membership_and_slot_reuse() {
        let mut list = Ghosts::new(4);
        for p in pages(&[1, 2, 3, 4]) {
            list.insert(p, ());
        }
        assert_eq!(list.oldest_first(), pages(&[1, 2, 3, 4]));
        assert!(list.remove(page(3)).is_some() && list.remove(page(3)).is_none());
        assert!(list.remove(page(4)).is_some());
        assert_eq!(list.pop_oldest().map(|(p, ())| p), Some(page(1)));
        assert_eq!(list.oldest_first(), pages(&[2]));
        list.insert(page(5), ());
        list.insert(page(2), ());
        assert_eq!(list.oldest_first(), pages(&[5, 2]), "re-adding moves to the newest end");
        assert!(list.contains(page(5)) && !list.contains(page(1)));
        for p in pages(&[6, 7]) {
            list.insert(p, ());
        }
        assert_eq!(list.len(), 4);
        assert_eq!(list.allocated(), 4);
        let drained: Vec<PageId> = std::iter::from_fn(|| list.pop_oldest().map(|(p, ())| p)).collect();
        assert_eq!(drained, pages(&[5, 2, 6, 7]));
        assert_eq!(list.len(), 0);
    }

    /// Handles are numbered from the base, stay with their entry, and are reused once freed
    /// (the way LIRS and CLOCK-Pro use them as ghost nodes).
    #[test]
    fn handles_name_entries_from_the_base() {
        let mut ghosts = Ghosts::with_base(10, 2);
        let a = ghosts.insert(page(1), ()).unwrap();
        let b = ghosts.insert(page(2), ()).unwrap();
        assert!(ghosts.is_full());
        assert!((10..12).contains(&a) && (10..12).contains(&b) && a != b);
        assert_eq!((ghosts.find(page(1)), ghosts.find(page(2)), ghosts.len()), (Some(a), Some(b), 2));
        assert_eq!(
            (ghosts.page(a), ghosts.page(b), ghosts.page(9), ghosts.page(12)),
            (Some(page(1)), Some(page(2)), None, None)
        );
        assert_eq!(ghosts.oldest(), Some(a));
        assert_eq!(ghosts.remove_handle(a), Some((page(1), ())));
        assert_eq!((ghosts.find(page(1)), ghosts.page(a), ghosts.len()), (None, None, 1));
        assert_eq!(ghosts.remove_handle(a), None);
        assert_eq!(ghosts.insert(page(3), ()), Some(a), "the freed slot is reused");
        assert_eq!(ghosts.insert(page(4), ()), Some(b), "a full directory drops its oldest, b");
        assert_eq!(ghosts.oldest_first(), pages(&[3, 4]));
    }

    /// A FIFO reference model: a `VecDeque` of distinct pages, oldest first, truncated at the limit.
    #[test]
    fn ghosts_match_a_fifo_model_and_stay_bounded() {
        proptest!(|(limit in 0usize..6, ops in proptest::collection::vec((any::<bool>(), 0u64..10), 0..300))| {
            let mut ghosts = Ghosts::new(limit);
            let mut model: VecDeque<u64> = VecDeque::new();
            for (insert, p) in ops {
                let id = PageId::new(p).unwrap();
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
                    ghosts.insert(id, p * 10);
                } else {
                    prop_assert_eq!(ghosts.remove(id), in_model.map(|_| p * 10));
                    if let Some(at) = in_model {
                        model.remove(at);
                    }
                }
                let live: Vec<u64> = ghosts.oldest_first().iter().map(|q| q.get()).collect();
                prop_assert_eq!(&live, &Vec::from(model.clone()));
                prop_assert_eq!(ghosts.len(), model.len());
                prop_assert!(ghosts.allocated() <= limit);
            }
        });
    }
}
