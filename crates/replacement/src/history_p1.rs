//! The simulated pool of the MRU, LRU-K, 2Q and MQ tests.

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
