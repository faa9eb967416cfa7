//! A simulated buffer pool that drives policies through random hook sequences.
//!
//! The simulation plays the pool's part of the README contract: it inserts only into free frames
//! (R1), calls `next_candidate` from one thread (R2), answers each proposal by evicting it,
//! rejecting it, or ignoring it, and keeps one [`FrameHook`] per frame, which it passes to every
//! hook (R7).

use std::ops::Deref;

use proptest::prelude::*;
use swizzledb_replacement::{FrameHook, FrameId, HookTable, PageId, Policy, Rejection};

/// What the simulated pool does with a proposal.
#[derive(Copy, Clone, Debug)]
pub enum Outcome {
    Evict,
    Reject(Rejection),
    /// The pool found enough free frames meanwhile and drops the proposal.
    Ignore,
}

/// One step of the simulation.
#[derive(Copy, Clone, Debug)]
pub enum Op {
    Insert(u32),
    Hit(u32),
    /// The page in the frame was freed (not an eviction).
    Remove(u32),
    Propose(Outcome),
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        3 => Just(Outcome::Evict),
        2 => Just(Outcome::Reject(Rejection::InUse)),
        1 => Just(Outcome::Reject(Rejection::Root)),
        1 => Just(Outcome::Reject(Rejection::SwizzledChildren)),
        1 => Just(Outcome::Reject(Rejection::NotResident)),
        1 => Just(Outcome::Ignore),
    ]
}

/// Up to 300 steps over frames `0..capacity`.
pub fn ops(capacity: u32) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (0..capacity).prop_map(Op::Insert),
        4 => (0..capacity).prop_map(Op::Hit),
        1 => (0..capacity).prop_map(Op::Remove),
        3 => outcome().prop_map(Op::Propose),
    ];
    proptest::collection::vec(op, 0..300)
}

/// A capacity in `1..=12` and up to 300 steps over its frames.
pub fn scenario() -> impl Strategy<Value = (u32, Vec<Op>)> {
    (1u32..=12).prop_flat_map(|capacity| (Just(capacity), ops(capacity)))
}

/// The pool's per-frame hooks, as its frame descriptors hold them (R7).
///
/// A newtype because `[FrameHook]`, being unsized, cannot be passed as `&dyn HookTable` itself;
/// it derefs to the slice for per-frame access.
pub struct Hooks(Box<[FrameHook]>);

impl Hooks {
    /// `capacity` hooks holding 0, as in a freshly built pool.
    pub fn new(capacity: u32) -> Hooks {
        Hooks((0..capacity).map(|_| FrameHook::new()).collect())
    }
}

impl Deref for Hooks {
    type Target = [FrameHook];

    fn deref(&self) -> &[FrameHook] {
        &self.0
    }
}

impl HookTable for Hooks {
    fn hook(&self, frame: FrameId) -> &FrameHook {
        self.0.hook(frame)
    }
}

/// The pool's view of its frames.
pub struct Sim {
    /// Frames that hold a page.
    resident: Vec<bool>,
    /// Resident frames the pool has rejected as roots since their page was inserted.
    blocked: Vec<bool>,
    /// One hook per frame, owned by the pool and lent to the policy (R7).
    hooks: Hooks,
}

impl Sim {
    fn remove(&mut self, frame: usize) {
        self.resident[frame] = false;
        self.blocked[frame] = false;
    }

    /// R4: a proposal is a resident frame.
    pub fn assert_resident(&self, proposal: Option<FrameId>) {
        if let Some(frame) = proposal {
            assert!(self.resident[frame.index()], "proposed non-resident {frame}");
        }
    }

    /// R4: `None` exactly when no frame is resident.
    pub fn assert_none_iff_empty(&self, proposal: Option<FrameId>) {
        let any_resident = self.resident.contains(&true);
        assert_eq!(proposal.is_some(), any_resident, "proposal {proposal:?}");
    }

    /// R3: a frame rejected as a root is proposed only when every resident frame is blocked.
    pub fn assert_root_respected(&self, proposal: Option<FrameId>) {
        if let Some(frame) = proposal.filter(|f| self.blocked[f.index()]) {
            let unblocked = self.resident.iter().zip(&self.blocked).any(|(&r, &b)| r && !b);
            assert!(!unblocked, "proposed blocked {frame} while an unblocked frame is resident");
        }
    }
}

/// Runs `ops` against `policy` over `capacity` fresh hooks. Before the pool acts on each
/// proposal, `check` sees the pool's state and the proposal. Returns every proposal in order.
pub fn drive(
    capacity: u32,
    ops: &[Op],
    policy: &dyn Policy,
    check: impl FnMut(&Sim, Option<FrameId>),
) -> Vec<Option<FrameId>> {
    drive_with(Hooks::new(capacity), ops, policy, check).0
}

/// As [`drive`], over a pool of `hooks.len()` frames, all free, whose hooks hold whatever they
/// hold (a previous policy's leftovers, say). Returns the proposals and the hooks as `ops` left
/// them.
pub fn drive_with(
    hooks: Hooks,
    ops: &[Op],
    policy: &dyn Policy,
    mut check: impl FnMut(&Sim, Option<FrameId>),
) -> (Vec<Option<FrameId>>, Hooks) {
    let capacity = hooks.len();
    let mut sim = Sim { resident: vec![false; capacity], blocked: vec![false; capacity], hooks };
    let mut proposals = Vec::new();
    // R10: the policy's guess at its next proposal, made just before its last proposal was
    // evicted; a guess must name exactly the next proposal if nothing happens in between.
    let mut guess = None;
    for &op in ops {
        let guessed = guess.take();
        match op {
            Op::Insert(f) if !sim.resident[f as usize] => {
                sim.resident[f as usize] = true;
                policy.on_insert(FrameId(f), PageId::new(u64::from(f)).unwrap(), &sim.hooks[f as usize]);
            }
            Op::Hit(f) if sim.resident[f as usize] => {
                // The live pool names the page; the offline simulator does not.
                if f % 2 == 0 {
                    policy.on_page_hit(
                        FrameId(f),
                        PageId::new(u64::from(f)).unwrap(),
                        &sim.hooks[f as usize],
                    );
                } else {
                    policy.on_hit(FrameId(f), &sim.hooks[f as usize]);
                }
                policy.on_unfix(FrameId(f), &sim.hooks[f as usize]);
            }
            Op::Remove(f) if sim.resident[f as usize] => {
                sim.remove(f as usize);
                policy.on_remove(FrameId(f), false, &sim.hooks[f as usize]);
            }
            Op::Propose(outcome) => {
                let proposal = policy.next_candidate(&sim.hooks);
                check(&sim, proposal);
                if let Some(guessed) = guessed {
                    assert_eq!(proposal, Some(guessed), "candidate_after guessed wrong");
                }
                proposals.push(proposal);
                let Some(frame) = proposal else { continue };
                let hook = &sim.hooks[frame.index()];
                match outcome {
                    Outcome::Evict => {
                        guess = policy.candidate_after(frame, &sim.hooks);
                        policy.on_remove(frame, true, hook);
                        sim.remove(frame.index());
                    }
                    Outcome::Reject(why) => {
                        policy.on_rejected(frame, why, hook);
                        match why {
                            Rejection::Root => sim.blocked[frame.index()] = true,
                            Rejection::NotResident => sim.remove(frame.index()),
                            Rejection::InUse | Rejection::SwizzledChildren => {}
                        }
                    }
                    Outcome::Ignore => {}
                }
            }
            Op::Insert(_) | Op::Hit(_) | Op::Remove(_) => {}
        }
    }
    (proposals, sim.hooks)
}
