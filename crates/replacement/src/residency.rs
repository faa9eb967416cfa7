//! Which frames hold a page, for policies that keep it themselves rather than in lists (CLOCK and
//! RANDOM: a hand or a random draw probes frames directly). Lock-free: one state byte per frame and
//! a count of the frames that are not free.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use crate::lazy::LazyCells;
use swizzledb_sync::FrameId;

/// What a frame holds, as the policy knows it.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum State {
    /// No page.
    Free,
    /// A page that may be proposed.
    Resident,
    /// A page the pool rejected as a root: proposed only if nothing else is resident (R3).
    Blocked,
}

impl State {
    const fn byte(self) -> u8 {
        match self {
            State::Free => 0,
            State::Resident => 1,
            State::Blocked => 2,
        }
    }

    fn from_byte(b: u8) -> State {
        match b {
            1 => State::Resident,
            2 => State::Blocked,
            _ => State::Free,
        }
    }
}

/// Per-frame [`State`]s of frames `0..capacity` and the number of frames not [`State::Free`].
pub(crate) struct Residency {
    states: LazyCells<AtomicU8>,
    /// Maintained from the state transitions.
    resident: AtomicUsize,
}

impl Residency {
    /// Every frame free.
    pub(crate) fn new(capacity: usize) -> Residency {
        Residency {
            states: LazyCells::new(capacity, || AtomicU8::new(State::Free.byte())),
            resident: AtomicUsize::new(0),
        }
    }

    /// The number of frames, free or not.
    pub(crate) fn capacity(&self) -> usize {
        self.states.len()
    }

    /// Frames holding a page, blocked ones included.
    pub(crate) fn resident(&self) -> usize {
        self.resident.load(Ordering::Acquire)
    }

    /// The state of frame `index`.
    pub(crate) fn state(&self, index: usize) -> State {
        self.states.get(index).map_or(State::Free, |s| State::from_byte(s.load(Ordering::Acquire)))
    }

    /// `frame` holds a new page: resident, any block of a previous page gone.
    pub(crate) fn insert(&self, frame: FrameId) {
        self.transition(frame, State::Resident);
    }

    /// `frame` holds no page any more.
    pub(crate) fn remove(&self, frame: FrameId) {
        self.transition(frame, State::Free);
    }

    /// `frame` was rejected as a root. Only a resident frame becomes blocked: a stale rejection of
    /// a freed frame must not resurrect it.
    pub(crate) fn block(&self, frame: FrameId) {
        let Some(state) = self.states.get(frame.index()) else {
            return; // never resident
        };
        let _ = state.compare_exchange(
            State::Resident.byte(),
            State::Blocked.byte(),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// Moves `frame` to `new`, keeping the resident count in step with the transition.
    fn transition(&self, frame: FrameId, new: State) {
        let old = State::from_byte(self.states.cell(frame.index()).swap(new.byte(), Ordering::AcqRel));
        match (old == State::Free, new == State::Free) {
            (true, false) => {
                self.resident.fetch_add(1, Ordering::AcqRel);
            }
            (false, true) => {
                self.resident.fetch_sub(1, Ordering::AcqRel);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count follows every transition; a stale block of a free frame changes nothing.
    #[test]
    fn r3_count_follows_transitions_and_stale_blocks_do_nothing() {
        let r = Residency::new(3);
        r.block(FrameId(0));
        assert_eq!((r.state(0), r.resident()), (State::Free, 0));
        r.insert(FrameId(0));
        r.insert(FrameId(1));
        r.block(FrameId(1));
        r.insert(FrameId(1));
        assert_eq!((r.state(1), r.resident()), (State::Resident, 2), "a new page clears the block");
        r.block(FrameId(0));
        assert_eq!((r.state(0), r.resident()), (State::Blocked, 2));
        r.remove(FrameId(0));
        r.remove(FrameId(0));
        assert_eq!((r.state(0), r.resident(), r.capacity()), (State::Free, 1, 3));
    }
}
