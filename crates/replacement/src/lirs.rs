//! LIRS, Low Inter-reference Recency Set (Jiang & Zhang, SIGMETRICS 2002; README "LIRS").
//!
//! Pages with a small *inter-reference recency* (IRR: the number of distinct other pages
//! referenced between a page's last two references) are LIR and hold almost all frames; the others
//! are HIR, of which only a few stay resident, in the queue Q. The stack S orders LIR pages and
//! recently referenced HIR pages (resident or not) by recency; its bottom is always an LIR page,
//! so a HIR page found in S has an IRR below the largest recency of any LIR page and is promoted
//! on its next reference. Hits reorder S, so they take the policy's mutex, like [`crate::Lru`]
//! (a documented breach of R5).

use parking_lot::Mutex;

use crate::history_p3::{Chain, Ghosts};
use crate::list::FrameList;
use crate::{check_capacity, frame_id, FrameHook, FrameId, HookTable, PageId, Policy, Rejection};

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
    status: Box<[Status]>,
    /// The page in each frame, by frame.
    pages: Box<[Option<PageId>]>,
    /// S, from the bottom (front, largest recency) to the top (back, just referenced).
    stack: Chain,
    /// Q, resident HIR pages from the next victim (front) to the newest (back).
    queue: Chain,
    /// Ghost slots and the pages they remember.
    ghosts: Ghosts,
    /// Ghost nodes from the oldest eviction (front) to the newest: the order in which they are
    /// dropped when there are more than `ghost_limit`.
    ghost_order: Chain,
    blocked: FrameList,
    /// Number of `Lir` nodes.
    lir: usize,
    /// The next proposal after `SwizzledChildren` rejections; `None` starts at Q's front.
    cursor: Option<Cursor>,
}

impl State {
    fn new(capacity: usize) -> State {
        let hir_target = (capacity * HIR_PERCENT / 100).max(1).min(capacity);
        let ghost_limit = capacity * GHOST_FACTOR;
        let nodes = capacity + ghost_limit;
        State {
            lir_target: capacity - hir_target,
            ghost_limit,
            status: vec![Status::Free; nodes].into_boxed_slice(),
            pages: vec![None; capacity].into_boxed_slice(),
            stack: Chain::new(nodes),
            queue: Chain::new(nodes),
            ghosts: Ghosts::new(capacity, ghost_limit),
            ghost_order: Chain::new(nodes),
            blocked: FrameList::new(capacity),
            lir: 0,
            cursor: None,
        }
    }

    /// Stack pruning: removes HIR entries from the bottom of S until an LIR page is there.
    /// Resident ones stay in Q; ghosts are forgotten.
    fn prune(&mut self) {
        while let Some(bottom) = self.stack.front() {
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
        self.ghost_order.unlink(node);
        self.ghosts.forget(node);
        self.status[node] = Status::Free;
    }

    /// The LIR page at the bottom of S becomes a resident HIR page at the back of Q; then S is
    /// pruned.
    fn demote_bottom(&mut self) {
        if let Some(bottom) = self.stack.front() {
            debug_assert_eq!(self.status[bottom], Status::Lir, "S's bottom is LIR");
            self.step_off(bottom);
            self.stack.unlink(bottom);
            self.status[bottom] = Status::Hir;
            self.queue.push_back(bottom);
            self.lir -= 1;
            self.prune();
        }
    }

    /// `frame` becomes an LIR page at the top of S; if that makes one LIR page too many, the
    /// bottom one is demoted.
    fn promote(&mut self, frame: usize) {
        self.queue.unlink(frame);
        self.stack.move_to_back(frame);
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
                self.stack.move_to_back(frame);
                self.prune();
            }
            Status::Hir => {
                self.step_off(frame);
                if self.stack.contains(frame) {
                    // Its new IRR is below the recency of S's bottom LIR page.
                    self.promote(frame);
                } else {
                    self.stack.push_back(frame);
                    self.queue.move_to_back(frame);
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
            let oldest = self.ghost_order.front()?;
            self.drop_ghost(oldest);
        }
        let ghost = self.ghosts.remember(page)?;
        self.status[ghost] = Status::Ghost;
        self.ghost_order.push_back(ghost);
        debug_assert!(self.ghosts.len() <= self.ghost_limit);
        Some(ghost)
    }

    /// The cursor's position after `at`: Q front to back, then S's LIR pages bottom to top,
    /// then `None` (back to the start).
    fn after(&self, at: Cursor) -> Option<Cursor> {
        match at {
            Cursor::Queue(node) => match self.queue.next(node) {
                Some(next) => Some(Cursor::Queue(next)),
                None => self.stack.front().map(Cursor::Stack),
            },
            Cursor::Stack(node) => {
                let mut next = self.stack.next(node);
                while let Some(n) = next.filter(|&n| self.status[n] != Status::Lir) {
                    next = self.stack.next(n);
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
    /// If `capacity - 1` does not fit a [`FrameId`].
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
            state.ghost_order.unlink(ghost);
            state.ghosts.forget(ghost);
            state.status[ghost] = Status::Free;
            state.promote(index);
        } else if state.lir < state.lir_target {
            state.status[index] = Status::Lir;
            state.lir += 1;
            state.stack.push_back(index);
        } else {
            state.status[index] = Status::Hir;
            state.stack.push_back(index);
            state.queue.push_back(index);
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
        let bottom_lir = state.stack.front().filter(|&node| state.status[node] == Status::Lir);
        let unblocked = state.cursor_node().or_else(|| state.queue.front()).or(bottom_lir);
        let proposal = unblocked.or_else(|| {
            let frame = state.blocked.tail()?;
            state.blocked.move_to_newest(frame);
            Some(frame)
        });
        proposal.map(frame_id)
    }
}
