//! [`SimPool`]: the buffer pool's part, played for one policy over a reference string.

use std::fmt;
use swizzledb_replacement::{FrameHook, Policy, PolicyKind};
use swizzledb_sync::{FrameId, PageId};

/// No frame / no page.
const NONE: u32 = u32::MAX;

/// Requests and misses of one simulation.
#[derive(Copy, Clone, Default, Debug, PartialEq, Eq)]
pub struct Counts {
    /// References played.
    pub requests: u64,
    /// References that did not find their page resident, cold misses included.
    pub misses: u64,
}

impl Counts {
    /// `misses / requests`, or 0 for no request.
    #[must_use]
    pub fn miss_ratio(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.misses as f64 / self.requests as f64
        }
    }
}

/// A policy broke its contract during a simulation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// `next_candidate` returned `None` although frames were resident (R4).
    #[error(
        "policy {policy} proposed no victim with all {capacity} frames resident (contract rule R4); \
         this is a bug in the policy"
    )]
    NoCandidate {
        /// The policy's name.
        policy: String,
        /// The number of frames.
        capacity: u32,
    },
    /// `next_candidate` proposed a frame that holds no page, or is outside the pool (R4).
    #[error(
        "policy {policy} proposed frame {frame}, which holds no page of the {capacity} frames \
         (contract rule R4); this is a bug in the policy"
    )]
    BadCandidate {
        /// The policy's name.
        policy: String,
        /// The proposed frame.
        frame: u32,
        /// The number of frames.
        capacity: u32,
    },
    /// A reference to a page outside the pool's page range.
    #[error("page {page} is outside the {page_slots} page ids this pool was built for")]
    PageOutOfRange {
        /// The page referenced.
        page: u32,
        /// The page ids the pool knows.
        page_slots: u32,
    },
}

/// Plays the buffer pool for one policy: a frame per cache page, every frame's [`FrameHook`] in
/// a plain array, a page-to-frame array over dense page ids and a list of free frames.
///
/// Each reference is a fix followed by an unfix, as in the live pool:
/// - a **hit** calls `on_hit`;
/// - a **miss** takes a free frame if there is one, else asks `next_candidate` for a victim and
///   evicts it at once (`on_remove(victim, true)`): nothing is ever fixed, dirty, a root or a
///   parent of swizzled children offline, so no candidate is rejected. Then `on_insert` loads
///   the page;
/// - then `on_unfix`, if the policy `uses_unfix`.
pub struct SimPool {
    policy: Box<dyn Policy>,
    hooks: Box<[FrameHook]>,
    frame_of: Vec<u32>,
    page_of: Vec<u32>,
    free: Vec<u32>,
    unfix: bool,
    counts: Counts,
}

impl fmt::Debug for SimPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimPool")
            .field("policy", &self.policy.name())
            .field("capacity", &self.page_of.len())
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl SimPool {
    /// A pool of `capacity` frames, all free, for pages `0..page_slots`. `policy` must have been
    /// built for the same `capacity`.
    ///
    /// # Panics
    /// If `capacity` is 0: a pool without frames cannot serve a single reference.
    #[must_use]
    pub fn new(policy: Box<dyn Policy>, capacity: u32, page_slots: u32) -> SimPool {
        assert!(capacity > 0, "a simulated pool needs at least one frame");
        SimPool {
            unfix: policy.uses_unfix(),
            policy,
            hooks: (0..capacity).map(|_| FrameHook::new()).collect(),
            frame_of: vec![NONE; page_slots as usize],
            page_of: vec![NONE; capacity as usize],
            // Popped from the back: frame 0 first.
            free: (0..capacity).rev().collect(),
            counts: Counts::default(),
        }
    }

    /// [`SimPool::new`] with the policy `kind` built for `capacity` frames (`seed` feeds
    /// policies that draw random numbers).
    ///
    /// # Panics
    /// If `capacity` is 0.
    #[must_use]
    pub fn for_kind(kind: PolicyKind, capacity: u32, page_slots: u32, seed: u64) -> SimPool {
        assert!(capacity > 0, "a simulated pool needs at least one frame");
        SimPool::new(kind.build(capacity as usize, seed), capacity, page_slots)
    }

    /// Plays one reference; true on a hit.
    ///
    /// # Errors
    /// [`SimError::PageOutOfRange`] for a page outside the pool's range; `NoCandidate` or
    /// `BadCandidate` if the policy breaks R4. The pool is unchanged after an error.
    pub fn access(&mut self, page: u32) -> Result<bool, SimError> {
        let slot = self.frame_of.get(page as usize).copied();
        let frame = match slot {
            None => return Err(SimError::PageOutOfRange { page, page_slots: self.frame_of.len() as u32 }),
            Some(NONE) => None,
            Some(f) => Some(FrameId(f)),
        };
        let (frame, hit) = match frame {
            Some(f) => {
                self.policy.on_hit(f, &self.hooks[f.index()]);
                (f, true)
            }
            None => (self.load(page)?, false),
        };
        if self.unfix {
            self.policy.on_unfix(frame, &self.hooks[frame.index()]);
        }
        self.counts.requests += 1;
        self.counts.misses += u64::from(!hit);
        Ok(hit)
    }

    /// Finds a frame for `page` (evicting if none is free) and loads it there.
    fn load(&mut self, page: u32) -> Result<FrameId, SimError> {
        let frame = match self.free.pop() {
            Some(f) => FrameId(f),
            None => {
                let capacity = self.page_of.len() as u32;
                let victim = self
                    .policy
                    .next_candidate(&self.hooks)
                    .ok_or_else(|| SimError::NoCandidate { policy: self.policy.name(), capacity })?;
                let old =
                    self.page_of.get(victim.index()).copied().filter(|&p| p != NONE).ok_or_else(|| {
                        SimError::BadCandidate { policy: self.policy.name(), frame: victim.0, capacity }
                    })?;
                self.frame_of[old as usize] = NONE;
                self.policy.on_remove(victim, true, &self.hooks[victim.index()]);
                victim
            }
        };
        self.frame_of[page as usize] = frame.0;
        self.page_of[frame.index()] = page;
        let id = PageId::new(u64::from(page)).expect("u32 page ids are below PageId::LIMIT");
        self.policy.on_insert(frame, id, &self.hooks[frame.index()]);
        Ok(frame)
    }

    /// Plays every reference of `refs`, in order, and returns the pool's counts so far.
    ///
    /// # Errors
    /// As [`SimPool::access`].
    pub fn run(&mut self, refs: &[u32]) -> Result<Counts, SimError> {
        for &page in refs {
            self.access(page)?;
        }
        Ok(self.counts)
    }

    /// Requests and misses so far.
    #[must_use]
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// The number of frames holding a page.
    #[must_use]
    pub fn resident(&self) -> usize {
        self.page_of.len() - self.free.len()
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    /// The classic reference string of operating-systems textbooks (Silberschatz et al.).
    pub(crate) const CLASSIC: [u32; 20] = [7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1];
}

#[cfg(test)]
mod tests {
    use super::tests_support::CLASSIC;
    use super::*;

    fn misses(kind: &str, capacity: u32, refs: &[u32]) -> u64 {
        let mut pool = SimPool::for_kind(kind.parse().unwrap(), capacity, 8, 1);
        pool.run(refs).unwrap().misses
    }

    #[test]
    fn s1_classic_string_with_three_frames_by_hand() {
        // LRU: 12 faults, FIFO: 15 (Silberschatz et al.'s worked example).
        assert_eq!(misses("lru", 3, &CLASSIC), 12);
        assert_eq!(misses("fifo", 3, &CLASSIC), 15);
    }

    #[test]
    fn s1_fifo_belady_anomaly() {
        // 1 2 3 4 1 2 5 1 2 3 4 5: FIFO faults 9 times with 3 frames and 10 times with 4.
        let refs = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5];
        assert_eq!(misses("fifo", 3, &refs), 9);
        assert_eq!(misses("fifo", 4, &refs), 10);
    }

    #[test]
    fn s1_counts_hits_misses_and_free_frames() {
        let mut pool = SimPool::for_kind(PolicyKind::Lru, 2, 4, 0);
        assert_eq!(pool.access(3), Ok(false));
        assert_eq!(pool.resident(), 1);
        assert_eq!(pool.access(3), Ok(true));
        assert_eq!(pool.access(1), Ok(false));
        assert_eq!(pool.access(0), Ok(false)); // evicts 3
        assert_eq!(pool.access(3), Ok(false));
        assert_eq!(pool.resident(), 2);
        assert_eq!(pool.counts(), Counts { requests: 5, misses: 4 });
        assert_eq!(pool.access(4), Err(SimError::PageOutOfRange { page: 4, page_slots: 4 }));
        assert_eq!(pool.counts().requests, 5);
    }

    /// A policy that breaks R4 in the way chosen.
    struct Broken(Option<FrameId>);

    impl Policy for Broken {
        fn name(&self) -> String {
            "broken".into()
        }
        fn on_insert(&self, _: FrameId, _: PageId, _: &FrameHook) {}
        fn on_hit(&self, _: FrameId, _: &FrameHook) {}
        fn on_rejected(&self, _: FrameId, _: swizzledb_replacement::Rejection, _: &FrameHook) {}
        fn on_remove(&self, _: FrameId, _: bool, _: &FrameHook) {}
        fn next_candidate(&self, _: &dyn swizzledb_replacement::HookTable) -> Option<FrameId> {
            self.0
        }
    }

    #[test]
    fn s2_contract_breaches_are_errors_not_panics() {
        for (proposal, frame) in [(None, None), (Some(FrameId(5)), Some(5))] {
            let mut pool = SimPool::new(Box::new(Broken(proposal)), 2, 4);
            pool.run(&[0, 1]).unwrap();
            let err = pool.access(2).unwrap_err();
            match (frame, &err) {
                (None, SimError::NoCandidate { capacity: 2, .. }) => {}
                (Some(5), SimError::BadCandidate { frame: 5, capacity: 2, .. }) => {}
                _ => panic!("{err:?}"),
            }
            assert!(err.to_string().contains("broken") && err.to_string().contains("R4"), "{err}");
        }
    }
}
