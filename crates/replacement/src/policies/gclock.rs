//! GCLOCK (Smith 1978, \[Smi78\]) as in Gilbert 2017, §3.3.3 (Algorithms 3.1–3.2, Listing
//! 3.6), and [`GclockSweep`], the same counters with the sweep first (Graefe et al. 2014, §4.2).
//! The rules R1–R11 are those of the crate README's section "The contract".
//!
//! Every frame has a reference counter, kept in the frame's [`FrameHook`] (R7). A hit sets it to
//! `k`; the hand sweeps the frames in order, proposes the first resident frame whose counter is 0
//! and decrements the others it passes. A higher `k` keeps a finer history at the price of longer
//! sweeps.
//!
//! # State
//!
//! The counters take values `0..=k`; `u16::MAX` marks a blocked frame, so `k ≤ 65534`. The policy
//! itself keeps a resident flag per frame, a resident count, and the hand (the next frame to
//! examine). Only inserts, removals, rejections and the hand touch the flags; a hit touches the
//! hook alone.
//!
//! # Steps
//!
//! 1. `on_insert`: counter = 0, then resident (Algorithm 3.1). The reset comes first, so the hand
//!    never reads a previous owner's value.
//! 2. `on_hit`: counter = k, stored only if it differs and the frame is not blocked (R5). This is
//!    a load of the hook and at most one plain store to it. `on_unfix` does nothing.
//! 3. `InUse`: as a hit (Gilbert's `used_ref`). `Root`: counter = `u16::MAX`. `SwizzledChildren`:
//!    unchanged. `NotResident`: as a removal.
//! 4. `on_remove`: counter = 0, not resident.
//! 5. `next_candidate` advances the hand one frame per step:
//!    - skip a free frame, without reading its hook;
//!    - skip a blocked frame without decrementing it;
//!    - propose a frame whose counter is 0, leaving the hand just past it;
//!    - otherwise decrement the counter (compare-exchange, never below 0) and move on.
//! 6. The sweep ends after one full revolution that met no unblocked resident frame, or after
//!    `(k + 2) · capacity` steps. It then proposes the unblocked frame with the lowest counter
//!    seen, else the first blocked frame, else `None`. Without concurrent hits the bound is never
//!    reached, because `k + 1` revolutions bring every counter to 0.
//!
//! Worked example (test `r4_hand_worked_example_k1`), with capacity 3 and k = 1:
//!
//! - Insert 0, 1, 2 and hit 1. The counters are `[0,1,0]`, so frame 0 is proposed and the hand
//!   moves to 1.
//! - Remove 0, insert 0, hit 0, hit 2. The counters are `[1,1,1]`. The hand decrements 1, 2 and
//!   0, then proposes frame 1.
//!
//! `tests/gclock_model.rs` checks this implementation against a naive reference model on random
//! hook sequences.
//!
//! # Deviations from Gilbert's code
//!
//! - **No wrap-around.** Gilbert's `--_counts[idx]` runs even when the counter is 0 and the latch
//!   upgrade would block, and the `uint16_t` wraps to 65535. Here only counters above 0 are
//!   decremented, and a rejection never decrements.
//! - **Bounded sweep.** Gilbert's loop never ends if nothing is evictable (all pinned or dirty).
//!   Ours ends by step 6.
//! - **Counters in the frame descriptor.** Gilbert keeps `_counts` in an array of its own, so
//!   every hit also misses on that array's line. Here the counter is the frame's hook (R7). It
//!   sits next to the latch that the fix has just taken.
//! - **Conditional store on hit.** Gilbert stores `k` blindly on every hit. We skip the store when
//!   the counter is already `k`, so hot frames do not bounce cache lines between cores.
//! - **Hits on fix only.** Gilbert calls `hit_ref` on both fix and unfix, which defines usage as
//!   least-recently-unfixed. We count the fix only, which halves the hook traffic. A page that is
//!   still fixed when it is proposed is refreshed anyway through the `InUse` rejection.
//! - **Checks moved to the pool.** Latching, dirtiness, pins and roots are checked by the pool
//!   (R6) and come back as rejections. Gilbert's `pick_victim` skips such frames itself, without a
//!   decrement.
//! - **Hits keep a root blocked.** In Zero, root hits bypass `fix()` and never call `hit_ref`. Our
//!   pool may report them, so a hit leaves a blocked counter alone. A hit racing with the `Root`
//!   store can unblock a root; that costs one extra rejection, after which it is blocked again.
//! - **Safe decrement.** The hand decrements with a compare-exchange, so a concurrent hit is never
//!   overwritten by a stale decrement. Gilbert uses a plain read-modify-write.
//!
//! # GCLOCK with the sweep first
//!
//! [`GclockSweep`] (`gclock-sweep(k=10)` by default) is Graefe et al. 2014 §4.2 as a named policy.
//! The counters, hits and rejections are exactly those of [`Gclock`]; what differs is how the
//! swizzling pool finds victims (R9):
//!
//! 1. `prefers_sweep()` is true: every eviction batch starts with the depth-first sweep of the
//!    cached trees, and the hand runs only if the sweep freed too few frames.
//! 2. `sweep_admits(frame)` admits a leaf whose counter is 0; any other counter is decremented
//!    (compare-exchange, never below 0) and the leaf stays, so a leaf hit just before is admitted
//!    on the `(k + 1)`-th visit. Blocked frames are never admitted.
//!
//! Plain [`Gclock`] answers `sweep_admits` the same way but keeps the sweep as the fallback after
//! its hand. This is the paper's design: "pages with no recent usage as indicated by the g-clock
//! counter are un-swizzled". Before R9 our sweep evicted every leaf it found, whatever its
//! counter.
//!
//! In traditional mode, and offline, there is no tree to sweep, and `gclock-sweep` behaves as
//! `gclock`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::capacity::{check_capacity, frame_id};

use crate::lazy::LazyCells;
use crate::policy::{FrameHook, HookHit, HookTable, Policy, Rejection};

use swizzledb_sync::{FrameId, PageId};

/// Hook value of a frame the pool rejected as a root: skipped by the hand, never decremented,
/// left alone by hits, and cleared only by removal or a new insert.
const BLOCKED: u32 = u16::MAX as u32;

/// GCLOCK with weight `k`: per-frame counters in the frames' hooks, and a clock hand.
///
/// Hits touch only the frame's hook (R7): a load and, only when the value changes, a plain store
/// (R5). A hot frame whose counter is already `k` is never written, so its cache line is not
/// bounced between cores. The policy's own per-frame state, the resident flags, is touched only
/// by inserts, removals, rejections and the hand.
pub struct Gclock {
    k: u16,
    resident: LazyCells<AtomicBool>,
    resident_count: AtomicUsize,
    /// The next frame the hand examines. Only the evicting thread moves it (R2).
    hand: AtomicUsize,
}

impl Gclock {
    /// The weight Gilbert used in all experiments (`sm_bufferpool_gclock_k`).
    pub const DEFAULT_K: u16 = 10;
    /// The largest accepted weight; `u16::MAX` marks blocked frames.
    pub const MAX_K: u16 = u16::MAX - 1;

    /// GCLOCK over frames `0..capacity`, all initially free, with hit weight `k`.
    ///
    /// # Panics
    /// If `k` is 0 or above [`Gclock::MAX_K`], or if `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize, k: u16) -> Gclock {
        assert!((1..=Self::MAX_K).contains(&k), "GCLOCK weight k={k} outside 1..={}", Self::MAX_K);
        check_capacity(capacity);
        Gclock {
            k,
            resident: LazyCells::new(capacity, || AtomicBool::new(false)),
            resident_count: AtomicUsize::new(0),
            hand: AtomicUsize::new(0),
        }
    }

    /// The hit weight.
    #[must_use]
    pub fn k(&self) -> u16 {
        self.k
    }

    /// Sets the counter in `hook` to `k` unless it already is `k` or the frame is blocked.
    ///
    /// One load and a conditional store on the hook only, no read-modify-write (R5, R7). The race
    /// with a concurrent [`Rejection::Root`] may unblock a root; the pool then rejects it once
    /// more and it is blocked again, which costs one extra rejection and loses nothing.
    #[inline]
    fn touch(&self, hook: &FrameHook) {
        let k = u32::from(self.k);
        let current = hook.get();
        if current != k && current != BLOCKED {
            hook.set(k);
        }
    }

    fn is_resident(&self, index: usize) -> bool {
        self.resident.get(index).is_some_and(|r| r.load(Ordering::Acquire))
    }

    /// Marks `frame` free and resets its counter.
    fn remove(&self, frame: FrameId, hook: &FrameHook) {
        hook.set(0);
        if self.resident.get(frame.index()).is_some_and(|r| r.swap(false, Ordering::AcqRel)) {
            self.resident_count.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// What the hand remembers while sweeping, for when the step bound runs out.
#[derive(Default)]
struct Fallback {
    /// Unblocked resident frame with the lowest counter seen (first one on ties).
    lowest: Option<(u32, usize)>,
    /// First blocked resident frame seen.
    blocked: Option<usize>,
}

impl Fallback {
    fn offer_unblocked(&mut self, counter: u32, index: usize) {
        match self.lowest {
            Some((best, _)) if best <= counter => {}
            _ => self.lowest = Some((counter, index)),
        }
    }

    fn result(&self) -> Option<FrameId> {
        self.lowest.map(|(_, index)| index).or(self.blocked).map(frame_id)
    }
}

impl Policy for Gclock {
    fn name(&self) -> String {
        format!("gclock(k={})", self.k)
    }

    /// Gilbert's Algorithm 3.1: a newly loaded page starts at 0 and is the next victim unless hit.
    ///
    /// The hook may hold anything before (R7), so it is reset before the frame becomes resident:
    /// a hand that sees the resident flag (acquire) sees the reset too.
    fn on_insert(&self, frame: FrameId, _page: PageId, hook: &FrameHook) {
        hook.set(0);
        if !self.resident.cell(frame.index()).swap(true, Ordering::AcqRel) {
            self.resident_count.fetch_add(1, Ordering::AcqRel);
        }
    }

    fn on_hit(&self, _frame: FrameId, hook: &FrameHook) {
        self.touch(hook);
    }

    /// R12: a hit is `touch`, a conditional store of `k` that leaves a claimed frame alone.
    fn hook_hit(&self) -> Option<HookHit> {
        Some(HookHit { value: u32::from(self.k), unless: BLOCKED })
    }

    /// R11: a hit is a conditional store to the hook, which `on_insert` resets.
    fn latch_free_hits(&self) -> bool {
        true
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, hook: &FrameHook) {
        match why {
            // In use right now: as good as a hit (Gilbert's `used_ref`).
            Rejection::InUse => self.touch(hook),
            Rejection::Root => {
                if self.is_resident(frame.index()) {
                    hook.set(BLOCKED);
                }
            }
            // Unchanged, no decrement (R3): the hand has moved past and returns next revolution.
            Rejection::SwizzledChildren => {}
            Rejection::NotResident => self.remove(frame, hook),
        }
    }

    fn on_remove(&self, frame: FrameId, _evicted: bool, hook: &FrameHook) {
        self.remove(frame, hook);
    }

    /// Sweeps the hand from where the previous call stopped:
    ///
    /// 1. a free frame is skipped (its hook is not read);
    /// 2. a blocked frame is skipped without decrement;
    /// 3. a resident frame with counter 0 is proposed, and the hand stops just past it;
    /// 4. any other counter is decremented (never below 0) and the hand moves on.
    ///
    /// Every frame examined is one step. The sweep stops after a full revolution that met no
    /// unblocked resident frame, and in any case after `(k + 2) * capacity` steps; it then
    /// proposes the unblocked resident frame with the lowest counter seen, else the first blocked
    /// one, else `None`. Without concurrent hits the bound is never reached: `k + 1` revolutions
    /// bring every unblocked counter to 0.
    fn next_candidate(&self, hooks: &dyn HookTable) -> Option<FrameId> {
        let capacity = self.resident.len();
        if self.resident_count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let max_steps = (usize::from(self.k) + 2).saturating_mul(capacity);
        let mut hand = self.hand.load(Ordering::Relaxed) % capacity;
        let mut fallback = Fallback::default();
        let mut unblocked_this_revolution = false;
        let mut proposal = None;
        for step in 1..=max_steps {
            let index = hand;
            hand = (hand + 1) % capacity;
            if self.is_resident(index) {
                let hook = hooks.hook(frame_id(index));
                match hook.get() {
                    BLOCKED => {
                        fallback.blocked.get_or_insert(index);
                    }
                    0 => {
                        proposal = Some(frame_id(index));
                        break;
                    }
                    value => {
                        unblocked_this_revolution = true;
                        // Compare-exchange so that a concurrent hit is never overwritten by a
                        // stale decrement; if one landed, the frame simply keeps its `k`.
                        let _ = hook.compare_exchange(value, value - 1);
                        fallback.offer_unblocked(value - 1, index);
                    }
                }
            }
            if step % capacity == 0 {
                if !unblocked_this_revolution {
                    break;
                }
                unblocked_this_revolution = false;
            }
        }
        self.hand.store(hand, Ordering::Relaxed);
        proposal.or_else(|| fallback.result())
    }

    /// Graefe's sweep un-swizzles leaves "with no recent usage as indicated by the g-clock
    /// counter" (R9): a counter of 0 admits the leaf; any other counter is decremented like the
    /// hand does (never below 0) and the leaf stays. A blocked frame is never admitted.
    fn sweep_admits(&self, _frame: FrameId, hook: &FrameHook) -> bool {
        match hook.get() {
            0 => true,
            BLOCKED => false,
            value => {
                let _ = hook.compare_exchange(value, value - 1);
                false
            }
        }
    }
}

/// Graefe et al. 2014 §4.2 as one named policy: GCLOCK counters, with the depth-first sweep of
/// the cached trees as the *first* way to find victims in swizzling mode (R9), and the GCLOCK hand
/// for whatever the sweep could not free (and in the other modes, and offline, where there is no
/// tree to sweep). Plain [`Gclock`] is the other way round: hand first, sweep as the fallback.
pub struct GclockSweep(Gclock);

impl GclockSweep {
    /// GCLOCK with weight `k` over frames `0..capacity`, preferring the sweep.
    ///
    /// # Panics
    /// As [`Gclock::new`].
    #[must_use]
    pub fn new(capacity: usize, k: u16) -> GclockSweep {
        GclockSweep(Gclock::new(capacity, k))
    }
}

impl Policy for GclockSweep {
    fn name(&self) -> String {
        format!("gclock-sweep(k={})", self.0.k)
    }

    fn on_insert(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        self.0.on_insert(frame, page, hook);
    }

    fn on_hit(&self, frame: FrameId, hook: &FrameHook) {
        self.0.on_hit(frame, hook);
    }

    fn hook_hit(&self) -> Option<HookHit> {
        self.0.hook_hit()
    }

    /// R11: a hit is a conditional store to the hook, which `on_insert` resets.
    fn latch_free_hits(&self) -> bool {
        true
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, hook: &FrameHook) {
        self.0.on_rejected(frame, why, hook);
    }

    fn on_remove(&self, frame: FrameId, evicted: bool, hook: &FrameHook) {
        self.0.on_remove(frame, evicted, hook);
    }

    fn next_candidate(&self, hooks: &dyn HookTable) -> Option<FrameId> {
        self.0.next_candidate(hooks)
    }

    fn prefers_sweep(&self) -> bool {
        true
    }

    fn sweep_admits(&self, frame: FrameId, hook: &FrameHook) -> bool {
        self.0.sweep_admits(frame, hook)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testpool::TestHooks;

    fn hooks(capacity: usize) -> TestHooks {
        TestHooks::new(capacity)
    }

    fn insert(policy: &Gclock, hooks: &[FrameHook], frames: &[u32]) {
        for &f in frames {
            policy.on_insert(FrameId(f), PageId::new(u64::from(f)).unwrap(), &hooks[f as usize]);
        }
    }

    fn hit(policy: &Gclock, hooks: &[FrameHook], frame: u32) {
        policy.on_hit(FrameId(frame), &hooks[frame as usize]);
    }

    fn reject(policy: &Gclock, hooks: &[FrameHook], frame: u32, why: Rejection) {
        policy.on_rejected(FrameId(frame), why, &hooks[frame as usize]);
    }

    fn remove(policy: &Gclock, hooks: &[FrameHook], frame: u32, evicted: bool) {
        policy.on_remove(FrameId(frame), evicted, &hooks[frame as usize]);
    }

    fn counters(hooks: &[FrameHook]) -> Vec<u32> {
        hooks.iter().map(FrameHook::get).collect()
    }

    /// The hand-worked example from the README's GCLOCK section.
    #[test]
    fn r4_hand_worked_example_k1() {
        let policy = Gclock::new(3, 1);
        let h = hooks(3);
        insert(&policy, &h, &[0, 1, 2]);
        hit(&policy, &h, 1);
        assert_eq!(counters(&h), [0, 1, 0]);
        // Hand at 0: frame 0 is already 0.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        remove(&policy, &h, 0, true);
        insert(&policy, &h, &[0]);
        hit(&policy, &h, 0);
        hit(&policy, &h, 2);
        assert_eq!(counters(&h), [1, 1, 1]);
        // Hand at 1. Frames 1, 2, 0 are decremented to 0 in turn; the hand then reaches frame 1
        // again, now at 0.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        assert_eq!(counters(&h), [0, 0, 0]);
        remove(&policy, &h, 1, true);
        // Hand at 2, counters [0, -, 0].
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)));
    }

    /// R7: the hit writes `k` into the hook it is given and touches nothing else. The policy
    /// keeps no copy of the hit: a hit delivered through a hook outside the table leaves the
    /// frame a victim. A second hit finds `k` there already and leaves the hook as it is.
    #[test]
    fn r7_hit_touches_only_the_hook() {
        let policy = Gclock::new(2, 7);
        let h = hooks(2);
        insert(&policy, &h, &[0, 1]);
        let detached = FrameHook::new();
        policy.on_hit(FrameId(0), &detached);
        assert_eq!(detached.get(), 7);
        policy.on_hit(FrameId(0), &detached);
        assert_eq!(detached.get(), 7);
        assert_eq!(counters(&h), [0, 0], "a hit wrote outside its hook");
        // Frame 0's counter, as the hand reads it from the table, is still 0.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));

        // Through the table, the same hit protects frame 0. The hand (now at 1) takes frame 1;
        // on the next call it decrements frame 0 on its way to frame 1 again.
        hit(&policy, &h, 0);
        hit(&policy, &h, 0);
        assert_eq!(counters(&h), [7, 0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        assert_eq!(counters(&h), [7, 0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        assert_eq!(counters(&h), [6, 0]);
        // A hit on a decremented counter restores k; a blocked one is left blocked.
        hit(&policy, &h, 0);
        assert_eq!(counters(&h), [7, 0]);
        reject(&policy, &h, 1, Rejection::Root);
        hit(&policy, &h, 1);
        assert_eq!(counters(&h), [7, BLOCKED]);
    }

    /// R7: whatever a previous owner left in the hook, an insert starts the counter at 0.
    #[test]
    fn r1_insert_resets_the_counter() {
        let policy = Gclock::new(2, 5);
        let h = hooks(2);
        insert(&policy, &h, &[0, 1]);
        hit(&policy, &h, 0);
        remove(&policy, &h, 0, false);
        assert_eq!(h[0].get(), 0, "removal resets the hook");
        // Whatever else used the word while the frame was free, the insert starts from 0.
        h[0].set(BLOCKED);
        insert(&policy, &h, &[0]);
        assert_eq!(h[0].get(), 0);
        // Frame 0's new page starts at 0, so the hand at 0 takes it at once.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
    }

    #[test]
    fn r3_in_use_rejection_acts_as_a_hit() {
        let policy = Gclock::new(2, 3);
        let h = hooks(2);
        insert(&policy, &h, &[0, 1]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        reject(&policy, &h, 0, Rejection::InUse);
        // Frame 0 now has counter 3; frame 1 (counter 0) comes first.
        assert_eq!(h[0].get(), 3);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        remove(&policy, &h, 1, true);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
    }

    #[test]
    fn r3_swizzled_children_rejection_keeps_the_frame_tracked() {
        let policy = Gclock::new(2, 3);
        let h = hooks(2);
        insert(&policy, &h, &[0, 1]);
        hit(&policy, &h, 1);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        reject(&policy, &h, 0, Rejection::SwizzledChildren);
        assert_eq!(counters(&h), [0, 3], "a rejection changed a counter");
        // Frame 1 is decremented 3 -> 2 on the way; frame 0 (still 0) is proposed again.
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        assert_eq!(counters(&h), [0, 2]);
    }

    #[test]
    fn r3_blocked_frames_survive_hits() {
        let policy = Gclock::new(2, 2);
        let h = hooks(2);
        insert(&policy, &h, &[0, 1]);
        reject(&policy, &h, 0, Rejection::Root);
        hit(&policy, &h, 0);
        hit(&policy, &h, 1);
        for _ in 0..5 {
            assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
            reject(&policy, &h, 1, Rejection::InUse);
        }
        assert_eq!(h[0].get(), BLOCKED);
    }

    #[test]
    fn r3_stale_root_rejection_does_not_block_a_free_frame() {
        let policy = Gclock::new(2, 2);
        let h = hooks(2);
        insert(&policy, &h, &[0]);
        remove(&policy, &h, 0, true);
        reject(&policy, &h, 0, Rejection::Root);
        assert_eq!(h[0].get(), 0);
        assert_eq!(policy.next_candidate(&h), None);
    }

    #[test]
    fn r3_only_blocked_frames_resident_terminates_with_a_blocked_proposal() {
        let policy = Gclock::new(4, Gclock::MAX_K);
        let h = hooks(4);
        insert(&policy, &h, &[1, 3]);
        reject(&policy, &h, 1, Rejection::Root);
        reject(&policy, &h, 3, Rejection::Root);
        let proposal = policy.next_candidate(&h);
        assert!(matches!(proposal, Some(FrameId(1 | 3))), "{proposal:?}");
        assert_eq!(counters(&h), [0, BLOCKED, 0, BLOCKED]);
    }

    #[test]
    fn r4_nothing_resident_gives_none() {
        let policy = Gclock::new(4, 10);
        let h = hooks(4);
        assert_eq!(policy.next_candidate(&h), None);
        insert(&policy, &h, &[2]);
        reject(&policy, &h, 2, Rejection::NotResident);
        assert_eq!(policy.next_candidate(&h), None);
        assert_eq!(Gclock::new(0, 10).next_candidate(&hooks(0)), None);
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn zero_weight_is_refused() {
        let _ = Gclock::new(4, 0);
    }

    /// R9: a leaf found by the sweep is admitted only at counter 0; otherwise the visit ages it
    /// by one, so a leaf hit once is admitted on the (k + 1)-th visit; roots never.
    #[test]
    fn r9_sweep_admits_leaves_by_counter() {
        let policy = GclockSweep::new(3, 2);
        let h = TestHooks::new(3);
        h.insert(&policy, &[0, 1, 2]);
        h.hit(&policy, &[1]);
        policy.on_rejected(FrameId(2), Rejection::Root, &h[2]);
        assert!(policy.sweep_admits(FrameId(0), &h[0]));
        let visits: Vec<bool> = (0..3).map(|_| policy.sweep_admits(FrameId(1), &h[1])).collect();
        assert_eq!(visits, [false, false, true]);
        assert!(!policy.sweep_admits(FrameId(2), &h[2]));
        assert!(policy.prefers_sweep() && !Gclock::new(3, 2).prefers_sweep());
        assert_eq!(policy.name(), "gclock-sweep(k=2)");
    }

    #[test]
    fn name_matches_the_parser_spelling() {
        assert_eq!(Gclock::new(1, 10).name(), "gclock(k=10)");
    }
}
