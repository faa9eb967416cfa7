//! The simulated pool of the LIRS and CLOCK-Pro tests.

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
