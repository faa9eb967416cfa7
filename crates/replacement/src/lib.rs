//! Page-replacement policies.
//!
//! A policy only *proposes* victims; the buffer pool decides. The contract between the two is in
//! this crate's `README.md` (rules R1–R6): the pool reports hits, inserts, unfixes, rejections and
//! removals; the policy proposes candidates through [`Policy::next_candidate`] and must survive any
//! number of rejections without corrupting its statistics. The same policy objects drive the live
//! pool and (later) the offline trace simulator, which plays the pool's part.

#![forbid(unsafe_code)]

mod gclock;
mod kind;
mod random;

pub use gclock::Gclock;
pub use kind::{PolicyKind, UnknownPolicy};
pub use random::RandomPolicy;
pub use swizzledb_sync::{FrameId, PageId};

/// Converts a frame index in `0..capacity` back to a [`FrameId`].
///
/// Constructors check that `capacity` fits frame ids, so this cannot fail for an index below it.
fn frame_id(index: usize) -> FrameId {
    FrameId(u32::try_from(index).expect("frame index fits in u32"))
}

/// Panics unless every index in `0..capacity` is representable as a [`FrameId`].
fn check_capacity(capacity: usize) {
    assert!(
        capacity == 0 || u32::try_from(capacity - 1).is_ok(),
        "capacity {capacity} exceeds the frame-id range"
    );
}

/// Why the pool refused a proposed victim.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Rejection {
    /// Some thread holds the frame's latch: the page is in use right now.
    InUse,
    /// The page is a tree root; roots stay resident for the pool's lifetime.
    Root,
    /// The page holds swizzled child references (un-swizzle its children first).
    SwizzledChildren,
    /// The frame holds no page (already free, or being loaded).
    NotResident,
}

/// A page-replacement policy over a fixed set of frames `0..capacity`.
///
/// All hooks take `&self`: policies synchronize internally (hit hooks should be a plain store, not
/// a lock). `next_candidate` is called by one evicting thread at a time (R2).
pub trait Policy: Send + Sync {
    /// Short name, as accepted by [`PolicyKind`]'s parser (for example `gclock(k=10)`).
    fn name(&self) -> String;

    /// A frame now holds `page`: a miss loaded it or a new page was created there (R1).
    fn on_insert(&self, frame: FrameId, page: PageId);

    /// A fix found the page resident in `frame`.
    fn on_hit(&self, frame: FrameId);

    /// A fix of `frame` ended. "Usage" can be defined by fix or by unfix; most policies ignore this.
    fn on_unfix(&self, _frame: FrameId) {}

    /// True if the policy wants [`Policy::on_unfix`]; the pool skips the call on every unfix
    /// otherwise (it is on the hot path).
    fn uses_unfix(&self) -> bool {
        false
    }

    /// The pool refused the candidate it was offered (R3): the policy must not lose the frame.
    fn on_rejected(&self, frame: FrameId, why: Rejection);

    /// `frame` no longer holds a page: it was evicted (`evicted == true`) or its page was freed.
    fn on_remove(&self, frame: FrameId, evicted: bool);

    /// Proposes the next eviction candidate among frames that hold a page, or `None` when the
    /// policy tracks no resident frame (R4).
    fn next_candidate(&self) -> Option<FrameId>;
}
