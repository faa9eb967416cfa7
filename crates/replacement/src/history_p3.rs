//! The list shared by LIRS and CLOCK-Pro (README "LIRS", "CLOCK-Pro"): an index-linked list
//! over *nodes*.
//!
//! Both policies keep entries for resident pages and for pages evicted not long ago, in the same
//! lists. Node `f < capacity` is the page resident in frame `f`; nodes `capacity..` are ghost
//! handles of a [`crate::ghost::Ghosts`] directory. When a page is evicted its frame node is
//! replaced, in place, by a ghost node ([`Chain::replace`]), so the page keeps its position while
//! the frame is reused. Everything is allocated at construction.

/// No node: the end of a chain.
const NIL: usize = usize::MAX;

fn link(index: usize) -> Option<usize> {
    (index != NIL).then_some(index)
}

/// A doubly linked list of distinct nodes `0..n`, from the front to the back. O(1) per operation.
pub(crate) struct Chain {
    /// Toward the front.
    prev: Box<[usize]>,
    /// Toward the back.
    next: Box<[usize]>,
    linked: Box<[bool]>,
    front: usize,
    back: usize,
    len: usize,
}

impl Chain {
    /// An empty chain over nodes `0..nodes`.
    pub(crate) fn new(nodes: usize) -> Chain {
        Chain {
            prev: vec![NIL; nodes].into_boxed_slice(),
            next: vec![NIL; nodes].into_boxed_slice(),
            linked: vec![false; nodes].into_boxed_slice(),
            front: NIL,
            back: NIL,
            len: 0,
        }
    }

    pub(crate) fn contains(&self, node: usize) -> bool {
        self.linked[node]
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn front(&self) -> Option<usize> {
        link(self.front)
    }

    /// The node after `node` (which is linked), toward the back; `None` at the back.
    pub(crate) fn next(&self, node: usize) -> Option<usize> {
        link(self.next[node])
    }

    /// The node after `node` (which is linked), wrapping from the back to the front: the chain
    /// read as a circle, for clock hands.
    pub(crate) fn next_cyclic(&self, node: usize) -> usize {
        self.next(node).unwrap_or(self.front)
    }

    /// Links `node` (not linked) at the back.
    pub(crate) fn push_back(&mut self, node: usize) {
        debug_assert!(!self.linked[node], "node {node} is already linked");
        self.linked[node] = true;
        self.next[node] = NIL;
        self.prev[node] = self.back;
        match link(self.back) {
            Some(back) => self.next[back] = node,
            None => self.front = node,
        }
        self.back = node;
        self.len += 1;
    }

    /// Links `node` (not linked) just before `anchor` (linked).
    pub(crate) fn insert_before(&mut self, node: usize, anchor: usize) {
        debug_assert!(!self.linked[node] && self.linked[anchor]);
        let before = self.prev[anchor];
        self.linked[node] = true;
        self.prev[node] = before;
        self.next[node] = anchor;
        self.prev[anchor] = node;
        match link(before) {
            Some(b) => self.next[b] = node,
            None => self.front = node,
        }
        self.len += 1;
    }

    /// Unlinks `node`; false if it was not linked.
    pub(crate) fn unlink(&mut self, node: usize) -> bool {
        if !self.linked[node] {
            return false;
        }
        let (prev, next) = (self.prev[node], self.next[node]);
        match link(prev) {
            Some(p) => self.next[p] = next,
            None => self.front = next,
        }
        match link(next) {
            Some(n) => self.prev[n] = prev,
            None => self.back = prev,
        }
        self.linked[node] = false;
        self.prev[node] = NIL;
        self.next[node] = NIL;
        self.len -= 1;
        true
    }

    /// Moves `node` to the back, linking it if it was not linked.
    pub(crate) fn move_to_back(&mut self, node: usize) {
        if self.back != node {
            self.unlink(node);
            self.push_back(node);
        }
    }

    /// Puts `new` (not linked) in the place of `old` (linked), which ends up unlinked.
    pub(crate) fn replace(&mut self, old: usize, new: usize) {
        debug_assert!(self.linked[old] && !self.linked[new]);
        let (prev, next) = (self.prev[old], self.next[old]);
        self.prev[new] = prev;
        self.next[new] = next;
        self.linked[new] = true;
        match link(prev) {
            Some(p) => self.next[p] = new,
            None => self.front = new,
        }
        match link(next) {
            Some(n) => self.prev[n] = new,
            None => self.back = new,
        }
        self.linked[old] = false;
        self.prev[old] = NIL;
        self.next[old] = NIL;
    }

    /// The nodes from front to back (for tests and invariant checks).
    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.len);
        let mut at = self.front;
        while let Some(node) = link(at) {
            out.push(node);
            at = self.next[node];
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_links_stay_consistent() {
        let mut chain = Chain::new(6);
        for n in [3, 0, 4] {
            chain.push_back(n);
        }
        chain.insert_before(1, 3);
        chain.insert_before(5, 4);
        assert_eq!(chain.to_vec(), [1, 3, 0, 5, 4]);
        chain.replace(0, 2);
        assert_eq!(chain.to_vec(), [1, 3, 2, 5, 4]);
        assert!(!chain.contains(0) && chain.contains(2));
        chain.move_to_back(1);
        assert_eq!(chain.to_vec(), [3, 2, 5, 4, 1]);
        assert_eq!((chain.next_cyclic(1), chain.next_cyclic(3)), (3, 2));
        assert!(chain.unlink(3) && chain.unlink(1) && !chain.unlink(0));
        assert_eq!((chain.to_vec(), chain.len(), chain.front()), (vec![2, 5, 4], 3, Some(2)));
        chain.replace(4, 0);
        assert_eq!(chain.to_vec(), [2, 5, 0]);
    }
}

/// A simulated pool for the LIRS and CLOCK-Pro proptests. Unlike `tests/common`, which keeps
/// each page in one frame, pages here move between frames, so ghost hits land in other frames.
#[cfg(test)]
pub(crate) mod sim {
    use proptest::prelude::*;

    use crate::{FrameId, PageId, Policy, Rejection, TestHooks};

    /// What the pool does with a proposal.
    #[derive(Copy, Clone, Debug)]
    pub(crate) enum Outcome {
        Evict,
        Reject(Rejection),
        /// Dropped: the pool found free frames meanwhile.
        Ignore,
    }

    /// One step of a pool's life.
    #[derive(Copy, Clone, Debug)]
    pub(crate) enum Op {
        /// A fix of page `n`: a hit, a load into a free frame, or an eviction and a load.
        Fix(u64),
        /// Page `n` is freed (deleted), if resident.
        Free(u64),
        /// The pool evicts ahead of misses (or re-checks) and does this with the proposal.
        Propose(Outcome),
    }

    fn outcome() -> impl Strategy<Value = Outcome> {
        prop_oneof![
            4 => Just(Outcome::Evict),
            2 => Just(Outcome::Reject(Rejection::InUse)),
            1 => Just(Outcome::Reject(Rejection::Root)),
            2 => Just(Outcome::Reject(Rejection::SwizzledChildren)),
            1 => Just(Outcome::Reject(Rejection::NotResident)),
            1 => Just(Outcome::Ignore),
        ]
    }

    /// A capacity in `1..=12` and up to 400 steps over `3 * capacity + 2` pages, so that ghosts
    /// fill up and are re-referenced.
    pub(crate) fn scenario() -> impl Strategy<Value = (usize, Vec<Op>)> {
        (1usize..=12).prop_flat_map(|capacity| {
            let pages = 3 * capacity as u64 + 2;
            let op = prop_oneof![
                10 => (0..pages).prop_map(Op::Fix),
                1 => (0..pages).prop_map(Op::Free),
                3 => outcome().prop_map(Op::Propose),
            ];
            (Just(capacity), proptest::collection::vec(op, 0..400))
        })
    }

    /// The pool's view: which page each frame holds and which frames it rejected as roots.
    pub(crate) struct Pool {
        pub(crate) pages: Vec<Option<u64>>,
        pub(crate) blocked: Vec<bool>,
        pub(crate) hooks: TestHooks,
    }

    impl Pool {
        pub(crate) fn new(capacity: usize) -> Pool {
            Pool {
                pages: vec![None; capacity],
                blocked: vec![false; capacity],
                hooks: TestHooks::new(capacity),
            }
        }

        /// A fix of `page` (page ids are `page + 1`): a hit, a load into the lowest free frame,
        /// or the eviction of the policy's proposal and a load into its frame. Returns the
        /// evicted page.
        pub(crate) fn fix(&mut self, policy: &dyn Policy, page: u64) -> Option<u64> {
            if let Some(f) = self.frame_of(page) {
                policy.on_hit(FrameId(f as u32), &self.hooks[f]);
                return None;
            }
            let (f, evicted) = match self.pages.iter().position(Option::is_none) {
                Some(free) => (free, None),
                None => {
                    let victim = self.propose(policy).expect("the pool is full").index();
                    let evicted = self.pages[victim];
                    self.remove(policy, victim, true);
                    (victim, evicted)
                }
            };
            self.load(policy, f, page);
            evicted
        }

        pub(crate) fn resident(&self) -> usize {
            self.pages.iter().flatten().count()
        }

        fn frame_of(&self, page: u64) -> Option<usize> {
            self.pages.iter().position(|&p| p == Some(page))
        }

        /// R4 and R3 on one proposal.
        fn check_proposal(&self, proposal: Option<FrameId>) {
            assert_eq!(proposal.is_some(), self.resident() > 0, "None iff nothing is resident (R4)");
            if let Some(frame) = proposal {
                let f = frame.index();
                assert!(self.pages[f].is_some(), "proposed free frame {f} (R4)");
                if self.blocked[f] {
                    let unblocked =
                        (0..self.pages.len()).any(|g| self.pages[g].is_some() && !self.blocked[g]);
                    assert!(!unblocked, "proposed root {f} while an unblocked frame is resident (R3)");
                }
            }
        }

        fn propose(&mut self, policy: &dyn Policy) -> Option<FrameId> {
            let proposal = policy.next_candidate(&self.hooks);
            self.check_proposal(proposal);
            proposal
        }

        /// Removes the page in frame `f`: an eviction or a free.
        pub(crate) fn remove(&mut self, policy: &dyn Policy, f: usize, evicted: bool) {
            policy.on_remove(FrameId(f as u32), evicted, &self.hooks[f]);
            self.pages[f] = None;
            self.blocked[f] = false;
        }

        fn load(&mut self, policy: &dyn Policy, f: usize, page: u64) {
            self.pages[f] = Some(page);
            policy.on_insert(FrameId(f as u32), PageId::new(page + 1).unwrap(), &self.hooks[f]);
        }
    }

    /// Plays `ops` on `policy` over `capacity` frames, checking R3 and R4 on every proposal and
    /// calling `check` after every step.
    pub(crate) fn drive(capacity: usize, ops: &[Op], policy: &dyn Policy, mut check: impl FnMut(&Pool)) {
        let mut pool = Pool::new(capacity);
        for &op in ops {
            match op {
                Op::Fix(page) => {
                    pool.fix(policy, page);
                }
                Op::Free(page) => {
                    if let Some(f) = pool.frame_of(page) {
                        pool.remove(policy, f, false);
                    }
                }
                Op::Propose(outcome) => {
                    let Some(frame) = pool.propose(policy) else { continue };
                    let f = frame.index();
                    match outcome {
                        Outcome::Evict => pool.remove(policy, f, true),
                        Outcome::Reject(why) => {
                            policy.on_rejected(frame, why, &pool.hooks[f]);
                            match why {
                                Rejection::Root => pool.blocked[f] = true,
                                Rejection::NotResident => {
                                    pool.pages[f] = None;
                                    pool.blocked[f] = false;
                                }
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
