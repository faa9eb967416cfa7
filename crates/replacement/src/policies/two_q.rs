//! 2Q, the full version (Johnson & Shasha, VLDB 1994): first-time pages enter a FIFO `A1in`;
//! when they leave it their ids go to a ghost FIFO `A1out`; a page that misses while its id is in
//! `A1out` was referenced again after a while, so it enters the LRU list `Am`. A burst of
//! correlated references stays in `A1in` and never pollutes `Am`. Defaults: `Kin` = 25% and
//! `Kout` = 50% of the frames ([`TwoQ::new`]). The rules R1–R11 are the crate README's contract.
//! Measured costs and the figures behind the choices below: `docs/gilbert.md`.
//!
//! # State
//!
//! Under one mutex: `A1in`, a FIFO of resident first-time pages; `Am`, an LRU list of resident
//! pages referenced again after leaving `A1in`; `A1out`, a FIFO of the ids of pages evicted from
//! `A1in`, at most `Kout` (a [`GhostRing`], see the crate README's "Shared building blocks"); the
//! blocked list.
//!
//! Each held frame's page is in its hook (R7), as the word `id + 1` if that is below `u32::MAX`,
//! else as `u32::MAX` ([`HOOK_LARGE`]) with the word in an array under the mutex. 2Q writes it at
//! the insert and reads it at the eviction that puts the id into `A1out`, and reads no other
//! frame's hook. The hook shares a line with what the eviction touches anyway (the pool's
//! descriptor, or BP-Wrapper's frame record), where an array of page words cost a line of its
//! own at each insert and each eviction.
//!
//! A hit's effect (R5) follows from the list that holds the frame: `Changes` in `Am`, `Nothing`
//! in `A1in` or blocked, `Unknown` in none (2Q does not hold the frame). The lists keep that
//! number in a byte per frame ([`Queues`]), written under the mutex by every link and unlink and
//! readable without it ([`ListBytes`], relaxed atomics), so a hit reads the byte the lists
//! maintain anyway; a separate array of effect bytes, written beside every change of list, cost
//! one more cache line per insert and per eviction. The byte is 2Q's, not the hook, so that under
//! BP-Wrapper the check costs a hit no miss on the wrapper's frame records (and BP-Wrapper
//! remembers the answer in the pool's hook, since `Nothing` is stable here: an `A1in` page never
//! moves to `Am` while resident, and a blocked page stays blocked).
//!
//! # Steps
//!
//! 1. `on_insert(page)`: if the page is in `A1out`, it leaves `A1out` and enters `Am` at the MRU
//!    end; otherwise it enters `A1in` at the newest end.
//! 2. `on_hit`: a page in `Am` moves to the MRU end (nothing to do if it is there already); a
//!    page in `A1in` stays where it is (its re-references are taken as correlated); a blocked
//!    page too. The hit reads the frame's list byte first: for `A1in` and blocked pages it
//!    returns without the lock (R5: one load). For `Am` pages it takes the lock (not R5) and
//!    checks the list again under it. A stale `Changes` (a concurrent `Root` block) is caught by
//!    that check; a stale `Nothing` cannot happen, since a page's hits come after its
//!    `on_insert` (R1), or, under BP-Wrapper, the frame is in no list until the page's insert is
//!    committed. `on_queued` (BP-Wrapper's commit) takes the lock once for the whole batch of
//!    inserts and hits.
//! 3. `next_candidate` (the paper's `reclaimfor`): the oldest of `A1in` if `|A1in| > Kin`, else
//!    the LRU end of `Am`, else the oldest of `A1in`; if only blocked frames are resident, one of
//!    them; else `None`.
//! 4. `on_remove`: an eviction from `A1in` appends the page id to `A1out`, dropping its oldest id
//!    beyond `Kout`; an eviction from `Am` or of a blocked frame, and a freed page, leave no id.
//! 5. `InUse` and `SwizzledChildren`: the frame moves to the newest end of its own list, as if
//!    just loaded (`A1in`) or used (`Am`). `Root`: blocked. `NotResident`: forgotten. 2Q keeps
//!    its lists in [`SearchQueues`] (shared with MQ) but never moves the search cursor.
//!
//! Why step 5 requeues rather than passes the frame with the search cursor (as MQ does): every
//! eviction resets the cursor, so a passed frame is proposed again after each eviction while it
//! stays where it is. A parent with swizzled children stays unevictable for as long as its
//! children are cached: in a swizzling pool `A1in` fills with inner nodes (2Q ignores their
//! repeated hits as correlated), and with the cursor alone the policies experiment counted
//! many refused proposals per eviction. `InUse` looked cheap to pass (a latch held for a
//! moment), but in a swizzling pool a leaf's eviction needs its parent's exclusive latch, and at
//! 16 threads readers hold the hot inner nodes' latches almost all the time: with `InUse`
//! passed, `bpw-2q` ran at half the lookups/s it reaches with `InUse` requeued, its eviction
//! batches were slow and its lock was taken far more often (figures: `docs/gilbert.md`).
//!
//! # Live-pool notes (deviations from the paper)
//!
//! The paper's miss handling is split in two. The victim choice (`reclaimfor`) does not depend
//! on the missing page, so `next_candidate` can make it ahead of the miss; the "is it in
//! `A1out`?" test moves to `on_insert`, which knows the page. Nothing is dropped. `A1in` can hold
//! more than `Kin` pages, as in the paper: while frames are free nothing is reclaimed.
//!
//! # Worked example
//!
//! Test `r4_hand_worked_a1in_a1out_am` (hand-worked: the paper gives no step-by-step string),
//! 4 frames, `Kin` = 1, `Kout` = 2: pages 1–4 load into `A1in`; 5 evicts 1 (`A1out` = `[1]`); 1
//! evicts 2 and enters `Am` (`A1out` = `[2]`); 6 evicts 3 (`[2 3]`); 2 evicts 4 (`[3 4]`: 2 was
//! dropped, so it comes back into `A1in` as a new page). Then 5 and 6 go from `A1in`, and once
//! `|A1in|` = `Kin` = 1, `Am`'s page 1. `victims_match_a_reference_model` checks the victims on
//! random reference strings against a plain-queue model written from the paper.

use parking_lot::Mutex;

use crate::batch::{evict_batch_locked, LockedBatch};
use crate::capacity::{check_capacity, frame_id};
use crate::ghost_ring::{GhostRing, MAX_LIMIT};
use crate::lazy::FrameVec;
use crate::list::{ListBytes, Queues, SearchQueues};
use crate::policy::{Evictor, FrameHook, HitEffect, HookTable, Policy, QueuedHook, Rejection, Verdict};
use swizzledb_sync::{FrameId, PageId};

/// First-time pages, FIFO (oldest first).
const A1IN: usize = 0;
/// Re-referenced pages, LRU (least recently used first).
const AM: usize = 1;

struct State {
    /// The paper's `Kin`: `A1in` is reclaimed from while it holds more than this many pages.
    kin: usize,
    /// `A1in` and `Am`, and the blocked list. 2Q never moves the search cursor (a refused frame is
    /// requeued instead, `reject`), so every proposal is the paper's choice.
    search: SearchQueues,
    /// The page words of the frames whose hook says [`HOOK_LARGE`]; untouched while every page
    /// id fits a hook.
    large: FrameVec<u64>,
    /// The paper's `A1out`: ids of pages evicted from `A1in`, at most `Kout` of them.
    a1out: GhostRing,
}

/// The paper's `reclaimfor`: the tail of `A1in` if it holds more than `kin` pages, else the
/// tail of `Am`; the other list when the chosen one is empty.
fn reclaim_for(queues: &Queues, kin: usize) -> Option<usize> {
    let (first, second) = if queues.len(A1IN) > kin { (A1IN, AM) } else { (AM, A1IN) };
    queues.oldest(first).or_else(|| queues.oldest(second))
}

/// The hook (R7) of a frame 2Q holds: its page word, `id + 1`, if that is below this value;
/// else this value, and the word is in `State::large`. It is read only for a frame 2Q holds (any
/// other frame's hook may hold anything, R7), at the frame's eviction, which puts the page into
/// `A1out`: the hook sits in a line the eviction touches anyway (the pool's frame descriptor, or
/// BP-Wrapper's frame record), where an array of pages cost a line of its own at each insert
/// and each eviction.
const HOOK_LARGE: u32 = u32::MAX;

/// What a hit on a frame in `list` would do (R5): move it within `Am`; nothing in `A1in` or
/// blocked; and `Unknown` for a frame 2Q does not hold, so that a hit on a page whose insert has
/// not reached the policy yet (queued in BP-Wrapper) is not ignored.
fn effect_in(list: Option<usize>) -> HitEffect {
    match list {
        Some(AM) => HitEffect::Changes,
        Some(_) => HitEffect::Nothing,
        None => HitEffect::Unknown,
    }
}

impl State {
    /// Records `page` as frame `f`'s: in its hook, or in `large` if its word does not fit.
    fn set_page(&mut self, f: usize, hook: &FrameHook, page: PageId) {
        let word = page.get() + 1;
        match u32::try_from(word) {
            Ok(small) if small != HOOK_LARGE => hook.set(small),
            _ => {
                self.large[f] = word;
                hook.set(HOOK_LARGE);
            }
        }
    }

    /// The page of frame `f`, which 2Q holds, as `set_page` recorded it.
    fn page_of(&self, f: usize, hook: &FrameHook) -> PageId {
        let word = match hook.get() {
            HOOK_LARGE => self.large[f],
            small => u64::from(small),
        };
        PageId::new(word.wrapping_sub(1)).expect("a held frame's hook holds its page word")
    }

    /// Unlinks `frame`; returns its page and the list it was in, if it was resident.
    #[inline]
    fn forget(&mut self, frame: usize, hook: &FrameHook) -> Option<(PageId, usize)> {
        let list = self.search.unlink(frame)?;
        Some((self.page_of(frame, hook), list))
    }

    /// An insert (`on_insert`, under the lock).
    fn insert(&mut self, f: usize, page: PageId, hook: &FrameHook) {
        self.forget(f, hook);
        let list = if self.a1out.remove(page) { AM } else { A1IN };
        self.search.queues.push_newest(list, f);
        self.set_page(f, hook, page);
    }

    /// A hit: an `Am` page moves to the MRU end (unless it is there already); an `A1in` or
    /// blocked page stays.
    #[inline]
    fn hit(&mut self, frame: usize) {
        let queues = &self.search.queues;
        if queues.queue_of(frame) == Some(AM) && queues.newest(AM) != Some(frame) {
            self.search.relink(AM, frame);
        }
    }

    /// A rejection (`on_rejected`, under the lock).
    fn reject(&mut self, f: usize, why: Rejection, hook: &FrameHook) {
        match why {
            // Unevictable for now: back to the newest end of its own queue, as if just loaded
            // (A1in) or used (Am). Passing it instead would re-propose it after every eviction,
            // since each eviction restarts the search. A parent with swizzled children stays
            // unevictable for as long as its children are cached (in a swizzling pool the A1in
            // tail fills with inner nodes: 29 refusals per eviction with the cursor alone), and a
            // leaf whose parent readers keep latched is refused again and again at 16 threads.
            Rejection::InUse | Rejection::SwizzledChildren => self.search.requeue(f),
            // A free frame stays free (`block`).
            Rejection::Root => self.search.block(f),
            Rejection::NotResident => {
                self.forget(f, hook);
            }
        }
    }

    /// A removal (`on_remove`, under the lock).
    fn remove(&mut self, f: usize, evicted: bool, hook: &FrameHook) {
        let forgotten = self.forget(f, hook);
        if let (true, Some((page, A1IN))) = (evicted, forgotten) {
            self.a1out.insert(page);
        }
    }
}

impl LockedBatch for State {
    fn propose(&mut self) -> Option<usize> {
        let kin = self.kin;
        self.search.propose(|queues| reclaim_for(queues, kin))
    }

    fn record(&mut self, f: usize, verdict: Verdict, hook: &FrameHook) {
        match verdict {
            Verdict::Evicted => self.remove(f, true, hook),
            Verdict::Rejected(why) => self.reject(f, why, hook),
        }
    }

    fn guess_after(&self, f: usize, hooks: &dyn HookTable) -> Option<usize> {
        let queues = &self.search.queues;
        let list = queues.queue_of(f).filter(|&q| q == A1IN || q == AM)?;
        if list == A1IN {
            self.a1out.prefetch_insert(self.page_of(f, hooks.hook(frame_id(f))));
        }
        let in_after = queues.len(A1IN) - usize::from(list == A1IN);
        let (first, second) = if in_after > self.kin { (A1IN, AM) } else { (AM, A1IN) };
        let next = queues.oldest_without(first, f).or_else(|| queues.oldest_without(second, f))?;
        queues.prefetch(next);
        Some(next)
    }
}

/// 2Q replacement (full version: `A1in`, `A1out`, `Am`).
///
/// A hit on an `Am` page relinks it under the policy's mutex, a documented breach of R5 (module
/// docs); a hit on an `A1in` or blocked page changes nothing, as in the paper, and takes no
/// lock: the lists' byte per frame, which says which list holds it and is written under the
/// mutex, is read first, without it. Each frame's hook holds its page's id (`HOOK_LARGE`).
pub struct TwoQ {
    kin: usize,
    kout: usize,
    state: Mutex<State>,
    /// Each frame's list number in `state`, read by hits without the lock.
    lists: ListBytes,
}

impl TwoQ {
    /// 2Q over frames `0..capacity` with Johnson & Shasha's recommended sizes: `Kin` = 25% of
    /// the frames and `Kout` = 50% (each at least 1; `Kout` at most 2^29, README S1).
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize) -> TwoQ {
        // A1out's ring holds at most 2^29 ids: a pool of more than 2^30 frames remembers fewer.
        TwoQ::with_sizes(capacity, (capacity / 4).max(1), (capacity / 2).clamp(1, MAX_LIMIT))
    }

    /// 2Q with explicit `Kin` (the `A1in` size above which it is reclaimed from) and `Kout`
    /// (the number of ids `A1out` remembers).
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`], or if `kout` is above 2^29.
    #[must_use]
    pub fn with_sizes(capacity: usize, kin: usize, kout: usize) -> TwoQ {
        check_capacity(capacity);
        let mut search = SearchQueues::new(capacity, 2);
        let lists = search.queues.list_bytes();
        let state = State { kin, search, large: FrameVec::new(capacity, 0), a1out: GhostRing::new(kout) };
        TwoQ { kin, kout, state: Mutex::new(state), lists }
    }

    /// `Kin` and `Kout`.
    #[must_use]
    pub fn sizes(&self) -> (usize, usize) {
        (self.kin, self.kout)
    }
}

impl Policy for TwoQ {
    fn name(&self) -> String {
        "2q".to_owned()
    }

    /// A page remembered in `A1out` enters `Am` (its id leaves `A1out`); any other page enters
    /// `A1in`. Both at the newest end.
    fn on_insert(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        self.state.lock().insert(frame.index(), page, hook);
    }

    /// `Am`: move to the MRU end (under the lock, not R5). `A1in` and blocked: nothing, known
    /// from the frame's list byte without the lock (R5).
    fn on_hit(&self, frame: FrameId, hook: &FrameHook) {
        if !self.ignores_hit(frame, hook) {
            self.state.lock().hit(frame.index());
        }
    }

    /// A page outside `Am` (in `A1in`, or blocked): `Nothing`; in `Am`: `Changes`; a frame 2Q
    /// does not hold: `Unknown` (its page's insert may still be on its way, in BP-Wrapper's
    /// queues).
    fn hit_effect(&self, frame: FrameId, _hook: &FrameHook) -> HitEffect {
        effect_in(self.lists.list_of(frame.index()))
    }

    fn ignores_some_hits(&self) -> bool {
        true
    }

    /// An `A1in` page stays in `A1in` and a blocked page blocked until they leave.
    fn hit_effects_are_stable(&self) -> bool {
        true
    }

    /// BP-Wrapper's batch of inserts and hits, under one acquisition of the lock. A hit reads
    /// the list under the lock rather than the frame's hook: the wrapper, the caller, holds its
    /// own lock meanwhile, so this one is uncontended. 2Q ignores unfixes and changes of
    /// children. (A first pass that prefetched the neighbours of the frames hit in `Am` was
    /// dropped: README "BP-Wrapper", it shortened no critical section.)
    fn on_queued(&self, calls: &[(FrameId, QueuedHook)], table: &dyn HookTable) {
        let mut state = self.state.lock();
        for &(frame, call) in calls {
            match call {
                QueuedHook::Insert(page) => state.insert(frame.index(), page, table.hook(frame)),
                QueuedHook::Hit => state.hit(frame.index()),
                QueuedHook::Unfix | QueuedHook::Children(_) => {}
            }
        }
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, hook: &FrameHook) {
        self.state.lock().reject(frame.index(), why, hook);
    }

    /// An eviction from `A1in` remembers the page in `A1out` (dropping its oldest id beyond
    /// `Kout`); an eviction from `Am` or of a blocked page, and a freed page, leave no trace.
    fn on_remove(&self, frame: FrameId, evicted: bool, hook: &FrameHook) {
        self.state.lock().remove(frame.index(), evicted, hook);
    }

    /// The paper's choice (the `A1in` tail while
    /// `|A1in| > Kin`, else the `Am` tail); if only blocked frames are resident, one of them;
    /// else `None` (R4).
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        self.state.lock().propose().map(frame_id)
    }

    /// Prefetches each frame's links and each inserted page's `A1out` index line, if the lock
    /// is free (never waits). The links of every frame, though only hits in `Am` relink: reading
    /// a frame's list byte to pick them would be a load, which the committing thread on the
    /// other core keeps invalidating, where a useless prefetch costs no wait (`A1in` hits are
    /// mostly dropped before they are queued anyway). The index line is all a lookup in `A1out`
    /// reads for a page id below 2^32 (its entries hold such ids whole).
    fn prefetch_accesses(&self, frames: &[FrameId], inserted: &[PageId]) {
        let Some(state) = self.state.try_lock() else { return };
        let queues = &state.search.queues;
        for frame in frames {
            queues.prefetch(frame.index());
        }
        for &page in inserted {
            state.a1out.prefetch(page);
        }
    }

    /// The paper's choice once `frame` (in `A1in` or `Am`) has been evicted: the oldest frame of
    /// the list reclaimed from then, or of the other list if that one is empty. Its links are
    /// prefetched, for the proposal and removal that follow, and so are the `A1out` index lines
    /// that evicting `frame` from `A1in` will touch (its page is in its hook).
    fn candidate_after(&self, frame: FrameId, hooks: &dyn HookTable) -> Option<FrameId> {
        self.state.lock().guess_after(frame.index(), hooks).map(frame_id)
    }

    /// One acquisition of the lock per victim (`evict_batch_locked`).
    fn evict_batch(&self, hooks: &dyn HookTable, evictor: &mut dyn Evictor, max_proposals: usize) -> usize {
        evict_batch_locked(&self.state, hooks, evictor, max_proposals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testpool as sim;
    use crate::testpool::TestHooks;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    fn pid(page: u64) -> PageId {
        PageId::new(page).unwrap()
    }

    fn load(policy: &TwoQ, h: &TestHooks, frame: u32, page: u64) {
        policy.on_insert(FrameId(frame), pid(page), &h[frame as usize]);
    }

    /// (A1in, Am) frames oldest first, and A1out's page ids oldest first.
    fn lists(policy: &TwoQ) -> (Vec<usize>, Vec<usize>, Vec<u64>) {
        let state = policy.state.lock();
        let out = state.a1out.oldest_ids();
        (state.search.queues.oldest_first(A1IN), state.search.queues.oldest_first(AM), out)
    }

    /// Hand-worked (Johnson & Shasha give no step-by-step reference string): 4 frames, Kin = 1,
    /// Kout = 2, pages 1..6; the test plays the pool, loading each missing page into the frame
    /// just freed.
    /// - Pages 1 2 3 4 load into frames 0..3, all in A1in; hits on 1 and 2 change nothing there.
    /// - 5 misses: |A1in| = 4 > Kin, so A1in's tail, page 1, goes; A1out = [1].
    /// - 1 misses: page 2 goes, A1out = [1 2]; page 1 is in A1out, so it enters Am and leaves
    ///   A1out = [2].
    /// - 6 misses: page 3 goes, A1out = [2 3].
    /// - 2 misses: page 4 goes; A1out = [3 4], since Kout = 2 drops page 2, which therefore
    ///   enters A1in as a new page (the paper's case of a too small Kout).
    /// - Four more evictions: page 5 (|A1in| = 3), page 6 (|A1in| = 2), then |A1in| = 1 = Kin so
    ///   Am's tail, page 1, and last page 2 from A1in since Am is empty. Only A1in evictions
    ///   enter A1out, which ends as [6 2].
    #[test]
    fn r4_hand_worked_a1in_a1out_am() {
        let policy = TwoQ::with_sizes(4, 1, 2);
        let h = TestHooks::new(4);
        for (f, page) in [1, 2, 3, 4].into_iter().enumerate() {
            load(&policy, &h, f as u32, page);
        }
        h.hit(&policy, &[0, 1]);
        assert_eq!(lists(&policy), (vec![0, 1, 2, 3], vec![], vec![]));
        assert_eq!(h.evict(&policy), 0);
        load(&policy, &h, 0, 5);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(lists(&policy).2, [1, 2]);
        load(&policy, &h, 1, 1);
        assert_eq!(lists(&policy), (vec![2, 3, 0], vec![1], vec![2]), "a is back, in Am");
        assert_eq!(h.evict(&policy), 2);
        load(&policy, &h, 2, 6);
        assert_eq!(h.evict(&policy), 3);
        assert_eq!(lists(&policy).2, [3, 4], "b fell out of A1out");
        load(&policy, &h, 3, 2);
        assert_eq!(lists(&policy), (vec![0, 2, 3], vec![1], vec![3, 4]), "b forgotten: A1in again");
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(lists(&policy).2, [4, 5]);
        h.hit(&policy, &[1]);
        // |A1in| = 2 > 1: still from A1in, then |A1in| = 1 = Kin: from Am.
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(h.evict(&policy), 1, "A1in at Kin: Am's tail a");
        assert_eq!(h.evict(&policy), 3, "Am empty: A1in");
        assert_eq!(policy.next_candidate(&h), None);
        assert_eq!(lists(&policy).2, [6, 2], "only A1in evictions are remembered");
    }

    /// A page's id reaches `A1out` from the frame's hook, whole whatever its size: ids whose word
    /// fits the hook, the largest that does, the first that does not (its word is `HOOK_LARGE`
    /// itself) and larger ones, evicted one by one from A1in and through a batch.
    #[test]
    fn r4_page_ids_of_every_size_reach_a1out() {
        let ids = [
            1,
            u64::from(u32::MAX) - 2,
            u64::from(u32::MAX) - 1,
            u64::from(u32::MAX),
            1 << 40,
            (1 << 63) - 1,
        ];
        for batched in [false, true] {
            let policy = TwoQ::with_sizes(ids.len(), 1, ids.len());
            let h = TestHooks::new(ids.len());
            for (f, &page) in ids.iter().enumerate() {
                load(&policy, &h, f as u32, page);
            }
            if batched {
                /// Evicts every proposal until it has evicted `.0` frames.
                struct Evict(usize);
                impl Evictor for Evict {
                    fn wants_more(&mut self) -> bool {
                        self.0 > 0
                    }
                    fn try_evict(&mut self, _frame: FrameId) -> Verdict {
                        self.0 -= 1;
                        Verdict::Evicted
                    }
                }
                policy.evict_batch(&h, &mut Evict(ids.len() - 1), usize::MAX);
            } else {
                for _ in 1..ids.len() {
                    h.evict(&policy);
                }
            }
            assert_eq!(lists(&policy).2, ids[..ids.len() - 1], "batched: {batched}");
        }
    }

    /// Am is LRU: hits reorder it, and the tail is evicted once A1in is at or below Kin.
    #[test]
    fn r4_am_is_lru() {
        let policy = TwoQ::with_sizes(3, 1, 3);
        let h = TestHooks::new(3);
        // Pages 1 2 3 pass through A1in into A1out, then come back into Am.
        for page in 1..=3 {
            load(&policy, &h, 0, page);
            policy.on_remove(FrameId(0), true, &h[0]);
        }
        for (f, page) in [1, 2, 3].into_iter().enumerate() {
            load(&policy, &h, f as u32, page);
        }
        assert_eq!(lists(&policy), (vec![], vec![0, 1, 2], vec![]));
        h.hit(&policy, &[0, 2]);
        assert_eq!(h.evict(&policy), 1);
        h.hit(&policy, &[0]);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(lists(&policy).2, Vec::<u64>::new(), "Am evictions are not remembered");
    }

    /// `SwizzledChildren` and `InUse` requeue the frame at its queue's newest end; `Root` blocks;
    /// a freed page is not remembered in A1out.
    #[test]
    fn r3_rejections_and_frees() {
        let policy = TwoQ::with_sizes(4, 1, 4);
        let h = TestHooks::new(4);
        load(&policy, &h, 0, 1);
        policy.on_remove(FrameId(0), true, &h[0]);
        load(&policy, &h, 0, 1); // Am
        load(&policy, &h, 1, 2);
        load(&policy, &h, 2, 3);
        load(&policy, &h, 3, 4);
        assert_eq!(lists(&policy), (vec![1, 2, 3], vec![0], vec![]));
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_rejected(FrameId(1), Rejection::SwizzledChildren, &h[1]);
        assert_eq!(lists(&policy).0, [2, 3, 1], "requeued at A1in's newest end");
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)));
        policy.on_rejected(FrameId(2), Rejection::Root, &h[2]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(3)));
        policy.on_rejected(FrameId(3), Rejection::InUse, &h[3]);
        assert_eq!(lists(&policy).0, [1, 3], "requeued at A1in's newest end");
        assert_eq!(policy.next_candidate(&h), Some(FrameId(1)));
        policy.on_remove(FrameId(3), false, &h[3]);
        assert_eq!(lists(&policy).2, Vec::<u64>::new(), "freed, not evicted");
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)), "|A1in| = Kin: Am's LRU end");
        policy.on_rejected(FrameId(0), Rejection::InUse, &h[0]);
        assert_eq!(h.evict(&policy), 0, "Am's only frame, requeued at its own newest end");
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(h.evict(&policy), 2, "the root last");
        assert_eq!(lists(&policy).2, [2], "blocked and Am evictions are not remembered");
    }

    /// Victims of 2Q over page ids, written from the paper with plain `VecDeque`s (oldest or LRU
    /// first), for a pool of `capacity` frames that evicts on every miss once full.
    fn model_victims(capacity: usize, kin: usize, kout: usize, refs: &[u64]) -> Vec<u64> {
        let (mut a1in, mut am, mut a1out) = (VecDeque::new(), VecDeque::new(), VecDeque::new());
        let mut victims = Vec::new();
        for &x in refs {
            if let Some(at) = am.iter().position(|&p| p == x) {
                am.remove(at);
                am.push_back(x);
                continue;
            }
            if a1in.contains(&x) {
                continue;
            }
            if a1in.len() + am.len() == capacity {
                let victim = if a1in.len() > kin || am.is_empty() {
                    let y = a1in.pop_front().unwrap();
                    a1out.push_back(y);
                    if a1out.len() > kout {
                        a1out.pop_front();
                    }
                    y
                } else {
                    am.pop_front().unwrap()
                };
                victims.push(victim);
            }
            match a1out.iter().position(|&p| p == x) {
                Some(at) => {
                    a1out.remove(at);
                    am.push_back(x);
                }
                None => a1in.push_back(x),
            }
        }
        victims
    }

    /// 2Q with the module docs' rejections and removals (steps 1-5), over pages, for
    /// `r3_r4_matches_the_model_with_rejections`: lists oldest (LRU) first.
    struct RejModel {
        kin: usize,
        kout: usize,
        a1in: VecDeque<u64>,
        am: VecDeque<u64>,
        a1out: VecDeque<u64>,
        blocked: VecDeque<u64>,
    }

    fn take(list: &mut VecDeque<u64>, x: u64) -> bool {
        list.iter().position(|&y| y == x).and_then(|i| list.remove(i)).is_some()
    }

    impl RejModel {
        fn hit(&mut self, x: u64) {
            if take(&mut self.am, x) {
                self.am.push_back(x);
            }
        }

        /// Step 5: `InUse` and `SwizzledChildren` requeue the page at the newest end of its own
        /// list.
        fn requeue(&mut self, x: u64) {
            if take(&mut self.a1in, x) {
                self.a1in.push_back(x);
            } else if take(&mut self.am, x) {
                self.am.push_back(x);
            }
        }

        fn block(&mut self, x: u64) {
            if take(&mut self.a1in, x) || take(&mut self.am, x) {
                self.blocked.push_back(x);
            }
        }

        /// Step 4: only an eviction from `A1in` is remembered (not one from `Am`, of a root, or
        /// a free).
        fn leave(&mut self, x: u64, evicted: bool) {
            let from_a1in = take(&mut self.a1in, x);
            let _ = from_a1in || take(&mut self.am, x) || take(&mut self.blocked, x);
            if evicted && from_a1in {
                self.a1out.push_back(x);
                if self.a1out.len() > self.kout {
                    self.a1out.pop_front();
                }
            }
        }

        fn load(&mut self, x: u64) {
            if take(&mut self.a1out, x) {
                self.am.push_back(x);
            } else {
                self.a1in.push_back(x);
            }
        }

        /// Step 3, the paper's `reclaimfor`, then a blocked page (rotating).
        fn propose(&mut self) -> Option<u64> {
            let (first, second) =
                if self.a1in.len() > self.kin { (&self.a1in, &self.am) } else { (&self.am, &self.a1in) };
            if let Some(&x) = first.front().or_else(|| second.front()) {
                return Some(x);
            }
            let x = self.blocked.pop_front()?;
            self.blocked.push_back(x);
            Some(x)
        }
    }

    proptest! {
        /// The policy, driven by a pool that evicts on every miss, picks the model's victims.
        #[test]
        fn victims_match_a_reference_model(
            capacity in 1usize..=8,
            kin in 0usize..4,
            kout in 0usize..6,
            refs in proptest::collection::vec(0u64..20, 0..300),
        ) {
            let policy = TwoQ::with_sizes(capacity, kin, kout);
            let victims: Vec<u64> = sim::replay(capacity, &refs, &policy).into_iter().filter_map(|(_, v)| v).collect();
            prop_assert_eq!(victims, model_victims(capacity, kin, kout, &refs));
        }

        /// R5's `ignores_hit`: whenever it says a hit changes nothing (a page outside `Am`), the
        /// hit leaves the lists and `A1out` exactly as they were; hits on `Am` pages are not
        /// ignored.
        #[test]
        fn ignored_hits_change_nothing((capacity, ops) in sim::scenario(10)) {
            let policy = TwoQ::with_sizes(capacity, (capacity / 4).max(1), capacity);
            sim::run_checking_ignored_hits(capacity, &ops, &policy, || lists(&policy), |f, ignored| {
                let in_am = policy.state.lock().search.queues.queue_of(f) == Some(AM);
                assert_eq!(ignored, !in_am, "frame {f}");
            });
        }

        /// Invariants: each resident frame is in exactly one of A1in, Am and the blocked list,
        /// and its effect is `Changes` iff it is in Am, else `Nothing` (R5: hits skip the lock on
        /// that byte), and `Unknown` for every free frame;
        /// |A1out| <= Kout; no resident page is in A1out; an unblocked proposal without a search
        /// under way is A1in's tail iff |A1in| > Kin or Am is empty.
        #[test]
        fn invariants_hold_over_random_pool_runs((capacity, ops) in sim::scenario(10)) {
            let policy = TwoQ::new(capacity);
            let (kin, kout) = policy.sizes();
            sim::run(capacity, &ops, &policy, |pool| {
                let state = policy.state.lock();
                for (f, page) in pool.pages.iter().enumerate() {
                    let list = state.search.queues.queue_of(f);
                    let effect = policy.hit_effect(FrameId(f as u32), &pool.hooks[f]);
                    match page {
                        None => {
                            assert_eq!(list, None);
                            assert_eq!(effect, HitEffect::Unknown, "free frame {f}");
                        }
                        Some(page) => {
                            assert_eq!(list == Some(state.search.blocked()), pool.blocked[f], "frame {f}");
                            assert!(list.is_some());
                            let expected = if list == Some(AM) { HitEffect::Changes } else { HitEffect::Nothing };
                            assert_eq!(effect, expected, "frame {f}'s effect");
                            assert!(!state.a1out.contains(pid(*page)), "resident {page} in A1out");
                        }
                    }
                }
                assert!(state.a1out.len() <= kout);
                assert_eq!(state.search.cursor, None, "2Q never moves the search cursor");
                let queues = &state.search.queues;
                if let Some(first) = reclaim_for(queues, kin) {
                    let from_a1in = queues.queue_of(first) == Some(A1IN);
                    let a1in_over = queues.len(A1IN) > kin || queues.len(AM) == 0;
                    assert_eq!(from_a1in, a1in_over);
                }
            });
        }
        /// 2Q with the module docs' rejections (step 5): `InUse` and `SwizzledChildren` requeue
        /// the page at the newest end of its own list; `Root` blocks (a root's eviction leaves
        /// no id); `NotResident` and frees leave no id. `TwoQ` proposes the same pages and keeps
        /// the same `A1in`, `Am`, `A1out` and blocked list on random pool histories.
        #[test]
        fn r3_r4_matches_the_model_with_rejections(
            (capacity, ops) in sim::scenario(10),
            kin in 0usize..4,
            kout in 0usize..6,
        ) {

            let policy = TwoQ::with_sizes(capacity, kin, kout);
            let mut model = RejModel {
                kin,
                kout,
                a1in: VecDeque::new(),
                am: VecDeque::new(),
                a1out: VecDeque::new(),
                blocked: VecDeque::new(),
            };
            sim::replay_with_model(capacity, &ops, &policy, &mut model, |pool, model, t, op| {
                let (a1in, am, a1out) = lists(&policy);
                let page = |f: usize| pool.pages[f].unwrap();
                let blocked: Vec<u64> = {
                    let state = policy.state.lock();
                    state.search.queues.oldest_first(state.search.blocked()).into_iter().map(page).collect()
                };
                let seen = (a1in.into_iter().map(page).collect::<Vec<_>>(), am.into_iter().map(page).collect::<Vec<_>>(), a1out, blocked);
                let expected = (
                    Vec::from(model.a1in.clone()),
                    Vec::from(model.am.clone()),
                    Vec::from(model.a1out.clone()),
                    Vec::from(model.blocked.clone()),
                );
                prop_assert_eq!(seen, expected, "after step {} ({:?})", t, op);
                Ok(())
            })?;
        }
    }

    /// The model as [`sim::replay_with_model`] drives it.
    impl sim::PageModel for RejModel {
        fn hit(&mut self, page: u64) {
            RejModel::hit(self, page);
        }
        fn load(&mut self, page: u64) {
            RejModel::load(self, page);
        }
        fn propose(&mut self) -> Option<u64> {
            RejModel::propose(self)
        }
        fn leave(&mut self, page: u64, evicted: bool) {
            RejModel::leave(self, page, evicted);
        }
        fn refused(&mut self, page: u64, why: Rejection) {
            match why {
                Rejection::InUse | Rejection::SwizzledChildren => self.requeue(page),
                Rejection::Root => self.block(page),
                Rejection::NotResident => unreachable!("a refusal as NotResident is a removal"),
            }
        }
    }
}
