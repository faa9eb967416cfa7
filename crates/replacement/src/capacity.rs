//! Frame indices: a policy over frames `0..capacity` keeps them as `usize` indices and converts
//! them back to [`FrameId`]s.

use swizzledb_sync::FrameId;

/// Converts a frame index in `0..capacity` back to a [`FrameId`].
///
/// Constructors check that `capacity` fits frame ids, so this cannot fail for an index below it.
pub(crate) fn frame_id(index: usize) -> FrameId {
    FrameId(u32::try_from(index).expect("frame index fits in u32"))
}

/// Panics unless every index in `0..capacity` is representable as a [`FrameId`].
pub(crate) fn check_capacity(capacity: usize) {
    assert!(
        capacity == 0 || u32::try_from(capacity - 1).is_ok(),
        "capacity {capacity} exceeds the frame-id range"
    );
}
