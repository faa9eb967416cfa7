//! Structure-aware replacement (README "Structure-aware: `leaf-<policy>`"): any policy, restricted
//! to the leaves of the cached subtree.
//!
//! In a swizzling pool a page with swizzled children cannot be evicted (B6 of the buffer README);
//! an unaware policy keeps proposing such pages, the pool keeps rejecting them, and their hits
//! keep inflating the policy's statistics for frames it can never use. `LeafOnly` *parks* a frame
//! as soon as the pool reports its first swizzled child (`on_children`, R8): the inner policy sees
//! the frame removed, and sees it inserted again when its last swizzled child is gone. So the
//! inner policy's candidates and statistics cover exactly the evictable part of the tree.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::capacity::{check_capacity, frame_id};
use crate::lazy::LazyCells;
use crate::list::FrameList;
use crate::policy::{evict_one_by_one, Evictor, FrameHook, HookTable, Policy, Rejection};
use swizzledb_sync::{FrameId, PageId};

/// No page: the frame is free as far as the wrapper knows.
const NO_PAGE: u64 = 0;

/// Wraps `inner` so that it only ever tracks frames without swizzled children.
pub struct LeafOnly {
    inner: Box<dyn Policy>,
    /// Per frame, the page it holds (`NO_PAGE` if free): needed to re-insert a parked frame.
    pages: LazyCells<AtomicU64>,
    /// Per frame, whether it is parked (resident, with swizzled children, hidden from `inner`).
    /// Read without the lock by hits; written under it by `on_children`, which the pool calls under
    /// the frame's exclusive latch, so a hit (under the same frame's latch) never races with it.
    parked: LazyCells<AtomicBool>,
    /// The parked frames, oldest first: proposed, in rotation, only when `inner` has nothing (R4).
    parked_list: Mutex<FrameList>,
}

impl LeafOnly {
    /// Restricts `inner`, a policy over frames `0..capacity`, to leaves of the cached subtree.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(inner: Box<dyn Policy>, capacity: usize) -> LeafOnly {
        check_capacity(capacity);
        LeafOnly {
            inner,
            pages: LazyCells::new(capacity, || AtomicU64::new(NO_PAGE)),
            parked: LazyCells::new(capacity, || AtomicBool::new(false)),
            parked_list: Mutex::new(FrameList::new(capacity)),
        }
    }

    fn is_parked(&self, frame: FrameId) -> bool {
        self.parked.get(frame.index()).is_some_and(|p| p.load(Ordering::Acquire))
    }

    /// Forgets a parked frame that left the pool; false if it was not parked.
    fn unpark_gone(&self, frame: FrameId) -> bool {
        let mut list = self.parked_list.lock();
        if !list.unlink(frame.index()) {
            return false;
        }
        self.parked.cell(frame.index()).store(false, Ordering::Release);
        true
    }
}

impl Policy for LeafOnly {
    fn name(&self) -> String {
        format!("leaf-{}", self.inner.name())
    }

    fn on_insert(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        // A new page has no children; a frame still parked from a page it lost is unparked.
        self.unpark_gone(frame);
        self.pages.cell(frame.index()).store(page.get(), Ordering::Release);
        self.inner.on_insert(frame, page, hook);
    }

    /// Forwarded unless the frame is parked: hits on branch pages cost nothing then.
    fn on_hit(&self, frame: FrameId, hook: &FrameHook) {
        if !self.is_parked(frame) {
            self.inner.on_hit(frame, hook);
        }
    }

    /// As `on_hit`.
    fn on_page_hit(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        if !self.is_parked(frame) {
            self.inner.on_page_hit(frame, page, hook);
        }
    }

    fn on_unfix(&self, frame: FrameId, hook: &FrameHook) {
        if !self.is_parked(frame) {
            self.inner.on_unfix(frame, hook);
        }
    }

    fn uses_unfix(&self) -> bool {
        self.inner.uses_unfix()
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, hook: &FrameHook) {
        if !self.is_parked(frame) {
            self.inner.on_rejected(frame, why, hook);
            return;
        }
        // A parked frame was proposed from the fallback rotation; only its departure matters.
        if why == Rejection::NotResident && self.unpark_gone(frame) {
            self.pages.cell(frame.index()).store(NO_PAGE, Ordering::Release);
        }
    }

    fn on_remove(&self, frame: FrameId, evicted: bool, hook: &FrameHook) {
        self.pages.cell(frame.index()).store(NO_PAGE, Ordering::Release);
        if !self.unpark_gone(frame) {
            self.inner.on_remove(frame, evicted, hook);
        }
    }

    /// The inner policy's candidate (a leaf); if it tracks nothing, a parked frame in rotation, so
    /// that `None` still means nothing is resident (R4).
    fn next_candidate(&self, hooks: &dyn HookTable) -> Option<FrameId> {
        self.inner.next_candidate(hooks).or_else(|| {
            let mut list = self.parked_list.lock();
            let frame = list.oldest()?;
            list.move_to_newest(frame);
            Some(frame_id(frame))
        })
    }

    /// Parks a frame that gained its first swizzled child (the inner policy sees a removal, not
    /// an eviction, so it keeps no history for it) and returns it to the inner policy as a fresh
    /// insert when it lost its last one.
    fn on_children(&self, frame: FrameId, swizzled: bool, hook: &FrameHook) {
        let index = frame.index();
        let page = self.pages.get(index).map_or(NO_PAGE, |p| p.load(Ordering::Acquire));
        let Some(page) = PageId::new(page).filter(|_| page != NO_PAGE) else {
            return; // not resident as far as the policy knows: nothing to move
        };
        let mut list = self.parked_list.lock();
        if swizzled && !list.contains(index) {
            self.parked.cell(index).store(true, Ordering::Release);
            list.push_newest(index);
            drop(list);
            self.inner.on_remove(frame, false, hook);
        } else if !swizzled && list.unlink(index) {
            self.parked.cell(index).store(false, Ordering::Release);
            drop(list);
            self.inner.on_insert(frame, page, hook);
        }
    }

    fn prefetch_accesses(&self, frames: &[FrameId], inserted: &[PageId]) {
        self.inner.prefetch_accesses(frames, inserted);
    }

    /// The inner policy's guess; a parked frame is never proposed by it anyway.
    fn candidate_after(&self, frame: FrameId, hooks: &dyn HookTable) -> Option<FrameId> {
        self.inner.candidate_after(frame, hooks)
    }

    /// The default loop, one proposal at a time through `next_candidate`, `on_remove` and
    /// `on_rejected` above, run inside the inner policy's lock if it has one (`hold_lock_for`:
    /// BP-Wrapper takes its lock once for the batch, not three times per victim). Handing the
    /// batch to the inner policy's own `evict_batch` instead would let a policy that releases its
    /// lock while the pool tries a victim (2Q, LRU) record a rejection for a frame that
    /// `on_children` parked, removing it from the inner policy, between proposal and verdict.
    fn evict_batch(&self, hooks: &dyn HookTable, evictor: &mut dyn Evictor, max_proposals: usize) -> usize {
        let mut proposals = 0;
        self.inner.hold_lock_for(&mut || proposals = evict_one_by_one(self, hooks, evictor, max_proposals));
        proposals
    }

    fn hold_lock_for(&self, work: &mut dyn FnMut()) {
        self.inner.hold_lock_for(work);
    }

    fn prefers_sweep(&self) -> bool {
        self.inner.prefers_sweep()
    }

    fn lock_stats(&self) -> Option<crate::BpStats> {
        self.inner.lock_stats()
    }

    fn sweep_admits(&self, frame: FrameId, hook: &FrameHook) -> bool {
        self.inner.sweep_admits(frame, hook)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;
    use crate::testpool::TestHooks;
    use crate::Lru;

    /// An inner policy that checks R1 strictly (no hook for a frame it does not track) and
    /// proposes its lowest tracked frame.
    #[derive(Default)]
    struct Strict {
        tracked: Arc<Mutex<HashSet<u32>>>,
    }

    impl Strict {
        fn check(&self, frame: FrameId) {
            assert!(self.tracked.lock().contains(&frame.0), "R1: hook for untracked {frame:?}");
        }
    }

    impl Policy for Strict {
        fn name(&self) -> String {
            "strict".into()
        }
        fn on_insert(&self, frame: FrameId, _page: PageId, _hook: &FrameHook) {
            assert!(self.tracked.lock().insert(frame.0), "R1: double insert of {frame:?}");
        }
        fn on_hit(&self, frame: FrameId, _hook: &FrameHook) {
            self.check(frame);
        }
        fn on_rejected(&self, frame: FrameId, _why: Rejection, _hook: &FrameHook) {
            self.check(frame);
        }
        fn on_remove(&self, frame: FrameId, _evicted: bool, _hook: &FrameHook) {
            assert!(self.tracked.lock().remove(&frame.0), "R1: removal of untracked {frame:?}");
        }
        fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
            self.tracked.lock().iter().min().map(|&f| FrameId(f))
        }
    }

    /// R8 with an LRU inside: a parked branch is never proposed while a leaf is resident, its
    /// hits do not reach LRU, and it comes back at the MRU end when it becomes a leaf again.
    #[test]
    fn r8_branches_are_parked_and_return_as_fresh_inserts() {
        let policy = LeafOnly::new(Box::new(Lru::new(4)), 4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2, 3]);
        policy.on_children(FrameId(0), true, &h[0]);
        h.hit(&policy, &[0, 1]);
        assert_eq!(policy.name(), "leaf-lru");
        // LRU order of the leaves: 2 3 1.
        assert_eq!(h.evict(&policy), 2);
        policy.on_children(FrameId(0), false, &h[0]);
        // Frame 0 is back, most recently used: order 3 1 0.
        assert_eq!(h.evict(&policy), 3);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(policy.next_candidate(&h), None);
    }

    /// Evicts every proposal until `left` victims are gone.
    struct EvictAll {
        left: usize,
        victims: Vec<u32>,
    }

    impl Evictor for EvictAll {
        fn wants_more(&mut self) -> bool {
            self.left > 0
        }
        fn try_evict(&mut self, frame: FrameId) -> crate::policy::Verdict {
            self.left -= 1;
            self.victims.push(frame.0);
            crate::policy::Verdict::Evicted
        }
    }

    /// R10 around BP-Wrapper: a batch of three victims, in the wrapped LRU's order and skipping
    /// the parked branch, takes the wrapper's lock once (one acquisition for the batch, where
    /// proposals and verdicts one by one took three per victim).
    #[test]
    fn r10_a_batch_around_bp_wrapper_takes_its_lock_once() {
        let policy = LeafOnly::new(Box::new(crate::BpWrapper::new(Box::new(Lru::new(5)), 5)), 5);
        let h = TestHooks::new(5);
        h.insert(&policy, &[0, 1, 2, 3, 4]);
        policy.on_children(FrameId(1), true, &h[1]);
        h.hit(&policy, &[0]);
        let before = policy.lock_stats().unwrap().lock_acquisitions;
        let mut batch = EvictAll { left: 3, victims: Vec::new() };
        assert_eq!(policy.evict_batch(&h, &mut batch, 8), 3);
        assert_eq!(batch.victims, [2, 3, 4], "LRU order among the leaves; 1 is parked, 0 was hit");
        assert_eq!(policy.lock_stats().unwrap().lock_acquisitions, before + 1);
    }

    /// R4: with only parked frames resident, they are proposed in rotation, never `None`.
    #[test]
    fn r4_only_branches_resident_still_gives_a_proposal() {
        let policy = LeafOnly::new(Box::new(Lru::new(3)), 3);
        let h = TestHooks::new(3);
        h.insert(&policy, &[0, 1]);
        policy.on_children(FrameId(0), true, &h[0]);
        policy.on_children(FrameId(1), true, &h[1]);
        let proposals: Vec<_> = (0..3).map(|_| policy.next_candidate(&h).unwrap().0).collect();
        assert_eq!(proposals, [0, 1, 0]);
        policy.on_rejected(FrameId(0), Rejection::NotResident, &h[0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Load(u32),
        Hit(u32),
        Children(u32, bool),
        Evict,
        Reject(u32, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..6u32).prop_map(Op::Load),
            (0..6u32).prop_map(Op::Hit),
            ((0..6u32), any::<bool>()).prop_map(|(f, s)| Op::Children(f, s)),
            Just(Op::Evict),
            ((0..6u32), 0..4u8).prop_map(|(f, w)| Op::Reject(f, w)),
        ]
    }

    proptest! {
        /// R1 holds for the inner policy (Strict panics otherwise), the inner policy tracks
        /// exactly the resident frames without swizzled children, and proposals are resident,
        /// and leaves whenever a leaf is resident.
        #[test]
        fn r8_inner_policy_sees_exactly_the_leaves(ops in proptest::collection::vec(op(), 1..200)) {
            let strict = Strict::default();
            let tracked = Arc::clone(&strict.tracked);
            let policy = LeafOnly::new(Box::new(strict), 6);
            let h = TestHooks::new(6);
            let mut resident = [false; 6];
            let mut branch = [false; 6];
            for op in ops {
                match op {
                    Op::Load(f) if !resident[f as usize] => {
                        h.insert(&policy, &[f]);
                        resident[f as usize] = true;
                    }
                    Op::Hit(f) if resident[f as usize] => h.hit(&policy, &[f]),
                    Op::Children(f, s) if resident[f as usize] && branch[f as usize] != s => {
                        policy.on_children(FrameId(f), s, &h[f as usize]);
                        branch[f as usize] = s;
                    }
                    Op::Evict => {
                        let proposal = policy.next_candidate(&h);
                        prop_assert_eq!(proposal.is_none(), !resident.contains(&true));
                        if let Some(v) = proposal {
                            let v = v.index();
                            prop_assert!(resident[v]);
                            let leaves = (0..6).any(|i| resident[i] && !branch[i]);
                            prop_assert!(!branch[v] || !leaves, "branch {} proposed beside a leaf", v);
                            if branch[v] {
                                policy.on_rejected(FrameId(v as u32), Rejection::SwizzledChildren, &h[v]);
                            } else {
                                policy.on_remove(FrameId(v as u32), true, &h[v]);
                                resident[v] = false;
                            }
                        }
                    }
                    Op::Reject(f, w) if resident[f as usize] && !branch[f as usize] => {
                        let why = [Rejection::InUse, Rejection::Root, Rejection::SwizzledChildren][usize::from(w % 3)];
                        policy.on_rejected(FrameId(f), why, &h[f as usize]);
                    }
                    _ => {}
                }
                let leaves: HashSet<u32> =
                    (0..6).filter(|&i| resident[i as usize] && !branch[i as usize]).collect();
                prop_assert_eq!(&*tracked.lock(), &leaves);
            }
        }
    }
}
