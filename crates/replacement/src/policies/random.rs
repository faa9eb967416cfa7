//! RANDOM "with check of usage" (Gilbert 2017, §3.3.2): propose a random page.
//!
//! The policy keeps no usage statistics. It proposes a uniformly random resident frame; the *check
//! of usage* is the pool's: it tries an immediate exclusive latch on the candidate (R6) and reports
//! [`Rejection::InUse`] when that fails, after which the next call simply draws again. The rules
//! R1–R11 are those of the crate README's section "The contract".
//!
//! # State
//!
//! One byte per frame (free, resident or blocked), a resident count, and a seeded `SmallRng`. All
//! of it lives in the policy. The hooks are neither read nor written: draws probe frames the
//! policy may never have seen, whose hooks may hold anything (R7), and hits need no state at all.
//!
//! # Steps
//!
//! 1. `on_insert` marks the frame resident, clearing any old block. `on_remove` and `NotResident`
//!    mark it free.
//! 2. A `Root` rejection blocks a resident frame. `InUse`, `SwizzledChildren`, hits and unfixes do
//!    nothing, since the policy keeps no statistics.
//! 3. `next_candidate` returns `None` if the resident count is 0.
//! 4. If at least ¼ of the frames are resident, it draws up to 32 uniformly random frames and
//!    returns the first unblocked resident one. At density ¼, all 32 draws miss with probability
//!    about 10⁻⁴.
//! 5. Otherwise, or if every draw missed, it scans all frames once from a random start. It returns
//!    the first unblocked resident frame, else the first blocked one, else `None`.
//!
//! # Deviations from the thesis
//!
//! - **Random draws.** Gilbert's implementation (`page_evictioner_base::pick_victim`) is really a
//!   sequential sweep with a persistent cursor; it never draws a random number. We draw at random,
//!   as the concept says, and fall back to a linear scan from a random start (step 5) only when
//!   residency is too sparse for random probing to pay off.
//! - **Fallback scan.** Step 5 is biased toward frames that follow long runs of free frames. It
//!   runs only when fewer than ¼ of the frames are resident, when the pool has free frames and
//!   rarely evicts.
//! - **Roots are remembered.** The thesis's RANDOM keeps no state and re-checks roots on every
//!   pass. We remember `Root` rejections to meet R3.

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::capacity::{check_capacity, frame_id};
use crate::policy::{FrameHook, HookTable, Policy, Rejection};
use crate::residency::{Residency, State};
use swizzledb_sync::{FrameId, PageId};

/// Random probing is used while at least `1 / DENSITY_DIVISOR` of the frames are resident.
const DENSITY_DIVISOR: usize = 4;
/// Random draws before falling back to a scan. At density >= 1/4 all of them miss with
/// probability (3/4)^32, about 1e-4.
const PROBES: usize = 32;

/// RANDOM replacement: proposes a uniformly random resident frame.
///
/// Per frame it stores one state byte (free, resident or blocked) in its own array; hits, unfixes
/// and [`Rejection::InUse`] / [`Rejection::SwizzledChildren`] rejections cost nothing.
///
/// It neither reads nor writes the frames' [`FrameHook`]s (R7): its draws probe frames it may
/// never have seen, whose hooks could hold anything, so residency must live in state it owns.
pub struct RandomPolicy {
    frames: Residency,
    /// Only the evicting thread draws (R2), so this lock is uncontended.
    rng: Mutex<SmallRng>,
}

impl RandomPolicy {
    /// A policy over frames `0..capacity`, all initially free, drawing from a generator seeded
    /// with `seed` (equal seeds and equal hook sequences give equal proposals).
    ///
    /// # Panics
    /// If `capacity - 1` does not fit a [`FrameId`].
    #[must_use]
    pub fn new(capacity: usize, seed: u64) -> RandomPolicy {
        check_capacity(capacity);
        RandomPolicy { frames: Residency::new(capacity), rng: Mutex::new(SmallRng::seed_from_u64(seed)) }
    }

    /// Scans every frame once from `start`: the first resident frame, else the first blocked one,
    /// else `None`.
    fn scan_from(&self, start: usize) -> Option<FrameId> {
        let capacity = self.frames.capacity();
        let mut blocked = None;
        for offset in 0..capacity {
            let index = (start + offset) % capacity;
            match self.frames.state(index) {
                State::Resident => return Some(frame_id(index)),
                State::Blocked => {
                    blocked.get_or_insert(index);
                }
                _ => {}
            }
        }
        blocked.map(frame_id)
    }
}

impl Policy for RandomPolicy {
    fn name(&self) -> String {
        "random".to_owned()
    }

    fn on_insert(&self, frame: FrameId, _page: PageId, _hook: &FrameHook) {
        // A new page: any block from a previous page in this frame is gone.
        self.frames.insert(frame);
    }

    fn on_hit(&self, _frame: FrameId, _hook: &FrameHook) {}

    fn on_rejected(&self, frame: FrameId, why: Rejection, _hook: &FrameHook) {
        match why {
            // Draws are independent: an in-use frame or a parent is simply drawn again later.
            Rejection::InUse | Rejection::SwizzledChildren => {}
            Rejection::Root => self.frames.block(frame),
            Rejection::NotResident => self.frames.remove(frame),
        }
    }

    fn on_remove(&self, frame: FrameId, _evicted: bool, _hook: &FrameHook) {
        self.frames.remove(frame);
    }

    /// Draws up to `PROBES` (32) uniformly random frames while residency is dense, then scans
    /// linearly from a random start. Never proposes a free frame; proposes a blocked frame only
    /// when no unblocked frame is resident; `None` only when nothing is resident (R4).
    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        let capacity = self.frames.capacity();
        let resident = self.frames.resident();
        if resident == 0 {
            return None;
        }
        let mut rng = self.rng.lock();
        if resident.saturating_mul(DENSITY_DIVISOR) >= capacity {
            for _ in 0..PROBES {
                let index = rng.gen_range(0..capacity);
                if self.frames.state(index) == State::Resident {
                    return Some(frame_id(index));
                }
            }
        }
        let start = rng.gen_range(0..capacity);
        drop(rng);
        self.scan_from(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testpool::TestHooks;

    fn page(n: u64) -> PageId {
        PageId::new(n).unwrap()
    }

    fn hooks(capacity: usize) -> TestHooks {
        TestHooks::new(capacity)
    }

    /// Draws `draws` candidates and counts how often each frame was proposed.
    fn histogram(policy: &RandomPolicy, hooks: &TestHooks, draws: usize) -> Vec<usize> {
        let mut counts = vec![0; hooks.len()];
        for _ in 0..draws {
            counts[policy.next_candidate(hooks).unwrap().index()] += 1;
        }
        counts
    }

    #[test]
    fn r4_dense_draws_cover_every_resident_frame_and_no_other() {
        let capacity = 64;
        let policy = RandomPolicy::new(capacity, 42);
        let h = hooks(capacity);
        for f in (0..capacity).step_by(2) {
            policy.on_insert(frame_id(f), page(f as u64), &h[f]);
        }
        let counts = histogram(&policy, &h, 20_000);
        for (f, &n) in counts.iter().enumerate() {
            if f % 2 == 0 {
                // Expected 625 each; a uniform draw is far from these bounds.
                assert!((400..=850).contains(&n), "frame {f} drawn {n} times");
            } else {
                assert_eq!(n, 0, "non-resident frame {f} proposed");
            }
        }
    }

    #[test]
    fn r4_sparse_scan_covers_every_resident_frame_and_no_other() {
        let capacity = 1024;
        let resident = [3, 500, 1023];
        let policy = RandomPolicy::new(capacity, 7);
        let h = hooks(capacity);
        for f in resident {
            policy.on_insert(frame_id(f), page(f as u64), &h[f]);
        }
        let counts = histogram(&policy, &h, 3_000);
        for (f, &n) in counts.iter().enumerate() {
            assert_eq!(n > 0, resident.contains(&f), "frame {f} drawn {n} times");
        }
    }

    #[test]
    fn r4_same_seed_same_proposals() {
        let h = hooks(16);
        let build = || {
            let policy = RandomPolicy::new(16, 99);
            for f in 0..16 {
                policy.on_insert(frame_id(f), page(f as u64), &h[f]);
            }
            policy
        };
        let (a, b) = (build(), build());
        for _ in 0..100 {
            assert_eq!(a.next_candidate(&h), b.next_candidate(&h));
        }
    }

    #[test]
    fn r3_root_is_proposed_only_when_nothing_else_is_resident() {
        let policy = RandomPolicy::new(8, 1);
        let h = hooks(8);
        policy.on_insert(FrameId(2), page(2), &h[2]);
        policy.on_insert(FrameId(5), page(5), &h[5]);
        policy.on_rejected(FrameId(2), Rejection::Root, &h[2]);
        for _ in 0..200 {
            assert_eq!(policy.next_candidate(&h), Some(FrameId(5)));
        }
        policy.on_remove(FrameId(5), true, &h[5]);
        assert_eq!(policy.next_candidate(&h), Some(FrameId(2)));
        policy.on_remove(FrameId(2), false, &h[2]);
        assert_eq!(policy.next_candidate(&h), None);
    }

    #[test]
    fn r3_stale_root_rejection_does_not_resurrect_a_free_frame() {
        let policy = RandomPolicy::new(4, 1);
        let h = hooks(4);
        policy.on_rejected(FrameId(1), Rejection::Root, &h[1]);
        assert_eq!(policy.next_candidate(&h), None);
    }

    #[test]
    fn r4_zero_capacity_proposes_nothing() {
        assert_eq!(RandomPolicy::new(0, 0).next_candidate(&hooks(0)), None);
    }

    /// R7: RANDOM leaves the hooks alone, whatever they hold, and its proposals do not depend on
    /// them.
    #[test]
    fn r7_hooks_are_neither_read_nor_written() {
        let (clean, dirty) = (hooks(8), hooks(8));
        for (f, hook) in dirty.iter().enumerate() {
            hook.set(u32::MAX - f as u32);
        }
        let drive = |h: &TestHooks| {
            let policy = RandomPolicy::new(8, 5);
            for f in [1, 4, 6] {
                policy.on_insert(frame_id(f), page(f as u64), &h[f]);
                policy.on_hit(frame_id(f), &h[f]);
            }
            policy.on_rejected(FrameId(4), Rejection::Root, &h[4]);
            policy.on_remove(FrameId(6), true, &h[6]);
            (0..50).map(|_| policy.next_candidate(h)).collect::<Vec<_>>()
        };
        assert_eq!(drive(&clean), drive(&dirty));
        assert!(clean.iter().all(|hook| hook.get() == 0));
        assert!(dirty.iter().enumerate().all(|(f, hook)| hook.get() == u32::MAX - f as u32));
    }
}
