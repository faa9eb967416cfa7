//! Shared building blocks of MRU, LRU-K, 2Q and MQ (README "MRU", "LRU-K", "2Q", "MQ").
//!
//! - [`Queues`]: several intrusive doubly linked lists over frame indices, each frame in at most
//!   one of them, O(1) per operation and no allocation after construction. The policies use one
//!   queue per paper queue (A1in and Am, Q0..Q7, ...) plus a last queue of blocked frames (R3).
//!
//! It is not synchronized; the policies keep them under their mutex.

/// No frame: the end of a list.
const NIL: usize = usize::MAX;
/// The queue number of a frame in no queue.
const NO_QUEUE: u8 = u8::MAX;

fn link(index: usize) -> Option<usize> {
    (index != NIL).then_some(index)
}

/// `n` lists over frames `0..capacity`; each frame is in at most one list. Within a list, frames
/// run from the oldest (tail) to the newest (head).
pub(crate) struct Queues {
    newer: Box<[usize]>,
    older: Box<[usize]>,
    /// The list holding each frame, or [`NO_QUEUE`].
    queue: Box<[u8]>,
    heads: Box<[usize]>,
    tails: Box<[usize]>,
    lens: Box<[usize]>,
}

impl Queues {
    /// `n` empty lists (`n < 255`) over frames `0..capacity`.
    pub(crate) fn new(capacity: usize, n: usize) -> Queues {
        assert!(n < usize::from(NO_QUEUE), "too many queues");
        Queues {
            newer: vec![NIL; capacity].into_boxed_slice(),
            older: vec![NIL; capacity].into_boxed_slice(),
            queue: vec![NO_QUEUE; capacity].into_boxed_slice(),
            heads: vec![NIL; n].into_boxed_slice(),
            tails: vec![NIL; n].into_boxed_slice(),
            lens: vec![0; n].into_boxed_slice(),
        }
    }

    /// The list holding `frame`, if any.
    pub(crate) fn queue_of(&self, frame: usize) -> Option<usize> {
        (self.queue[frame] != NO_QUEUE).then_some(usize::from(self.queue[frame]))
    }

    pub(crate) fn len(&self, q: usize) -> usize {
        self.lens[q]
    }

    /// The oldest frame of list `q`.
    pub(crate) fn oldest(&self, q: usize) -> Option<usize> {
        link(self.tails[q])
    }

    /// The newest frame of list `q`.
    pub(crate) fn newest(&self, q: usize) -> Option<usize> {
        link(self.heads[q])
    }

    /// The next newer frame after `frame` in its list, or `None` at the head.
    pub(crate) fn newer(&self, frame: usize) -> Option<usize> {
        link(self.newer[frame])
    }

    /// The next older frame after `frame` in its list, or `None` at the tail.
    pub(crate) fn older(&self, frame: usize) -> Option<usize> {
        link(self.older[frame])
    }

    /// Links `frame` as the newest of list `q`, unlinking it first from wherever it was.
    pub(crate) fn push_newest(&mut self, q: usize, frame: usize) {
        self.unlink(frame);
        self.queue[frame] = u8::try_from(q).expect("queue number below NO_QUEUE");
        self.newer[frame] = NIL;
        self.older[frame] = self.heads[q];
        match link(self.heads[q]) {
            Some(head) => self.newer[head] = frame,
            None => self.tails[q] = frame,
        }
        self.heads[q] = frame;
        self.lens[q] += 1;
    }

    /// Unlinks `frame`; returns the list it was in.
    pub(crate) fn unlink(&mut self, frame: usize) -> Option<usize> {
        let q = self.queue_of(frame)?;
        let (newer, older) = (self.newer[frame], self.older[frame]);
        match link(newer) {
            Some(n) => self.older[n] = older,
            None => self.heads[q] = older,
        }
        match link(older) {
            Some(o) => self.newer[o] = newer,
            None => self.tails[q] = newer,
        }
        self.queue[frame] = NO_QUEUE;
        self.newer[frame] = NIL;
        self.older[frame] = NIL;
        self.lens[q] -= 1;
        Some(q)
    }

    /// The frame after `frame` in a cyclic walk that visits the lists of `order` in turn, each
    /// from oldest to newest. `frame` must be in one of them. Returns `frame` itself when it is
    /// the only frame in those lists.
    pub(crate) fn cyclic_successor(&self, order: &[usize], frame: usize) -> usize {
        if let Some(next) = self.newer(frame) {
            return next;
        }
        let q = self.queue_of(frame).expect("the frame is linked");
        let at = order.iter().position(|&o| o == q).expect("the frame's list is in the order");
        (1..=order.len())
            .find_map(|step| self.oldest(order[(at + step) % order.len()]))
            .expect("the frame's own list is not empty")
    }

    /// The proposal when only blocked frames are resident: the oldest of list `blocked`, rotated
    /// to its newest end so that repeated calls cycle through all of them (R3, R4).
    pub(crate) fn rotate_oldest(&mut self, blocked: usize) -> Option<usize> {
        let frame = self.oldest(blocked)?;
        self.push_newest(blocked, frame);
        Some(frame)
    }

    /// The frames of list `q` from oldest to newest (tests and debugging).
    #[cfg(test)]
    pub(crate) fn oldest_first(&self, q: usize) -> Vec<usize> {
        std::iter::successors(self.oldest(q), |&f| self.newer(f)).collect()
    }
}

/// A simulated buffer pool over a small universe of pages, for the policies' own proptests.
///
/// Unlike `tests/common`, pages and frames are distinct here: a page can leave and come back in
/// another frame, so ghost hits happen. The pool inserts only into free frames (R1), answers
/// each proposal as the operation says, and calls `check` after every step.
#[cfg(test)]
pub(crate) mod sim {
    use proptest::prelude::*;

    use crate::{FrameId, PageId, Policy, Rejection, TestHooks};

    /// What the simulated pool does with a proposal.
    #[derive(Copy, Clone, Debug)]
    pub(crate) enum Outcome {
        Evict,
        Reject(Rejection),
        Ignore,
    }

    /// One step of the simulation.
    #[derive(Copy, Clone, Debug)]
    pub(crate) enum Op {
        /// A fix of the page: a hit if resident, else a load into the lowest free frame (if any).
        Access(u64),
        /// The page is freed (deleted), if resident.
        Free(u64),
        /// Ask for a candidate and answer it.
        Propose(Outcome),
    }

    /// Random scenarios: a capacity in `1..=max_capacity` and up to 400 steps over a universe of
    /// about three times as many pages, skewed toward low page numbers so that some pages are hot.
    pub(crate) fn scenario(max_capacity: usize) -> impl Strategy<Value = (usize, Vec<Op>)> {
        (1..=max_capacity).prop_flat_map(|capacity| {
            let pages = 3 * capacity as u64 + 2;
            let page = prop_oneof![2 => 0..pages, 1 => 0..(capacity as u64 / 2 + 1)];
            let outcome = prop_oneof![
                6 => Just(Outcome::Evict),
                2 => Just(Outcome::Reject(Rejection::InUse)),
                1 => Just(Outcome::Reject(Rejection::Root)),
                2 => Just(Outcome::Reject(Rejection::SwizzledChildren)),
                1 => Just(Outcome::Reject(Rejection::NotResident)),
                1 => Just(Outcome::Ignore),
            ];
            let op = prop_oneof![
                8 => page.clone().prop_map(Op::Access),
                1 => page.prop_map(Op::Free),
                4 => outcome.prop_map(Op::Propose),
            ];
            (Just(capacity), proptest::collection::vec(op, 0..400))
        })
    }

    /// The pool's view.
    pub(crate) struct Pool {
        /// The page held by each frame.
        pub(crate) frames: Vec<Option<u64>>,
        /// Resident frames rejected as roots since their page was loaded.
        pub(crate) blocked: Vec<bool>,
        pub(crate) hooks: TestHooks,
    }

    impl Pool {
        fn frame_of(&self, page: u64) -> Option<usize> {
            self.frames.iter().position(|&p| p == Some(page))
        }

        fn remove(&mut self, frame: usize) {
            self.frames[frame] = None;
            self.blocked[frame] = false;
        }

        /// R4 and R3 for one proposal: resident, `None` iff nothing is, and a blocked frame only
        /// when every resident frame is blocked.
        fn check_proposal(&self, proposal: Option<FrameId>) {
            let any_resident = self.frames.iter().any(Option::is_some);
            assert_eq!(proposal.is_some(), any_resident, "R4: proposal {proposal:?}");
            if let Some(f) = proposal {
                assert!(self.frames[f.index()].is_some(), "R4: proposed free {f}");
                if self.blocked[f.index()] {
                    let unblocked =
                        (0..self.frames.len()).any(|i| self.frames[i].is_some() && !self.blocked[i]);
                    assert!(!unblocked, "R3: proposed blocked {f} while an unblocked frame is resident");
                }
            }
        }
    }

    fn pid(page: u64) -> PageId {
        PageId::new(page).unwrap()
    }

    /// Runs `ops` over `policy` (built for `capacity` frames), checking R3/R4 on every proposal
    /// and calling `check` after every step.
    pub(crate) fn run(capacity: usize, ops: &[Op], policy: &dyn Policy, mut check: impl FnMut(&Pool)) {
        let mut pool = Pool {
            frames: vec![None; capacity],
            blocked: vec![false; capacity],
            hooks: TestHooks::new(capacity),
        };
        for &op in ops {
            match op {
                Op::Access(page) => {
                    if let Some(f) = pool.frame_of(page) {
                        policy.on_hit(FrameId(f as u32), &pool.hooks[f]);
                        policy.on_unfix(FrameId(f as u32), &pool.hooks[f]);
                    } else if let Some(f) = pool.frames.iter().position(Option::is_none) {
                        pool.frames[f] = Some(page);
                        policy.on_insert(FrameId(f as u32), pid(page), &pool.hooks[f]);
                    }
                }
                Op::Free(page) => {
                    if let Some(f) = pool.frame_of(page) {
                        pool.remove(f);
                        policy.on_remove(FrameId(f as u32), false, &pool.hooks[f]);
                    }
                }
                Op::Propose(outcome) => {
                    let proposal = policy.next_candidate(&pool.hooks);
                    pool.check_proposal(proposal);
                    let Some(frame) = proposal else { continue };
                    let f = frame.index();
                    match outcome {
                        Outcome::Evict => {
                            pool.remove(f);
                            policy.on_remove(frame, true, &pool.hooks[f]);
                        }
                        Outcome::Reject(why) => {
                            policy.on_rejected(frame, why, &pool.hooks[f]);
                            match why {
                                Rejection::Root => pool.blocked[f] = true,
                                Rejection::NotResident => pool.remove(f),
                                Rejection::InUse | Rejection::SwizzledChildren => {}
                            }
                        }
                        Outcome::Ignore => {}
                    }
                }
            }
            check(&pool);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_keep_links_consistent() {
        let mut q = Queues::new(6, 3);
        for f in [3, 0, 4] {
            q.push_newest(0, f);
        }
        q.push_newest(1, 1);
        q.push_newest(1, 5);
        assert_eq!((q.oldest_first(0), q.oldest_first(1)), (vec![3, 0, 4], vec![1, 5]));
        q.push_newest(1, 0);
        assert_eq!((q.oldest_first(0), q.oldest_first(1)), (vec![3, 4], vec![1, 5, 0]));
        assert_eq!(
            (q.newest(0), q.older(4), q.older(3), q.queue_of(0), q.queue_of(2)),
            (Some(4), Some(3), None, Some(1), None)
        );
        // Cyclic walk over lists 2 (empty), 0 and 1.
        let order = [2, 0, 1];
        let walk: Vec<usize> =
            std::iter::successors(Some(3), |&f| Some(q.cyclic_successor(&order, f))).take(6).collect();
        assert_eq!(walk, [3, 4, 1, 5, 0, 3]);
        assert_eq!(q.unlink(4), Some(0));
        assert_eq!(q.unlink(4), None);
        assert_eq!(q.rotate_oldest(1), Some(1));
        assert_eq!(q.oldest_first(1), [5, 0, 1]);
        assert_eq!((q.len(0), q.len(1), q.len(2)), (1, 3, 0));
        assert_eq!(q.cyclic_successor(&[0], 3), 3, "a lone frame is its own successor");
    }
}
