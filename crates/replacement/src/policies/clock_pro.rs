//! CLOCK-Pro (Jiang, Chen & Zhang, USENIX ATC 2005): LIRS's idea, reuse distance rather than
//! recency, approximated on a clock. The rules R1–R11 are the crate README's contract.
//!
//! Resident pages are *hot* (small reuse distance) or *cold*. A cold page is *in its test period*
//! from the time it is loaded or re-referenced until HAND_hot's sweep passes it; if it is
//! referenced during its test period, it becomes hot. An evicted cold page still in its test
//! period stays on the clock as a non-resident *test* page (a ghost); a fault on it makes the
//! page hot and grows the cold target, while a test period that expires without a fault shrinks
//! it. Three hands go round one clock: HAND_cold looks for a victim among the cold pages,
//! HAND_hot turns unreferenced hot pages cold, and HAND_test ends test periods and drops test
//! pages. A hit only sets the reference bit in the frame's [`FrameHook`], without a lock (R5).
//!
//! # State
//!
//! The reference bit of each frame is its hook (R7), and it is the only state a hit touches.
//! Under one `parking_lot` mutex the policy keeps:
//!
//! - One clock of nodes: hot pages, cold pages (each with an in-test flag) and test pages. Test
//!   pages are ghost nodes found by page, as in LIRS ([`Ghosts`], `src/ghost.rs`; [`FrameList`],
//!   `src/list.rs`).
//! - The three hands. The hands move in the same direction; the *list head*, where pages are
//!   placed, is just behind HAND_hot.
//! - The hot and cold counts, the blocked list (roots), and the adaptive cold target m_c.
//!
//! Sizes: m = capacity. m_c lies in `[max(1, 1% of m), m − that]`; it starts at the lower bound,
//! as the authors' simulator does, which fills the hot share first. There are at most m test
//! pages, as in the paper.
//!
//! # Steps
//!
//! 1. `on_insert(frame, page)`: the bit is cleared first. A page that is a test page was faulted
//!    on during its test period: it becomes hot, its test page goes, and m_c grows by 1, up to
//!    the bound. Before the first eviction (warm-up), a new page is hot while fewer than m − m_c
//!    pages are. Otherwise it is cold and in its test period. The page is placed at the list
//!    head.
//! 2. `on_hit`: bit = 1 via `set_if_changed`. This is one load and at most one plain store, with
//!    no lock (R5). `InUse` is the same.
//! 3. HAND_hot, one step: a hot page with its bit set has the bit cleared (compare-exchange, so a
//!    concurrent hit is not lost); a hot page with the bit clear becomes cold, outside any test
//!    period. Before it steps on HAND_test's node, HAND_hot pushes HAND_test one step ahead.
//!    A run of HAND_hot that moved it ends, as the paper's does, *at a hot page*: it goes on
//!    past cold and test pages, pushing HAND_test, at most one revolution. A page it leaves
//!    behind is older than every hot page, so its test period is over; stopping one node past
//!    the last action instead (as the code did before) kept that page in its test period, and
//!    a fault on it made it hot and grew m_c (test `r4_matches_the_paper_model_one_eviction_per_miss`).
//! 4. HAND_test, one step: a resident cold page's test period ends. A test page leaves the clock
//!    and m_c shrinks by 1, down to the bound, since the page was not re-referenced in its test
//!    period. HAND_test moves when HAND_hot pushes it, and whenever there are more than m test
//!    pages.
//! 5. `next_candidate`:
//!    - HAND_hot runs while more than m − m_c pages are hot.
//!    - Then HAND_cold searches. It skips hot and test pages and proposes the first cold page
//!      whose bit is clear, staying on it, so an ignored proposal repeats.
//!    - A cold page with its bit set has the bit cleared and moves to the list head. If it was
//!      in its test period it becomes hot, and HAND_hot runs; otherwise it starts a new test
//!      period.
//!    - If no cold page is resident, HAND_hot is forced to turn one hot page cold.
//!    - HAND_hot is bounded by two revolutions per run, and HAND_cold by 3 × clock length + 3
//!      steps. If the bound is hit, which needs concurrent hits, the first resident page at or
//!      after HAND_cold is proposed. If only roots are resident, a blocked frame (rotating); else
//!      `None`.
//! 6. `on_remove(frame, evicted)`: an evicted cold page in its test period becomes a test page in
//!    its place on the clock, then HAND_test enforces the bound. Any other page leaves no
//!    history, including freed pages (`evicted == false`). If HAND_cold was on the evicted
//!    frame, it then moves on to the next resident cold page (the paper's "stops at the next
//!    resident cold page"; at most one revolution), so a hot page demoted or a page inserted
//!    between there before the next search waits for the next revolution.
//! 7. Rejections: `SwizzledChildren` moves HAND_cold on; if the page is cold, HAND_hot is also
//!    forced to turn one hot page cold at the next proposal, before the search; with no hot
//!    page resident, HAND_hot stays where it is (a forced run that went round anyway ended
//!    every test period and expired every test page on the way). `Root` takes the
//!    frame off the clock onto the blocked list. `NotResident` is a free.
//!
//! # Deviations from the paper
//!
//! - **HAND_hot runs in `next_candidate`.** It reads other frames' bits, which only
//!   `next_candidate` may do (R7). After a fault on a test page (step 1), the hot share is
//!   therefore cut down at the next proposal, not at once.
//! - **HAND_test does not push HAND_cold.** In the authors' code, running HAND_cold evicts. Here
//!   only the pool evicts, so HAND_test simply passes HAND_cold. Rik van Riel noted on linux-mm
//!   that hands overtaking each other is harmless, since they act on different pages.
//! - **Warm-up ends at the first eviction.** The pool evicts in batches and keeps free frames
//!   afterwards, so "free frames remain" would send every later page to the hot share.
//! - **Re-referenced cold pages outside a test period.** HAND_cold clears the bit, moves the page
//!   to the list head and starts a new test period, as for a newly referenced page. This is our
//!   reading of the paper; the authors' later simulator evicts such a page instead.
//! - **Adaptation.** m_c moves by ±1 as in the paper: +1 for a fault on a test page, −1 for a
//!   test page that expires. Only non-resident expiries count, as in the authors' simulator.
//!   That simulator uses a credit scheme and a fixed band, which we do not copy.
//! - **Forced demotion.** After batch evictions or frees every resident page may be hot, which
//!   the paper's cache never sees. HAND_hot then turns the next unreferenced hot page cold.
//! - **A cold page that cannot leave is replaced.** A cold page rejected for `SwizzledChildren`
//!   stays cold, and HAND_hot turns one more hot page cold in its place (step 7). Without this,
//!   the few cold pages (1% of the frames) can all be parents of swizzled children. Then every
//!   proposal walks HAND_cold round the whole clock to come back to one of them, which made the
//!   live benchmark's load phase (swizzling mode) many times slower (`docs/gilbert.md`). The
//!   price is a cold share above target until cold pages are evicted or promoted.
//!
//! # Worked example
//!
//! Test `r4_hand_worked_example`, hand-worked rather than from the paper, with capacity 4
//! (m_c = 1, hot target 3). The clock is written front to back:
//!
//! - Load 0 1 2 3: 0, 1 and 2 are hot (warm-up), 3 is cold; the clock is `[1 2 3 0]` with every
//!   hand on 0. Hit 0 and 3.
//! - The first eviction promotes 3, which was referenced in its test period. HAND_hot then turns
//!   the unreferenced 1 cold, and HAND_cold proposes it.
//! - A page loaded and evicted in its test period becomes a test page. A fault on it makes it hot
//!   and raises m_c to 2.
//! - HAND_hot then turns 2 and 3 cold, and they are evicted.
//! - With no cold page left, HAND_hot is forced to demote 0, then 1. After demoting 0 it goes
//!   on to the next hot page, pushing HAND_test over the last test page, which expires and
//!   brings m_c back to 1.

use parking_lot::Mutex;

use crate::capacity::{check_capacity, frame_id};
use crate::ghost::Ghosts;
use crate::lazy::FrameVec;
use crate::list::{FrameList, MAX_NODES};
use crate::policy::{FrameHook, HookTable, Policy, Rejection};
use swizzledb_sync::{FrameId, PageId};

/// Share of the frames that bounds the cold target from below (and the hot share from below),
/// in percent: 1%, LIRS's resident-HIR share.
const COLD_MIN_PERCENT: usize = 1;

/// What a node is. Nodes `0..capacity` are frames; the rest are ghost slots.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Status {
    /// A free frame or an unused ghost slot.
    Free,
    /// A resident hot page on the clock.
    Hot,
    /// A resident cold page on the clock (in its test period or not: see `in_test`).
    Cold,
    /// A non-resident cold page in its test period, on the clock (ghost slots only).
    Test,
    /// A resident page rejected as a root: off the clock (R3).
    Blocked,
}

struct State {
    capacity: usize,
    status: FrameVec<Status>,
    /// For `Cold` frames: whether the page is in its test period.
    in_test: FrameVec<bool>,
    /// The page in each frame, by frame.
    pages: FrameVec<Option<PageId>>,
    /// The clock, read as a circle: the hands move from the oldest node to the newest and wrap.
    /// The list head (where pages are placed) is just behind HAND_hot.
    clock: FrameList,
    ghosts: Ghosts,
    blocked: FrameList,
    hand_hot: Option<usize>,
    hand_cold: Option<usize>,
    hand_test: Option<usize>,
    hot: usize,
    cold: usize,
    /// The adaptive number of resident cold pages wanted; hot pages get the rest.
    cold_target: usize,
    cold_min: usize,
    cold_max: usize,
    /// True until the first eviction: new pages fill the hot share first.
    warm_up: bool,
    /// Cold pages rejected for `SwizzledChildren` since the last proposal: HAND_hot turns as
    /// many hot pages cold at the next proposal, so the cold pages that cannot leave yet do
    /// not starve the search (module docs, deviations).
    stuck: usize,
}

impl State {
    fn new(capacity: usize) -> State {
        let cold_min = (capacity * COLD_MIN_PERCENT / 100).max(1);
        let cold_max = capacity.saturating_sub(cold_min).max(cold_min);
        // One spare slot: an eviction may exceed the bound by one before HAND_test restores it.
        // Nodes (frames and ghosts) are list indices: a pool near the largest frame count keeps
        // fewer ghosts (README "Shared building blocks", S1).
        let ghost_slots = (capacity + 1).min(MAX_NODES.saturating_sub(capacity));
        let nodes = capacity + ghost_slots;
        State {
            capacity,
            status: FrameVec::with_split(capacity, nodes, Status::Free),
            in_test: FrameVec::new(capacity, false),
            pages: FrameVec::new(capacity, None),
            clock: FrameList::over_nodes(capacity, nodes),
            ghosts: Ghosts::with_base(capacity, ghost_slots),
            blocked: FrameList::new(capacity),
            hand_hot: None,
            hand_cold: None,
            hand_test: None,
            hot: 0,
            cold: 0,
            cold_target: cold_min,
            cold_min,
            cold_max,
            warm_up: true,
            stuck: 0,
        }
    }

    fn hot_target(&self) -> usize {
        self.capacity.saturating_sub(self.cold_target)
    }

    /// Places `node` (off the clock) at the list head, just behind HAND_hot.
    fn place_at_head(&mut self, node: usize) {
        match self.hand_hot {
            Some(hand) => self.clock.insert_older_than(node, hand),
            None => {
                self.clock.push_newest(node);
                self.hand_hot = Some(node);
                self.hand_cold = Some(node);
                self.hand_test = Some(node);
            }
        }
    }

    /// Takes `node` off the clock; a hand on it moves to the next node.
    fn unlink(&mut self, node: usize) {
        if !self.clock.contains(node) {
            return;
        }
        let next = (self.clock.len() > 1).then(|| self.clock.next_cyclic(node));
        for hand in [&mut self.hand_hot, &mut self.hand_cold, &mut self.hand_test] {
            if *hand == Some(node) {
                *hand = next;
            }
        }
        self.clock.unlink(node);
    }

    /// Moves `node` (on the clock) to the list head.
    fn move_to_head(&mut self, node: usize) {
        if self.clock.len() > 1 {
            self.unlink(node);
            self.place_at_head(node);
        }
    }

    /// Puts ghost `ghost` in the place of frame node `frame`; hands on it stay there.
    fn replace(&mut self, frame: usize, ghost: usize) {
        self.clock.replace(frame, ghost);
        for hand in [&mut self.hand_hot, &mut self.hand_cold, &mut self.hand_test] {
            if *hand == Some(frame) {
                *hand = Some(ghost);
            }
        }
    }

    /// A ghost node for `page`; `None` if every slot is in use or the page already has one (a
    /// page resident twice, which the pool never does; then no history is kept).
    fn remember(&mut self, page: PageId) -> Option<usize> {
        if self.ghosts.is_full() || self.ghosts.contains(page) {
            return None;
        }
        self.ghosts.insert(page, ())
    }

    /// Drops test page `ghost` from the clock.
    fn drop_test(&mut self, ghost: usize) {
        self.unlink(ghost);
        self.ghosts.remove_handle(ghost);
        self.status[ghost] = Status::Free;
    }

    /// One step of HAND_test: it ends the test period of the cold page under it; a test page
    /// (non-resident) leaves the clock, and the cold target shrinks by one, since the page
    /// was not referenced during its test period.
    fn step_test(&mut self) {
        let Some(node) = self.hand_test else { return };
        match self.status[node] {
            Status::Test => {
                // Unlinking moves the hand on.
                self.drop_test(node);
                self.cold_target = self.cold_target.saturating_sub(1).max(self.cold_min);
                return;
            }
            Status::Cold => self.in_test[node] = false,
            _ => {}
        }
        self.hand_test = Some(self.clock.next_cyclic(node));
    }

    /// Keeps at most `capacity` test pages, by running HAND_test.
    fn bound_tests(&mut self) {
        let mut steps = self.clock.len() + 1;
        while self.ghosts.len() > self.capacity && steps > 0 {
            self.step_test();
            steps -= 1;
        }
    }

    /// Runs HAND_hot until there are no more hot pages than the target, or, if `force`, until
    /// it has turned one hot page cold. A hot page with its reference bit set has the bit
    /// cleared (compare-exchange, so a concurrent hit is not lost) and stays hot; one with the bit
    /// clear becomes cold, outside any test period. HAND_hot pushes HAND_test ahead of itself.
    /// Bounded by two revolutions; returns whether a page was turned cold. A forced run with no
    /// hot page does not move: there is nothing to turn cold, and two revolutions would end the
    /// test period of every cold page and expire every test page, shrinking m_c by their number
    /// (test `r3_r4_matches_the_model_with_rejections`).
    fn run_hot(&mut self, hooks: &dyn HookTable, force: bool) -> bool {
        if force && self.hot == 0 {
            return false;
        }
        let mut demoted = false;
        let mut moved = false;
        let mut steps = 2 * self.clock.len() + 1;
        loop {
            let done = if force { demoted } else { self.hot <= self.hot_target() };
            if done || steps == 0 {
                if moved {
                    self.settle_hot();
                }
                return demoted;
            }
            steps -= 1;
            moved = true;
            let Some(node) = self.hand_hot else { return demoted };
            if self.push_test(node) {
                continue;
            }
            if self.status[node] == Status::Hot {
                let hook = hooks.hook(frame_id(node));
                match hook.get() {
                    0 => {
                        self.status[node] = Status::Cold;
                        self.in_test[node] = false;
                        self.hot -= 1;
                        self.cold += 1;
                        demoted = true;
                    }
                    bit => {
                        let _ = hook.compare_exchange(bit, 0);
                    }
                }
            }
            self.hand_hot = Some(self.clock.next_cyclic(node));
        }
    }

    /// Before HAND_hot steps on `node`, it pushes HAND_test off it (step 3). Returns whether
    /// the node was a test page and has left the clock (HAND_hot is then on the next node).
    fn push_test(&mut self, node: usize) -> bool {
        if self.hand_test == Some(node) {
            self.step_test();
            return self.hand_hot != Some(node);
        }
        false
    }

    /// The paper's "finally the hand stops at a hot page": after a run that moved it, HAND_hot
    /// goes on past cold and test pages (pushing HAND_test, which ends their test periods) to
    /// the next hot page, at most one revolution. Stopping one node past its last action
    /// instead left the page there in its test period, though it was now older than every hot
    /// page (module docs, step 3).
    fn settle_hot(&mut self) {
        for _ in 0..self.clock.len() {
            let Some(node) = self.hand_hot else { return };
            if self.status[node] == Status::Hot {
                return;
            }
            if self.push_test(node) {
                continue;
            }
            self.hand_hot = Some(self.clock.next_cyclic(node));
        }
    }

    /// The paper's "[HAND_cold] stops at the next resident cold page" after an eviction: at
    /// most one revolution on from where it stands.
    fn settle_cold(&mut self) {
        for _ in 0..self.clock.len() {
            let Some(node) = self.hand_cold else { return };
            if self.status[node] == Status::Cold {
                return;
            }
            self.hand_cold = Some(self.clock.next_cyclic(node));
        }
    }

    /// The frame holds no page any more. An evicted cold page in its test period stays on the
    /// clock as a test page; nothing else keeps history.
    fn remove(&mut self, frame: usize, evicted: bool) {
        match self.status[frame] {
            Status::Hot => {
                self.hot -= 1;
                self.unlink(frame);
            }
            Status::Cold => {
                self.cold -= 1;
                let ghost = if evicted && self.in_test[frame] {
                    self.pages[frame].and_then(|page| self.remember(page))
                } else {
                    None
                };
                match ghost {
                    Some(ghost) => {
                        self.replace(frame, ghost);
                        self.status[ghost] = Status::Test;
                        self.bound_tests();
                    }
                    None => self.unlink(frame),
                }
            }
            Status::Blocked => {
                self.blocked.unlink(frame);
            }
            Status::Free | Status::Test => {}
        }
        self.status[frame] = Status::Free;
        self.in_test[frame] = false;
        self.pages[frame] = None;
    }

    /// HAND_cold's search: the first cold page whose reference bit is clear, where the hand
    /// stays. A cold page with the bit set has it cleared and moves to the list head: if it was
    /// in its test period it becomes hot (then HAND_hot runs), else it starts a new test period.
    /// If no cold page is resident, HAND_hot is forced to turn one hot page cold. `None` if no
    /// cold page qualifies within the step bound.
    fn search_cold(&mut self, hooks: &dyn HookTable) -> Option<usize> {
        let mut steps = 3 * self.clock.len() + 3;
        while steps > 0 {
            steps -= 1;
            if self.cold == 0 && !self.run_hot(hooks, true) {
                return None;
            }
            let node = self.hand_cold?;
            if self.status[node] != Status::Cold {
                self.hand_cold = Some(self.clock.next_cyclic(node));
                continue;
            }
            let hook = hooks.hook(frame_id(node));
            let bit = hook.get();
            if bit == 0 {
                return Some(node);
            }
            let _ = hook.compare_exchange(bit, 0);
            self.hand_cold = Some(self.clock.next_cyclic(node));
            self.move_to_head(node);
            if self.in_test[node] {
                self.status[node] = Status::Hot;
                self.in_test[node] = false;
                self.cold -= 1;
                self.hot += 1;
                self.run_hot(hooks, false);
            } else {
                self.in_test[node] = true;
            }
        }
        None
    }
}

/// CLOCK-Pro replacement (adaptive), with the cold target starting at, and bounded below by, 1%
/// of the frames (at least one) and bounded above by the capacity minus that, and at most
/// `capacity` non-resident test pages.
///
/// A hit is one load of the hook and, only if the reference bit was clear, one plain store (R5).
/// Inserts, removals, rejections and proposals take the policy's (normally uncontended) mutex.
pub struct ClockPro {
    capacity: usize,
    state: Mutex<State>,
}

impl ClockPro {
    /// CLOCK-Pro over frames `0..capacity`, all initially free.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`]. A capacity whose `capacity` + 1 test pages
    /// would take the frames past `u32::MAX` list nodes keeps fewer of them (README S1).
    #[must_use]
    pub fn new(capacity: usize) -> ClockPro {
        check_capacity(capacity);
        ClockPro { capacity, state: Mutex::new(State::new(capacity)) }
    }

    /// The current cold target (the number of resident cold pages CLOCK-Pro aims for).
    #[must_use]
    pub fn cold_target(&self) -> usize {
        self.state.lock().cold_target
    }
}

impl Policy for ClockPro {
    fn name(&self) -> String {
        "clock-pro".to_owned()
    }

    /// A fault on a test page: the page becomes hot at the list head and the cold target grows
    /// by one (HAND_hot runs at the next `next_candidate`, which has the hooks it reads). Any
    /// other page is cold, in its test period, at the list head, except during warm-up (no
    /// eviction yet) while the hot share is not full, when it is hot.
    fn on_insert(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        let index = frame.index();
        if index >= self.capacity {
            return;
        }
        hook.set(0);
        let mut state = self.state.lock();
        state.remove(index, false);
        state.pages[index] = Some(page);
        let hot = if let Some(ghost) = state.ghosts.find(page) {
            state.drop_test(ghost);
            state.cold_target = (state.cold_target + 1).min(state.cold_max);
            true
        } else {
            state.warm_up && state.hot < state.hot_target()
        };
        if hot {
            state.status[index] = Status::Hot;
            state.hot += 1;
        } else {
            state.status[index] = Status::Cold;
            state.in_test[index] = true;
            state.cold += 1;
        }
        state.place_at_head(index);
    }

    fn on_hit(&self, _frame: FrameId, hook: &FrameHook) {
        hook.set_if_changed(1);
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, hook: &FrameHook) {
        let index = frame.index();
        if index >= self.capacity {
            return;
        }
        match why {
            // In use right now: as good as a reference. HAND_cold, still on the frame, acts on
            // it at the next call.
            Rejection::InUse => hook.set_if_changed(1),
            // Unchanged; HAND_cold moves on, and a hot page will be turned cold in its place.
            Rejection::SwizzledChildren => {
                let mut state = self.state.lock();
                if state.hand_cold == Some(index) {
                    state.hand_cold = Some(state.clock.next_cyclic(index));
                }
                if state.status[index] == Status::Cold {
                    state.stuck = (state.stuck + 1).min(state.capacity);
                }
            }
            Rejection::Root => {
                let mut state = self.state.lock();
                match state.status[index] {
                    Status::Hot => state.hot -= 1,
                    Status::Cold => state.cold -= 1,
                    _ => return,
                }
                state.unlink(index);
                state.status[index] = Status::Blocked;
                state.in_test[index] = false;
                state.blocked.push_newest(index);
            }
            Rejection::NotResident => {
                hook.set(0);
                self.state.lock().remove(index, false);
            }
        }
    }

    fn on_remove(&self, frame: FrameId, evicted: bool, hook: &FrameHook) {
        if frame.index() >= self.capacity {
            return;
        }
        hook.set(0);
        let mut state = self.state.lock();
        if evicted {
            state.warm_up = false;
        }
        let under_cold_hand = state.hand_cold == Some(frame.index());
        state.remove(frame.index(), evicted);
        if evicted && under_cold_hand {
            state.settle_cold();
        }
    }

    /// Runs HAND_hot down to the hot target, then HAND_cold's search; its proposal stays under
    /// HAND_cold, so an ignored proposal repeats. If the search finds nothing within its bound
    /// (possible only under concurrent hits), the first resident page at or after HAND_cold is
    /// proposed and the hand put on it. If only blocked frames are resident, one of them; else
    /// `None` (R4).
    fn next_candidate(&self, hooks: &dyn HookTable) -> Option<FrameId> {
        let mut state = self.state.lock();
        if state.hot + state.cold == 0 {
            return state.blocked.rotate_oldest().map(frame_id);
        }
        state.run_hot(hooks, false);
        while state.stuck > 0 {
            state.stuck -= 1;
            if !state.run_hot(hooks, true) {
                state.stuck = 0;
            }
        }
        if let Some(node) = state.search_cold(hooks) {
            return Some(frame_id(node));
        }
        let mut at = state.hand_cold.or(state.clock.oldest())?;
        for _ in 0..state.clock.len() {
            if matches!(state.status[at], Status::Hot | Status::Cold) {
                state.hand_cold = Some(at);
                return Some(frame_id(at));
            }
            at = state.clock.next_cyclic(at);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet, VecDeque};

    use proptest::prelude::*;

    use super::*;
    use crate::testpool::TestHooks;
    use crate::testpool::{self as sim, Pool};

    fn clock(policy: &ClockPro) -> Vec<usize> {
        policy.state.lock().clock.oldest_first()
    }

    fn status(policy: &ClockPro, node: usize) -> Status {
        policy.state.lock().status[node]
    }

    fn page(n: u64) -> PageId {
        PageId::new(n).unwrap()
    }

    /// Hand-worked (not from the paper), capacity 4: cold target 1 in [1, 3], so hot target 3.
    /// The clock is written front to back; the hands move toward the back and wrap; the list
    /// head is just behind HAND_hot. Frame f first holds page f + 1.
    /// 1. Load 0 1 2 3. Warm-up: 0 1 2 are hot, 3 is cold in test. The first load put every
    ///    hand on 0; the others went in behind HAND_hot: clock [1 2 3 0].
    /// 2. Hit 0 and 3.
    /// 3. Evict: HAND_cold passes hot 0 1 2, finds cold 3 referenced in its test period: bit
    ///    cleared, 3 turns hot (4 hot > 3). HAND_hot (pushing HAND_test) clears 0's bit, turns
    ///    unreferenced 1 cold (not in test) and stops on 2. HAND_cold goes on from 0 to 1: cold,
    ///    bit clear, proposed. Evicted without history (not in test): clock [2 3 0].
    /// 4. Load page 5 into frame 1: cold in test, behind HAND_hot (on 2): clock [1 2 3 0].
    /// 5. Evict: HAND_cold (on 2) passes 2 3 0, proposes 1. In its test period, so it stays as
    ///    test page 5 in ghost node 4: clock [4 2 3 0].
    /// 6. Load page 6 into frame 1: clock [4 1 2 3 0]. Evict: HAND_cold skips ghost 4, proposes
    ///    1, which becomes ghost 5 (page 6): clock [4 5 2 3 0].
    /// 7. Load page 5 into frame 1: a fault on a test page. It is hot, the cold target grows to
    ///    2 (hot target 2), and the ghost goes: clock [5 1 2 3 0], with 4 hot pages.
    /// 8. Evict: HAND_hot turns 2 and 3 cold (bits clear) and stops on 0; HAND_cold (on 5)
    ///    passes 1 and proposes 2. Batch evictions ahead of misses: then 3.
    /// 9. Evict: no cold page is left, so HAND_hot is forced to turn 0 cold. It then goes on
    ///    to the next hot page (the paper's "stops at a hot page"), pushing HAND_test over test
    ///    page 6, now older than every hot page: its test period ends without a fault, and
    ///    the cold target shrinks back to 1. HAND_hot stops on 1; 0 is proposed.
    /// 10. Evict: only hot 1 remains; the forced HAND_hot turns it cold; 1 is proposed. Then
    ///     nothing is resident.
    #[test]
    fn r4_hand_worked_example() {
        let policy = ClockPro::new(4);
        let h = TestHooks::new(4);
        let load = |frame: u32, p: u64| policy.on_insert(FrameId(frame), page(p), &h[frame as usize]);
        h.insert(&policy, &[0, 1, 2, 3]);
        assert_eq!(clock(&policy), [1, 2, 3, 0]);
        assert_eq!(
            (0..4).map(|f| status(&policy, f)).collect::<Vec<_>>(),
            [Status::Hot, Status::Hot, Status::Hot, Status::Cold]
        );
        h.hit(&policy, &[0, 3]);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(clock(&policy), [2, 3, 0]);
        assert_eq!(h.bits(), [0, 0, 0, 0]);
        assert_eq!((status(&policy, 3), policy.state.lock().ghosts.len()), (Status::Hot, 0));

        load(1, 5);
        assert_eq!(clock(&policy), [1, 2, 3, 0]);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(clock(&policy), [4, 2, 3, 0]);
        load(1, 6);
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(clock(&policy), [4, 5, 2, 3, 0]);

        load(1, 5);
        assert_eq!(clock(&policy), [5, 1, 2, 3, 0]);
        assert_eq!((status(&policy, 1), policy.cold_target()), (Status::Hot, 2));
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(status(&policy, 3), Status::Cold);
        assert_eq!(h.evict(&policy), 3);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!((policy.cold_target(), clock(&policy)), (1, vec![1]));
        assert_eq!(h.evict(&policy), 1);
        assert_eq!((policy.cold_target(), clock(&policy)), (1, vec![]));
        assert_eq!(policy.next_candidate(&h), None);
    }

    /// HAND_hot stops at a hot page (the paper), ending the test periods it passes. Capacity 2
    /// (hot target 1): at request 16 (page 3) the clock is [3' 2 0] (3' the test page of page
    /// 3, evicted at request 15), with 2 and 0 hot and HAND_hot on 0. HAND_hot turns 0 cold and
    /// goes on past 3', which is now older than the only hot page 2: its test period ends and
    /// it leaves the clock. 0 is evicted and 3 comes back as a new cold page, so request 17
    /// (page 5) evicts 3. When HAND_hot stopped on 3' instead, the fault on 3 made it hot and
    /// request 17 evicted 2.
    #[test]
    fn r4_hand_hot_stops_at_a_hot_page() {
        let trace = [0, 2, 1, 0, 2, 1, 0, 0, 0, 0, 0, 1, 0, 2, 3, 2, 3, 5];
        let served = sim::replay(2, &trace, &ClockPro::new(2));
        assert_eq!(served[15..], [(false, Some(3)), (false, Some(0)), (false, Some(3))]);
    }

    /// Capacity 3 (hot target 2): 0 and 1 load hot, 2 cold in test; the clock is [1 2 0].
    /// - 2 is proposed; InUse counts as a reference, so the next search turns 2 hot, HAND_hot
    ///   turns 0 cold, and 0 is proposed.
    /// - SwizzledChildren on 0 moves HAND_cold on to 1, and makes HAND_hot turn one hot page
    ///   cold in 0's place at the next proposal: 1, which HAND_cold then proposes. Evict it.
    /// - HAND_cold passes hot 2 and comes back to 0, the only cold page. Root blocks it.
    /// - With no cold page left, HAND_hot is forced to turn 2 cold: 2 is proposed.
    ///   NotResident forgets it, and only root 0 is left to propose.
    /// - A new page in frame 1 is cold (warm-up ended with the first eviction) and is proposed
    ///   before the root.
    #[test]
    fn r3_rejections() {
        let policy = ClockPro::new(3);
        let h = TestHooks::new(3);
        h.insert(&policy, &[0, 1, 2]);
        assert_eq!(clock(&policy), [1, 2, 0]);
        let propose = || policy.next_candidate(&h).map(|f| f.0);
        assert_eq!(propose(), Some(2));
        policy.on_rejected(FrameId(2), Rejection::InUse, &h[2]);
        assert_eq!(propose(), Some(0));
        assert_eq!((status(&policy, 2), status(&policy, 0)), (Status::Hot, Status::Cold));
        policy.on_rejected(FrameId(0), Rejection::SwizzledChildren, &h[0]);
        assert_eq!(h.evict(&policy), 1, "a hot page is turned cold in place of the stuck one");
        assert_eq!(propose(), Some(0));
        policy.on_rejected(FrameId(0), Rejection::Root, &h[0]);
        assert_eq!(status(&policy, 0), Status::Blocked);
        assert_eq!(propose(), Some(2));
        policy.on_rejected(FrameId(2), Rejection::NotResident, &h[2]);
        assert_eq!(propose(), Some(0), "only the root is resident");
        h.insert(&policy, &[1]);
        assert_eq!(status(&policy, 1), Status::Cold);
        assert_eq!(propose(), Some(1));
    }

    /// A hit sets the reference bit in the hook and touches nothing else (R5).
    #[test]
    fn r5_hit_is_only_a_hook_store() {
        let policy = ClockPro::new(4);
        let h = TestHooks::new(4);
        h.insert(&policy, &[0, 1, 2]);
        let snapshot = || {
            let state = policy.state.lock();
            (
                state.clock.oldest_first(),
                state.hot,
                state.cold,
                state.hand_hot,
                state.hand_cold,
                state.hand_test,
            )
        };
        let before = snapshot();
        h.hit(&policy, &[2, 2, 0]);
        assert_eq!(h.bits(), [1, 0, 1, 0]);
        assert_eq!(before, snapshot());
    }

    /// The invariants of the module docs, checked against the simulated pool.
    fn check_invariants(policy: &ClockPro, pool: &Pool) {
        let state = policy.state.lock();
        let capacity = pool.pages.len();
        let count = |s: Status| (0..state.status.len()).filter(|&n| state.status[n] == s).count();
        let tests = count(Status::Test);
        assert_eq!((state.hot, state.cold), (count(Status::Hot), count(Status::Cold)));
        assert_eq!(state.hot + state.cold + count(Status::Blocked), pool.resident(), "resident count");
        assert!(tests <= capacity, "{tests} test pages > capacity {capacity}");
        assert_eq!(state.ghosts.len(), tests);
        assert_eq!(state.clock.len(), state.hot + state.cold + tests);
        let cold_min = (capacity / 100).max(1);
        assert_eq!((state.cold_min, state.cold_max), (cold_min, (capacity - cold_min).max(cold_min)));
        assert!((state.cold_min..=state.cold_max).contains(&state.cold_target));
        for node in 0..state.status.len() {
            let on_clock = state.clock.contains(node);
            match state.status[node] {
                Status::Hot | Status::Cold => assert!(on_clock && node < capacity),
                Status::Test => {
                    assert!(on_clock && node >= capacity);
                    let page = state.ghosts.page(node).unwrap().get();
                    assert!(!pool.pages.contains(&Some(page)), "test page {page} is resident");
                }
                Status::Free | Status::Blocked => assert!(!on_clock),
            }
        }
        for f in 0..capacity {
            assert_eq!(state.status[f] != Status::Free, pool.pages[f].is_some(), "frame {f} residency");
            assert_eq!(state.status[f] == Status::Blocked, pool.blocked[f], "frame {f} blocked");
            assert!(!state.in_test[f] || state.status[f] == Status::Cold, "only cold pages are in test");
        }
        for hand in [state.hand_hot, state.hand_cold, state.hand_test] {
            match hand {
                Some(node) => assert!(state.clock.contains(node), "hand on {node}, off the clock"),
                None => assert_eq!(state.clock.len(), 0, "a hand is missing"),
            }
        }
    }

    /// What the reference model knows of a page on the clock.
    #[derive(Copy, Clone, PartialEq, Eq, Debug)]
    enum Kind {
        Hot,
        /// A resident cold page, in its test period or not.
        Cold {
            test: bool,
        },
        /// A non-resident cold page in its test period.
        Test,
    }

    /// CLOCK-Pro (Jiang, Chen & Zhang 2005, §4.2-4.3) written naively over a `Vec` of page ids
    /// (the clock, read as a circle; hands move toward the end and wrap; the list head is just
    /// behind HAND_hot) and a `HashMap` of kinds, serving one eviction per miss. It makes the
    /// departures of the module docs and no others:
    /// - m_c starts at its lower bound max(1, 1% of m) and stays in [that, m − that]; +1 for a
    ///   fault on a test page, −1 for a test page whose test period ends (resident expiries do
    ///   not count).
    /// - Warm-up (before the first eviction) fills the hot share first.
    /// - HAND_hot runs before HAND_cold's search, not at the fault on a test page.
    ///
    /// The hands are the paper's: HAND_hot spares or demotes hot pages, ends the test period of
    /// every cold page it passes and drops test pages (HAND_test's work, on its behalf), and
    /// stops at a hot page; HAND_cold stops at the next resident cold page after its victim;
    /// HAND_test, run only past m test pages, steps node by node (where it stops between cold
    /// pages acts on nothing).
    /// - A referenced cold page outside its test period starts a new one at the list head.
    /// - With no resident cold page, HAND_hot is forced to demote one.
    struct Model {
        m: usize,
        mc: usize,
        mc_min: usize,
        mc_max: usize,
        clock: Vec<u64>,
        kind: HashMap<u64, Kind>,
        referenced: HashSet<u64>,
        hot_hand: Option<u64>,
        cold_hand: Option<u64>,
        test_hand: Option<u64>,
        warm_up: bool,
        /// Pages rejected as roots, oldest first (rotated as they are proposed).
        blocked: VecDeque<u64>,
        /// Cold pages rejected for `SwizzledChildren` since the last proposal.
        stuck: usize,
    }

    impl Model {
        fn new(m: usize) -> Model {
            let mc_min = (m / 100).max(1);
            Model {
                m,
                mc: mc_min,
                mc_min,
                mc_max: m.saturating_sub(mc_min).max(mc_min),
                clock: Vec::new(),
                kind: HashMap::new(),
                referenced: HashSet::new(),
                hot_hand: None,
                cold_hand: None,
                test_hand: None,
                warm_up: true,
                blocked: VecDeque::new(),
                stuck: 0,
            }
        }

        fn count(&self, f: impl Fn(Kind) -> bool) -> usize {
            self.kind.values().filter(|&&k| f(k)).count()
        }

        fn hot(&self) -> usize {
            self.count(|k| k == Kind::Hot)
        }

        fn cold(&self) -> usize {
            self.count(|k| matches!(k, Kind::Cold { .. }))
        }

        fn pos(&self, p: u64) -> usize {
            self.clock.iter().position(|&q| q == p).unwrap()
        }

        fn next(&self, p: u64) -> u64 {
            self.clock[(self.pos(p) + 1) % self.clock.len()]
        }

        /// Takes `p` off the clock; a hand on it moves to the next page.
        fn take(&mut self, p: u64) {
            let next = (self.clock.len() > 1).then(|| self.next(p));
            for hand in [&mut self.hot_hand, &mut self.cold_hand, &mut self.test_hand] {
                if *hand == Some(p) {
                    *hand = next;
                }
            }
            let at = self.pos(p);
            self.clock.remove(at);
        }

        /// Puts `p` at the list head, just behind HAND_hot.
        fn place(&mut self, p: u64) {
            match self.hot_hand {
                Some(hand) => {
                    let at = self.pos(hand);
                    self.clock.insert(at, p);
                }
                None => {
                    self.clock.push(p);
                    (self.hot_hand, self.cold_hand, self.test_hand) = (Some(p), Some(p), Some(p));
                }
            }
        }

        /// HAND_test, one step: ends the test period of the cold page under it; a test page
        /// leaves the clock and m_c shrinks.
        fn step_test(&mut self) {
            let n = self.test_hand.unwrap();
            match self.kind[&n] {
                Kind::Test => {
                    self.take(n);
                    self.kind.remove(&n);
                    self.mc = (self.mc - 1).max(self.mc_min);
                    return;
                }
                Kind::Cold { .. } => {
                    self.kind.insert(n, Kind::Cold { test: false });
                }
                Kind::Hot => {}
            }
            self.test_hand = Some(self.next(n));
        }

        /// HAND_hot passes the cold or test page `n` (the paper: it does HAND_test's work,
        /// pushing HAND_test if it stands there): the test period ends, and a test page leaves
        /// the clock, shrinking m_c. Returns whether `n` left the clock.
        fn pass_cold(&mut self, n: u64) -> bool {
            if self.test_hand == Some(n) {
                self.test_hand = Some(self.next(n));
            }
            match self.kind[&n] {
                Kind::Cold { .. } => {
                    self.kind.insert(n, Kind::Cold { test: false });
                    false
                }
                Kind::Test => {
                    self.take(n);
                    self.kind.remove(&n);
                    self.mc = (self.mc - 1).max(self.mc_min);
                    true
                }
                Kind::Hot => false,
            }
        }

        /// HAND_hot until hot pages fit m − m_c, or (forced) until it demoted one; a hot page
        /// with its bit set is spared (bit cleared), one without turns cold. A run that moved
        /// the hand ends at a hot page (the paper's "finally the hand stops at a hot page").
        fn run_hot(&mut self, force: bool) -> bool {
            if force && self.hot() == 0 {
                // Nothing to turn cold: the hand stays.
                return false;
            }
            let mut demoted = false;
            let mut moved = false;
            for _ in 0..=2 * self.clock.len() {
                if (force && demoted) || (!force && self.hot() <= self.m - self.mc) {
                    if moved {
                        for _ in 0..self.clock.len() {
                            let n = self.hot_hand.unwrap();
                            if self.kind[&n] == Kind::Hot {
                                break;
                            }
                            if !self.pass_cold(n) {
                                self.hot_hand = Some(self.next(n));
                            }
                        }
                    }
                    return demoted;
                }
                moved = true;
                let n = self.hot_hand.unwrap();
                if self.kind[&n] == Kind::Hot {
                    if self.test_hand == Some(n) {
                        self.test_hand = Some(self.next(n));
                    }
                    if !self.referenced.remove(&n) {
                        self.kind.insert(n, Kind::Cold { test: false });
                        demoted = true;
                    }
                } else if self.pass_cold(n) {
                    continue;
                }
                self.hot_hand = Some(self.next(n));
            }
            panic!("HAND_hot went round twice without a single-threaded result");
        }

        /// HAND_cold's victim.
        fn victim(&mut self) -> u64 {
            let _ = self.run_hot(false);
            self.search()
        }

        /// HAND_cold's search for a resident cold page whose bit is clear (it stays on it).
        fn search(&mut self) -> u64 {
            for _ in 0..=3 * self.clock.len() + 3 {
                if self.cold() == 0 {
                    assert!(self.run_hot(true), "a forced HAND_hot demotes a page when one is hot");
                }
                let n = self.cold_hand.unwrap();
                let Kind::Cold { test } = self.kind[&n] else {
                    self.cold_hand = Some(self.next(n));
                    continue;
                };
                if !self.referenced.remove(&n) {
                    return n;
                }
                self.cold_hand = Some(self.next(n));
                if self.clock.len() > 1 {
                    self.take(n);
                    self.place(n);
                }
                if test {
                    self.kind.insert(n, Kind::Hot);
                    let _ = self.run_hot(false);
                } else {
                    self.kind.insert(n, Kind::Cold { test: true });
                }
            }
            panic!("HAND_cold found no victim");
        }

        /// Step 5 with the module docs' rejections: HAND_hot down to the hot target, then once
        /// forced per cold page rejected for `SwizzledChildren` since the last proposal, then
        /// HAND_cold's search; only roots resident: a blocked page, oldest first, rotating.
        fn propose(&mut self) -> Option<u64> {
            if self.hot() + self.cold() == 0 {
                let x = self.blocked.pop_front()?;
                self.blocked.push_back(x);
                return Some(x);
            }
            let _ = self.run_hot(false);
            while self.stuck > 0 {
                self.stuck -= 1;
                if !self.run_hot(true) {
                    self.stuck = 0;
                }
            }
            Some(self.search())
        }

        /// Page `x` leaves its frame (step 6): an evicted cold page in its test period stays in
        /// its place as a test page (HAND_test then keeps at most m); nothing else keeps
        /// history. After an eviction under it, HAND_cold stops at the next resident cold page.
        fn leave(&mut self, x: u64, evicted: bool) {
            self.referenced.remove(&x);
            if evicted {
                self.warm_up = false;
            }
            let under_cold_hand = self.cold_hand == Some(x);
            self.blocked.retain(|&y| y != x);
            match self.kind.get(&x).copied() {
                Some(Kind::Cold { test: true }) if evicted => {
                    self.kind.insert(x, Kind::Test);
                    while self.count(|k| k == Kind::Test) > self.m {
                        self.step_test();
                    }
                }
                Some(Kind::Hot | Kind::Cold { .. }) => {
                    self.take(x);
                    self.kind.remove(&x);
                }
                Some(Kind::Test) | None => {}
            }
            if evicted && under_cold_hand {
                for _ in 0..self.clock.len() {
                    let n = self.cold_hand.unwrap();
                    if matches!(self.kind[&n], Kind::Cold { .. }) {
                        break;
                    }
                    self.cold_hand = Some(self.next(n));
                }
            }
        }

        /// Page `x` is loaded into a free frame (step 1).
        fn load(&mut self, x: u64) {
            let hot = if self.kind.get(&x) == Some(&Kind::Test) {
                self.take(x);
                self.mc = (self.mc + 1).min(self.mc_max);
                true
            } else {
                self.warm_up && self.hot() < self.m - self.mc
            };
            self.kind.insert(x, if hot { Kind::Hot } else { Kind::Cold { test: true } });
            self.place(x);
        }

        /// Step 7: `SwizzledChildren` moves HAND_cold on and, for a cold page, asks HAND_hot to
        /// turn one more hot page cold at the next proposal.
        fn skip(&mut self, x: u64) {
            if self.cold_hand == Some(x) {
                self.cold_hand = Some(self.next(x));
            }
            if matches!(self.kind.get(&x), Some(Kind::Cold { .. })) {
                self.stuck = (self.stuck + 1).min(self.m);
            }
        }

        /// Step 7: `Root` takes a page off the clock (hands on it move on) onto the blocked list.
        fn block(&mut self, x: u64) {
            if matches!(self.kind.get(&x), Some(Kind::Hot | Kind::Cold { .. })) {
                self.take(x);
                self.kind.remove(&x);
                self.blocked.push_back(x);
            }
        }

        fn request(&mut self, x: u64) -> (bool, Option<u64>) {
            if matches!(self.kind.get(&x), Some(Kind::Hot | Kind::Cold { .. })) {
                self.referenced.insert(x);
                return (true, None);
            }
            let mut evicted = None;
            if self.hot() + self.cold() == self.m {
                let v = self.victim();
                self.warm_up = false;
                if self.kind[&v] == (Kind::Cold { test: true }) {
                    self.kind.insert(v, Kind::Test);
                    while self.count(|k| k == Kind::Test) > self.m {
                        self.step_test();
                    }
                } else {
                    self.take(v);
                    self.kind.remove(&v);
                }
                evicted = Some(v);
                // The paper: HAND_cold stops at the next resident cold page.
                for _ in 0..self.clock.len() {
                    let n = self.cold_hand.unwrap();
                    if matches!(self.kind[&n], Kind::Cold { .. }) {
                        break;
                    }
                    self.cold_hand = Some(self.next(n));
                }
            }
            let hot = if self.kind.get(&x) == Some(&Kind::Test) {
                self.take(x);
                self.mc = (self.mc + 1).min(self.mc_max);
                true
            } else {
                self.warm_up && self.hot() < self.m - self.mc
            };
            self.kind.insert(x, if hot { Kind::Hot } else { Kind::Cold { test: true } });
            self.place(x);
            (false, evicted)
        }
    }

    /// The clock (pages and kinds, from the policy's oldest node), the hands' pages (hot,
    /// cold, test) and m_c.
    type Seen = (Vec<(u64, Kind)>, [Option<u64>; 3], usize);

    fn seen(policy: &ClockPro, pool: &Pool) -> Seen {
        let state = policy.state.lock();
        let page = |node: usize| match state.status[node] {
            Status::Test => state.ghosts.page(node).unwrap().get(),
            _ => pool.pages[node].unwrap(),
        };
        let entry = |node: usize| {
            let kind = match state.status[node] {
                Status::Hot => Kind::Hot,
                Status::Cold => Kind::Cold { test: state.in_test[node] },
                Status::Test => Kind::Test,
                other => panic!("{other:?} node {node} on the clock"),
            };
            (page(node), kind)
        };
        let clock = state.clock.oldest_first().into_iter().map(entry).collect();
        let hands = [state.hand_hot, state.hand_cold, state.hand_test].map(|h| h.map(page));
        (clock, hands, state.cold_target)
    }

    /// A capacity in `1..=max` and a trace over 2 to 5 times as many pages, skewed so that
    /// some pages are hot and test pages are faulted on.
    fn skewed_trace(max: usize) -> impl Strategy<Value = (usize, Vec<u64>)> {
        (1..=max, 2..=5u64).prop_flat_map(|(c, k)| {
            let pages = k * c as u64;
            let page = prop_oneof![2 => 0..pages, 1 => 0..(c as u64 / 2 + 1)];
            (Just(c), proptest::collection::vec(page, 0..300))
        })
    }

    proptest! {
        /// hot + cold (+ blocked) = resident, test pages <= capacity, the cold target within
        /// [min, max], statuses match the clock, hands on the clock; and proposals obey R3 and
        /// R4 (checked by the simulated pool).
        #[test]
        fn r4_invariants_hold_over_random_histories((capacity, ops) in sim::scenario(12)) {
            let policy = ClockPro::new(capacity);
            sim::run(capacity, &ops, &policy, |pool| check_invariants(&policy, pool));
        }

        /// Serving a trace one eviction per miss, `ClockPro` hits, evicts, and keeps its clock,
        /// hands and cold target exactly as the reference model does, after every request.
        #[test]
        fn r4_matches_the_paper_model_one_eviction_per_miss((capacity, trace) in skewed_trace(10)) {
            let policy = ClockPro::new(capacity);
            let mut pool = Pool::new(capacity);
            let mut model = Model::new(capacity);
            for (t, &x) in trace.iter().enumerate() {
                let hit = pool.frame_of(x).is_some();
                let served = (hit, pool.fix(&policy, x));
                prop_assert_eq!(served, model.request(x), "request {} (page {})", t, x);
                let clock = model.clock.iter().map(|&p| (p, model.kind[&p])).collect();
                let hands = [model.hot_hand, model.cold_hand, model.test_hand];
                prop_assert_eq!(seen(&policy, &pool), (clock, hands, model.mc), "after request {} (page {})", t, x);
            }
        }
        /// CLOCK-Pro's model with the module docs' rejections, removals and blocked frames
        /// (steps 5-7): `InUse` is a reference (HAND_cold, still on the page, acts on it at the
        /// next proposal); `SwizzledChildren` moves HAND_cold on and, for a cold page, forces
        /// HAND_hot to turn one more hot page cold at the next proposal (none if no page is
        /// hot); `Root` takes the page off the clock onto the blocked list; `NotResident` and
        /// frees keep no history; only evictions end warm-up and settle HAND_cold. `ClockPro`
        /// proposes the same pages and keeps the same clock, hands, m_c, reference bits and
        /// blocked list on random pool histories.
        #[test]
        fn r3_r4_matches_the_model_with_rejections((capacity, ops) in sim::scenario(10)) {
            let policy = ClockPro::new(capacity);
            let mut model = Model::new(capacity);
            sim::replay_with_model(capacity, &ops, &policy, &mut model, |pool, model, t, op| {
                let clock: Vec<(u64, Kind)> = model.clock.iter().map(|&p| (p, model.kind[&p])).collect();
                let hands = [model.hot_hand, model.cold_hand, model.test_hand];
                prop_assert_eq!(seen(&policy, pool), (clock.clone(), hands, model.mc), "after step {} ({:?})", t, op);
                let state = policy.state.lock();
                let blocked: Vec<u64> = state.blocked.oldest_first().into_iter().map(|f| pool.pages[f].unwrap()).collect();
                let stuck = state.stuck;
                drop(state);
                prop_assert_eq!(blocked, Vec::from(model.blocked.clone()), "blocked after step {} ({:?})", t, op);
                prop_assert_eq!(stuck, model.stuck, "stuck after step {} ({:?})", t, op);
                let bits: Vec<bool> = clock
                    .iter()
                    .filter(|(_, k)| *k != Kind::Test)
                    .map(|&(p, _)| pool.hooks[pool.frame_of(p).unwrap()].get() != 0)
                    .collect();
                let want: Vec<bool> =
                    clock.iter().filter(|(_, k)| *k != Kind::Test).map(|(p, _)| model.referenced.contains(p)).collect();
                prop_assert_eq!(bits, want, "reference bits after step {} ({:?})", t, op);
                Ok(())
            })?;
        }
    }

    /// The model as [`sim::replay_with_model`] drives it.
    impl sim::PageModel for Model {
        fn hit(&mut self, page: u64) {
            self.referenced.insert(page);
        }
        fn load(&mut self, page: u64) {
            Model::load(self, page);
        }
        fn propose(&mut self) -> Option<u64> {
            Model::propose(self)
        }
        fn leave(&mut self, page: u64, evicted: bool) {
            Model::leave(self, page, evicted);
        }
        fn refused(&mut self, page: u64, why: Rejection) {
            match why {
                Rejection::InUse => {
                    self.referenced.insert(page);
                }
                Rejection::SwizzledChildren => self.skip(page),
                Rejection::Root => self.block(page),
                Rejection::NotResident => unreachable!("a refusal as NotResident is a removal"),
            }
        }
    }
}
