//! The real [`Gclock`] against a deliberately naive reference model: plain counters, a plain
//! hand, one lock, no early exits. Both must propose the same victims for every hook sequence.

mod common;

use common::{drive, scenario};
use parking_lot::Mutex;
use proptest::prelude::*;
use swizzledb_replacement::{FrameHook, FrameId, Gclock, HookTable, PageId, Policy, Rejection};

const BLOCKED: u16 = u16::MAX;

fn frame(index: usize) -> FrameId {
    FrameId(u32::try_from(index).unwrap())
}

struct ModelState {
    counters: Vec<u16>,
    resident: Vec<bool>,
    hand: usize,
}

/// GCLOCK as the module docs of `src/policies/gclock.rs` state it, written for clarity rather
/// than speed. It keeps its counters in its own array under its lock and ignores the hooks, so
/// it checks the real policy's hook-resident counters against an independent copy.
struct Model {
    k: u16,
    state: Mutex<ModelState>,
}

impl Model {
    fn new(capacity: usize, k: u16) -> Model {
        Model {
            k,
            state: Mutex::new(ModelState {
                counters: vec![0; capacity],
                resident: vec![false; capacity],
                hand: 0,
            }),
        }
    }
}

impl Policy for Model {
    fn name(&self) -> String {
        format!("model(k={})", self.k)
    }

    fn on_insert(&self, frame: FrameId, _page: PageId, _hook: &FrameHook) {
        let mut s = self.state.lock();
        s.counters[frame.index()] = 0;
        s.resident[frame.index()] = true;
    }

    fn on_hit(&self, frame: FrameId, _hook: &FrameHook) {
        let mut s = self.state.lock();
        if s.counters[frame.index()] != BLOCKED {
            s.counters[frame.index()] = self.k;
        }
    }

    fn on_rejected(&self, frame: FrameId, why: Rejection, hook: &FrameHook) {
        match why {
            Rejection::InUse => self.on_hit(frame, hook),
            Rejection::Root => {
                let mut s = self.state.lock();
                if s.resident[frame.index()] {
                    s.counters[frame.index()] = BLOCKED;
                }
            }
            Rejection::SwizzledChildren => {}
            Rejection::NotResident => self.on_remove(frame, false, hook),
        }
    }

    fn on_remove(&self, frame: FrameId, _evicted: bool, _hook: &FrameHook) {
        let mut s = self.state.lock();
        s.counters[frame.index()] = 0;
        s.resident[frame.index()] = false;
    }

    fn next_candidate(&self, _hooks: &dyn HookTable) -> Option<FrameId> {
        let mut s = self.state.lock();
        let capacity = s.counters.len();
        let mut lowest: Option<(u16, usize)> = None;
        let mut first_blocked = None;
        for _ in 0..(usize::from(self.k) + 2) * capacity {
            let i = s.hand;
            s.hand = (s.hand + 1) % capacity;
            if !s.resident[i] {
                continue;
            }
            match s.counters[i] {
                BLOCKED => {
                    first_blocked.get_or_insert(i);
                }
                0 => return Some(frame(i)),
                _ => {
                    s.counters[i] -= 1;
                    let counter = s.counters[i];
                    match lowest {
                        Some((best, _)) if best <= counter => {}
                        _ => lowest = Some((counter, i)),
                    }
                }
            }
        }
        lowest.map(|(_, i)| i).or(first_blocked).map(frame)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn r3_r4_gclock_matches_reference_model((capacity, ops) in scenario(), k in 1u16..=4) {
        let check = |sim: &common::Sim, proposal: Option<FrameId>| {
            sim.assert_resident(proposal);
            sim.assert_none_iff_empty(proposal);
            sim.assert_root_respected(proposal);
        };
        let real = drive(capacity, &ops, &Gclock::new(capacity as usize, k), check);
        let model = drive(capacity, &ops, &Model::new(capacity as usize, k), check);
        prop_assert_eq!(real, model);
    }
}
