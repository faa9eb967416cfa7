//! Optimistic descents (T20): inner nodes are read without latching them, through the buffer
//! pool's version-validated views (buffer README B24), and only the leaf — or the node where a
//! descent must go on with latches — is latched. A descent that finds a page changed under it
//! starts again; after a few restarts, or wherever it meets something it does not handle (a
//! foster child, an unswizzled swip, a leaf root), it hands over to lock coupling (T8). A
//! child it cannot load (I/O error, damage) fails the descent with the pool's error.

use crate::node;
use swizzledb_buffer::{BufferPool, FrameId, LatchKind, PageGuard, PageView, SharedGuard, Step};

/// Restarts before a descent gives up on reading optimistically: a page that keeps changing is
/// better waited for with a latch than re-read.
const MAX_RESTARTS: u32 = 8;

/// Where an optimistic descent stopped.
pub(crate) enum Reached<'a, M: LatchKind> {
    /// The leaf whose range holds the key (or the foster chain that does), latched in `M`.
    Leaf(PageGuard<'a, M>),
    /// An inner node on the key's path, latched shared: the descent goes on with lock coupling
    /// from here (its swip to the next node is not swizzled, or it has a foster child).
    Inner(SharedGuard<'a>),
}

/// One attempt's outcome.
enum Attempt<'a, M: LatchKind> {
    Reached(Reached<'a, M>),
    /// A page changed under the reader: start again.
    Restart,
    /// Lock coupling from the root does the rest.
    HandOver,
    /// Loading a child failed (I/O, or damage single-page recovery could not mend): the error
    /// is the descent's, not retried with latches (a second read that succeeds would hide it).
    Failed(swizzledb_buffer::BufferError),
}

/// A tree's root in its pool: all an optimistic descent needs of the tree (`Tree::optimistic`).
pub(crate) struct Root<'p> {
    pub(crate) pool: &'p BufferPool,
    pub(crate) root: FrameId,
}

impl<'p> Root<'p> {
    /// Descends towards `key` optimistically (T20), or `None` where lock coupling from the root
    /// must do it: optimistic reads are off (traditional mode, a trace, timed fixes), the root
    /// is a leaf, or the tree kept changing under the reader. The caller holds no latch.
    ///
    /// # Errors
    /// Loading a node failed (the pool's error).
    pub(crate) fn descend<M: LatchKind>(
        &self,
        key: &[u8],
    ) -> Result<Option<Reached<'p, M>>, swizzledb_buffer::BufferError> {
        let pool = self.pool;
        if !pool.optimistic_reads() {
            return Ok(None);
        }
        for _ in 0..MAX_RESTARTS {
            match self.attempt::<M>(key) {
                Attempt::Reached(r) => return Ok(Some(r)),
                Attempt::HandOver => return Ok(None),
                Attempt::Failed(e) => return Err(e),
                Attempt::Restart => {
                    pool.count_optimistic_restart();
                    std::hint::spin_loop();
                }
            }
        }
        Ok(None)
    }

    fn attempt<M: LatchKind>(&self, key: &[u8]) -> Attempt<'p, M> {
        let Some(mut view) = self.pool.view_root(self.root) else { return Attempt::Restart };
        let mut expect: Option<u8> = None;
        loop {
            let level = node::level(&view);
            if level == 0 || expect.is_some_and(|e| e != level) {
                // A leaf root, or a level other than one below the parent: valid only on a
                // damaged tree (or a leaf root), which lock coupling handles.
                return if view.validate() { Attempt::HandOver } else { Attempt::Restart };
            }
            if node::has_foster(&view) {
                return go_on_latched(view);
            }
            let off = node::child_swip_off(&view, node::child_index(&view, key));
            if level == 1 {
                return match view.fix_child::<M>(off) {
                    Step::Ready(leaf) if node::is_leaf(&leaf) => Attempt::Reached(Reached::Leaf(leaf)),
                    Step::Ready(_) => Attempt::HandOver,
                    Step::Retry => Attempt::Restart,
                    Step::Unswizzled => load_then_latch(view, off),
                };
            }
            view = match view.child(off) {
                Step::Ready(child) => child,
                Step::Retry => return Attempt::Restart,
                Step::Unswizzled => return load_then_latch(view, off),
            };
            expect = Some(level - 1);
        }
    }
}

/// One attempt of a read (T21).
enum Read {
    /// A valid read: whether the key was found (its value is in the buffer).
    Done(bool),
    /// A page changed under the reader: start again.
    Restart,
    /// The latched path does the rest: a swip that is a page id (a miss, read with B32 there),
    /// a foster child, a damaged page.
    HandOver,
}

impl Root<'_> {
    /// T21: reads the value under `key` with no latch at all, leaf included: the leaf is read
    /// through a view like the inner nodes (buffer README B33), its value copied into `out`,
    /// and the copy used only once the leaf's view validates; the hit then reaches the policy
    /// without a latch. `Some(found)`: a valid read (the value in `out` if found). `None`: the
    /// pool does not allow it (no optimistic reads, or a policy that needs a latch for its
    /// hits, replacement R11), the leaf is not resident or has a foster child, or the tree kept
    /// changing: read with latches. The caller holds no latch.
    pub(crate) fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Option<bool> {
        let pool = self.pool;
        if !pool.optimistic_leaf_reads() {
            return None;
        }
        for _ in 0..MAX_RESTARTS {
            match self.read_attempt(key, out) {
                Read::Done(found) => return Some(found),
                Read::HandOver => return None,
                Read::Restart => {
                    pool.count_optimistic_restart();
                    std::hint::spin_loop();
                }
            }
        }
        None
    }

    fn read_attempt(&self, key: &[u8], out: &mut Vec<u8>) -> Read {
        let Some(mut view) = self.pool.view_root(self.root) else { return Read::Restart };
        let mut expect: Option<u8> = None;
        let settle = |view: &PageView<'_>| if view.validate() { Read::HandOver } else { Read::Restart };
        loop {
            let level = node::level(&view);
            if expect.is_some_and(|e| e != level) || node::has_foster(&view) {
                return settle(&view);
            }
            if level == 0 {
                let found = match node::search(&view, key) {
                    // T22: a large value is read latched, leaf and chain.
                    Ok(i) if node::is_stub(&view, i) => return settle(&view),
                    Ok(i) => {
                        node::copy_value(&view, i, out);
                        true
                    }
                    Err(_) => false,
                };
                if !view.validate() {
                    return Read::Restart;
                }
                view.record_hit();
                return Read::Done(found);
            }
            let off = node::child_swip_off(&view, node::child_index(&view, key));
            view = match view.child(off) {
                Step::Ready(child) => child,
                Step::Retry => return Read::Restart,
                Step::Unswizzled => return settle(&view),
            };
            expect = Some(level - 1);
        }
    }
}

/// The child at `off` is not swizzled: reads it into the pool while this thread holds no latch
/// (buffer README B32), then goes on latched from the view if the node is unchanged; a read
/// that takes long enough for the node to change costs a restart, not a latch held across the
/// read. If the read fails, the latched step reads again and reports the error.
fn load_then_latch<M: LatchKind>(view: PageView<'_>, off: usize) -> Attempt<'_, M> {
    match view.load_child(off) {
        Ok(Step::Retry) => Attempt::Restart,
        Ok(_) => go_on_latched(view),
        Err(e) => Attempt::Failed(e),
    }
}

/// Latches the viewed inner node shared, if it is unchanged, to go on from it with latches.
fn go_on_latched<M: LatchKind>(view: PageView<'_>) -> Attempt<'_, M> {
    match view.lock_shared() {
        Some(g) => Attempt::Reached(Reached::Inner(g)),
        None => Attempt::Restart,
    }
}
