//! LIRS, Low Inter-reference Recency Set (Jiang & Zhang, SIGMETRICS 2002). The rules R1–R11 are
//! the crate README's contract.
//!
//! The *recency* of a page is the number of distinct other pages referenced since its last
//! reference; its *inter-reference recency* (IRR) is that number between its last two
//! references. Pages with a low IRR are *LIR* and hold almost every frame; the others are *HIR*.
//! Only a few HIR pages are resident, in the queue Q, so a page referenced once in a scan or a
//! long loop cannot push the LIR set out.
//!
//! # State
//!
//! All under one `parking_lot` mutex (the hooks are neither read nor written):
//!
//! - The stack S, from bottom to top: LIR pages and recently referenced HIR pages (resident or
//!   not) in recency order. Its bottom is always an LIR page, the one with the largest recency
//!   R_max, so a HIR page found in S has an IRR below R_max and is promoted on its next
//!   reference.
//! - The queue Q of resident HIR pages, in order of entry.
//! - A non-resident HIR entry in S (a *ghost*) is an entry of a ghost directory ([`Ghosts`],
//!   `src/ghost.rs`), whose handle is a node of S: frames and ghosts are nodes of the same
//!   lists ([`FrameList`], `src/list.rs`), and an evicted page's frame node is
//!   replaced in place by its ghost's node. The directory's order is the order of eviction, so it
//!   also says which ghost goes first.
//! - The blocked list (roots), and a cursor for `SwizzledChildren`.
//!
//! Sizes: L_hirs = 1% of the frames (at least 1, the paper's setting), L_lirs = capacity −
//! L_hirs, and at most 2 × capacity ghosts.
//!
//! # Steps
//!
//! 1. `on_insert(frame, page)`: if the page has a ghost in S, its IRR is below R_max. It becomes
//!    LIR at the top of S (the ghost goes). If that makes more than L_lirs LIR pages, the bottom
//!    LIR page becomes a resident HIR page at the back of Q and S is pruned (step 3). Otherwise
//!    the page is LIR if fewer than L_lirs pages are (warm-up, or after LIR pages left), else a
//!    resident HIR page at the top of S and the back of Q.
//! 2. `on_hit`, **under the lock**: an LIR page moves to the top of S, and S is pruned if it was
//!    the bottom. A resident HIR page in S is promoted as in step 1 and leaves Q. A resident HIR
//!    page not in S goes to the top of S and to the back of Q.
//! 3. Stack pruning: while S's bottom is not LIR, it leaves S. A ghost is forgotten; a resident
//!    HIR page stays in Q.
//! 4. `on_remove(frame, evicted)`: an evicted resident HIR page that is in S stays there as a
//!    ghost. If 2 × capacity ghosts already exist, the one evicted longest ago is dropped first.
//!    Any other removal keeps no history: freed pages (`evicted == false`), HIR pages not in S,
//!    LIR pages, and roots.
//! 5. Rejections: `InUse` is a hit. `SwizzledChildren` leaves the frame in place and moves the
//!    cursor to the next candidate in the order Q front to back, then S's LIR pages bottom to
//!    top, then back to the start. `Root` takes the frame out of S and Q (an LIR root lowers the
//!    LIR count; S is pruned) onto the blocked list. `NotResident` is a free.
//! 6. `next_candidate` proposes the cursor's frame if a search is under way, else Q's front,
//!    else S's bottom LIR page, else a blocked frame (rotating), else `None`. An eviction resets
//!    the cursor.
//!
//! # Deviations from the paper
//!
//! - **Hits lock.** Every hit reorders S under the mutex, as [`crate::Lru`] does, against R5 (a
//!   documented breach). BP-Wrapper's batching is the planned fix.
//! - **The miss is split in two.** The paper evicts Q's front and loads the missing page in one
//!   step. Here the victim is chosen before the missing page is known: `on_remove` makes the
//!   ghost, and `on_insert` does the promotion.
//! - **Q can run empty.** The pool evicts in batches ahead of misses, so Q may empty out, which
//!   the paper's cache never allows once full. Then the bottom LIR page of S is proposed: among
//!   LIR pages, the one with the largest recency. It leaves no ghost, since it would sit at S's
//!   bottom and be pruned at once. New pages then become LIR until there are L_lirs of them
//!   again.
//! - **Bounded ghosts.** The paper does not bound S, whose ghosts depend on the workload. We keep
//!   at most 2 × capacity ghosts (S holds at most 3 × capacity entries), and no more than the
//!   list indices left above the frames (`u32::MAX − capacity`; README S1).
//!   The ghost evicted longest ago goes first. It is not always the deepest in S, but ghosts
//!   never move in S and leave Q's FIFO front in roughly S order, so it is usually close to it.
//! - **Roots leave S and Q.** A root is never a candidate while other frames are resident (R3),
//!   so it must not occupy S's bottom or Q's front.
//!
//! # Worked example
//!
//! Test `r4_paper_example_abcde`: the paper's §3 example with blocks A to E, L_lirs = 2 and
//! L_hirs = 1 (3 frames). The paper is not on this machine: we reconstructed its reference
//! string from memory and the definitions as A B D C B A D A E, at times 1 to 9. It yields the
//! recencies we recall from the paper's table (A 1, B 3, C 4, D 2, E 0), its LIR set {A, B}, and
//! E as the resident HIR block. Test `paper_example_recency_and_irr_by_definition` recomputes the
//! recencies and IRRs from the definitions (B's IRR comes out as 2). S is written bottom first,
//! with LIR in upper case, resident HIR in lower case and ghosts quoted.
//!
//! - After time 9 the evictions were D, C, D, and S = `[B d' A e]`, Q = `[e]`.
//! - A reference to D at time 10 (new IRR 2 < R_max 3) evicts E and makes D LIR. B, at the
//!   bottom, becomes a resident HIR block: S = `[A e' D]`, Q = `[b]`. This is the paper's
//!   outcome.
//! - A reference to C instead (IRR 4 > 3) evicts E and leaves C HIR: S = `[B d' A e' c]`.
//!
//! `r4_loop_keeps_lir_blocks` shows the classic case: a loop over 4 pages on 3 frames, where LRU
//! misses every reference, keeps A and B resident.

use parking_lot::Mutex;

use crate::capacity::{check_capacity, frame_id};
use crate::ghost::Ghosts;
use crate::lazy::FrameVec;
use crate::list::{FrameList, MAX_NODES};
use crate::policy::{FrameHook, HookTable, Policy, Rejection};
use swizzledb_sync::{FrameId, PageId};

/// Share of the frames reserved for resident HIR pages, in percent (the paper's 1%).
const HIR_PERCENT: usize = 1;
/// Non-resident HIR entries are bounded by this many times the capacity.
const GHOST_FACTOR: usize = 2;

/// What a node is. Nodes `0..capacity` are frames; the rest are ghost slots.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Status {
    /// A free frame or an unused ghost slot.
    Free,
    /// A resident LIR page: in S, not in Q.
    Lir,
    /// A resident HIR page: in Q, and in S if it was referenced recently enough.
    Hir,
    /// A non-resident HIR page remembered in S (ghost slots only).
    Ghost,
    /// A resident page rejected as a root: in neither S nor Q (R3).
    Blocked,
}

/// Where a search that skipped frames with swizzled children stands: the next proposal is this
/// node of Q, or this LIR node of S.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Cursor {
    Queue(usize),
    Stack(usize),
}

struct State {
    /// Most LIR pages allowed: capacity minus the resident-HIR share.
    lir_target: usize,
    /// Most ghosts kept in S.
    ghost_limit: usize,
    status: FrameVec<Status>,
    /// The page in each frame, by frame.
    pages: FrameVec<Option<PageId>>,
    /// S, from the bottom (oldest, largest recency) to the top (newest, just referenced).
    stack: FrameList,
    /// Q, resident HIR pages from the next victim (oldest) to the newest; frames only.
    queue: FrameList,
    /// The ghosts, as nodes `capacity..`, from the oldest eviction to the newest: the order in
    /// which they are dropped when there are more than `ghost_limit`.
    ghosts: Ghosts,
    blocked: FrameList,
    /// Number of `Lir` nodes.
    lir: usize,
    /// The next proposal after `SwizzledChildren` rejections; `None` starts at Q's front.
    cursor: Option<Cursor>,
}

impl State {
    fn new(capacity: usize) -> State {
        let hir_target = (capacity * HIR_PERCENT / 100).max(1).min(capacity);
        // Nodes (frames and ghosts) are list indices: a pool near the largest frame count keeps
        // fewer ghosts (README "Shared building blocks", S1).
        let ghost_limit = capacity.saturating_mul(GHOST_FACTOR).min(MAX_NODES.saturating_sub(capacity));
        let nodes = capacity + ghost_limit;
        State {
            lir_target: capacity - hir_target,
            ghost_limit,
            status: FrameVec::with_split(capacity, nodes, Status::Free),
            pages: FrameVec::new(capacity, None),
            stack: FrameList::over_nodes(capacity, nodes),
            queue: FrameList::new(capacity),
            ghosts: Ghosts::with_base(capacity, ghost_limit),
            blocked: FrameList::new(capacity),
            lir: 0,
            cursor: None,
        }
    }

    /// Stack pruning: removes HIR entries from the bottom of S until an LIR page is there.
    /// Resident ones stay in Q; ghosts are forgotten.
    fn prune(&mut self) {
        while let Some(bottom) = self.stack.oldest() {
            match self.status[bottom] {
                Status::Lir => break,
                Status::Ghost => self.drop_ghost(bottom),
                _ => {
                    self.stack.unlink(bottom);
                }
            }
        }
    }

    fn drop_ghost(&mut self, node: usize) {
        self.stack.unlink(node);
        self.ghosts.remove_handle(node);
        self.status[node] = Status::Free;
    }

    /// The LIR page at the bottom of S becomes a resident HIR page at the back of Q; then S is
    /// pruned.
    fn demote_bottom(&mut self) {
        if let Some(bottom) = self.stack.oldest() {
            debug_assert_eq!(self.status[bottom], Status::Lir, "S's bottom is LIR");
            self.step_off(bottom);
            self.stack.unlink(bottom);
            self.status[bottom] = Status::Hir;
            self.queue.push_newest(bottom);
            self.lir -= 1;
            self.prune();
        }
    }

    /// `frame` becomes an LIR page at the top of S; if that makes one LIR page too many, the
    /// bottom one is demoted.
    fn promote(&mut self, frame: usize) {
        self.queue.unlink(frame);
        self.stack.relink_newest(frame);
        self.status[frame] = Status::Lir;
        self.lir += 1;
        if self.lir > self.lir_target {
            self.demote_bottom();
        }
    }

    /// A reference to the resident page in `frame` (the paper's cases 1 and 2).
    fn hit(&mut self, frame: usize) {
        match self.status[frame] {
            Status::Lir => {
                self.step_off(frame);
                self.stack.relink_newest(frame);
                self.prune();
            }
            Status::Hir => {
                self.step_off(frame);
                if self.stack.contains(frame) {
                    // Its new IRR is below the recency of S's bottom LIR page.
                    self.promote(frame);
                } else {
                    self.stack.push_newest(frame);
                    self.queue.relink_newest(frame);
                    // With no LIR page in S (capacity 1) the new top is also the bottom.
                    self.prune();
                }
            }
            Status::Free | Status::Ghost | Status::Blocked => {}
        }
    }

    /// The frame holds no page any more. An evicted HIR page that is in S stays there as a ghost
    /// (the paper's non-resident HIR block); nothing else keeps history.
    fn remove(&mut self, frame: usize, evicted: bool) {
        self.step_off(frame);
        match self.status[frame] {
            Status::Lir => {
                self.stack.unlink(frame);
                self.lir -= 1;
                self.prune();
            }
            Status::Hir => {
                self.queue.unlink(frame);
                if self.stack.contains(frame) {
                    match evicted.then(|| self.remember(frame)).flatten() {
                        Some(ghost) => self.stack.replace(frame, ghost),
                        None => {
                            self.stack.unlink(frame);
                        }
                    }
                }
            }
            Status::Blocked => {
                self.blocked.unlink(frame);
            }
            Status::Free | Status::Ghost => {}
        }
        self.status[frame] = Status::Free;
        self.pages[frame] = None;
    }

    /// A ghost slot for the page in `frame`, dropping the ghost evicted longest ago if all are
    /// in use. `None` if there are no slots at all (capacity 0) or the page already has one.
    fn remember(&mut self, frame: usize) -> Option<usize> {
        let page = self.pages[frame]?;
        if self.ghosts.is_full() {
            let oldest = self.ghosts.oldest()?;
            self.drop_ghost(oldest);
        }
        if self.ghosts.contains(page) {
            return None;
        }
        let ghost = self.ghosts.insert(page, ())?;
        self.status[ghost] = Status::Ghost;
        debug_assert!(self.ghosts.len() <= self.ghost_limit);
        Some(ghost)
    }

    /// The cursor's position after `at`: Q front to back, then S's LIR pages bottom to top,
    /// then `None` (back to the start).
    fn after(&self, at: Cursor) -> Option<Cursor> {
        match at {
            Cursor::Queue(node) => match self.queue.newer(node) {
                Some(next) => Some(Cursor::Queue(next)),
                None => self.stack.oldest().map(Cursor::Stack),
            },
            Cursor::Stack(node) => {
                let mut next = self.stack.newer(node);
                while let Some(n) = next.filter(|&n| self.status[n] != Status::Lir) {
                    next = self.stack.newer(n);
                }
                next.map(Cursor::Stack)
            }
        }
    }

    /// Before `frame` leaves its place in Q or S, moves the cursor off it.
    fn step_off(&mut self, frame: usize) {
        if let Some(at @ (Cursor::Queue(node) | Cursor::Stack(node))) = self.cursor {
            if node == frame {
                self.cursor = self.after(at);
            }
        }
    }

    /// The cursor's node if it still stands where it was put, else `None`.
    fn cursor_node(&self) -> Option<usize> {
        match self.cursor? {
            Cursor::Queue(node) => {
                (self.status[node] == Status::Hir && self.queue.contains(node)).then_some(node)
            }
            Cursor::Stack(node) => (self.status[node] == Status::Lir).then_some(node),
        }
    }
}

/// LIRS replacement, with the resident-HIR share at 1% of the frames (at least one) and at most
/// `2 × capacity` non-resident HIR entries.
///
/// Every hook takes the policy's mutex, hits included: a hit reorders the stack S, as in
/// [`crate::Lru`] (not R5; the BP-Wrapper issue will batch hits). The frames' [`FrameHook`]s are
/// neither read nor written (R7).
pub struct Lirs {
    capacity: usize,
    state: Mutex<State>,
}

impl Lirs {
    /// LIRS over frames `0..capacity`, all initially free.
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`]. A capacity whose 2 × `capacity` ghosts
    /// would take the frames past `u32::MAX` list nodes keeps fewer ghosts (README S1).
    #[must_use]
    pub fn new(capacity: usize) -> Lirs {
        check_capacity(capacity);
        Lirs { capacity, state: Mutex::new(State::new(capacity)) }
    }

    /// The most frames LIR pages may hold: the capacity minus the resident-HIR share.
    #[must_use]
    pub fn lir_target(&self) -> usize {
        self.state.lock().lir_target
    }
}

impl Policy for Lirs {
    fn name(&self) -> String {
        "lirs".to_owned()
    }

    /// The paper's case 3 after the victim has gone: a page remembered in S becomes LIR (its IRR
    /// is below the largest LIR recency); a new page is LIR while fewer than `lir_target` pages
    /// are, else a resident HIR page on top of S and at the back of Q.
    fn on_insert(&self, frame: FrameId, page: PageId, _hook: &FrameHook) {
        let index = frame.index();
        if index >= self.capacity {
            return;
        }
        let mut state = self.state.lock();
        state.remove(index, false);
        state.pages[index] = Some(page);
        if let Some(ghost) = state.ghosts.find(page) {
            state.stack.replace(ghost, index);
            state.ghosts.remove_handle(ghost);
            state.status[ghost] = Status::Free;
            state.promote(index);
        } else if state.lir < state.lir_target {
            state.status[index] = Status::Lir;
            state.lir += 1;
            state.stack.push_newest(index);
        } else {
            state.status[index] = Status::Hir;
            state.stack.push_newest(index);
            state.queue.push_newest(index);
            state.prune();
        }
    }

    /// The paper's cases 1 and 2, under the lock (not R5).
    fn on_hit(&self, frame: FrameId, _hook: &FrameHook) {
        if frame.index() < self.capacity {
            self.state.lock().hit(frame.index());
        }
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        let index = frame.index();
        if index >= self.capacity {
            return;
        }
        let mut state = self.state.lock();
        match why {
            // In use right now: as good as a reference.
            Rejection::InUse => state.hit(index),
            // Stays where it is; the search moves on.
            Rejection::SwizzledChildren => {
                let at = match state.status[index] {
                    Status::Hir => Cursor::Queue(index),
                    Status::Lir => Cursor::Stack(index),
                    _ => return,
                };
                state.cursor = state.after(at);
            }
            Rejection::Root => {
                if matches!(state.status[index], Status::Lir | Status::Hir) {
                    state.remove(index, false);
                    state.status[index] = Status::Blocked;
                    state.blocked.push_newest(index);
                }
            }
            Rejection::NotResident => state.remove(index, false),
        }
    }

    fn on_remove(&self, frame: FrameId, evicted: bool, _hook: &FrameHook) {
        if frame.index() >= self.capacity {
            return;
        }
        let mut state = self.state.lock();
        state.remove(frame.index(), evicted);
        if evicted {
            state.cursor = None;
        }
    }

    /// The cursor's frame if a search is under way; else the front of Q; else, if Q is empty
    /// (the pool evicted ahead of misses), the LIR page at the bottom of S; else a blocked frame;
    /// else `None` (R4).
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        let mut state = self.state.lock();
        let bottom_lir = state.stack.oldest().filter(|&node| state.status[node] == Status::Lir);
        let unblocked = state.cursor_node().or_else(|| state.queue.oldest()).or(bottom_lir);
        unblocked.or_else(|| state.blocked.rotate_oldest()).map(frame_id)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, VecDeque};

    use proptest::prelude::*;

    use super::*;
    use crate::testpool::TestHooks;
    use crate::testpool::{self as sim, Pool};

    /// The blocks of the example, A..E, as the simulated pool's pages 0..4.
    fn block(name: char) -> u64 {
        u64::from(name as u8 - b'A')
    }

    fn name(page: u64) -> char {
        char::from(b'A' + u8::try_from(page).unwrap())
    }

    /// S from bottom to top and Q from front to back, one token per page: an LIR page in upper
    /// case, a resident HIR page in lower case, a non-resident HIR page (ghost) with a quote.
    fn render(policy: &Lirs, pool: &Pool) -> (String, String) {
        let state = policy.state.lock();
        let token = |node: usize| {
            let page = match state.status[node] {
                Status::Ghost => state.ghosts.page(node).unwrap().get(),
                _ => pool.pages[node].unwrap(),
            };
            let letter = name(page);
            match state.status[node] {
                Status::Lir => letter.to_string(),
                Status::Hir => letter.to_ascii_lowercase().to_string(),
                Status::Ghost => format!("{}'", letter.to_ascii_lowercase()),
                other => panic!("{other:?} node {node} in S or Q"),
            }
        };
        let join = |nodes: Vec<usize>| nodes.into_iter().map(token).collect::<Vec<_>>().join(" ");
        (join(state.stack.oldest_first()), join(state.queue.oldest_first()))
    }

    /// Plays `refs` (block names) and returns the evicted blocks, in order.
    fn play(policy: &Lirs, pool: &mut Pool, refs: &str) -> String {
        refs.chars().filter_map(|b| pool.fix(policy, block(b))).map(name).collect()
    }

    /// Recency and IRR of `b` after the reference string `refs`, by the paper's definitions:
    /// the number of distinct other blocks referenced since the last reference to `b`, and
    /// between its last two references (`None` for an infinite IRR).
    fn recency_and_irr(refs: &str, b: char) -> (usize, Option<usize>) {
        let refs: Vec<char> = refs.chars().collect();
        let at: Vec<usize> = (0..refs.len()).filter(|&t| refs[t] == b).collect();
        let distinct = |from: usize, to: usize| {
            let mut seen: Vec<char> = refs[from..to].iter().copied().filter(|&x| x != b).collect();
            seen.sort_unstable();
            seen.dedup();
            seen.len()
        };
        let last = *at.last().unwrap();
        let irr = (at.len() >= 2).then(|| distinct(at[at.len() - 2] + 1, last));
        (distinct(last + 1, refs.len()), irr)
    }

    /// The string of the LIRS paper's example (Jiang & Zhang 2002, §3: blocks A..E, virtual
    /// times 1..9, L_lirs = 2, L_hirs = 1), reconstructed from memory and the definitions (the
    /// paper is not at hand): A at 1, 6, 8; B at 2, 5; D at 3, 7; C at 4; E at 9. It yields the
    /// recencies we recall from the paper's table and its split: LIR = {A, B} (the two smallest
    /// IRRs), HIR = {C, D, E}, E the resident HIR block.
    const PAPER_REFS: &str = "ABDCBADAE";

    #[test]
    fn paper_example_recency_and_irr_by_definition() {
        let expected =
            [('A', 1, Some(1)), ('B', 3, Some(2)), ('C', 4, None), ('D', 2, Some(3)), ('E', 0, None)];
        for (b, recency, irr) in expected {
            assert_eq!(recency_and_irr(PAPER_REFS, b), (recency, irr), "block {b}");
        }
    }

    /// The paper's example on a cache of 3 frames (1% of 3 rounds up to one HIR frame, so
    /// L_lirs = 2). Derivation, S bottom to top (LIR upper case, resident HIR lower case, ghost
    /// quoted), Q front first:
    /// - t1 A, t2 B: free frames, LIR while fewer than 2: S [A B].
    /// - t3 D: resident HIR: S [A B d], Q [d].
    /// - t4 C: evicts Q's front D, which stays in S as a ghost; C is HIR: S [A B d' c], Q [c].
    /// - t5 B: LIR hit, to the top: S [A d' c B].
    /// - t6 A: LIR hit on the bottom; pruning drops d' and takes c out of S: S [B A], Q [c].
    /// - t7 D: evicts C (not in S: forgotten); D is new again: S [B A d], Q [d].
    /// - t8 A: S [B d A]. t9 E: evicts D (ghost): S [B d' A e], Q [e].
    ///
    /// LIR = {A, B} and E is the resident HIR block, as in the paper. Then at t10:
    /// - D (IRR 2 < B's recency 3): evicts E (ghost); D becomes LIR; the bottom LIR B becomes a
    ///   resident HIR block at Q's end; S [A e' D], Q [b] — the paper's outcome.
    /// - C instead (IRR 4 > 3): evicts E; C stays HIR: S [B d' A e' c], Q [c].
    #[test]
    fn r4_paper_example_abcde() {
        let policy = Lirs::new(3);
        assert_eq!(policy.lir_target(), 2);
        let mut pool = Pool::new(3);
        assert_eq!(play(&policy, &mut pool, PAPER_REFS), "DCD");
        assert_eq!(render(&policy, &pool), ("B d' A e".into(), "e".into()));

        let mut with_d = Pool::new(3);
        let policy_d = Lirs::new(3);
        assert_eq!(play(&policy_d, &mut with_d, &format!("{PAPER_REFS}D")), "DCDE");
        assert_eq!(render(&policy_d, &with_d), ("A e' D".into(), "b".into()));

        let mut with_c = Pool::new(3);
        let policy_c = Lirs::new(3);
        assert_eq!(play(&policy_c, &mut with_c, &format!("{PAPER_REFS}C")), "DCDE");
        assert_eq!(render(&policy_c, &with_c), ("B d' A e' c".into(), "c".into()));
    }

    /// A loop over 4 blocks on 3 frames, LRU's worst case: LRU misses every reference, while
    /// LIRS keeps the two LIR blocks A and B and cycles the others through its one HIR frame.
    /// Hand-worked: after the first pass (A B LIR, C then D in the HIR frame), every C or D
    /// reference misses and evicts the other; A and B always hit.
    #[test]
    fn r4_loop_keeps_lir_blocks() {
        let policy = Lirs::new(3);
        let mut pool = Pool::new(3);
        assert_eq!(play(&policy, &mut pool, "ABCD"), "C");
        assert_eq!(play(&policy, &mut pool, "ABCDABCDABCD"), "DCDCDC");
    }

    /// Rejections, hand-worked on 3 frames (frame f holds page f + 1; S bottom first):
    /// - load 0 1 2: S [0 1 2] with 0 and 1 LIR, Q [2].
    /// - SwizzledChildren on 2 moves the search past Q's end to S's bottom LIR 0; again on 0,
    ///   to the next LIR up, 1. InUse on 1 is a hit: 1 goes to the top, S [0 2 1], and the
    ///   search restarts at Q's front: 2, evicted (ghost): S [0 2' 1].
    /// - Q is empty: the bottom LIR 0 is proposed. Root blocks it; pruning drops the ghost.
    /// - 1 is proposed and evicted; then only the blocked 0 is left and is proposed.
    /// - A new page in frame 2 is LIR (fewer than 2 LIR pages) and is proposed before root 0.
    #[test]
    fn r3_rejections_move_the_search_and_block_roots() {
        let policy = Lirs::new(3);
        let h = TestHooks::new(3);
        h.insert(&policy, &[0, 1, 2]);
        let propose = || policy.next_candidate(&h).map(|f| f.0);
        assert_eq!(propose(), Some(2));
        policy.on_rejected(FrameId(2), Rejection::SwizzledChildren, &h[2]);
        assert_eq!(propose(), Some(0));
        policy.on_rejected(FrameId(0), Rejection::SwizzledChildren, &h[0]);
        assert_eq!(propose(), Some(1));
        policy.on_rejected(FrameId(1), Rejection::InUse, &h[1]);
        assert_eq!(policy.state.lock().stack.oldest_first(), [0, 2, 1]);
        assert_eq!(h.evict(&policy), 2);
        assert_eq!(policy.state.lock().ghosts.len(), 1);
        assert_eq!(propose(), Some(0));
        policy.on_rejected(FrameId(0), Rejection::Root, &h[0]);
        let (stack, ghosts) = {
            let state = policy.state.lock();
            (state.stack.oldest_first(), state.ghosts.len())
        };
        assert_eq!((stack, ghosts), (vec![1], 0));
        assert_eq!(h.evict(&policy), 1);
        assert_eq!(propose(), Some(0), "only the root is resident");
        h.insert(&policy, &[2]);
        assert_eq!(policy.state.lock().status[2], Status::Lir);
        assert_eq!(propose(), Some(2));
    }

    /// Capacity 1 (L_lirs = 0, so LIRS is FIFO over one frame): S never keeps an entry, so a
    /// hit (here through `InUse`) on the lone HIR page cannot leave it at S's bottom, and its
    /// eviction leaves no ghost to propose. Regression: the hit used to push it onto S unpruned,
    /// and the next proposal was the ghost's node, not a frame (R4).
    #[test]
    fn r4_capacity_one_never_proposes_a_ghost() {
        let policy = Lirs::new(1);
        let h = TestHooks::new(1);
        h.insert(&policy, &[0]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(0)));
        policy.on_rejected(FrameId(0), Rejection::InUse, &h[0]);
        assert_eq!(policy.state.lock().stack.len(), 0);
        assert_eq!(h.evict(&policy), 0);
        assert_eq!(policy.next_candidate(&h), None);
    }

    /// Evicted HIR pages in S leave ghosts, up to `2 * capacity`, the oldest dropped first;
    /// freed pages leave none. Hand-worked on 2 frames (L_lirs = 1): A is LIR and every other page
    /// passes through the one HIR frame, staying in S as a ghost: S [A b' c' d' e' f' g] after
    /// G, with B's ghost dropped when F's was made. Freeing G leaves no ghost; a hit on the
    /// bottom LIR A then prunes every ghost.
    #[test]
    fn ghosts_are_bounded_and_freed_pages_forgotten() {
        let policy = Lirs::new(2);
        let mut pool = Pool::new(2);
        // A is LIR; every other page passes through the one HIR frame and stays in S as a ghost.
        play(&policy, &mut pool, "ABCDEFG");
        let state = policy.state.lock();
        assert_eq!((state.ghosts.len(), state.ghost_limit), (4, 4));
        let remembered: Vec<u64> = state.ghosts.oldest_ids();
        assert_eq!(remembered, [block('C'), block('D'), block('E'), block('F')], "B was dropped first");
        drop(state);
        assert_eq!(render(&policy, &pool).0, "A c' d' e' f' g");
        let frame = pool.pages.iter().position(|&p| p == Some(block('G'))).unwrap();
        pool.remove(&policy, frame, false);
        assert_eq!(render(&policy, &pool).0, "A c' d' e' f'");
        assert!(policy.state.lock().ghosts.find(PageId::new(block('G')).unwrap()).is_none());
        pool.fix(&policy, block('A'));
        assert_eq!((render(&policy, &pool).0, policy.state.lock().ghosts.len()), ("A".into(), 0));
    }

    /// The invariants of the module docs, checked against the simulated pool.
    fn check_invariants(policy: &Lirs, pool: &Pool) {
        let state = policy.state.lock();
        let capacity = pool.pages.len();
        let count = |s: Status| (0..state.status.len()).filter(|&n| state.status[n] == s).count();
        let stack = state.stack.oldest_first();
        if let Some(&bottom) = stack.first() {
            assert_eq!(state.status[bottom], Status::Lir, "S's bottom is LIR");
        }
        assert_eq!(state.lir_target, capacity - (capacity / 100).max(1));
        assert_eq!(state.lir, count(Status::Lir));
        assert!(state.lir <= state.lir_target, "|LIR| {} > {}", state.lir, state.lir_target);
        for node in 0..state.status.len() {
            let (in_s, in_q) = (state.stack.contains(node), node < capacity && state.queue.contains(node));
            match state.status[node] {
                Status::Lir => assert!(in_s && !in_q, "LIR {node} is in S only"),
                Status::Hir => assert!(in_q, "resident HIR {node} is in Q"),
                Status::Ghost => assert!(in_s && !in_q && node >= capacity, "ghost {node} is in S only"),
                Status::Free | Status::Blocked => assert!(!in_s && !in_q, "{node} is in neither"),
            }
        }
        assert_eq!(state.queue.len(), count(Status::Hir));
        assert_eq!(state.ghosts.len(), count(Status::Ghost));
        for node in (0..state.status.len()).filter(|&n| state.status[n] == Status::Ghost) {
            assert!(state.ghosts.page(node).is_some(), "ghost {node} remembers a page");
        }
        assert!(state.ghosts.len() <= 2 * capacity);
        for f in 0..capacity {
            let resident = matches!(state.status[f], Status::Lir | Status::Hir | Status::Blocked);
            assert_eq!(resident, pool.pages[f].is_some(), "frame {f} residency");
            assert_eq!(state.status[f] == Status::Blocked, pool.blocked[f], "frame {f} blocked");
        }
        for ghost in state.ghosts.oldest_first() {
            let page = ghost.get();
            assert!(!pool.pages.contains(&Some(page)), "ghost page {page} is resident");
        }
    }

    /// What the reference model knows of a page in S or Q.
    #[derive(Copy, Clone, PartialEq, Eq, Debug)]
    enum Kind {
        Lir,
        /// A resident HIR block (in Q, and in S if recently referenced).
        Hir,
        /// A non-resident HIR block in S.
        Ghost,
    }

    /// The paper's LIRS (Jiang & Zhang 2002, §3.3, "upon accessing" cases 1-3 and stack
    /// pruning), written naively over a `Vec` (S, bottom first) and a `VecDeque` (Q, front
    /// first) of page ids, with only the departures the module docs document that a plain trace
    /// served one eviction per miss can show:
    /// - L_hirs = max(1, 1% of c), L_lirs = c − L_hirs; the first L_lirs blocks are LIR.
    /// - At most 2c non-resident HIR blocks; making one more forgets the one evicted longest ago
    ///   (kept in `evicted`, oldest first).
    /// - With L_lirs = 0 (c = 1) S holds no LIR block, and pruning, which leaves an LIR block at
    ///   S's bottom, empties it: S keeps nothing.
    ///
    /// The miss is the paper's case 3: Q's front is evicted (staying in S as a non-resident
    /// block if it is there), then the missing block enters.
    struct Model {
        lir_target: usize,
        ghost_limit: usize,
        resident: usize,
        c: usize,
        kind: HashMap<u64, Kind>,
        s: Vec<u64>,
        q: VecDeque<u64>,
        evicted: VecDeque<u64>,
        /// The page the next proposal is, after `SwizzledChildren` rejections.
        cursor: Option<u64>,
        /// Pages rejected as roots, oldest first (rotated as they are proposed).
        blocked: VecDeque<u64>,
    }

    impl Model {
        fn new(c: usize) -> Model {
            let hirs = (c / 100).max(1);
            Model {
                lir_target: c - hirs,
                ghost_limit: 2 * c,
                resident: 0,
                c,
                kind: HashMap::new(),
                s: Vec::new(),
                q: VecDeque::new(),
                evicted: VecDeque::new(),
                cursor: None,
                blocked: VecDeque::new(),
            }
        }

        fn raise(&mut self, x: u64) {
            self.s.retain(|&y| y != x);
            self.s.push(x);
        }

        fn prune(&mut self) {
            while let Some(&bottom) = self.s.first() {
                match self.kind[&bottom] {
                    Kind::Lir => break,
                    Kind::Hir => {}
                    Kind::Ghost => {
                        self.kind.remove(&bottom);
                        self.evicted.retain(|&y| y != bottom);
                    }
                }
                self.s.remove(0);
            }
        }

        /// X becomes LIR at the top of S; the LIR block at S's bottom becomes a resident HIR
        /// block at the end of Q; then S is pruned.
        fn promote(&mut self, x: u64) {
            self.q.retain(|&y| y != x);
            self.raise(x);
            self.kind.insert(x, Kind::Lir);
            let bottom = self.s.remove(0);
            assert_eq!(self.kind[&bottom], Kind::Lir, "S's bottom is LIR");
            self.kind.insert(bottom, Kind::Hir);
            self.q.push_back(bottom);
            self.prune();
        }

        fn request(&mut self, x: u64) -> (bool, Option<u64>) {
            let in_s = self.s.contains(&x);
            match self.kind.get(&x).copied() {
                Some(Kind::Lir) => {
                    self.raise(x);
                    self.prune();
                    return (true, None);
                }
                Some(Kind::Hir) if in_s => {
                    self.promote(x);
                    return (true, None);
                }
                Some(Kind::Hir) => {
                    self.raise(x);
                    self.q.retain(|&y| y != x);
                    self.q.push_back(x);
                    self.prune();
                    return (true, None);
                }
                Some(Kind::Ghost) | None => {}
            }
            let mut victim = None;
            if self.resident == self.c {
                let v = self.q.pop_front().expect("a full cache has a resident HIR block");
                if self.s.contains(&v) {
                    if self.evicted.len() == self.ghost_limit {
                        let oldest = self.evicted.pop_front().unwrap();
                        self.s.retain(|&y| y != oldest);
                        self.kind.remove(&oldest);
                    }
                    self.kind.insert(v, Kind::Ghost);
                    self.evicted.push_back(v);
                } else {
                    self.kind.remove(&v);
                }
                self.resident -= 1;
                victim = Some(v);
            }
            self.resident += 1;
            let lirs = self.kind.values().filter(|&&k| k == Kind::Lir).count();
            if self.kind.get(&x) == Some(&Kind::Ghost) {
                self.evicted.retain(|&y| y != x);
                self.promote(x);
            } else if lirs < self.lir_target {
                self.kind.insert(x, Kind::Lir);
                self.s.push(x);
            } else {
                self.kind.insert(x, Kind::Hir);
                self.s.push(x);
                self.q.push_back(x);
                self.prune();
            }
            (false, victim)
        }
    }

    /// [`Model`] with the module docs' rejections, removals and blocked frames (test
    /// `r3_r4_matches_the_model_with_rejections`).
    impl Model {
        /// The order of a search past `SwizzledChildren` rejections (module docs, step 5): Q
        /// front to back, then S's LIR pages bottom to top.
        fn order(&self) -> Vec<u64> {
            let lirs = self.s.iter().copied().filter(|y| self.kind[y] == Kind::Lir);
            self.q.iter().copied().chain(lirs).collect()
        }

        /// Before `x` leaves its place in the search order, the cursor on it moves to the next
        /// page of the order (or back to the start).
        fn step_off(&mut self, x: u64) {
            if self.cursor == Some(x) {
                let order = self.order();
                let at = order.iter().position(|&y| y == x).expect("the cursor's page is in the order");
                self.cursor = order.get(at + 1).copied();
            }
        }

        fn lirs(&self) -> usize {
            self.kind.values().filter(|&&k| k == Kind::Lir).count()
        }

        /// A hit (or `InUse`): the paper's cases 1 and 2; a blocked page is left alone.
        fn hit(&mut self, x: u64) {
            let in_s = self.s.contains(&x);
            match self.kind.get(&x).copied() {
                Some(Kind::Lir) => {
                    self.step_off(x);
                    self.raise(x);
                    self.prune();
                }
                Some(Kind::Hir) if in_s => {
                    self.step_off(x);
                    self.promote_lazily(x);
                }
                Some(Kind::Hir) => {
                    self.step_off(x);
                    self.raise(x);
                    self.q.retain(|&y| y != x);
                    self.q.push_back(x);
                    self.prune();
                }
                Some(Kind::Ghost) | None => {}
            }
        }

        /// X becomes LIR at the top of S; only if that makes more than L_lirs LIR blocks (after
        /// frees and roots it may not, step 1) is the bottom one demoted and S pruned.
        fn promote_lazily(&mut self, x: u64) {
            self.q.retain(|&y| y != x);
            self.raise(x);
            self.kind.insert(x, Kind::Lir);
            if self.lirs() > self.lir_target {
                let bottom = self.s[0];
                self.step_off(bottom);
                self.s.remove(0);
                self.kind.insert(bottom, Kind::Hir);
                self.q.push_back(bottom);
                self.prune();
            }
        }

        /// Page `x` leaves its frame: an evicted resident HIR block in S stays as a ghost (the
        /// oldest ghost dropped first if 2c exist); nothing else keeps history (step 4).
        fn leave(&mut self, x: u64, evicted: bool) {
            self.step_off(x);
            self.blocked.retain(|&y| y != x);
            match self.kind.remove(&x) {
                Some(Kind::Lir) => {
                    self.s.retain(|&y| y != x);
                    self.prune();
                }
                Some(Kind::Hir) => {
                    self.q.retain(|&y| y != x);
                    if self.s.contains(&x) {
                        if evicted {
                            if self.evicted.len() == self.ghost_limit {
                                let oldest = self.evicted.pop_front().unwrap();
                                self.s.retain(|&y| y != oldest);
                                self.kind.remove(&oldest);
                            }
                            self.kind.insert(x, Kind::Ghost);
                            self.evicted.push_back(x);
                        } else {
                            self.s.retain(|&y| y != x);
                        }
                    }
                }
                Some(Kind::Ghost) | None => {}
            }
            if evicted {
                self.cursor = None;
            }
        }

        /// Page `x` is loaded (step 1).
        fn load(&mut self, x: u64) {
            if self.kind.get(&x) == Some(&Kind::Ghost) {
                self.evicted.retain(|&y| y != x);
                self.promote_lazily(x);
            } else if self.lirs() < self.lir_target {
                self.kind.insert(x, Kind::Lir);
                self.s.push(x);
            } else {
                self.kind.insert(x, Kind::Hir);
                self.s.push(x);
                self.q.push_back(x);
                self.prune();
            }
        }

        /// Root: the page leaves S and Q (without history) for the blocked list.
        fn block(&mut self, x: u64) {
            if matches!(self.kind.get(&x), Some(Kind::Lir | Kind::Hir)) {
                let cursor = self.cursor;
                self.leave(x, false);
                debug_assert!(self.cursor == cursor || cursor == Some(x));
                self.blocked.push_back(x);
            }
        }

        /// `SwizzledChildren`: the search moves past `x`.
        fn skip(&mut self, x: u64) {
            if matches!(self.kind.get(&x), Some(Kind::Lir | Kind::Hir)) {
                self.cursor = Some(x);
                self.step_off(x);
            }
        }

        /// Step 6: the cursor's page, else Q's front, else S's bottom LIR block, else a blocked
        /// page (oldest first, rotating).
        fn propose(&mut self) -> Option<u64> {
            if let Some(x) = self.cursor {
                return Some(x);
            }
            if let Some(&x) = self.q.front() {
                return Some(x);
            }
            if let Some(&x) = self.s.first() {
                assert_eq!(self.kind[&x], Kind::Lir, "S's bottom is LIR");
                return Some(x);
            }
            let x = self.blocked.pop_front()?;
            self.blocked.push_back(x);
            Some(x)
        }
    }

    /// S (bottom first) and Q (front first) of the policy, as pages and kinds.
    fn lists(policy: &Lirs, pool: &Pool) -> (Vec<(u64, Kind)>, Vec<u64>, Vec<u64>) {
        let state = policy.state.lock();
        let entry = |node: usize| match state.status[node] {
            Status::Lir => (pool.pages[node].unwrap(), Kind::Lir),
            Status::Hir => (pool.pages[node].unwrap(), Kind::Hir),
            Status::Ghost => (state.ghosts.page(node).unwrap().get(), Kind::Ghost),
            other => panic!("{other:?} node {node} in S"),
        };
        let s = state.stack.oldest_first().into_iter().map(entry).collect();
        let q = state.queue.oldest_first().into_iter().map(|f| pool.pages[f].unwrap()).collect();
        (s, q, state.ghosts.oldest_ids())
    }

    /// A capacity in `1..=max` and a trace over 2 to 6 times as many pages: the wider ones
    /// fill the 2c ghosts, which `sim::trace`'s 3c pages never do.
    fn wide_trace(max: usize) -> impl Strategy<Value = (usize, Vec<u64>)> {
        (1..=max, 2..=6u64).prop_flat_map(|(c, k)| {
            let pages = k * c as u64;
            let page = prop_oneof![2 => 0..pages, 1 => 0..(c as u64 / 2 + 1)];
            (Just(c), proptest::collection::vec(page, 0..300))
        })
    }

    proptest! {
        /// S's bottom is LIR, |LIR| <= c - |HIR target|, statuses match S and Q, resident
        /// counts match the pool, ghosts <= 2c; and proposals obey R3 and R4 (checked by the
        /// simulated pool).
        #[test]
        fn r4_invariants_hold_over_random_histories((capacity, ops) in sim::scenario(12)) {
            let policy = Lirs::new(capacity);
            sim::run(capacity, &ops, &policy, |pool| check_invariants(&policy, pool));
        }

        /// Serving a trace one eviction per miss, `Lirs` hits, evicts, and keeps S, Q and the
        /// ghosts' eviction order exactly as the paper's model does, after every request.
        #[test]
        fn r4_matches_the_paper_model_one_eviction_per_miss((capacity, trace) in wide_trace(10)) {
            let policy = Lirs::new(capacity);
            let mut pool = Pool::new(capacity);
            let mut model = Model::new(capacity);
            for (t, &x) in trace.iter().enumerate() {
                let hit = pool.frame_of(x).is_some();
                let served = (hit, pool.fix(&policy, x));
                prop_assert_eq!(served, model.request(x), "request {} (page {})", t, x);
                let ghosts: Vec<u64> = model.evicted.iter().copied().collect();
                let s: Vec<(u64, Kind)> = model.s.iter().map(|&y| (y, model.kind[&y])).collect();
                let expected = (s, model.q.iter().copied().collect::<Vec<_>>(), ghosts);
                prop_assert_eq!(lists(&policy, &pool), expected, "after request {} (page {})", t, x);
            }
        }
        /// The paper's LIRS with the module docs' rejections, removals and blocked frames
        /// (steps 1-6), over pages: `InUse` is a hit; `SwizzledChildren` moves the search to the
        /// next page in the order Q front to back, then S's LIR pages bottom to top; `Root`
        /// takes the page out of S and Q without history onto the blocked list; `NotResident`
        /// and frees keep no history; a promotion demotes S's bottom only when it makes more
        /// than L_lirs LIR pages; an eviction resets the search; blocked pages are proposed,
        /// rotating, only when nothing else is resident. `Lirs` proposes the same pages and
        /// keeps the same S, Q, ghosts, blocked list and cursor on random pool histories.
        #[test]
        fn r3_r4_matches_the_model_with_rejections((capacity, ops) in sim::scenario(10)) {
            let policy = Lirs::new(capacity);
            let mut model = Model::new(capacity);
            sim::replay_with_model(capacity, &ops, &policy, &mut model, |pool, model, t, op| {
                let ghosts: Vec<u64> = model.evicted.iter().copied().collect();
                let s: Vec<(u64, Kind)> = model.s.iter().map(|&y| (y, model.kind[&y])).collect();
                let expected = (s, model.q.iter().copied().collect::<Vec<_>>(), ghosts);
                prop_assert_eq!(lists(&policy, pool), expected, "after step {} ({:?})", t, op);
                let state = policy.state.lock();
                let blocked: Vec<u64> = state.blocked.oldest_first().into_iter().map(|f| pool.pages[f].unwrap()).collect();
                let cursor = state.cursor_node().map(|f| pool.pages[f].unwrap());
                drop(state);
                prop_assert_eq!(blocked, Vec::from(model.blocked.clone()), "blocked after step {} ({:?})", t, op);
                prop_assert_eq!(cursor, model.cursor, "cursor after step {} ({:?})", t, op);
                Ok(())
            })?;
        }
    }

    /// The model as [`sim::replay_with_model`] drives it.
    impl sim::PageModel for Model {
        fn hit(&mut self, page: u64) {
            Model::hit(self, page);
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
                Rejection::InUse => Model::hit(self, page),
                Rejection::SwizzledChildren => self.skip(page),
                Rejection::Root => self.block(page),
                Rejection::NotResident => unreachable!("a refusal as NotResident is a removal"),
            }
        }
    }
}
