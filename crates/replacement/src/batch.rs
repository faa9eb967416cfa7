//! The eviction batch (R10) of a policy whose state sits behind one mutex (LRU, 2Q, hot/cold):
//! one acquisition of the lock per victim instead of three.

use crate::capacity::frame_id;
use crate::policy::{Evictor, FrameHook, HookTable, Verdict};
use swizzledb_sync::FrameId;

/// The state of a policy behind one mutex, as [`evict_batch_locked`] drives it: the bodies of
/// `next_candidate`, `candidate_after` and the verdict hooks, called with the lock held.
pub(crate) trait LockedBatch {
    /// The next proposal (`next_candidate`).
    fn propose(&mut self) -> Option<usize>;
    /// The guess at the proposal after `frame` (`candidate_after`), prefetching what it can.
    fn guess_after(&self, frame: usize, hooks: &dyn HookTable) -> Option<usize>;
    /// The pool's verdict on the proposed `frame` (`on_remove` or `on_rejected`).
    fn record(&mut self, frame: usize, verdict: Verdict, hook: &FrameHook);
}

/// [`evict_one_by_one`](crate::policy::evict_one_by_one)'s order for a policy whose state sits
/// behind `state`, with one acquisition of the lock per victim instead of three: the verdict on
/// one victim, the next proposal and the guess after it share one critical section. The lock is
/// not held while the pool tries a victim, so hooks the pool reports meanwhile (from this thread
/// or another) take it as usual (LRU, 2Q).
pub(crate) fn evict_batch_locked<S: LockedBatch>(
    state: &parking_lot::Mutex<S>,
    hooks: &dyn HookTable,
    evictor: &mut dyn Evictor,
    max_proposals: usize,
) -> usize {
    let mut proposals = 0;
    let mut last: Option<(FrameId, Verdict)> = None;
    loop {
        let more = proposals < max_proposals && evictor.wants_more();
        let mut locked = state.lock();
        if let Some((frame, verdict)) = last.take() {
            locked.record(frame.index(), verdict, hooks.hook(frame));
        }
        let Some(frame) = more.then(|| locked.propose()).flatten() else { break };
        let next = locked.guess_after(frame, hooks);
        drop(locked);
        proposals += 1;
        if let Some(next) = next {
            evictor.prefetch(frame_id(next));
        }
        let frame = frame_id(frame);
        last = Some((frame, evictor.try_evict(frame)));
    }
    proposals
}
