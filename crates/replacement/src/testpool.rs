//! A simulated buffer pool for the policies' own tests (compiled for tests only).
//!
//! Unlike `tests/common`, which keeps each page in one frame, pages here are drawn independently
//! of frames, so a page evicted from one frame often comes back in another: the ghost hits the
//! policies with history feed on. Page `n` is `PageId::new(n)`. The pool inserts only into free
//! frames (R1), answers each proposal as it is told, and checks R3 and R4 on every proposal.

use proptest::prelude::*;

use crate::policy::{FrameHook, HookTable, Policy, Rejection};
use swizzledb_sync::{FrameId, PageId};

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
    /// A fix of page `n`: a hit (`on_hit`, `on_unfix`), a load into the lowest free frame, or
    /// the eviction of the policy's proposal and a load into its frame.
    Fix(u64),
    /// Page `n` is freed (deleted), if resident.
    Free(u64),
    /// The pool evicts ahead of misses (or re-checks) and does this with the proposal.
    Propose(Outcome),
}

/// Random scenarios: a capacity in `1..=max_capacity` and up to 400 steps over a universe of
/// `3 * capacity + 2` pages, skewed toward low page numbers so that some pages are hot, and
/// large enough that ghosts fill up and are re-referenced.
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
            8 => page.clone().prop_map(Op::Fix),
            1 => page.prop_map(Op::Free),
            4 => outcome.prop_map(Op::Propose),
        ];
        (Just(capacity), proptest::collection::vec(op, 0..400))
    })
}

/// A capacity in `1..=max_capacity` and a trace of up to 300 page requests over
/// `0..3 * capacity`.
pub(crate) fn trace(max_capacity: usize) -> impl Strategy<Value = (usize, Vec<u64>)> {
    (1..=max_capacity)
        .prop_flat_map(|capacity| (Just(capacity), proptest::collection::vec(0..3 * capacity as u64, 0..300)))
}

/// The pool's view: which page each frame holds and which frames it rejected as roots.
pub(crate) struct Pool {
    /// The page held by each frame.
    pub(crate) pages: Vec<Option<u64>>,
    /// Resident frames rejected as roots since their page was loaded.
    pub(crate) blocked: Vec<bool>,
    pub(crate) hooks: TestHooks,
}

impl Pool {
    /// `capacity` free frames.
    pub(crate) fn new(capacity: usize) -> Pool {
        Pool { pages: vec![None; capacity], blocked: vec![false; capacity], hooks: TestHooks::new(capacity) }
    }

    /// A fix of `page`: a hit, a load into the lowest free frame, or the eviction of the
    /// policy's proposal and a load into its frame. Returns the evicted page.
    pub(crate) fn fix(&mut self, policy: &dyn Policy, page: u64) -> Option<u64> {
        if let Some(f) = self.frame_of(page) {
            policy.on_hit(FrameId(f as u32), &self.hooks[f]);
            policy.on_unfix(FrameId(f as u32), &self.hooks[f]);
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
        self.pages[f] = Some(page);
        policy.on_insert(FrameId(f as u32), PageId::new(page).unwrap(), &self.hooks[f]);
        evicted
    }

    /// Number of resident frames.
    pub(crate) fn resident(&self) -> usize {
        self.pages.iter().flatten().count()
    }

    /// The frame holding `page`.
    pub(crate) fn frame_of(&self, page: u64) -> Option<usize> {
        self.pages.iter().position(|&p| p == Some(page))
    }

    /// Removes the page in frame `f`: an eviction or a free.
    pub(crate) fn remove(&mut self, policy: &dyn Policy, f: usize, evicted: bool) {
        policy.on_remove(FrameId(f as u32), evicted, &self.hooks[f]);
        self.pages[f] = None;
        self.blocked[f] = false;
    }

    /// Asks for a candidate and checks R4 and R3 on it: resident, `None` iff nothing is, and a
    /// blocked frame only when every resident frame is blocked.
    pub(crate) fn propose(&mut self, policy: &dyn Policy) -> Option<FrameId> {
        let proposal = policy.next_candidate(&self.hooks);
        assert_eq!(proposal.is_some(), self.resident() > 0, "R4: proposal {proposal:?}");
        if let Some(frame) = proposal {
            let f = frame.index();
            assert!(self.pages[f].is_some(), "R4: proposed free frame {f}");
            if self.blocked[f] {
                let unblocked = (0..self.pages.len()).any(|g| self.pages[g].is_some() && !self.blocked[g]);
                assert!(!unblocked, "R3: proposed root {f} while an unblocked frame is resident");
            }
        }
        proposal
    }

    /// Does `outcome` with the proposal `frame`.
    pub(crate) fn answer(&mut self, policy: &dyn Policy, frame: FrameId, outcome: Outcome) {
        let f = frame.index();
        match outcome {
            Outcome::Evict => self.remove(policy, f, true),
            Outcome::Reject(why) => {
                policy.on_rejected(frame, why, &self.hooks[f]);
                match why {
                    Rejection::Root => self.blocked[f] = true,
                    Rejection::NotResident => {
                        self.pages[f] = None;
                        self.blocked[f] = false;
                    }
                    Rejection::InUse | Rejection::SwizzledChildren => {}
                }
            }
            Outcome::Ignore => {}
        }
    }
}

/// Plays `ops` on `policy` (built for `capacity` frames), checking R3 and R4 on every proposal
/// and calling `check` after every step.
pub(crate) fn run(capacity: usize, ops: &[Op], policy: &dyn Policy, mut check: impl FnMut(&Pool)) {
    let mut pool = Pool::new(capacity);
    for &op in ops {
        apply(&mut pool, policy, op);
        check(&pool);
    }
}

/// Plays `ops` like [`run`] and, before every hit, asks `policy.ignores_hit` (R5): `check(frame,
/// ignored)` compares the answer with the policy's state, and an ignored hit must leave
/// `snapshot()` as it was.
pub(crate) fn run_checking_ignored_hits<S: PartialEq + std::fmt::Debug>(
    capacity: usize,
    ops: &[Op],
    policy: &dyn Policy,
    snapshot: impl Fn() -> S,
    check: impl Fn(usize, bool),
) {
    let mut pool = Pool::new(capacity);
    for &op in ops {
        if let Op::Fix(page) = op {
            if let Some(f) = pool.frame_of(page) {
                let ignored = policy.ignores_hit(FrameId(f as u32), &pool.hooks[f]);
                check(f, ignored);
                let before = snapshot();
                pool.fix(policy, page);
                if ignored {
                    assert_eq!(snapshot(), before, "an ignored hit on frame {f} changed the policy");
                }
                continue;
            }
        }
        apply(&mut pool, policy, op);
    }
}

/// Plays one step on `pool` and `policy`, checking R3 and R4 on a proposal.
pub(crate) fn apply(pool: &mut Pool, policy: &dyn Policy, op: Op) {
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
            if let Some(frame) = pool.propose(policy) {
                pool.answer(policy, frame, outcome);
            }
        }
    }
}

/// A reference model of a policy, by page number, that [`replay_with_model`] drives beside the
/// policy through a pool history with rejections, removals and frees.
pub(crate) trait PageModel {
    /// A fix of the resident `page`.
    fn hit(&mut self, page: u64);
    /// `page` is loaded into a free frame.
    fn load(&mut self, page: u64);
    /// The page the policy must propose next (`None`: none).
    fn propose(&mut self) -> Option<u64>;
    /// `page` leaves the pool: evicted, or not (a free, or a proposal refused as `NotResident`).
    fn leave(&mut self, page: u64, evicted: bool);
    /// The proposal of `page` was refused as `InUse`, `SwizzledChildren` or `Root`.
    fn refused(&mut self, page: u64, why: Rejection);
}

/// Plays `ops` on `policy` (built for `capacity` frames) and on `model` side by side: a miss
/// into a full pool evicts the page the model proposes, and every proposal must be the
/// model's page; `check(pool, model, step, op)` compares their states after every step.
pub(crate) fn replay_with_model<M: PageModel>(
    capacity: usize,
    ops: &[Op],
    policy: &dyn Policy,
    model: &mut M,
    mut check: impl FnMut(&Pool, &M, usize, Op) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    let mut pool = Pool::new(capacity);
    for (t, &op) in ops.iter().enumerate() {
        match op {
            Op::Fix(page) => {
                if pool.frame_of(page).is_some() {
                    model.hit(page);
                    pool.fix(policy, page);
                } else {
                    let victim = if pool.resident() == capacity {
                        let v = model.propose();
                        model.leave(v.expect("a full pool has a victim"), true);
                        v
                    } else {
                        None
                    };
                    model.load(page);
                    prop_assert_eq!(pool.fix(policy, page), victim, "victim at step {} ({:?})", t, op);
                }
            }
            Op::Free(page) => {
                if pool.frame_of(page).is_some() {
                    model.leave(page, false);
                }
                apply(&mut pool, policy, op);
            }
            Op::Propose(outcome) => {
                let expected = model.propose();
                let proposal = pool.propose(policy);
                let proposed =
                    proposal.map(|f| pool.pages[f.index()].expect("a proposed frame holds a page"));
                prop_assert_eq!(proposed, expected, "proposal at step {} ({:?})", t, op);
                if let (Some(frame), Some(x)) = (proposal, proposed) {
                    match outcome {
                        Outcome::Evict => model.leave(x, true),
                        Outcome::Reject(Rejection::NotResident) => model.leave(x, false),
                        Outcome::Reject(why) => model.refused(x, why),
                        Outcome::Ignore => {}
                    }
                    pool.answer(policy, frame, outcome);
                }
            }
        }
        check(&pool, model, t, op)?;
    }
    Ok(())
}

/// Serves `trace` as a pool of `capacity` frames that evicts one page per miss, only when every
/// frame is taken, and never rejects. Returns, per request, whether it hit and which page was
/// evicted for it.
pub(crate) fn replay(capacity: usize, trace: &[u64], policy: &dyn Policy) -> Vec<(bool, Option<u64>)> {
    let mut pool = Pool::new(capacity);
    trace
        .iter()
        .map(|&page| {
            let hit = pool.frame_of(page).is_some();
            (hit, pool.fix(policy, page))
        })
        .collect()
}

/// Fresh hooks for the policies' unit tests. `[FrameHook]` is unsized, so a slice cannot itself be passed
/// as `&dyn HookTable`; this sized owner can, and derefs to the slice for per-frame access.
pub(crate) struct TestHooks(Box<[FrameHook]>);

impl TestHooks {
    /// `capacity` hooks holding 0.
    pub(crate) fn new(capacity: usize) -> TestHooks {
        TestHooks((0..capacity).map(|_| FrameHook::new()).collect())
    }

    /// Loads `frames` (frame `f` holds page `f + 1`), as the pool would after misses.
    pub(crate) fn insert(&self, policy: &dyn Policy, frames: &[u32]) {
        for &f in frames {
            policy.on_insert(FrameId(f), PageId::new(u64::from(f) + 1).unwrap(), &self.0[f as usize]);
        }
    }

    /// Reports a hit on each of `frames`.
    pub(crate) fn hit(&self, policy: &dyn Policy, frames: &[u32]) {
        for &f in frames {
            policy.on_hit(FrameId(f), &self.0[f as usize]);
        }
    }

    /// Takes the policy's next candidate and evicts it, as the pool would.
    pub(crate) fn evict(&self, policy: &dyn Policy) -> u32 {
        let victim = policy.next_candidate(self).unwrap();
        policy.on_remove(victim, true, &self.0[victim.index()]);
        victim.0
    }

    /// Every hook's value, by frame.
    pub(crate) fn bits(&self) -> Vec<u32> {
        self.0.iter().map(FrameHook::get).collect()
    }
}

impl std::ops::Deref for TestHooks {
    type Target = [FrameHook];

    fn deref(&self) -> &[FrameHook] {
        &self.0
    }
}

impl HookTable for TestHooks {
    fn hook(&self, frame: FrameId) -> &FrameHook {
        self.0.hook(frame)
    }
}
